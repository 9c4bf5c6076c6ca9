package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"msgx/client"
)

// The msgx command's text for the operators' answers: events, a flight's changes, replays,
// acknowledgements, pauses, jobs, job kinds and the audit log.

// WriteEvents writes outbox events as an aligned table: event, target, state, attempts,
// message, flight, and the payload's size (where to fetch one the list elides) or the last
// error.
func WriteEvents(w io.Writer, events []client.Event) {
	tw := Table(w)
	fmt.Fprintln(tw, "event\ttarget\tstate\tattempts\tmessage\tflight\tpayload / last error")
	for _, e := range events {
		text := fmt.Sprintf("%d bytes", e.PayloadBytes)
		if e.PayloadElided {
			text += " (elided: GET /api/v1/events/" + strconv.FormatInt(e.EventID, 10) + "/payload?target=" + e.Target + ")"
		}
		if e.LastError != nil {
			text = OrText(e.ErrorClass, "?") + ": " + *e.LastError
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%d\t%s\t%s\n", e.EventID, e.Target, e.State, e.Attempts, e.MsgID, OrText(e.FlightKey, "-"), OneLine(text, 120))
	}
	tw.Flush()
}

// WriteFlightChange writes one change of a flight: when (in z), the message and operation,
// then each field it changed (in name order) with its old and new value (WriteChange).
func WriteFlightChange(w io.Writer, c client.FlightChange, z Zone) {
	fmt.Fprintf(w, "%s  message %d %s  %s (event %d)\n", z.Cell(c.At), c.MsgID, c.TypeTag, c.Op, c.EventID)
	changes, _ := c.Fields() // FlightHistory passes on only changes that decode
	fields := make([]string, 0, len(changes))
	for k := range changes {
		fields = append(fields, k)
	}
	sort.Strings(fields)
	for _, k := range fields {
		WriteChange(w, k, string(changes[k].Old), string(changes[k].New))
	}
}

// WriteReplay writes what a replay of messages (or, with events, of dead events) moved: the
// counts, then the ids moved, or for a dry run (dryRun) what would move as a table
// (WritePreview); an events replay's note last.
func WriteReplay(w io.Writer, res client.ReplayAnswer, events, dryRun bool) {
	what, moved := "messages", "moved %d to PENDING, skipped %d\n"
	if events {
		what, moved = "dead events", "moved %d dead events to PENDING, skipped %d\n"
	}
	if dryRun {
		fmt.Fprintf(w, "dry run: would move %d %s to PENDING, skip %d\n", res.Moved, what, res.Skipped)
		WritePreview(w, res, events)
	} else {
		fmt.Fprintf(w, moved, res.Moved, res.Skipped)
	}
	if !events {
		if !dryRun {
			for _, id := range res.IDs {
				fmt.Fprintln(w, id)
			}
		}
		return
	}
	if res.Note != "" {
		fmt.Fprintln(w, "note: "+res.Note)
	}
}

// WriteAck writes what an acknowledgement of dead letters of kind ("message", "event") did:
// the ids acknowledged, those that already were, and those left alone (not DEAD).
func WriteAck(w io.Writer, kind string, res client.AckResult) {
	fmt.Fprintf(w, "acknowledged %d dead %s(s) %v", len(res.Acked), kind, res.Acked)
	if len(res.Already) > 0 {
		fmt.Fprintf(w, "; already acknowledged: %v", res.Already)
	}
	fmt.Fprintln(w)
	if len(res.NotDead) > 0 {
		fmt.Fprintf(w, "not DEAD (unknown or replayed), left alone: %v\n", res.NotDead)
	}
}

// WritePause writes how what ("the pump", "target KAFKA_FLOP") stands after a pause or a
// resume: paused by whom since when (in the zone zone gives; asked only then) and why, or
// running, and whether it already was.
func WritePause(w io.Writer, what string, res client.PauseAnswer, zone func() Zone) {
	if res.Paused && res.Pause != nil {
		fmt.Fprintf(w, "%s paused by %s since %s", what, res.Pause.By, zone().Time(res.Pause.At))
		if res.Pause.Reason != "" {
			fmt.Fprintf(w, ": %s", res.Pause.Reason)
		}
		if !res.Changed {
			fmt.Fprint(w, " (it already was)")
		}
		fmt.Fprintln(w)
		return
	}
	fmt.Fprintf(w, "%s running", what)
	if !res.Changed {
		fmt.Fprint(w, " (it was not paused)")
	}
	fmt.Fprintln(w)
}

// WriteJobs writes jobs as an aligned table (job, kind, state, after, created in z, and the
// result, last error or what it is doing), "no jobs" for none, and more, the flags of the
// next page, when there is one.
func WriteJobs(w io.Writer, jobs []client.Job, more string, z Zone) {
	if len(jobs) == 0 {
		fmt.Fprintln(w, "no jobs")
		return
	}
	tw := Table(w)
	fmt.Fprintf(tw, "job\tkind\tstate\tafter\t%s\tresult / last error / doing\n", z.Head("created"))
	for _, j := range jobs {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\t%s\n", j.ID, j.Kind, JobState(j), j.AfterMsgID, z.Cell(j.CreatedAt), OneLine(JobText(j), 100))
	}
	tw.Flush()
	if more != "" {
		fmt.Fprintln(w, "more: "+more)
	}
}

// WriteKinds writes the job kinds as a table: whether each can run in the server's
// configuration, and why not.
func WriteKinds(w io.Writer, kinds []client.JobKind) error {
	tw := Table(w)
	fmt.Fprintln(tw, "kind\trunnable\twhy not")
	for _, k := range kinds {
		runnable := "yes"
		if !k.Runnable {
			runnable = "no"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", k.Kind, runnable, OrDash(k.Reason))
	}
	return tw.Flush()
}

// WriteAudit writes a page of the audit log as an aligned table: id, when (in z), actor,
// role, action, subject and detail.
func WriteAudit(w io.Writer, page client.AuditPage, z Zone) {
	tw := Table(w)
	fmt.Fprintf(tw, "id\t%s\tactor\trole\taction\tsubject\tdetail\n", z.Head("at"))
	for _, a := range page.Audit {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", a.ID, z.Cell(a.At), a.Actor, a.Role, a.Action, OrDash(a.Subject), OneLine(a.Detail, 100))
	}
	tw.Flush()
}

// WriteMessages writes messages a line each (WriteMessageLine), or with asJSON a JSON object
// a line.
func WriteMessages(w io.Writer, ms []client.Message, asJSON bool) {
	for _, m := range ms {
		if asJSON {
			b, _ := json.Marshal(m)
			w.Write(append(b, '\n'))
		} else {
			WriteMessageLine(w, m)
		}
	}
}

// FollowMessages is msgx messages --follow: like tail -f, the newest limit messages (capped
// as CapLimit says) the filters (names and values, as WithFilters takes them) select, oldest
// of them first, then every message taken since, newest at the bottom (WriteMessages), until
// Ctrl-C (client.FollowMessages asks the server every half second); stderr says when the
// server stops answering and when it answers again.
func (e *Env) FollowMessages(ctx context.Context, c *client.Client, limit int, asJSON bool, filters ...string) error {
	limit = e.CapLimit("messages", limit)
	q := url.Values{}
	WithFilters(q, filters...)
	ctx, stop := UntilInterrupt(ctx)
	defer stop()
	if !asJSON {
		WriteMessageHeader(e.Stdout)
	}
	return c.FollowMessages(ctx, q, limit, func(ms []client.Message) { WriteMessages(e.Stdout, ms, asJSON) }, func(err error) {
		if err != nil {
			fmt.Fprintf(e.Stderr, "%s: %v (asking again every %v)\n", e.Program.Name, err, client.FollowPoll)
			return
		}
		fmt.Fprintln(e.Stderr, e.Program.Name+": the server answers again")
	})
}

// BoardPage is the text of msgx board: a line naming the day and the zones, the board's
// table (WriteBoard, filtered by f; times in the airport's zone, or UTC with utc), and how
// many flights it shows, then for a board as of a past time what it was rebuilt from and its
// warnings, else the time now.
func BoardPage(b client.Board, f BoardFilter, utc bool, statuses map[string]string, now time.Time) (string, error) {
	z := UTC
	if !utc {
		loc, err := time.LoadLocation(b.Timezone)
		if err != nil {
			return "", fmt.Errorf("the board's zone %q is not known on this machine: %w", b.Timezone, err)
		}
		z = Zone{Loc: loc}
	}
	var out strings.Builder
	fmt.Fprintf(&out, "flights of %s (airport day, %s)", b.Day, b.Timezone)
	if z.Name() != b.Timezone {
		fmt.Fprintf(&out, ", times in %s", z.Name())
	}
	out.WriteString("\n")
	n := WriteBoard(&out, b, f, z, statuses)
	fmt.Fprintf(&out, "%d of %d flights", n, b.Count)
	if n < b.Count {
		out.WriteString(" (filtered)")
	}
	if b.AsOf == nil {
		fmt.Fprintf(&out, "; at %s\n", z.Time(now))
		return out.String(), nil
	}
	fmt.Fprintf(&out, "; as it stood at %s, rebuilt from %d applied messages", z.Time(*b.AsOf), b.Messages)
	if b.HistoryFrom != nil {
		fmt.Fprintf(&out, " (history kept from %s)", z.Time(*b.HistoryFrom))
	}
	out.WriteString("\n")
	for _, w := range b.Warnings {
		fmt.Fprintf(&out, "warning: %s\n", w)
	}
	return out.String(), nil
}
