package main

import (
	"context"
	"crypto/rand"
	"database/sql"
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

	mysqldrv "github.com/go-sql-driver/mysql"
	"github.com/prometheus/client_golang/prometheus"

	"msgx/internal/api"
	"msgx/internal/config"
	"msgx/internal/console"
	"msgx/internal/dispatch"
	"msgx/internal/flight"
	"msgx/internal/handler"
	"msgx/internal/jobs"
	"msgx/internal/logship"
	"msgx/internal/metrics"
	"msgx/internal/pipeline"
	"msgx/internal/pump"
	"msgx/internal/requests"
	"msgx/internal/secret"
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

func newLogger(cfg config.Config) *slog.Logger {
	var level slog.Level
	level.UnmarshalText([]byte(cfg.Log.Level))
	// Every string a log line carries is redacted as a value, before the line is encoded: a
	// webhook URL's password, a DSN's.
	opts := &slog.HandlerOptions{Level: level, ReplaceAttr: secret.ReplaceAttr}
	var h slog.Handler = slog.NewJSONHandler(os.Stderr, opts)
	if cfg.Log.Format == "text" {
		h = slog.NewTextHandler(os.Stderr, opts)
	}
	return slog.New(h).With("service", cfg.ServiceName)
}

// serve runs the server. The order of a start: bind the listen addresses (a port in use ends
// the start before anything touches the database), wait for the database
// (database.wait-timeout), open the sinks, take the pump lease or stand by (see leaseKeeper),
// then serve. During a database outage the inbox and the API stay up and answer 503 with
// Retry-After, while the pump and the dispatcher pause and resume when the database answers
// again.
func serve(args []string) error {
	cfg, _, err := loadConfig(newFlags("serve"), args)
	if err != nil {
		return err
	}
	log, traces, stopShipping := serveLogger(cfg)
	defer stopShipping()
	mysqldrv.SetLogger(driverLog{log})
	// Bound first, served once the start is done: until then a connection waits in the
	// backlog. A port in use writes no lease, no shadow watermark, no migration.
	ln, adminLn, err := listen(cfg)
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

	db, err := waitForDatabase(ctx, cfg, log, clock, sleepCtx)
	if errors.Is(err, errStopped) {
		log.Info("stopped while waiting for the database")
		return nil
	}
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetTraceHook(traces.Remember)
	if cfg.Shadow() {
		if err := enterShadow(ctx, db, cfg, clock, log); err != nil {
			return err
		}
	}

	runPump := cfg.Autostart()
	holder := instanceName()
	if !runPump {
		log.Warn("pipeline.autostart is false: serving the inbox and the API only; no message is processed by this instance")
	}

	policy, delivery := cfg.RetryPolicy(), cfg.DeliveryPolicy()
	reg := handler.Default(handler.Options{AllowEmptyRefReplace: cfg.Ref.AllowEmptyReplace})
	if testRegistryHook != nil {
		testRegistryHook(reg)
	}
	flights := flight.New(db, clock, cfg.Location())
	// The instruments: moved where things happen, state gauges from the pump instance's
	// sampler; a scrape runs no query but a ping.
	m := metrics.New(clock, version, api.DatabaseUp(db))
	counts := api.CounterCounts(db.NewStateCounter(), clock) // status and the sampler
	popt := pump.Options{
		Metrics:      m,
		Policy:       policy,
		PollInterval: cfg.Pipeline.PollInterval,
		Identity:     pipeline.IdentityMode(cfg.Identity.Mode),
		SIS:          cfg.Decoding(),
		Clock:        clock,
		Logger:       log,
		Flights:      flights,
		View:         flights,
		// Handlers in a batch read through its transaction, so each sees the batch's writes.
		ViewIn:    func(tx *sql.Tx) handler.View { return flights.InTx(tx) },
		BatchSize: cfg.Pipeline.BatchSize,
		BatchWait: cfg.Pipeline.BatchWait,
		Paused:    pauseWatch(db, store.PumpPause, log),
	}
	fstores := phaseStores(cfg, db, flights, clock, log, &popt)
	defer fstores.close()
	runner, err := jobRunner(cfg, db, fstores.history, clock, log)
	if err != nil {
		return err
	}
	defer runner.History.Close()
	popt.Jobs = runner
	runner.Rebuild, runner.Consistency = fstores.rebuild, fstores.consistency
	p := pump.New(db, reg, popt)
	// Data requests to the AODB: created through the API on any node, followed (SENT,
	// re-sent, EXPIRED) by the instance that holds the pump lease.
	reqs := requests.New(db, requests.Options{Clock: clock, Location: cfg.Location(), Timeout: cfg.Requests.Timeout,
		MaxResends: cfg.Requests.MaxResends, PollInterval: cfg.Pipeline.PollInterval, Logger: log})
	var disp *dispatch.Dispatcher
	var keeper *leaseKeeper
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
			Policy:       delivery,
			PollInterval: cfg.Pipeline.PollInterval,
			SchdTarget:   handler.TargetSchd,
			FlushPeriod:  cfg.Schd.FlushPeriod,
			FlushLimit:   cfg.Schd.FlushLimit,
			Clock:        clock,
			Logger:       log,
			Metrics:      m,
			Paused:       targetPauses(db, log),
		})
		p.SetOnEvents(disp.Wake)
		p.SetCopies(copiesOf(cfg.Targets))
		// Every processing write of the pump checks, in its transaction, that this instance
		// still holds the lease: a pump that outlived its lease cannot commit.
		db.SetFence(leaseName, holder)
		keeper = &leaseKeeper{
			db: leaseDB{db}, name: leaseName, holder: holder, ttl: leaseTTL,
			// A SQLite file has one host: a second instance on it is a mistake, not a standby.
			standby: cfg.Database.Driver == "mysql",
			clock:   clock, log: log, isDead: deadOnThisHost, metrics: m,
			start: func() func() {
				wctx, cancel := context.WithCancel(context.Background())
				var wg sync.WaitGroup
				wg.Go(func() { p.Run(wctx) })
				// The daily jobs are enqueued by the instance that runs the pump.
				sched := &jobs.Scheduler{DB: db, Clock: clock, Location: cfg.Location(), Entries: cfg.Schedule(), Logger: log, Wake: p.Wake}
				wg.Go(func() { sched.Run(wctx) })
				wg.Go(func() { api.RunSampler(wctx, db, counts, m, clock, log, cfg.Metrics.SampleInterval) })
				wg.Go(func() {
					if err := disp.Run(wctx); err != nil {
						log.Error("dispatcher stopped", "err", err.Error())
					}
				})
				if !cfg.Shadow() {
					wg.Go(func() { reqs.Run(wctx) })
				}
				return func() { cancel(); wg.Wait() }
			},
		}
	}
	// The first move of the lease keeper happens before the listener is served, so an
	// instance that may not stand by exits before it answers anything.
	var firstWait time.Duration
	if keeper != nil {
		if firstWait, err = keeper.step(ctx); err != nil {
			return err
		}
	}
	wake := func() {}
	dispWake := func() {}
	if runPump {
		wake, dispWake = p.Wake, disp.Kick
	}
	inbox := api.NewInbox(db, clock, log, cfg.HTTP.MaxBodyBytes, wake)
	inbox.MaxInflightBytes = cfg.HTTP.MaxInflightBytes
	inbox.Metrics = m
	tokens := make([]api.Token, len(cfg.Auth.Tokens))
	for i, t := range cfg.Auth.Tokens {
		tokens[i] = api.Token(t)
	}
	srv := &api.Server{DB: db, Inbox: inbox, Clock: clock, Log: log, PumpRunning: runPump, Wake: wake, Instance: holder, Counts: counts,
		Auth: api.NewAuth(tokens, api.InboxRule(cfg.InboxRule()), clock), Targets: targetNames(cfg), DispatchWake: dispWake,
		ConfigView: cfg.Redacted}
	if runPump {
		srv.LastPumpStep = m.LastPumpStep
	}
	if srv.Auth.Open() {
		log.Warn("no auth.tokens configured: the API and the console answer only to loopback clients (127.0.0.1, ::1); the inbox stays open (http.inbox-allow restricts it)")
	}
	if keeper != nil {
		srv.PumpState = keeper.State
	}
	// Eureka (eureka.enabled): registers once the listener is open; never stops the start.
	registrar := newRegistrar(cfg, pumpHealth(db.SQL.PingContext, keeper, func() bool { return p.Trouble() != nil }), log)
	srv.Extra = append(srv.Extra, api.FlightRoutes(fstores.reader, db), api.MetricsRoute(m), api.RequestRoutes(reqs, db), fstores.routes)
	m.Register(append(append([]prometheus.Collector{p.TroubleMetric(), p.ParkedMetric(), flight.MismatchMetric()}, jobs.Collectors()...), logship.Collectors()...)...)
	m.Register(reqs.Collectors()...)
	if registrar != nil {
		m.Register(registrar.Failures())
	}
	// The web console at / (embedded assets) and its two read-only routes.
	srv.Extra = append(srv.Extra, console.Routes(db, clock, cfg.Decoding()))
	srv.StatusExtra = map[string]func(context.Context) (any, error){
		"targets": api.TargetStatus(db, clock),
		// The head whose outcome the pump cannot write (null when none): its row cannot say so.
		"pump_trouble": func(context.Context) (any, error) { return p.Trouble(), nil },
		"recent":       func(context.Context) (any, error) { return p.Recent(), nil },
		// The job in hand (null when none): its kind, what it is doing, for how long.
		"job": func(context.Context) (any, error) { return runner.Current(), nil },
		// The message in hand (null between steps): a long snapshot shows what it is at.
		"in_hand":   func(context.Context) (any, error) { return p.InHand(), nil },
		"last_jobs": lastJobs(db),
	}
	if cfg.Shadow() {
		srv.StatusExtra["shadow"] = func(context.Context) (any, error) { return shadowStatus(db), nil }
	}

	apiHandler := srv.Handler()
	httpSrv := &http.Server{Handler: apiHandler, ReadHeaderTimeout: 10 * time.Second}
	var adminSrv *http.Server
	if adminLn != nil {
		// http.addr serves the inbox, /healthz and /metrics; the admin listener everything.
		adminSrv = &http.Server{Handler: apiHandler, ReadHeaderTimeout: 10 * time.Second}
		httpSrv.Handler = api.InboxOnly(apiHandler)
	}

	var wg sync.WaitGroup
	inboxCtx, cancelInbox := context.WithCancel(context.Background())
	wg.Go(func() { inbox.Run(inboxCtx) })
	keeperCtx, cancelKeeper := context.WithCancel(context.Background())
	defer cancelKeeper()
	keeperErr := make(chan error, 1)
	if keeper != nil {
		wg.Go(func() { keeperErr <- keeper.run(keeperCtx, firstWait) })
	}
	serveErr := make(chan error, 2)
	go func() { serveErr <- httpSrv.Serve(ln) }()
	if adminSrv != nil {
		go func() { serveErr <- adminSrv.Serve(adminLn) }()
		log.Info("msgx admin listener (API and console)", "addr", adminLn.Addr().String())
	}
	regCtx, stopRegistrar := context.WithCancel(ctx)
	defer stopRegistrar()
	regDone := make(chan struct{})
	if registrar != nil {
		go func() { defer close(regDone); registrar.Run(regCtx) }()
	} else {
		close(regDone)
	}
	log.Info("msgx serving", "addr", ln.Addr().String(), "version", readBuildVersion().Version, "pump", runPump, "driver", cfg.Database.Driver, "data_dir", cfg.DataDir)
	fstores.start(ctx) // phase A: the consistency check on start-up

	var exit error
	select {
	case <-ctx.Done():
		log.Info("shutting down: finishing the message in hand")
	case err := <-serveErr:
		exit = fmt.Errorf("http server: %w", err)
	case err := <-keeperErr:
		log.Error("pump lease lost to another instance; stopping, since this one may not stand by", "err", err.Error())
		exit = err
	}
	stopRegistrar() // deregister from Eureka first (bounded by its 5s call timeout), so callers stop coming here
	<-regDone
	shutCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	httpSrv.Shutdown(shutCtx) // stop taking messages; answered requests were already durable
	if adminSrv != nil {
		adminSrv.Shutdown(shutCtx)
	}
	cancelInbox()
	cancelKeeper() // stops the pump and the dispatcher, then releases the lease
	wg.Wait()
	log.Info("msgx stopped")
	return exit
}

