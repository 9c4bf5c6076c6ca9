package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"msgx/internal/app"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"msgx/internal/cli"
	"msgx/internal/config"
	sim "msgx/internal/simulate"
	"msgx/internal/suggest"
)

func simulateCmd(ctx context.Context, e *cli.Env, args []string) error {
	fs := e.Flags("simulate")
	flights := fs.Int("flights", 100, "`N` flights in the day's schedule")
	speed := fs.Float64("speed", 0, "`X` times real time (60: an hour a minute); 0 sends as fast as possible")
	faults := fs.String("faults", "", "faults to mix in, comma-separated: `LIST` of malformed, orphan, unknown-styp, duplicate-seqn, or all")
	faultRate := fs.Float64("fault-rate", 0.01, "share `R` of the FLOPs each listed fault adds (at least one each)")
	seed := fs.Int64("seed", 0, "seed `S` of the generator (default: drawn from the clock and printed)")
	day := fs.String("day", "", "the flights' local `DATE` (YYYY-MM-DD; default today in the zone)")
	zone := fs.String("timezone", "", "the airport's `ZONE` (default sis.timezone: MSGX_SIS_TIMEZONE, else "+config.Default().SIS.Timezone+")")
	first := fs.String("first", "06:00", "local `HH:MM` of the first scheduled time")
	hours := fs.Float64("hours", 16, "`H` hours the scheduled times spread over")
	r := e.RemoteFlags(fs, cli.ServerUsage, false)
	out := fs.String("out", "", "write the messages to numbered files in `DIR` instead of posting them")
	asJSON := fs.Bool("json", false, "print the summary as one JSON object")
	replace := fs.Bool("replace", false, "post the schedule even when the server already has flights on that day (they are replaced)")
	if err := fs.Parse(args); err != nil {
		return cli.ErrUsage
	}
	usageErr := func(format string, a ...any) error {
		return cli.UsageError("msgx simulate: " + fmt.Sprintf(format, a...) + "\nRun 'msgx help simulate' for the flags and examples.")
	}
	if fs.NArg() > 0 {
		return usageErr("unexpected argument %q", fs.Arg(0))
	}
	if *flights < 1 || *speed < 0 || *hours <= 0 || *hours > 24 || *faultRate <= 0 || *faultRate > 0.5 {
		return usageErr("--flights must be at least 1, --speed not negative, --hours in (0, 24], --fault-rate in (0, 0.5]")
	}
	if *out != "" && r.Server() {
		return usageErr("--server and --out exclude each other")
	}
	fl, err := sim.ParseFaults(*faults)
	if err != nil {
		word := strings.TrimPrefix(strings.TrimSuffix(err.Error(), `"`), `unknown fault "`)
		return usageErr("%v%s; faults are %s, or all", err, suggest.DidYouMean(word, sim.FaultNames()), strings.Join(sim.FaultNames(), ", "))
	}
	d, loc, problem := simulateDay(e, *zone, *day)
	if problem != "" {
		return usageErr("%s", problem)
	}
	firstAt, err := time.Parse("15:04", *first)
	if err != nil {
		return usageErr("--first %q is not a time of day (HH:MM)", *first)
	}
	if !isFlagSet(fs, "seed") {
		*seed = time.Now().UnixNano() % 1_000_000
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	o := sim.RunOptions{Speed: *speed, Out: *out, Options: sim.Options{
		Flights: *flights, Day: d, Loc: loc, Seed: *seed, Faults: fl, FaultRate: *faultRate,
		First: time.Duration(firstAt.Hour())*time.Hour + time.Duration(firstAt.Minute())*time.Minute,
		Span:  time.Duration(*hours * float64(time.Hour)),
	}}
	if *out == "" {
		if o.Server, err = r.Inbox(); err != nil {
			return err
		}
	}
	o.Replace = *replace
	o.Progress = e.Stderr
	o.Warn = func(w string) { fmt.Fprintln(e.Stderr, "msgx simulate: warning: "+w) }
	rep, err := sim.Run(ctx, o)
	var taken *sim.DayTakenError
	if errors.As(err, &taken) {
		return cli.UsageError("msgx simulate: " + err.Error() + ".")
	}
	if err != nil {
		return err
	}
	if *asJSON {
		cli.WriteJSON(e.Stdout, rep)
	} else {
		rep.Write(e.Stdout)
	}
	if p := rep.Problem(); p != "" {
		return app.ExitError{Code: exitFailure, Msg: "msgx simulate: " + p}
	}
	return nil
}

// simulateDay reads --timezone (default sis.timezone) and --day (default today there).
func simulateDay(e *cli.Env, zone, day string) (time.Time, *time.Location, string) {
	if zone == "" {
		zone = e.Getenv(config.EnvName("sis.timezone"))
	}
	if zone == "" {
		zone = config.Default().SIS.Timezone
	}
	loc, err := time.LoadLocation(zone)
	if err != nil {
		return time.Time{}, nil, fmt.Sprintf("--timezone %q is not a known time zone", zone)
	}
	if day == "" {
		return time.Now().In(loc), loc, ""
	}
	d, err := time.ParseInLocation(time.DateOnly, day, loc)
	if err != nil {
		return d, loc, fmt.Sprintf("--day %q is not a date (YYYY-MM-DD)", day)
	}
	return d, loc, ""
}

func isFlagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
