package main

import (
	"context"
	"fmt"
	"msgx/client"
	"msgx/internal/cli"
)

const requestUsage = `usage:
  msgx request [--server URL] ref TYPE                          ask the AODB for one reference TYPE (RQRD)
  msgx request [--server URL] schedule --from TIME --to TIME    ask the AODB for a schedule window (RQFD)
TIME: 03DEC26, 03DEC261200, 2026-12-03, 2026-12-03 12:00 (airport local time) or RFC 3339`

// request asks a running msgx to send a data request to the AODB and prints what it queued.
func request(ctx context.Context, e *cli.Env, args []string) error {
	fs, r := e.RemoteFlags("request", cli.ServerUsage, false)
	from := fs.String("from", "", "schedule: start of the window (STDB), a `TIME`")
	to := fs.String("to", "", "schedule: end of the window (STDE), a `TIME`")
	// Flags may come before or after the kind and the TYPE.
	if err := fs.Parse(cli.Reorder(fs, args)); err != nil {
		return cli.UsageError(requestUsage)
	}
	pos := fs.Args()
	c, err := r.API()
	if err != nil {
		return err
	}
	var q client.Request
	switch {
	case len(pos) == 2 && (pos[0] == "ref" || pos[0] == "reference"):
		if *from != "" || *to != "" {
			return cli.UsageError("msgx request ref: --from and --to are for a schedule request\n" + requestUsage)
		}
		q, err = c.RequestReference(ctx, pos[1])
	case len(pos) == 1 && pos[0] == "schedule":
		q, err = c.RequestSchedule(ctx, *from, *to)
	default:
		return cli.UsageError(requestUsage)
	}
	if err != nil {
		return err
	}
	what := q.STYP
	if q.Type == "RQFD" {
		what = q.STDB + "–" + q.STDE
	}
	fmt.Fprintf(e.Stdout, "request %d %s %s queued in COUTMSGS row %d with SEQN %s: %s\n", q.ID, q.Type, what, q.CoutmsgsID, q.SEQN, q.State)
	return nil
}

// requestsList prints the data requests with their state.
func requestsList(ctx context.Context, e *cli.Env, args []string) error {
	fs, r := e.RemoteFlags("requests", cli.ServerUsage, false)
	state := fs.String("state", "", "only this state `S` (REGISTERED, SENT, DONE, EXPIRED)")
	page := e.ListFlags(fs, "requests", 50)
	asJSON := fs.Bool("json", false, "print the raw JSON")
	r.UTCFlag(fs)
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 {
		return e.Usage("requests")
	}
	var err error
	if *state, err = e.Choice("requests", "state", *state, []string{client.RequestRegistered, client.RequestSent, client.RequestDone, client.RequestExpired}); err != nil {
		return err
	}
	var out struct {
		Requests []client.Request `json:"requests"`
		client.Page
	}
	if printed, err := page.Show(ctx, r, "/api/v1/requests", *asJSON, &out, "state", *state); printed || err != nil {
		return err
	}
	cli.WriteRequests(e.Stdout, out.Requests, r.Zone(ctx))
	page.More(out.Page)
	return nil
}