// listen binds http.addr and, when set, http.admin-addr (adminLn nil otherwise). An address
// that cannot be bound (in use, not this host's) is an error naming it and its key.
func listen(cfg config.Config) (ln, adminLn net.Listener, err error) {
	if ln, err = net.Listen("tcp", cfg.HTTP.Addr); err != nil {
		return nil, nil, fmt.Errorf("listen on %s (http.addr): %w; nothing was started or written", cfg.HTTP.Addr, err)
	}
	if cfg.HTTP.AdminAddr != "" {
		if adminLn, err = net.Listen("tcp", cfg.HTTP.AdminAddr); err != nil {
			ln.Close()
			return nil, nil, fmt.Errorf("listen on %s (http.admin-addr): %w; nothing was started or written", cfg.HTTP.AdminAddr, err)
		}
	}
	return ln, adminLn, nil
}

// leaseDB is the store as the lease keeper sees it.
type leaseDB struct{ *store.DB }

// Ping checks that the database answers.
func (d leaseDB) Ping(ctx context.Context) error { return d.SQL.PingContext(ctx) }

// openSinks opens one sink per delivery target. With no targets configured (the embedded
// default) every target the handlers emit to is a file sink under <data-dir>/outbox. A target
// the handlers emit to, or that has undelivered events, but that config does not define is a
// start-up error naming it (exit code 4).
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
			return nil, exitError{code: exitConfig, msg: fmt.Sprintf("msgx serve: config: targets.%s.copy-of: %q is not a target events are emitted to (%s)", name, tc.CopyOf, strings.Join(handler.Targets, ", "))}
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
			return nil, exitError{code: exitConfig, msg: fmt.Sprintf("msgx serve: config: targets.%s is not defined, but events are emitted to it; define it (for example {sink: file})", name)}
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

