package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"msgx/internal/client"
	"msgx/internal/config"
	sim "msgx/internal/simulate"
	"msgx/internal/suggest"
)

// simulateSummary is what simulate prints with --json.
type simulateSummary struct {
	Seed     int64  `json:"seed"`
	Day      string `json:"day"`
	Timezone string `json:"timezone"`
	Server   string `json:"server,omitempty"`
	Out      string `json:"out,omitempty"`
	sim.Summary
	Generated int      `json:"generated"` // messages generated (Messages counts those accepted)
	Failed    int      `json:"failed"`    // messages the server (or the disk) refused
	Errors    []string `json:"errors,omitempty"`
	FirstID   int64    `json:"first_id,omitempty"`
	LastID    int64    `json:"last_id,omitempty"`
	Seconds   float64  `json:"elapsed_s"`
	Stopped   bool     `json:"interrupted,omitempty"`
}

func simulateCmd(args []string) error {
	fs := newFlags("simulate")
	flights := fs.Int("flights", 100, "`N` flights in the day's schedule")
	speed := fs.Float64("speed", 0, "`X` times real time (60: an hour a minute); 0 sends as fast as possible")
	faults := fs.String("faults", "", "faults to mix in, comma-separated: `LIST` of malformed, orphan, unknown-styp, duplicate-seqn, or all")
	faultRate := fs.Float64("fault-rate", 0.01, "share `R` of the FLOPs each listed fault adds (at least one each)")
	seed := fs.Int64("seed", 0, "seed `S` of the generator (default: drawn from the clock and printed)")
	day := fs.String("day", "", "the flights' local `DATE` (YYYY-MM-DD; default today in the zone)")
	zone := fs.String("timezone", "", "the airport's `ZONE` (default sis.timezone: MSGX_SIS_TIMEZONE, else "+config.Default().SIS.Timezone+")")
	first := fs.String("first", "06:00", "local `HH:MM` of the first scheduled time")
	hours := fs.Float64("hours", 16, "`H` hours the scheduled times spread over")
	server := fs.String("server", "", "the msgx server: a `URL` or host:port")
	out := fs.String("out", "", "write the messages to numbered files in `DIR` instead of posting them")
	asJSON := fs.Bool("json", false, "print the summary as one JSON object")
	if err := fs.Parse(args); err != nil {
		return exitError{code: exitUsage}
	}
	usageErr := func(format string, a ...any) error {
		return exitError{code: exitUsage, msg: "msgx simulate: " + fmt.Sprintf(format, a...) + "\nRun 'msgx help simulate' for the flags and examples."}
	}
	if fs.NArg() > 0 {
		return usageErr("unexpected argument %q", fs.Arg(0))
	}
	if *flights < 1 || *speed < 0 || *hours <= 0 || *hours > 24 || *faultRate <= 0 || *faultRate > 0.5 {
		return usageErr("--flights must be at least 1, --speed not negative, --hours in (0, 24], --fault-rate in (0, 0.5]")
	}
	if *out != "" && *server != "" {
		return usageErr("--server and --out exclude each other")
	}
	fl, err := sim.ParseFaults(*faults)
	if err != nil {
		word := strings.TrimPrefix(strings.TrimSuffix(err.Error(), `"`), `unknown fault "`)
		return usageErr("%v%s; faults are %s, or all", err, suggest.DidYouMean(word, sim.FaultNames()), strings.Join(sim.FaultNames(), ", "))
	}
	if *zone == "" {
		*zone = os.Getenv(config.EnvName("sis.timezone"))
	}
	if *zone == "" {
		*zone = config.Default().SIS.Timezone
	}
	loc, err := time.LoadLocation(*zone)
	if err != nil {
		return usageErr("--timezone %q is not a known time zone", *zone)
	}
	d := time.Now().In(loc)
	if *day != "" {
		if d, err = time.ParseInLocation(time.DateOnly, *day, loc); err != nil {
			return usageErr("--day %q is not a date (YYYY-MM-DD)", *day)
		}
	}
	firstAt, err := time.Parse("15:04", *first)
	if err != nil {
		return usageErr("--first %q is not a time of day (HH:MM)", *first)
	}
	if !isFlagSet(fs, "seed") {
		*seed = time.Now().UnixNano() % 1_000_000
	}
	stream, err := sim.Generate(sim.Options{
		Flights: *flights, Day: d, Loc: loc, Seed: *seed, Faults: fl, FaultRate: *faultRate,
		First: time.Duration(firstAt.Hour())*time.Hour + time.Duration(firstAt.Minute())*time.Minute,
		Span:  time.Duration(*hours * float64(time.Hour)),
	})
	if err != nil {
		return err
	}
	sum := simulateSummary{Seed: *seed, Day: d.Format(time.DateOnly), Timezone: loc.String(), Generated: len(stream.Messages)}
	var send func(ctx context.Context, i int, m sim.Message) (int64, error)
	if *out != "" {
		sum.Out = *out
		if err := os.MkdirAll(*out, 0o755); err != nil {
			return fmt.Errorf("create %s: %w", *out, err)
		}
		width := max(6, len(strconv.Itoa(len(stream.Messages))))
		send = func(_ context.Context, i int, m sim.Message) (int64, error) {
			name := filepath.Join(*out, fmt.Sprintf("%0*d-%s.xml", width, i+1, m.Tag))
			return 0, os.WriteFile(name, m.Body, 0o644)
		}
	} else {
		c := srv(*server)
		sum.Server = c.URL
		// A server that does not answer at all is said at once, not after a minute of retries.
		resp, err := httpClient.Get(sum.Server + "/healthz")
		if err != nil {
			return fmt.Errorf("cannot reach msgx at %s: %w", sum.Server, err)
		}
		resp.Body.Close()
		send = func(ctx context.Context, _ int, m sim.Message) (int64, error) { return c.SendRetrying(ctx, m.Body) }
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	bar := client.NewProgress("simulate", len(stream.Messages))
	res, err := sim.Play(ctx, stream, sim.PlayOptions{Speed: *speed, Send: send, GiveUpAfter: 10,
		Progress: func(done int, m sim.Message, _ error) {
			bar.Update(done, m.At.In(loc).Format("15:04")+" "+m.Tag)
		}})
	bar.Finish()
	if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, sim.ErrGaveUp) {
		return err
	}
	gaveUp := errors.Is(err, sim.ErrGaveUp)
	sum.Stopped = err != nil
	sum.Summary = stream.Accepted(res).Summarize()
	sum.Failed, sum.Errors, sum.FirstID, sum.LastID = res.Failed, res.Errors, res.FirstID, res.LastID
	sum.Seconds = res.Elapsed.Seconds()
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		enc.Encode(sum)
	} else {
		printSimulateSummary(os.Stdout, sum)
	}
	switch {
	case gaveUp:
		return exitError{code: exitFailure, msg: "msgx simulate: " + err.Error()}
	case sum.Stopped:
		return exitError{code: exitFailure, msg: fmt.Sprintf("msgx simulate: interrupted after %d of %d messages", res.Sent+res.Failed, len(stream.Messages))}
	case res.Failed > 0:
		return exitError{code: exitFailure, msg: fmt.Sprintf("msgx simulate: %d of %d messages not accepted (first: %s)", res.Failed, len(stream.Messages), res.Errors[0])}
	}
	return nil
}

func isFlagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func printSimulateSummary(w io.Writer, s simulateSummary) {
	fmt.Fprintf(w, "simulated %s (%s), seed %d: %d flights (%d cancelled, %d diverted), %d messages\n",
		s.Day, s.Timezone, s.Seed, s.Flights, s.Cancelled, s.Diverted, s.Generated)
	switch {
	case s.Out != "":
		fmt.Fprintf(w, "wrote %d files to %s in %.1fs\n", s.Messages, s.Out, s.Seconds)
	case s.FirstID > 0:
		fmt.Fprintf(w, "posted %d to %s in %.1fs: ids %d to %d\n", s.Messages, s.Server, s.Seconds, s.FirstID, s.LastID)
	default:
		fmt.Fprintf(w, "posted %d to %s in %.1fs\n", s.Messages, s.Server, s.Seconds)
	}
	if s.Failed > 0 {
		fmt.Fprintf(w, "not accepted: %d (first error: %s)\n", s.Failed, s.Errors[0])
	}
	fmt.Fprintln(w, "expected final states of the messages accepted:")
	for _, st := range []string{"SUCCEEDED", "SKIPPED", "DEAD"} {
		fmt.Fprintf(w, "  %-10s %6d", st, s.Expected[st])
		if st == "DEAD" && len(s.DeadBy) > 0 {
			fmt.Fprintf(w, "  (%s)", countsText(s.DeadBy))
		}
		fmt.Fprintln(w)
	}
	if len(s.Faults) > 0 {
		fmt.Fprintf(w, "faults: %s\n", countsText(s.Faults))
	}
	fmt.Fprintf(w, "by type: %s\n", countsText(s.ByType))
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
