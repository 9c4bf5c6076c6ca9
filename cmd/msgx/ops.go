package main

// The operators' commands: events, flight, park, pause, resume, jobs, audit and token. They
// talk to the ops API (docs/api.md) with the bearer token of --token or MSGX_TOKEN.

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"msgx/internal/app"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"msgx/client"
	"msgx/internal/api"
	"msgx/internal/cli"
	"msgx/internal/jobs/jobkind"
	"msgx/internal/suggest"
)

func printHistory(server string, id int64, z cli.Zone) error {
	ctx := context.Background()
	history, err := srv(server).MessageHistory(ctx, id)
	if err != nil {
		return err
	}
	cli.WriteHistory(os.Stdout, history, z)
	return nil
}

// clientFlags adds --server and --token and returns the server flag.
func clientFlags(fs *flag.FlagSet) *string {
	s := fs.String("server", "", "msgx server URL (default $MSGX_SERVER, else the local http.addr)")
	tokenFlag(fs)
	return s
}

// events lists outbox events.
func events(args []string) error {
	fs := prog.Flags("events")
	server := clientFlags(fs)
	flid := fs.Int64("flid", 0, "only events of this flight")
	tgt := fs.String("target", "", "only events of this target")
	state := fs.String("state", "", "only events in this state (PENDING, SENT, DEAD)")
	msgID := fs.Int64("msg-id", 0, "only events of this message")
	page := listFlags(fs, "events", 50)
	asJSON := fs.Bool("json", false, "print the raw JSON")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 {
		return app.ExitError{Code: exitUsage, Msg: "usage: msgx events [--server URL] [--flid N] [--target T] [--state S] [--msg-id N] [--order desc|asc] [--before ID] [--after ID] [--limit N] [--json]"}
	}
	var err error
	if *state, err = checkChoice("events", "state", *state, eventStates); err != nil {
		return err
	}
	if err := checkTarget("events", srv(*server), *tgt); err != nil {
		return err
	}
	pq, err := page.query("events")
	if err != nil {
		return err
	}
	q := cli.WithFilters(pq, "flid", cli.NonZero(*flid), "msg_id", cli.NonZero(*msgID), "target", *tgt, "state", *state)
	var out client.EventList
	if printed, err := show(srv(*server), "/api/v1/events?"+q, *asJSON, &out); printed || err != nil {
		return err
	}
	tw := cli.Table(os.Stdout)
	fmt.Fprintln(tw, "event\ttarget\tstate\tattempts\tmessage\tflight\tpayload / last error")
	for _, e := range out.Events {
		text := fmt.Sprintf("%d bytes", e.PayloadBytes)
		if e.PayloadElided {
			text += " (elided: msgx event payload via GET /api/v1/events/" + strconv.FormatInt(e.EventID, 10) + "/payload)"
		}
		if e.LastError != nil {
			text = cli.OrText(e.ErrorClass, "?") + ": " + *e.LastError
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%d\t%s\t%s\n", e.EventID, e.Target, e.State, e.Attempts, e.MsgID, cli.OrText(e.FlightKey, "-"), cli.OneLine(text, 120))
	}
	tw.Flush()
	page.more(out.Page)
	return nil
}

// flightCmd shows a flight's record, or with --history every change of it.
func flightCmd(args []string) error {
	ctx := context.Background()
	fs := prog.Flags("flight")
	server := clientFlags(fs)
	history := fs.Bool("history", false, "print every change of the flight: the message, and each field's old and new value")
	asJSON := fs.Bool("json", false, "print the raw JSON (times in UTC, as stored)")
	utcFlag(fs)
	if err := fs.Parse(cli.Reorder(fs, args)); err != nil || fs.NArg() != 1 {
		return app.ExitError{Code: exitUsage, Msg: "usage: msgx flight [--server URL] [--history] [--utc] [--json] FLID"}
	}
	flid, err := strconv.ParseInt(fs.Arg(0), 10, 64)
	if err != nil || flid <= 0 {
		return app.ExitError{Code: exitUsage, Msg: fmt.Sprintf("msgx flight: %q is not a FLID", fs.Arg(0))}
	}
	if !*history {
		return printFlight(srv(*server), flid, *asJSON)
	}
	z := zoneOf(srv(*server))
	n := 0
	err = srv(*server).FlightHistory(ctx, flid, func(c client.FlightChange) {
		if n == 0 {
			fmt.Printf("flight %d: every change (times %s)\n", flid, z.Name())
		}
		n++
		fmt.Printf("%s  message %d %s  %s (event %d)\n", z.Cell(c.At), c.MsgID, c.TypeTag, c.Op, c.EventID)
		fields := make([]string, 0, len(c.Changes))
		for k := range c.Changes {
			fields = append(fields, k)
		}
		sort.Strings(fields)
		for _, k := range fields {
			cli.WriteChange(os.Stdout, k, string(c.Changes[k].Old), string(c.Changes[k].New))
		}
	})
	if err != nil {
		return err
	}
	if n == 0 {
		fmt.Printf("flight %d: no recorded changes\n", flid)
	}
	return nil
}

// printFlight prints flight flid's record as labelled rows in the command's zone, or with
// asJSON the API's answer as it is.
func printFlight(c *client.Client, flid int64, asJSON bool) error {
	ctx := context.Background()
	rec, err := c.Flight(ctx, flid)
	if err != nil {
		return err
	}
	if asJSON {
		return printJSON(rec)
	}
	var e client.FlightEntry
	if err := json.Unmarshal(rec, &e); err != nil {
		return fmt.Errorf("flight %d: the answer is not a flight: %w", flid, err)
	}
	cli.WriteFlight(os.Stdout, e, zoneOf(c))
	return nil
}

// park sets a message aside: DEAD with class PARKED, replayable.
func park(args []string) error {
	ctx := context.Background()
	fs := prog.Flags("park")
	server := clientFlags(fs)
	reason := fs.String("reason", "", "why (required; kept in the message's last error and the audit log)")
	if err := fs.Parse(cli.Reorder(fs, args)); err != nil || fs.NArg() != 1 || strings.TrimSpace(*reason) == "" {
		return app.ExitError{Code: exitUsage, Msg: "usage: msgx park [--server URL] --reason TEXT ID"}
	}
	id, err := strconv.ParseInt(fs.Arg(0), 10, 64)
	if err != nil || id <= 0 {
		return app.ExitError{Code: exitUsage, Msg: fmt.Sprintf("msgx park: %q is not a message id", fs.Arg(0))}
	}
	res, err := srv(*server).Park(ctx, id, *reason)
	if err != nil {
		return err
	}
	fmt.Printf("message %d: %s → %s %s (replay with: msgx replay --id %d)\n", id, res.From, res.State, res.Class, id)
	return nil
}

// ackCmd acknowledges dead letters: DEAD messages (IDs), or DEAD events with --events; kept
// for audit, they leave the counts that call for attention.
func ackCmd(args []string) error {
	ctx := context.Background()
	fs := prog.Flags("ack")
	server := clientFlags(fs)
	events := fs.Bool("events", false, "the ids are DEAD events' ids (default: DEAD messages' ids)")
	note := fs.String("note", "", "why (kept with the acknowledgement and in the audit log)")
	usage := app.ExitError{Code: exitUsage, Msg: "usage: msgx ack [--server URL] [--events] [--note TEXT] ID [ID…]"}
	if err := fs.Parse(cli.Reorder(fs, args)); err != nil || fs.NArg() == 0 {
		return usage
	}
	ids := make([]int64, 0, fs.NArg())
	for _, a := range fs.Args() {
		for _, f := range strings.Split(a, ",") {
			id, err := strconv.ParseInt(strings.TrimSpace(f), 10, 64)
			if err != nil || id <= 0 {
				return app.ExitError{Code: exitUsage, Msg: fmt.Sprintf("msgx ack: %q is not an id", f)}
			}
			ids = append(ids, id)
		}
	}
	if len(ids) > api.MaxAckIDs {
		return app.ExitError{Code: exitUsage, Msg: fmt.Sprintf("msgx ack: %d ids; at most %d at a time", len(ids), api.MaxAckIDs)}
	}
	kind := "message"
	if *events {
		kind = "event"
	}
	res, err := srv(*server).AckDead(ctx, kind, ids, *note)
	if err != nil {
		return err
	}
	fmt.Printf("acknowledged %d dead %s(s) %v", len(res.Acked), kind, res.Acked)
	if len(res.Already) > 0 {
		fmt.Printf("; already acknowledged: %v", res.Already)
	}
	fmt.Println()
	if len(res.NotDead) > 0 {
		fmt.Printf("not DEAD (unknown or replayed), left alone: %v\n", res.NotDead)
	}
	return nil
}

// pauseCmd pauses (name "pause") or resumes ("resume") the pump, or one target with --target.
func pauseCmd(args []string, name string) error {
	ctx := context.Background()
	fs := prog.Flags(name)
	server := clientFlags(fs)
	tgt := fs.String("target", "", "pause or resume this delivery target instead of the pump")
	reason := fs.String("reason", "", "why (kept with the pause and in the audit log)")
	utcFlag(fs)
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 {
		return app.ExitError{Code: exitUsage, Msg: "usage: msgx " + name + " [--server URL] [--target T] [--reason TEXT]"}
	}
	if err := checkTarget(name, srv(*server), *tgt); err != nil {
		return err
	}
	res, err := srv(*server).SetPaused(ctx, name == "pause", *tgt, *reason)
	if err != nil {
		return err
	}
	what := "the pump"
	if *tgt != "" {
		what = "target " + *tgt
	}
	switch {
	case res.Paused && res.Pause != nil:
		fmt.Printf("%s paused by %s since %s", what, res.Pause.By, zoneOf(srv(*server)).Time(res.Pause.At))
		if res.Pause.Reason != "" {
			fmt.Printf(": %s", res.Pause.Reason)
		}
		if !res.Changed {
			fmt.Print(" (it already was)")
		}
		fmt.Println()
	default:
		fmt.Printf("%s running", what)
		if !res.Changed {
			fmt.Print(" (it was not paused)")
		}
		fmt.Println()
	}
	return nil
}

// jobs lists the pump jobs (any role), shows one with its progress (`msgx jobs ID`), lists
// the kinds and whether each can run here (--kinds), or starts one with --start KIND (admin).
func jobsCmd(args []string) error {
	ctx := context.Background()
	fs := prog.Flags("jobs")
	server := clientFlags(fs)
	start := fs.String("start", "", "enqueue a job of this `KIND` (ARCHIVE)")
	kinds := fs.Bool("kinds", false, "list the job kinds and whether each can run in the server's configuration, and why not")
	asJSON := fs.Bool("json", false, "print the raw JSON")
	page := listFlags(fs, "jobs", 100)
	utcFlag(fs)
	usage := app.ExitError{Code: exitUsage, Msg: "usage: msgx jobs [--server URL] [--start KIND | --kinds] [--order desc|asc] [--before ID] [--after ID] [--limit N] [--utc] [--json] [ID]"}
	if err := fs.Parse(cli.Reorder(fs, args)); err != nil || fs.NArg() > 1 {
		return usage
	}
	c := srv(*server)
	switch {
	case *kinds:
		return printKinds(c, *asJSON)
	case *start != "":
		kind, err := jobKind("jobs", *start)
		if err != nil {
			return err
		}
		j, err := c.StartJob(ctx, kind)
		if err != nil {
			return jobRefused("jobs", kind, err)
		}
		fmt.Printf("job %d %s enqueued: runs after message %d\n", j.ID, j.Kind, j.AfterMsgID)
		return nil
	case fs.NArg() == 1:
		id, err := strconv.ParseInt(fs.Arg(0), 10, 64)
		if err != nil || id <= 0 {
			return app.ExitError{Code: exitUsage, Msg: fmt.Sprintf("msgx jobs: %q is not a job id", fs.Arg(0))}
		}
		return showJob(c, id, *asJSON)
	}
	if _, err := page.query("jobs"); err != nil {
		return err
	}
	var out client.JobList
	if printed, err := show(c, "/api/v1/jobs", *asJSON, &out); printed || err != nil {
		return err
	}
	// The server answers its newest 100 jobs; the paging flags choose among them.
	list, more := pageJobs(out.Jobs, page)
	if len(list) == 0 {
		fmt.Println("no jobs")
		return nil
	}
	z := zoneOf(c)
	tw := cli.Table(os.Stdout)
	fmt.Fprintf(tw, "job\tkind\tstate\tafter\t%s\tresult / last error / doing\n", z.Head("created"))
	for _, j := range list {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\t%s\n", j.ID, j.Kind, cli.JobState(j), j.AfterMsgID, z.Cell(j.CreatedAt), cli.OneLine(cli.JobText(j), 100))
	}
	tw.Flush()
	if more != "" {
		fmt.Println("more: " + more)
	}
	return nil
}

// pageJobs picks from jobs (newest first) those of the listing's page: ids between --after
// and --before, in --order, at most --limit; more is the flag of the page after it ("").
func pageJobs(jobs []client.Job, page *listing) (out []client.Job, more string) {
	asc := strings.EqualFold(*page.order, "asc")
	for _, j := range jobs {
		if (*page.after > 0 && j.ID <= *page.after) || (*page.before > 0 && j.ID >= *page.before) {
			continue
		}
		out = append(out, j)
	}
	if asc {
		slices.Reverse(out)
	}
	if len(out) > *page.limit {
		if asc {
			more = fmt.Sprintf("--after %d --order asc", out[*page.limit-1].ID)
		} else {
			more = fmt.Sprintf("--before %d", out[*page.limit-1].ID)
		}
		out = out[:*page.limit]
	}
	return out, more
}

// printKinds prints every job kind, whether the server can run it, and why not.
func printKinds(c *client.Client, asJSON bool) error {
	var out struct {
		Kinds []client.JobKind `json:"kinds"`
	}
	if printed, err := show(c, "/api/v1/jobs/kinds", asJSON, &out); printed || err != nil {
		return err
	}
	tw := cli.Table(os.Stdout)
	fmt.Fprintln(tw, "kind\trunnable\twhy not")
	for _, k := range out.Kinds {
		runnable := "yes"
		if !k.Runnable {
			runnable = "no"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", k.Kind, runnable, cli.OrDash(k.Reason))
	}
	return tw.Flush()
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
func showJob(c *client.Client, id int64, asJSON bool) error {
	var j client.Job
	if printed, err := show(c, fmt.Sprintf("/api/v1/jobs/%d", id), asJSON, &j); printed || err != nil {
		return err
	}
	cli.WriteJob(os.Stdout, j, zoneOf(c))
	return nil
}

// jobKind returns kind in upper case when it is a job kind, else a usage error that suggests
// the closest one.
func jobKind(cmd, kind string) (string, error) {
	k := strings.ToUpper(strings.TrimSpace(kind))
	if slices.Contains(jobkind.Kinds, k) {
		return k, nil
	}
	return "", app.ExitError{Code: exitUsage, Msg: fmt.Sprintf("msgx %s: unknown job kind %q%s; the kinds are %s",
		cmd, kind, suggest.DidYouMean(k, jobkind.Kinds), strings.Join(jobkind.Kinds, ", "))}
}

// auditCmd lists the audit log (admin).
func auditCmd(args []string) error {
	ctx := context.Background()
	fs := prog.Flags("audit")
	server := clientFlags(fs)
	page := listFlags(fs, "entries", 100)
	utcFlag(fs)
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 {
		return app.ExitError{Code: exitUsage, Msg: "usage: msgx audit [--server URL] [--order desc|asc] [--before ID] [--after ID] [--limit N] [--utc]"}
	}
	q, err := page.query("audit")
	if err != nil {
		return err
	}
	c := srv(*server)
	out, err := c.Audit(ctx, q)
	if err != nil {
		return err
	}
	z := zoneOf(c)
	tw := cli.Table(os.Stdout)
	fmt.Fprintf(tw, "id\t%s\tactor\trole\taction\tsubject\tdetail\n", z.Head("at"))
	for _, a := range out.Audit {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", a.ID, z.Cell(a.At), a.Actor, a.Role, a.Action, cli.OrDash(a.Subject), cli.OneLine(a.Detail, 100))
	}
	tw.Flush()
	page.more(out.Page)
	return nil
}

// token prints the configured form of a token secret (hash) or makes a new secret (new).
func token(args []string) error {
	var secret string
	switch {
	case len(args) == 2 && args[0] == "hash":
		if secret = args[1]; len(secret) < 16 {
			return app.ExitError{Code: exitUsage, Msg: "msgx token hash: a token must be a random secret of at least 16 characters (msgx token new makes one); SHA-256 protects only high-entropy secrets"}
		}
	case len(args) == 1 && args[0] == "new":
		secret = api.NewTokenSecret()
		fmt.Printf("secret (give it to its holder; msgx keeps only the hash): %s\n", secret)
	default:
		return app.ExitError{Code: exitUsage, Msg: "usage: msgx token hash SECRET | msgx token new"}
	}
	fmt.Println("# auth.tokens entry: {name: NAME, role: viewer|operator|admin, hash: <the line below>}")
	fmt.Println(api.HashToken(secret))
	return nil
}

// jobCmd is `msgx job run KIND`: it enqueues a pump job, follows it (what it is doing, from
// the status's job section, on stderr) and ends when it is DONE (its result on stdout, exit
// 0) or DEAD (its last error, exit 1). A failed attempt that will be retried is told and
// waited for. --no-wait only enqueues.
func jobCmd(args []string) error {
	ctx := context.Background()
	fs := prog.Flags("job")
	server := clientFlags(fs)
	noWait := fs.Bool("no-wait", false, "enqueue the job and return")
	timeout := fs.Duration("timeout", time.Hour, "give up waiting after this long (the job goes on)")
	params := jobParamFlags(fs)
	usage := app.ExitError{Code: exitUsage, Msg: "usage: msgx job [--server URL] [--no-wait] [--timeout D] run KIND [--prune] [--flid N] [--day YYYY-MM-DD] [--params S]"}
	// The flags may come before or after "run KIND".
	if err := fs.Parse(cli.Reorder(fs, args)); err != nil || fs.NArg() != 2 || fs.Arg(0) != "run" {
		return usage
	}
	kind, err := jobKind("job", fs.Arg(1))
	if err != nil {
		return err
	}
	c := srv(*server)
	j, err := c.StartJobWith(ctx, kind, params())
	if err != nil {
		return jobRefused("job", kind, err)
	}
	fmt.Fprintf(os.Stderr, "job %d %s enqueued: runs after message %d\n", j.ID, j.Kind, j.AfterMsgID)
	if *noWait {
		fmt.Println(j.ID)
		return nil
	}
	x, done, err := c.FollowJob(ctx, j.ID, *timeout,
		func(doing string) { fmt.Fprintf(os.Stderr, "job %d: %s\n", j.ID, doing) },
		func(attempt int, e string) {
			fmt.Fprintf(os.Stderr, "job %d: attempt %d failed, to be retried: %s\n", j.ID, attempt, e)
		})
	switch {
	case err != nil:
		return err
	case !done:
		return app.ExitError{Code: exitFailure, Msg: fmt.Sprintf("msgx job: job %d %s not finished after %s; it goes on ('msgx jobs' shows it)", j.ID, j.Kind, *timeout)}
	case x.State == "DEAD":
		return app.ExitError{Code: exitFailure, Msg: fmt.Sprintf("msgx job: job %d %s DEAD after %d attempts: %s", j.ID, j.Kind, x.Attempts, cli.OrText(x.LastError, ""))}
	}
	fmt.Println(cli.OrText(x.Result, ""))
	return nil
}
