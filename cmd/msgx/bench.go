package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"msgx/internal/app"
	"msgx/internal/bench"
	"msgx/internal/cli"
	"msgx/internal/pipeline"
	"msgx/internal/store"
)

// benchCmd runs `msgx bench`.
func benchCmd(ctx context.Context, e *cli.Env, args []string) error {
	fs := e.Flags("bench")
	workload := fs.String("workload", bench.WorkloadDay, "`W`: day (the simulator's airport day: reference data, schedule, FLOPs of every STYP) or classic (reference adds and FLOPs on a 3,000-flight snapshot)")
	messages := fs.Int("messages", bench.DefaultMessages, "`N`: messages in the accept, process and latency phases (day: FLOPs of each simulated day)")
	flights := fs.Int("flights", 0, "day: `F` flights a day (default: as many as give about N FLOPs)")
	rate := fs.Float64("rate", bench.DefaultRate, "`R`: messages per second in the latency phase")
	clients := fs.Int("clients", bench.DefaultClients, "`C`: concurrent clients in the accept phase")
	asJSON := fs.Bool("json", false, "print one JSON object instead of the table")
	dsn := fs.String("dsn", "", "sqlite: run on this new `FILE` instead of a temporary one")
	database := fs.String("database", "", "mysql: the scratch database `NAME` to create and drop (default "+bench.DefaultDatabase+")")
	sinkDir := fs.String("sink-dir", "", "where the file sinks write, in a temporary `DIR` of their own (default: "+bench.MemoryDir+" if present)")
	floorTime := fs.Duration("floor-time", bench.DefaultFloorTime, "how long (`D`) each floor measurement runs")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile (go tool pprof) of the processed phase to `FILE`")
	asOfWait := fs.Duration("as-of-wait", 0, "day: how long (`D`) after the first day's backlog its boards as of a past time are asked (125s: after two of msgx serve's background folds, as an ops room looks back; 0: at once, a fold from what the server has)")
	targets := fs.Int("targets", 0, "`N` delivery targets more than the four the handlers emit to: file sinks, each a copy (copy-of) of one of the four in turn, as webhooks take them")
	history := fs.Int("history", 0, "`H`: finished messages put in the bench database first (processing cost must not grow with it)")
	cfg, rest, err := loadConfig(e, fs, args)
	if err != nil {
		return err
	}
	o := bench.Options{
		Config: cfg, Workload: *workload, Flights: *flights, Messages: *messages, Rate: *rate, Clients: *clients, FloorTime: *floorTime, History: *history, Targets: *targets, AsOfWait: *asOfWait,
		Clock:    pipeline.SystemClock{},
		Log:      slog.New(slog.NewTextHandler(e.Stderr, &slog.HandlerOptions{Level: slog.LevelError})),
		Progress: e.Stderr,
	}
	if o.Check() != nil || len(rest) > 0 {
		fmt.Fprintf(e.Stderr, "msgx bench: %v, and no arguments follow the flags\n\nRun 'msgx help bench' for the flags and examples.\n", bench.ErrOptions)
		return cli.ErrUsage
	}
	ctx, stop := cli.UntilInterrupt(ctx)
	defer stop()
	res, err := bench.RunOnScratch(ctx, bench.ScratchOptions{SQLitePath: *dsn, Database: *database, SinkDir: *sinkDir}, o, *cpuProfile)
	if err != nil {
		return benchError(ctx, err)
	}
	if *asJSON {
		return cli.WriteJSON(e.Stdout, res)
	}
	return bench.WriteTable(e.Stdout, res)
}

// benchError gives an unreachable database its own exit code and a plain message.
func benchError(ctx context.Context, err error) error {
	switch {
	case ctx.Err() != nil:
		return app.ExitError{Code: exitFailure, Msg: "msgx bench: interrupted; the scratch database and files were removed"}
	case errors.Is(err, store.ErrUnavailable):
		return app.ExitError{Code: exitNoDatabase, Msg: "msgx bench: cannot reach the database: " + err.Error()}
	}
	return err
}
