package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"time"

	"msgx/internal/app"
	"msgx/internal/cli"
	"msgx/internal/config"
	sim "msgx/internal/simulate"
)

func simulateCmd(ctx context.Context, e *cli.Env, args []string) error {
	fs, r := e.RemoteFlags("simulate", cli.ServerUsage, false)
	flights := fs.Int("flights", 100, "`N` flights in the day's schedule")
	speed := fs.Float64("speed", 0, "`X` times real time (60: an hour a minute); 0 sends as fast as possible")
	faults := fs.String("faults", "", "faults to mix in, comma-separated: `LIST` of malformed, orphan, unknown-styp, duplicate-seqn, or all")
	faultRate := fs.Float64("fault-rate", 0.01, "share `R` of the FLOPs each listed fault adds (at least one each)")
	seed := fs.Int64("seed", 0, "seed `S` of the generator (default: drawn from the clock and printed)")
	day := fs.String("day", "", "the flights' local `DATE` (YYYY-MM-DD; default today in the zone)")
	zone := fs.String("timezone", "", "the airport's `ZONE` (default sis.timezone: MSGX_SIS_TIMEZONE, else "+config.Default().SIS.Timezone+")")
	first := fs.String("first", "06:00", "local `HH:MM` of the first scheduled time")
	hours := fs.Float64("hours", 16, "`H` hours the scheduled times spread over")
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
	o, err := sim.Flags{Flights: *flights, Speed: *speed, Faults: *faults, FaultRate: *faultRate, Seed: *seed, SeedSet: isFlagSet(fs, "seed"),
		Zone: cmp.Or(*zone, e.Getenv(config.EnvName("sis.timezone")), config.Default().SIS.Timezone), Day: *day, First: *first,
		Hours: *hours, Out: *out, Server: r.Server(), Replace: *replace, Now: time.Now()}.RunOptions()
	if err != nil {
		return usageErr("%v", err)
	}
	ctx, stop := cli.UntilInterrupt(ctx)
	defer stop()
	if *out == "" {
		if o.Server, err = r.Inbox(); err != nil {
			return err
		}
	}
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

// isFlagSet reports whether the command line set flag name.
func isFlagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
