package simulate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"msgx/client"
	"msgx/internal/cli"
)

// RunOptions say what `msgx simulate` generates and where it sends it.
type RunOptions struct {
	Options         // the day
	Speed   float64 // PlayOptions.Speed
	// Server is the msgx the messages are posted to; Out, when set, is the directory they are
	// written to as numbered files instead.
	Server *client.Client
	Out    string
	// Replace lets the run post its schedule for a day the server already has flights on;
	// without it Run refuses (ErrDayTaken) before it sends anything.
	Replace bool
	// Warn, when set, is told what the caller should know before the run goes on (a day
	// whose schedule it replaces, a check it could not make).
	Warn func(string)
	// Progress, when set, is where the run shows how far it has got (msgx's stderr).
	Progress io.Writer
}

// DayTakenError is Run's refusal to replace a day's schedule the server already holds: the
// day's SCHD DNLD replaces the board, and the flights not in it are deleted.
type DayTakenError struct {
	Day     string
	Flights int
	Server  string
}

func (e *DayTakenError) Error() string {
	return fmt.Sprintf("%s already has %d flights on %s; this run's schedule (a SCHD DNLD for that day) would replace "+
		"them, and the flights not in it would be deleted. Pick another day with --day YYYY-MM-DD, run the server on a "+
		"fresh data directory (or database), or pass --replace to replace that day's schedule", e.Server, e.Flights, e.Day)
}

// checkDay refuses (DayTakenError) a run whose day the server already has flights on, unless
// o.Replace; then, or when the flights cannot be read (a token without the viewer role, an
// older server), it warns and goes on.
func checkDay(ctx context.Context, o RunOptions, day string) error {
	warn := o.Warn
	if warn == nil {
		warn = func(string) {}
	}
	var board struct {
		Count int `json:"count"`
	}
	if err := o.Server.Get(ctx, "/api/v1/flights?day="+day, &board); err != nil {
		warn(fmt.Sprintf("cannot tell whether %s already has flights on %s (%v): if it has, this run's schedule replaces them", o.Server.URL, day, err))
		return nil
	}
	if board.Count == 0 {
		return nil
	}
	taken := &DayTakenError{Day: day, Flights: board.Count, Server: o.Server.URL}
	if !o.Replace {
		return taken
	}
	warn(fmt.Sprintf("--replace: %s has %d flights on %s; this run's schedule replaces them (the flights not in it are deleted)", taken.Server, taken.Flights, day))
	return nil
}

// Report is what a Run did, as `msgx simulate` prints it (Write, or as JSON).
type Report struct {
	Seed     int64  `json:"seed"`
	Day      string `json:"day"`
	Timezone string `json:"timezone"`
	Server   string `json:"server,omitempty"`
	Out      string `json:"out,omitempty"`
	Summary
	Generated int      `json:"generated"` // messages generated (Messages counts those accepted)
	Failed    int      `json:"failed"`    // messages the server (or the disk) refused
	Errors    []string `json:"errors,omitempty"`
	FirstID   int64    `json:"first_id,omitempty"`
	LastID    int64    `json:"last_id,omitempty"`
	Seconds   float64  `json:"elapsed_s"`
	Stopped   bool     `json:"interrupted,omitempty"`

	problem string // Problem
}

