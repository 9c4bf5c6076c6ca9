package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"msgx/internal/api"
	"msgx/internal/config"
	"msgx/internal/dispatch"
	"msgx/internal/flight"
	"msgx/internal/handler"
	"msgx/internal/jobs"
	"msgx/internal/pipeline"
	"msgx/internal/pump"
	"msgx/internal/sis"
	"msgx/internal/store"
	"msgx/internal/target"
)

// testRegistryHook changes the handler registry in the end-to-end tests' binary only (see
// testhooks.go, built with -tags msgxtesthooks); nil in msgx itself.
var testRegistryHook func(*handler.Registry)

const (
	leaseName = "pump"
	leaseTTL  = 15 * time.Second
)

func loadConfig(fs *flag.FlagSet, args []string) (config.Config, []string, error) {
	path := fs.String("config", os.Getenv("MSGX_CONFIG"), "YAML config file")
	if err := fs.Parse(args); err != nil {
		return config.Config{}, nil, exitError{code: 2}
	}
	cfg, err := config.Load(*path, os.Environ())
	return cfg, fs.Args(), err
}

func newLogger(cfg config.Config) *slog.Logger {
	var level slog.Level
	level.UnmarshalText([]byte(cfg.Log.Level))
	opts := &slog.HandlerOptions{Level: level}
	var h slog.Handler = slog.NewJSONHandler(os.Stderr, opts)
	if cfg.Log.Format == "text" {
		h = slog.NewTextHandler(os.Stderr, opts)
	}
	return slog.New(h).With("service", cfg.ServiceName)
}

func openDB(ctx context.Context, cfg config.Config, log *slog.Logger) (*store.DB, error) {
	db, err := store.Open(ctx, cfg.Database.Driver, cfg.Database.DSN)
	if err != nil {
		return nil, err
	}
	since, _ := cfg.AdoptSince() // validated by config.Load
	db.SetLegacy(store.LegacyOptions{Location: cfg.LegacyLocation(), AdoptFromID: cfg.Inbox.AdoptFromID, AdoptSince: since, Logger: log})
	v, err := db.Migrate(ctx)
	if err != nil {
		db.Close()
		return nil, err
	}
	log.Info("database ready", "driver", cfg.Database.Driver, "schema_version", v)
	return db, nil
}

