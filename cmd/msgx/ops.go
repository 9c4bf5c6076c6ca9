package main

// The operators' commands: events, flight, park, pause, resume, jobs, audit and token. They
// talk to the ops API (docs/api.md) with the bearer token of --token or MSGX_TOKEN.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"msgx/client"
	"msgx/internal/api"
	"msgx/internal/app"
	"msgx/internal/cli"
	"msgx/internal/pipeline"
)

// events lists outbox events.
func events(ctx context.Context, e *cli.Env, args []string) error {
	fs, r := e.RemoteFlags("events", cli.APIServerUsage, true)
	flid := fs.Int64("flid", 0, "only events of this flight")
	tgt := fs.String("target", "", "only events of this target")
	state := fs.String("state", "", "only events in this state (PENDING, SENT, DEAD)")
	msgID := fs.Int64("msg-id", 0, "only events of this message")
	page := e.ListFlags(fs, "events", 50)
	asJSON := fs.Bool("json", false, "print the raw JSON")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 {
		return e.Usage("events")
	}
	var err error
	if *state, err = e.Choice("events", "state", *state, []string{string(pipeline.EventPending), string(pipeline.EventSent), string(pipeline.EventDead)}); err != nil {
		return err
	}
	if err := r.CheckTarget(ctx, "events", *tgt); err != nil { // the API client first: its error before the page's
		return err
	}
	var out client.EventList
	if printed, err := page.Show(ctx, r, "/api/v1/events", *asJSON, &out, "flid", cli.NonZero(*flid), "msg_id", cli.NonZero(*msgID), "target", *tgt, "state", *state); printed || err != nil {
		return err
	}
	cli.WriteEvents(e.Stdout, out.Events)
	page.More(out.Page)
	return nil
}

// flightCmd shows a flight's record, or with --history every change of it.
func flightCmd(ctx context.Context, e *cli.Env, args []string) error {
	fs, r := e.RemoteFlags("flight", cli.APIServerUsage, true)
	history := fs.Bool("history", false, "print every change of the flight: the message, and each field's old and new value")
	asJSON := fs.Bool("json", false, "print the raw JSON (times in UTC, as stored)")
	r.UTCFlag(fs)
	if err := fs.Parse(cli.Reorder(fs, args)); err != nil || fs.NArg() != 1 {
		return e.Usage("flight")
	}
	flid, c, err := r.IDAndAPI("flight", fs.Arg(0), "a FLID")
	if err != nil {
		return err
	}
	if !*history {
		return printFlight(ctx, e, r, c, flid, *asJSON)
	}
	z := r.Zone(ctx)
	n := 0
	err = c.FlightHistory(ctx, flid, func(c client.FlightChange) {
		if n == 0 {
			fmt.Fprintf(e.Stdout, "flight %d: every change (times %s)\n", flid, z.Name())
		}
		n++
		cli.WriteFlightChange(e.Stdout, c, z)
	})
	if err != nil {
		return err
	}
	if n == 0 {
		fmt.Fprintf(e.Stdout, "flight %d: no recorded changes\n", flid)
	}
	return nil
}

// printFlight prints flight flid's record as labelled rows in the command's zone, or with
// asJSON the API's answer as it is.
func printFlight(ctx context.Context, e *cli.Env, r *cli.Remote, c *client.Client, flid int64, asJSON bool) error {
	rec, err := c.Flight(ctx, flid)
	if err != nil {
		return err
	}
	if asJSON {
		return cli.WriteJSON(e.Stdout, rec)
	}
	var f client.FlightEntry
	if err := json.Unmarshal(rec, &f); err != nil {
		return fmt.Errorf("flight %d: the answer is not a flight: %w", flid, err)
	}
	cli.WriteFlight(e.Stdout, f, r.Zone(ctx))
	return nil
}

// park sets a message aside: DEAD with class PARKED, replayable.
func park(ctx context.Context, e *cli.Env, args []string) error {
	fs, r := e.RemoteFlags("park", cli.APIServerUsage, true)
	reason := fs.String("reason", "", "why (required; kept in the message's last error and the audit log)")
	if err := fs.Parse(cli.Reorder(fs, args)); err != nil || fs.NArg() != 1 || strings.TrimSpace(*reason) == "" {
		return e.Usage("park")
	}
	id, c, err := r.IDAndAPI("park", fs.Arg(0), "a message id")
	if err != nil {
		return err
	}
	res, err := c.Park(ctx, id, *reason)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.Stdout, "message %d: %s → %s %s (replay with: msgx replay --id %d)\n", id, res.From, res.State, res.Class, id)
	return nil
}

