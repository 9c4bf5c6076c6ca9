package main

import (
	"context"
	"fmt"
	"msgx/client"
	"msgx/internal/app"
	"msgx/internal/cli"
	"os"
)

const requestUsage = `usage:
  msgx request [--server URL] ref TYPE                          ask the AODB for one reference TYPE (RQRD)
  msgx request [--server URL] schedule --from TIME --to TIME    ask the AODB for a schedule window (RQFD)
TIME: 03DEC26, 03DEC261200, 2026-12-03, 2026-12-03 12:00 (airport local time) or RFC 3339`

// request asks a running msgx to send a data request to the AODB and prints what it queued.
func request(args []string) error {
	ctx := context.Background()
	fs := prog.Flags("request")
	server := fs.String("server", "", "the msgx server: a `URL` or host:port")
	configFlag(fs)
	from := fs.String("from", "", "schedule: start of the window (STDB), a `TIME`")
	to := fs.String("to", "", "schedule: end of the window (STDE), a `TIME`")
	// Flags may come before or after the kind and the TYPE.
	if err := fs.Parse(cli.Reorder(fs, args)); err != nil {
		return app.ExitError{Code: exitUsage, Msg: requestUsage}
	}
	pos := fs.Args()
	var r client.Request
	var err error
	switch {
	case len(pos) == 2 && (pos[0] == "ref" || pos[0] == "reference"):
		if *from != "" || *to != "" {
			return app.ExitError{Code: exitUsage, Msg: "msgx request ref: --from and --to are for a schedule request\n" + requestUsage}
		}
		r, err = srv(*server).RequestReference(ctx, pos[1])
	case len(pos) == 1 && pos[0] == "schedule":
		r, err = srv(*server).RequestSchedule(ctx, *from, *to)
	default:
		return app.ExitError{Code: exitUsage, Msg: requestUsage}
	}
	if err != nil {
		return err
	}
	what := r.STYP
	if r.Type == "RQFD" {
		what = r.STDB + "–" + r.STDE
	}
	fmt.Printf("request %d %s %s queued in COUTMSGS row %d with SEQN %s: %s\n", r.ID, r.Type, what, r.CoutmsgsID, r.SEQN, r.State)
	return nil
}

// requestsList prints the data requests with their state.
func requestsList(args []string) error {
	fs := prog.Flags("requests")
	server := fs.String("server", "", "the msgx server: a `URL` or host:port")
	configFlag(fs)
	state := fs.String("state", "", "only this state `S` (REGISTERED, SENT, DONE, EXPIRED)")
	page := listFlags(fs, "requests", 50)
	asJSON := fs.Bool("json", false, "print the raw JSON")
	utcFlag(fs)
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 {
		return app.ExitError{Code: exitUsage, Msg: "usage: msgx requests [--server URL] [--state S] [--order desc|asc] [--before ID] [--after ID] [--limit N] [--utc] [--json]"}
	}
	var err error
	if *state, err = checkChoice("requests", "state", *state, reqStates); err != nil {
		return err
	}
	pq, err := page.query("requests")
	if err != nil {
		return err
	}
	q := cli.WithFilters(pq, "state", *state)
	var out struct {
		Requests []client.Request `json:"requests"`
		client.Page
	}
	if printed, err := show(srv(*server), "/api/v1/requests?"+q, *asJSON, &out); printed || err != nil {
		return err
	}
	cli.WriteRequests(os.Stdout, out.Requests, zoneOf(srv(*server)))
	page.more(out.Page)
	return nil
}