func serve(args []string) error {
	cfg, _, err := loadConfig(flag.NewFlagSet("serve", flag.ContinueOnError), args)
	if err != nil {
		return err
	}
	log := newLogger(cfg)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	db, err := openDB(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer db.Close()
	clock := pipeline.SystemClock{}

	runPump := cfg.Autostart()
	holder := instanceName()
	if runPump {
		if err := db.AcquireLease(ctx, leaseName, holder, leaseTTL, clock.Now()); err != nil {
			var held *store.LeaseHeldError
			if !errors.As(err, &held) {
				return err
			}
			if !deadOnThisHost(held.Holder) {
				return exitError{code: 3, msg: "msgx serve: " + held.Error() + ". Stop it first, or wait for its lease to expire if it died."}
			}
			// The holder was a process of this host that is gone (killed or crashed): its
			// lease cannot be renewed any more, so take it now rather than wait for it.
			if err := db.TakeOverLease(ctx, leaseName, holder, held.Holder, leaseTTL, clock.Now()); err != nil {
				return exitError{code: 3, msg: "msgx serve: " + err.Error()}
			}
			log.Warn("took over the pump lease of a dead instance", "dead_holder", held.Holder)
		}
		db.SetFence(leaseName, holder)
		log.Info("pump lease acquired", "holder", holder, "ttl", leaseTTL.String())
	} else {
		log.Warn("pipeline.autostart is false: serving the inbox and the API only; no message is processed by this instance")
	}

	policy := pipeline.RetryPolicy{
		MaxAttempts:  cfg.Pipeline.MaxAttempts,
		Steps:        cfg.Backoff(),
		Cap:          time.Duration(cfg.Pipeline.BackoffCapMs) * time.Millisecond,
		HeadDeadline: cfg.Pipeline.HeadDeadline,
	}
	reg := handler.Default(handler.Options{AllowEmptyRefReplace: cfg.Ref.AllowEmptyReplace})
	if testRegistryHook != nil {
		testRegistryHook(reg)
	}
	flights := flight.New(db, clock, cfg.Location())
	p := pump.New(db, reg, pump.Options{
		Policy:       policy,
		PollInterval: cfg.Pipeline.PollInterval,
		IncludeDay:   cfg.Identity.IncludeDayBoundary,
		SIS:          sis.Options{Location: cfg.Location()},
		Clock:        clock,
		Logger:       log,
		Jobs:         &jobs.Runner{DB: db, Clock: clock},
		Flights:      flights,
		View:         flights,
	})
	var disp *dispatch.Dispatcher
	if runPump {
		sinks, err := openSinks(ctx, db, cfg, clock, log)
		if err != nil {
			return err
		}
		defer func() {
			for _, s := range sinks {
				s.Close()
			}
		}()
		disp = dispatch.New(db, sinks, dispatch.Options{
			Policy:       policy,
			PollInterval: cfg.Pipeline.PollInterval,
			SchdTarget:   handler.TargetSchd,
			FlushPeriod:  cfg.Schd.FlushPeriod,
			FlushLimit:   cfg.Schd.FlushLimit,
			Clock:        clock,
			Logger:       log,
		})
		p.SetOnEvents(disp.Wake)
		p.SetCopies(copiesOf(cfg.Targets))
	}
	wake := func() {}
	dispWake := func() {}
	if runPump {
		wake, dispWake = p.Wake, disp.Wake
	}
	inbox := api.NewInbox(db, clock, log, cfg.HTTP.MaxBodyBytes, wake)
	inbox.MaxInflightBytes = cfg.HTTP.MaxInflightBytes
	srv := &api.Server{DB: db, Inbox: inbox, Clock: clock, Log: log, PumpRunning: runPump, Wake: wake}
	srv.Extra = append(srv.Extra, api.FlightRoutes(flights, db), api.EventRoutes(db, dispWake), api.MetricsRoute(db, clock, p.TroubleMetric()))
	srv.StatusExtra = map[string]func(context.Context) (any, error){
		"targets": api.TargetStatus(db, clock),
		// The head whose outcome the pump cannot write (null when none): its row cannot say so.
		"pump_trouble": func(context.Context) (any, error) { return p.Trouble(), nil },
	}

	ln, err := net.Listen("tcp", cfg.HTTP.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s (http.addr): %w", cfg.HTTP.Addr, err)
	}
	httpSrv := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}

	workCtx, cancelWork := context.WithCancel(context.Background())
	defer cancelWork()
	var wg sync.WaitGroup
	inboxCtx, cancelInbox := context.WithCancel(context.Background())
	wg.Add(1)
	go func() { defer wg.Done(); inbox.Run(inboxCtx) }()

	lost := make(chan error, 1)
	if runPump {
		wg.Add(2)
		go func() { defer wg.Done(); p.Run(workCtx) }()
		wg.Add(1)
		go func() { defer wg.Done(); disp.Run(workCtx) }()
		go func() {
			defer wg.Done()
			t := time.NewTicker(leaseTTL / 3)
			renewed := clock.Now()
			defer t.Stop()
			for {
				select {
				case <-workCtx.Done():
					return
				case <-t.C:
					err := db.RenewLease(workCtx, leaseName, holder, leaseTTL, clock.Now())
					switch {
					case err == nil:
						renewed = clock.Now()
					case workCtx.Err() != nil:
						return
					case errors.Is(err, store.ErrUnavailable) && clock.Now().Sub(renewed) < leaseTTL-leaseTTL/3:
						// The database did not answer: the lease is still ours until it
						// expires, so keep trying; the inbox answers 503 meanwhile.
						log.Warn("cannot renew the pump lease; retrying", "err", err.Error(), "renewed_at", renewed.Format(time.RFC3339))
					default:
						// Another instance holds it, or it is about to expire unrenewed:
						// stop before a second pump could start.
						lost <- err
						return
					}
				}
			}
		}()
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- httpSrv.Serve(ln) }()
	log.Info("msgx serving", "addr", ln.Addr().String(), "version", version, "pump", runPump, "driver", cfg.Database.Driver, "data_dir", cfg.DataDir)

	var exit error
	select {
	case <-ctx.Done():
		log.Info("shutting down: finishing the message in hand")
	case err := <-serveErr:
		exit = fmt.Errorf("http server: %w", err)
	case err := <-lost:
		log.Error("pump lease lost; stopping so two pumps never run", "err", err.Error())
		exit = exitError{code: 3, msg: "msgx serve: pump lease lost: " + err.Error()}
	}
	shutCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	httpSrv.Shutdown(shutCtx) // stop taking messages; answered requests were already durable
	cancelInbox()
	cancelWork()
	wg.Wait()
	if runPump {
		if err := db.ReleaseLease(context.Background(), leaseName, holder); err != nil {
			log.Warn("could not release the pump lease", "err", err.Error())
		}
	}
	log.Info("msgx stopped")
	return exit
}