// Run generates the day of o and plays it, paced by o.Speed, to o.Server's inbox (a 503 is
// retried for up to a minute, as the gateway does) or into files in o.Out, showing its
// progress on stderr; ten refusals in a row give up. It stops early when ctx ends. An error is
// returned when nothing could be played; a play that did not get everything through says so
// in the Report's Problem.
func Run(ctx context.Context, o RunOptions) (Report, error) {
	stream, err := Generate(o.Options)
	if err != nil {
		return Report{}, err
	}
	rep := Report{Seed: o.Seed, Day: o.Day.Format(time.DateOnly), Timezone: o.Loc.String(), Generated: len(stream.Messages)}
	var send func(ctx context.Context, i int, m Message) (int64, error)
	if o.Out != "" {
		rep.Out = o.Out
		if err := os.MkdirAll(o.Out, 0o755); err != nil {
			return rep, fmt.Errorf("create %s: %w", o.Out, err)
		}
		width := max(6, len(strconv.Itoa(len(stream.Messages))))
		send = func(_ context.Context, i int, m Message) (int64, error) {
			name := filepath.Join(o.Out, fmt.Sprintf("%0*d-%s.xml", width, i+1, m.Tag))
			return 0, os.WriteFile(name, m.Body, 0o644)
		}
	} else {
		c := o.Server
		rep.Server = c.URL
		// A server that does not answer at all is said at once, not after a minute of retries.
		resp, err := c.HTTP.Get(rep.Server + "/healthz")
		if err != nil {
			return rep, fmt.Errorf("cannot reach msgx at %s: %w", rep.Server, err)
		}
		resp.Body.Close()
		if err := checkDay(ctx, o, rep.Day); err != nil {
			return rep, err
		}
		send = func(ctx context.Context, _ int, m Message) (int64, error) { return c.SendRetrying(ctx, m.Body) }
	}
	var bar *cli.Progress // nil shows nothing
	if o.Progress != nil {
		bar = cli.NewProgress(o.Progress, "simulate", len(stream.Messages))
	}
	res, err := Play(ctx, stream, PlayOptions{Speed: o.Speed, Send: send, GiveUpAfter: 10,
		Progress: func(done int, m Message, _ error) {
			bar.Update(done, m.At.In(o.Loc).Format("15:04")+" "+m.Tag)
		}})
	bar.Finish()
	if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, ErrGaveUp) {
		return rep, err
	}
	rep.Stopped = err != nil
	rep.Summary = stream.Accepted(res).Summarize()
	rep.Failed, rep.Errors, rep.FirstID, rep.LastID = res.Failed, res.Errors, res.FirstID, res.LastID
	rep.Seconds = res.Elapsed.Seconds()
	switch {
	case errors.Is(err, ErrGaveUp):
		rep.problem = err.Error()
	case rep.Stopped:
		rep.problem = fmt.Sprintf("interrupted after %d of %d messages", res.Sent+res.Failed, len(stream.Messages))
	case res.Failed > 0:
		rep.problem = fmt.Sprintf("%d of %d messages not accepted (first: %s)", res.Failed, len(stream.Messages), res.Errors[0])
	}
	return rep, nil
}

// Problem says why the run did not get every message through ("" when it did): it gave up,
// was interrupted, or some messages were refused.
func (r Report) Problem() string { return r.problem }

// Write prints the report for a person.
func (r Report) Write(w io.Writer) {
	fmt.Fprintf(w, "simulated %s (%s), seed %d: %d flights (%d cancelled, %d diverted), %d messages\n",
		r.Day, r.Timezone, r.Seed, r.Flights, r.Cancelled, r.Diverted, r.Generated)
	switch {
	case r.Out != "":
		fmt.Fprintf(w, "wrote %d files to %s in %.1fs\n", r.Messages, r.Out, r.Seconds)
	case r.FirstID > 0:
		fmt.Fprintf(w, "posted %d to %s in %.1fs: ids %d to %d\n", r.Messages, r.Server, r.Seconds, r.FirstID, r.LastID)
	default:
		fmt.Fprintf(w, "posted %d to %s in %.1fs\n", r.Messages, r.Server, r.Seconds)
	}
	if r.Failed > 0 {
		fmt.Fprintf(w, "not accepted: %d (first error: %s)\n", r.Failed, r.Errors[0])
	}
	fmt.Fprintln(w, "expected final states of the messages accepted:")
	for _, st := range []string{"SUCCEEDED", "SKIPPED", "DEAD"} {
		fmt.Fprintf(w, "  %-10s %6d", st, r.Expected[st])
		if st == "DEAD" && len(r.DeadBy) > 0 {
			fmt.Fprintf(w, "  (%s)", countsText(r.DeadBy))
		}
		fmt.Fprintln(w)
	}
	if len(r.Faults) > 0 {
		fmt.Fprintf(w, "faults: %s\n", countsText(r.Faults))
	}
	fmt.Fprintf(w, "by type: %s\n", countsText(r.ByType))
}

// countsText writes counts as "A 3, B 2", largest first.
func countsText(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}
