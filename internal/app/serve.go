package app

import (
	"context"
	"errors"
	"os/signal"
	"syscall"

	"msgx/internal/config"
	"msgx/internal/pipeline"
	"msgx/internal/store"
)

// Serve is `msgx serve`: it runs msgx as cfg says until SIGINT or SIGTERM. version is the
// link-time version (main.version; "" when not set). The order of a start: bind the listen
// addresses (a port in use ends the start before anything touches the database), wait for
// the database (database.wait-timeout), wire and open the sinks (New), take the pump lease or
// stand by (Start), then serve (Run). An error that decides the exit code is an ExitError.
func Serve(cfg config.Config, version string) error {
	log, traces, stopShipping := Logger(cfg)
	defer stopShipping()
	// Bound first, served once the start is done: until then a connection waits in the
	// backlog. A port in use writes no lease, no shadow watermark, no migration.
	ln, adminLn, err := Listen(cfg)
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
	db, err := OpenDatabase(ctx, cfg, log, clock)
	if errors.Is(err, ErrStopped) {
		log.Info("stopped while waiting for the database")
		return nil
	}
	if err != nil {
		return err
	}
	defer db.Close()
	opts := Options{Listener: ln, AdminListener: adminLn, Log: log, Clock: clock, Traces: traces,
		Version: version, Release: ReadBuild(version).Version}
	testHooks(&opts)
	a, err := New(ctx, cfg, db, opts)
	if err != nil {
		return err
	}
	defer a.Close()
	if err := a.Start(ctx); err != nil {
		return err
	}
	startNotifier(ctx, a) // Type=notify under systemd: READY=1 once /readyz answers 200
	return a.Run(ctx)
}

// Migrate is `msgx migrate`: it applies the embedded migrations to cfg's database and returns
// the schema version.
func Migrate(ctx context.Context, cfg config.Config) (int64, error) {
	db, err := store.OpenWith(ctx, cfg.Database.Driver, cfg.Database.DSN, StoreOptions(cfg, nil))
	if err != nil {
		return 0, err
	}
	defer db.Close()
	return db.Migrate(ctx)
}