// ackCmd acknowledges dead letters: DEAD messages (IDs), or DEAD events with --events; kept
// for audit, they leave the counts that call for attention.
func ackCmd(ctx context.Context, e *cli.Env, args []string) error {
	fs, r := e.RemoteFlags("ack", cli.APIServerUsage, true)
	events := fs.Bool("events", false, "the ids are DEAD events' ids (default: DEAD messages' ids)")
	note := fs.String("note", "", "why (kept with the acknowledgement and in the audit log)")
	if err := fs.Parse(cli.Reorder(fs, args)); err != nil || fs.NArg() == 0 {
		return e.Usage("ack")
	}
	ids, err := e.IDs("ack", fs.Args(), client.MaxAckIDs)
	if err != nil {
		return err
	}
	kind := "message"
	if *events {
		kind = "event"
	}
	c, err := r.API()
	if err != nil {
		return err
	}
	res, err := c.AckDead(ctx, kind, ids, *note)
	if err != nil {
		return err
	}
	cli.WriteAck(e.Stdout, kind, res)
	return nil
}

// pauseCmd pauses (name "pause") or resumes ("resume") the pump, or one target with --target.
func pauseCmd(ctx context.Context, e *cli.Env, args []string, name string) error {
	fs, r := e.RemoteFlags(name, cli.APIServerUsage, true)
	tgt := fs.String("target", "", "pause or resume this delivery target instead of the pump")
	reason := fs.String("reason", "", "why (kept with the pause and in the audit log)")
	r.UTCFlag(fs)
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 {
		return cli.UsageError("usage: msgx " + name + " [--server URL] [--target T] [--reason TEXT]")
	}
	c, err := r.API()
	if err != nil {
		return err
	}
	if err := r.CheckTarget(ctx, name, *tgt); err != nil {
		return err
	}
	res, err := c.SetPaused(ctx, name == "pause", *tgt, *reason)
	if err != nil {
		return err
	}
	what := "the pump"
	if *tgt != "" {
		what = "target " + *tgt
	}
	cli.WritePause(e.Stdout, what, res, func() cli.Zone { return r.Zone(ctx) })
	return nil
}

// jobs lists the pump jobs (any role), shows one with its progress (`msgx jobs ID`), lists
// the kinds and whether each can run here (--kinds), or starts one with --start KIND (admin).
func jobsCmd(ctx context.Context, e *cli.Env, args []string) error {
	fs, r := e.RemoteFlags("jobs", cli.APIServerUsage, true)
	start := fs.String("start", "", "enqueue a job of this `KIND` (ARCHIVE)")
	kinds := fs.Bool("kinds", false, "list the job kinds and whether each can run in the server's configuration, and why not")
	asJSON := fs.Bool("json", false, "print the raw JSON")
	page := e.ListFlags(fs, "jobs", 100)
	r.UTCFlag(fs)
	if err := fs.Parse(cli.Reorder(fs, args)); err != nil || fs.NArg() > 1 {
		return e.Usage("jobs")
	}
	c, err := r.API()
	if err != nil {
		return err
	}
	switch {
	case *kinds:
		return printKinds(ctx, e, r, *asJSON)
	case *start != "":
		kind, err := e.JobKind("jobs", *start)
		if err != nil {
			return err
		}
		j, err := c.StartJob(ctx, kind)
		if err != nil {
			return jobRefused("jobs", kind, err)
		}
		fmt.Fprintf(e.Stdout, "job %d %s enqueued: runs after message %d\n", j.ID, j.Kind, j.AfterMsgID)
		return nil
	case fs.NArg() == 1:
		id, err := e.ID("jobs", fs.Arg(0), "a job id")
		if err != nil {
			return err
		}
		return showJob(ctx, e, r, id, *asJSON)
	}
	if _, err := page.Query(); err != nil {
		return err
	}
	var out client.JobList
	if printed, err := r.Show(ctx, "/api/v1/jobs", *asJSON, &out); printed || err != nil {
		return err
	}
	// The server answers its newest 100 jobs; the paging flags choose among them.
	list, more := page.Jobs(out.Jobs)
	z := cli.UTC
	if len(list) > 0 {
		z = r.Zone(ctx)
	}
	cli.WriteJobs(e.Stdout, list, more, z)
	return nil
}

// printKinds prints every job kind, whether the server can run it, and why not.
func printKinds(ctx context.Context, e *cli.Env, r *cli.Remote, asJSON bool) error {
	var out struct {
		Kinds []client.JobKind `json:"kinds"`
	}
	if printed, err := r.Show(ctx, "/api/v1/jobs/kinds", asJSON, &out); printed || err != nil {
		return err
	}
	return cli.WriteKinds(e.Stdout, out.Kinds)
}

// jobRefused is the error of a job the server would not queue: one that cannot run in its
// configuration (409 job_cannot_run) is said with the reason and what can run; nothing was
// queued.
func jobRefused(cmd, kind string, err error) error {
	var e *client.Error
	if errors.As(err, &e) && e.Code == "job_cannot_run" {
		return app.ExitError{Code: exitFailure, Msg: fmt.Sprintf("msgx %s: %s; nothing was queued ('msgx jobs --kinds' lists what can run here)", cmd, e.Message)}
	}
	return err
}

