package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"msgx/internal/app"
	"msgx/internal/config"
	"msgx/internal/pipeline"
	"msgx/internal/store"
)

func loadConfig(fs *flag.FlagSet, args []string) (config.Config, []string, error) {
	path := fs.String("config", os.Getenv("MSGX_CONFIG"), "YAML config `FILE` (default MSGX_CONFIG)")
	if err := fs.Parse(args); err != nil {
		return config.Config{}, nil, exitError{code: exitUsage}
	}
	cfg, err := config.Load(*path, os.Environ())
	if err != nil {
		return cfg, nil, exitError{code: exitConfig, msg: "msgx " + fs.Name() + ": " + err.Error()}
	}
	for _, w := range config.UnknownEnv(os.Environ()) {
		fmt.Fprintf(os.Stderr, "msgx %s: warning: %s\n", fs.Name(), w)
	}
	return cfg, fs.Args(), nil
}

// serve runs the server (internal/app wires it). The order of a start: bind the listen
// addresses (a port in use ends the start before anything touches the database), wait for
// the database (database.wait-timeout), wire and open the sinks, take the pump lease or
// stand by, then serve.
func serve(args []string) error {
	cfg, _, err := loadConfig(newFlags("serve"), args)
	if err != nil {
		return err
	}
	log, traces, stopShipping := app.Logger(cfg)
	defer stopShipping()
	// Bound first, served once the start is done: until then a connection waits in the
	// backlog. A port in use writes no lease, no shadow watermark, no migration.
	ln, adminLn, err := app.Listen(cfg)
	if err != nil {
		return err
	}
	defer ln.Close() // Serve and Shutdown close them too; on an early return nothing else does
	if adminLn != nil {
		defer adminLn.Close()
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	clock := pipeline.SystemClock{}
	db, err := app.OpenDatabase(ctx, cfg, log, clock)
	if errors.Is(err, app.ErrStopped) {
		log.Info("stopped while waiting for the database")
		return nil
	}
	if err != nil {
		return err
	}
	defer db.Close()
	opts := app.Options{Listener: ln, AdminListener: adminLn, Log: log, Clock: clock, Traces: traces,
		Version: version, Release: readBuildVersion().Version}
	testHooks(&opts)
	a, err := app.New(ctx, cfg, db, opts)
	if err != nil {
		return err
	}
	defer a.Close()
	if err := a.Start(ctx); err != nil {
		return err
	}
	return a.Run(ctx)
}

func migrate(args []string) error {
	cfg, _, err := loadConfig(newFlags("migrate"), args)
	if err != nil {
		return err
	}
	ctx := context.Background()
	db, err := store.Open(ctx, cfg.Database.Driver, cfg.Database.DSN)
	if err != nil {
		return err
	}
	defer db.Close()
	v, err := db.Migrate(ctx)
	if err != nil {
		return err
	}
	fmt.Printf("schema at version %d (%s)\n", v, cfg.Database.Driver)
	return nil
}