// pauseWatch returns the pump's pause check: whether the operator's pause name is set in the
// database (so a pause holds across restarts and on whichever instance runs the pump),
// logging each change once.
func pauseWatch(db *store.DB, name string, log *slog.Logger) func(ctx context.Context) bool {
	var mu sync.Mutex
	last := false
	return func(ctx context.Context) bool {
		p, err := db.Pause(ctx, name)
		paused := err == nil && p != nil
		mu.Lock()
		defer mu.Unlock()
		if paused != last {
			if paused {
				log.Warn("paused by an operator", "part", name, "actor", p.By, "reason", p.Reason, "since", p.At.Format(time.RFC3339))
			} else if err == nil {
				log.Info("resumed", "part", name)
			}
			last = paused
		}
		return paused
	}
}

// targetPauses returns the dispatcher's pause check of each target.
func targetPauses(db *store.DB, log *slog.Logger) func(ctx context.Context, target string) bool {
	var mu sync.Mutex
	watches := map[string]func(context.Context) bool{}
	return func(ctx context.Context, target string) bool {
		mu.Lock()
		w := watches[target]
		if w == nil {
			w = pauseWatch(db, store.TargetPause(target), log)
			watches[target] = w
		}
		mu.Unlock()
		return w(ctx)
	}
}

// targetNames returns the configured targets' names, or those the handlers emit to.
func targetNames(cfg config.Config) []string {
	if len(cfg.Targets) == 0 {
		return slices.Clone(handler.Targets)
	}
	out := make([]string, 0, len(cfg.Targets))
	for name := range cfg.Targets {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}