// showJob prints one job: its state, attempts, times and result, error or progress.
func showJob(ctx context.Context, e *cli.Env, r *cli.Remote, id int64, asJSON bool) error {
	var j client.Job
	if printed, err := r.Show(ctx, fmt.Sprintf("/api/v1/jobs/%d", id), asJSON, &j); printed || err != nil {
		return err
	}
	cli.WriteJob(e.Stdout, j, r.Zone(ctx))
	return nil
}

// auditCmd lists the audit log (admin).
func auditCmd(ctx context.Context, e *cli.Env, args []string) error {
	fs, r := e.RemoteFlags("audit", cli.APIServerUsage, true)
	page := e.ListFlags(fs, "entries", 100)
	r.UTCFlag(fs)
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 {
		return e.Usage("audit")
	}
	var out client.AuditPage
	if _, err := page.Show(ctx, r, "/api/v1/audit", false, &out); err != nil {
		return err
	}
	cli.WriteAudit(e.Stdout, out, r.Zone(ctx))
	page.More(out.Page)
	return nil
}

// token prints the configured form of a token secret (hash) or makes a new secret (new).
func token(ctx context.Context, e *cli.Env, args []string) error {
	var secret string
	switch {
	case len(args) == 2 && args[0] == "hash":
		if secret = args[1]; len(secret) < 16 {
			return cli.UsageError("msgx token hash: a token must be a random secret of at least 16 characters (msgx token new makes one); SHA-256 protects only high-entropy secrets")
		}
	case len(args) == 1 && args[0] == "new":
		secret = api.NewTokenSecret()
		fmt.Fprintf(e.Stdout, "secret (give it to its holder; msgx keeps only the hash): %s\n", secret)
	default:
		return cli.UsageError("usage: msgx token hash SECRET | msgx token new")
	}
	fmt.Fprintln(e.Stdout, "# auth.tokens entry: {name: NAME, role: viewer|operator|admin, hash: <the line below>}")
	fmt.Fprintln(e.Stdout, api.HashToken(secret))
	return nil
}

// jobCmd is `msgx job run KIND`: it enqueues a pump job, follows it (what it is doing, from
// the status's job section, on stderr) and ends when it is DONE (its result on stdout, exit
// 0) or DEAD (its last error, exit 1). A failed attempt that will be retried is told and
// waited for. --no-wait only enqueues.
func jobCmd(ctx context.Context, e *cli.Env, args []string) error {
	fs, r := e.RemoteFlags("job", cli.APIServerUsage, true)
	noWait := fs.Bool("no-wait", false, "enqueue the job and return")
	timeout := fs.Duration("timeout", time.Hour, "give up waiting after this long (the job goes on)")
	params := cli.JobParamFlags(fs)
	// The flags may come before or after "run KIND".
	if err := fs.Parse(cli.Reorder(fs, args)); err != nil || fs.NArg() != 2 || fs.Arg(0) != "run" {
		return cli.UsageError("usage: msgx job [--server URL] [--no-wait] [--timeout D] run KIND [--prune] [--flid N] [--day YYYY-MM-DD] [--params S]")
	}
	kind, err := e.JobKind("job", fs.Arg(1))
	if err != nil {
		return err
	}
	c, err := r.API()
	if err != nil {
		return err
	}
	j, err := c.StartJobWith(ctx, kind, params())
	if err != nil {
		return jobRefused("job", kind, err)
	}
	fmt.Fprintf(e.Stderr, "job %d %s enqueued: runs after message %d\n", j.ID, j.Kind, j.AfterMsgID)
	if *noWait {
		fmt.Fprintln(e.Stdout, j.ID)
		return nil
	}
	x, done, err := c.FollowJob(ctx, j.ID, *timeout,
		func(doing string) { fmt.Fprintf(e.Stderr, "job %d: %s\n", j.ID, doing) },
		func(attempt int, lastErr string) {
			fmt.Fprintf(e.Stderr, "job %d: attempt %d failed, to be retried: %s\n", j.ID, attempt, lastErr)
		})
	switch {
	case err != nil:
		return err
	case !done:
		return app.ExitError{Code: exitFailure, Msg: fmt.Sprintf("msgx job: job %d %s not finished after %s; it goes on ('msgx jobs' shows it)", j.ID, j.Kind, *timeout)}
	case x.State == "DEAD":
		return app.ExitError{Code: exitFailure, Msg: fmt.Sprintf("msgx job: job %d %s DEAD after %d attempts: %s", j.ID, j.Kind, x.Attempts, cli.OrText(x.LastError, ""))}
	}
	fmt.Fprintln(e.Stdout, cli.OrText(x.Result, ""))
	return nil
}