// openSinks opens one sink per delivery target. With no targets configured (the embedded
// default) every target the handlers emit to is a file sink under <data-dir>/outbox. A target
// the handlers emit to, or that has undelivered events, but that config does not define is a
// start-up error naming it.
func openSinks(ctx context.Context, db *store.DB, cfg config.Config, clock pipeline.Clock, log *slog.Logger) (map[string]target.Sink, error) {
	targets := cfg.Targets
	if len(targets) == 0 {
		targets = map[string]target.Config{}
		for _, name := range handler.Targets {
			targets[name] = target.Config{Sink: "file"}
		}
	}
	need := append([]string{}, handler.Targets...)
	for name, tc := range targets {
		if tc.CopyOf != "" && !slices.Contains(handler.Targets, tc.CopyOf) {
			return nil, fmt.Errorf("config: targets.%s.copy-of: %q is not a target events are emitted to (%s)", name, tc.CopyOf, strings.Join(handler.Targets, ", "))
		}
	}
	stats, err := dispatch.Stats(ctx, db, clock.Now())
	if err != nil {
		return nil, err
	}
	for _, st := range stats {
		if st.Pending > 0 {
			need = append(need, st.Target)
		}
	}
	for _, name := range need {
		if _, ok := targets[name]; !ok {
			return nil, fmt.Errorf("config: targets.%s is not defined, but events are emitted to it; define it (for example {sink: file})", name)
		}
	}
	sinks := map[string]target.Sink{}
	for name, tc := range targets {
		tc.Logger = log.With("target", name)
		s, err := target.Open(ctx, name, tc, cfg.DataDir)
		if err != nil {
			for _, o := range sinks {
				o.Close()
			}
			return nil, fmt.Errorf("target %s: %w", name, err)
		}
		sinks[name] = s
		log.Info("delivery target ready", "target", name, "sink", tc.Sink)
	}
	return sinks, nil
}

// copiesOf maps each emitted target to the targets configured as copies of it.
func copiesOf(targets map[string]target.Config) map[string][]string {
	out := map[string][]string{}
	for name, tc := range targets {
		if tc.CopyOf != "" {
			out[tc.CopyOf] = append(out[tc.CopyOf], name)
		}
	}
	for _, list := range out {
		slices.Sort(list)
	}
	return out
}

// deadOnThisHost reports whether a lease holder name (see instanceName) is a process of this
// host that no longer runs.
func deadOnThisHost(holder string) bool {
	host, _ := os.Hostname()
	parts := strings.Split(holder, "/")
	if len(parts) != 3 || parts[0] != host || !strings.HasPrefix(parts[1], "pid-") {
		return false
	}
	pid, err := strconv.Atoi(strings.TrimPrefix(parts[1], "pid-"))
	if err != nil || pid <= 0 {
		return false
	}
	return syscall.Kill(pid, 0) == syscall.ESRCH
}

func instanceName() string {
	host, _ := os.Hostname()
	b := make([]byte, 4)
	rand.Read(b)
	return fmt.Sprintf("%s/pid-%d/%s", host, os.Getpid(), hex.EncodeToString(b))
}

func migrate(args []string) error {
	cfg, _, err := loadConfig(flag.NewFlagSet("migrate", flag.ContinueOnError), args)
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
