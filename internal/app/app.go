// Package app is the wiring root of msgx: from a config and an opened database it builds the
// whole server (stores, the phase's flight stores, the pump, the dispatcher and its sinks, the
// job runner, the API and the console, the pump lease keeper, shadow mode, Eureka) and runs
// it. `msgx serve` and `msgx bench` both build it with New, so the benchmark measures what
// production runs.
//
// The order of a start: the caller binds the listeners (a port in use ends the start before
// anything touches the database) and opens the database (OpenDatabase waits for it,
// database.wait-timeout); New wires the parts and opens the sinks; Start takes the pump lease
// or stands by (lease.Keeper); Run serves until its context ends. During a database outage
// the inbox and the API stay up and answer 503 with Retry-After, while the pump and the
// dispatcher pause and resume when the database answers again.
package app

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"msgx/client"
	"msgx/internal/api"
	"msgx/internal/config"
	"msgx/internal/console"
	"msgx/internal/dispatch"
	"msgx/internal/eureka"
	"msgx/internal/flight"
	"msgx/internal/handler"
	"msgx/internal/inbox"
	"msgx/internal/jobs"
	"msgx/internal/lease"
	"msgx/internal/logship"
	"msgx/internal/metrics"
	"msgx/internal/pipeline"
	"msgx/internal/pump"
	"msgx/internal/requests"
	"msgx/internal/store"
	"msgx/internal/target"
	"msgx/internal/targetconf"
)

// Exit codes of `msgx serve` that the wiring decides (the others are the command line's).
const (
	ExitLeaseHeld  = 3 // another live instance holds the pump lease and standby is impossible (SQLite)
	ExitConfig     = 4 // the configuration is invalid, or the database refused it
	ExitNoDatabase = 5 // the database did not answer within database.wait-timeout
)

// ExitError ends `msgx serve` with Code after printing Msg.
type ExitError struct {
	Code int
	Msg  string
}

func (e ExitError) Error() string { return e.Msg }

// Options are what New takes besides the config and the database.
type Options struct {
	Listener      net.Listener // http.addr, bound (Listen)
	AdminListener net.Listener // http.admin-addr, bound; nil when not set
	Log           *slog.Logger
	Clock         pipeline.Clock
	Traces        *logship.Traces // the log correlation's trace ids (Logger); nil: none
	Version       string          // the metrics' version label (build -ldflags)
	Release       string          // the version logged at the start

	// Registry and PumpOptions change the handler registry and the pump's options before the
	// pump is built: the end-to-end tests' failpoints (testhooks.go, built with
	// -tags msgxtesthooks only) and the bench's observation.
	Registry    func(*handler.Registry)
	PumpOptions func(*pump.Options)
	// WrapSink wraps each delivery target's sink, and OnSent is told the events each
	// dispatcher commit has just SENT: the bench's observation of deliveries.
	WrapSink func(target.Sink) target.Sink
	OnSent   func(target string, ids []int64)
}

// App is msgx wired (New), its parts exported for the bench.
type App struct {
	Cfg        config.Config
	DB         *store.DB
	Pump       *pump.Pump
	Dispatcher *dispatch.Dispatcher // nil when pipeline.autostart is false
	Keeper     *lease.Keeper        // nil when pipeline.autostart is false
	URL        string               // http://<http.addr as bound>

	o         Options
	log       *slog.Logger
	inbox     *inbox.Inbox
	health    *api.Health // the database check /readyz and msgx_database_up answer from
	registrar *eureka.Registrar
	fstores   flightStores
	httpSrv   *http.Server
	adminSrv  *http.Server
	firstWait time.Duration
	closers   []func()
}

// New wires msgx on db (opened and migrated, OpenDatabase) as cfg says, without starting
// anything: Start takes the lease, Run serves. Close releases what New opened.
func New(ctx context.Context, cfg config.Config, db *store.DB, o Options) (a *App, err error) {
	log, clock := o.Log, o.Clock
	a = &App{Cfg: cfg, DB: db, o: o, log: log, URL: "http://" + o.Listener.Addr().String()}
	built := a // a is nil once a failing return has set it
	defer func() {
		if err != nil {
			built.Close()
		}
	}()
	if o.Traces != nil {
		db.Processor.SetTraceHook(o.Traces.Remember)
	}
	if cfg.Shadow() {
		if err := enterShadow(ctx, db, cfg, clock, log); err != nil {
			return nil, err
		}
	}
	w := &wiring{runPump: cfg.Autostart(), holder: lease.InstanceName()}
	a.health = api.NewHealth(newAPIStore(db), clock)
	if w.bodyLimit, err = bodyLimit(ctx, cfg, db, log); err != nil {
		return nil, err
	}
	if !w.runPump {
		log.Warn("pipeline.autostart is false: serving the inbox and the API only; no message is processed by this instance")
	}
	if err := a.newPump(ctx, w); err != nil {
		return nil, err
	}
	// Data requests to the AODB: created through the API on any node, followed (SENT,
	// re-sent, EXPIRED) by the instance that holds the pump lease.
	w.reqs = requests.New(db.RequestTracker, requests.Options{Clock: clock, Location: cfg.Location(), Timeout: cfg.Requests.Timeout,
		MaxResends: cfg.Requests.MaxResends, PollInterval: cfg.Pipeline.PollInterval, Logger: log})
	if w.runPump {
		if err := a.newDispatcher(ctx, w); err != nil {
			return nil, err
		}
		a.Keeper = a.newKeeper(w)
	}
	srv := a.newAPI(w)
	apiHandler := srv.Handler()
	a.httpSrv = &http.Server{Handler: apiHandler, ReadHeaderTimeout: 10 * time.Second}
	if o.AdminListener != nil {
		// http.addr serves the inbox, /healthz and /metrics; the admin listener everything.
		a.adminSrv = &http.Server{Handler: apiHandler, ReadHeaderTimeout: 10 * time.Second}
		a.httpSrv.Handler = api.InboxOnly(apiHandler)
		a.adminSrv.RegisterOnShutdown(srv.StopStreams)
	}
	// The live streams end at shutdown: Shutdown waits for idle connections, which they never are.
	a.httpSrv.RegisterOnShutdown(srv.StopStreams)
	return a, nil
}

// wiring is what New's steps hand on to the later ones besides the App's own parts.
type wiring struct {
	runPump bool   // pipeline.autostart: this instance may run the pump and the dispatcher
	holder  string // this instance's name as the pump lease's holder
	metrics *metrics.Metrics
	counts  metrics.StateCounter // the status's and the sampler's message counts
	runner  *jobs.Runner
	reqs    *requests.Service

	// bodyLimit is the inbox's effective body limit (http.max-body-bytes, or less on a
	// database that cannot store more in one statement).
	bodyLimit int64
}

// newPump builds the pump with its handlers, the phase's flight stores and the job runner,
// and the instruments (moved where things happen, state gauges from the pump instance's
// sampler; a scrape runs no query but a ping).
func (a *App) newPump(ctx context.Context, w *wiring) error {
	cfg, db, o, log, clock := a.Cfg, a.DB, a.o, a.log, a.o.Clock
	reg := handler.Default(handler.Options{AllowEmptyRefReplace: cfg.Ref.AllowEmptyReplace})
	if o.Registry != nil {
		o.Registry(reg)
	}
	flights := flight.New(flightDB{db, db.RefData}, clock, cfg.Location())
	w.metrics = metrics.New(clock, metricsVersion(o.Version), api.DatabaseUp(a.health))
	w.metrics.SetPauseWarn(cfg.Alerts.PauseWarn)
	w.metrics.Register(a.health.SampleAges(w.metrics.SampledAt))
	db.SetConflictHook(w.metrics.ConflictRetried)
	if n := db.Nodes(); n != nil {
		w.metrics.Register(metrics.DatabaseNodes(n)...)
	}
	counter := db.Operations.NewStateCounter()
	w.counts = counter
	a.closers = append(a.closers, counter.Wait) // its background recount ends before the database closes
	popt := pump.Options{
		Metrics:      w.metrics,
		Policy:       retryPolicy(cfg),
		PollInterval: cfg.Pipeline.PollInterval,
		Identity:     pipeline.IdentityMode(cfg.Identity.Mode),
		SIS:          Decoding(cfg),
		Clock:        clock,
		Logger:       log,
		Flights:      flights,
		View:         flights,
		// Handlers in a batch read through its transaction, so each sees the batch's writes.
		FlightsIn: func(tx *sql.Tx) pump.TxFlights { return flights.InTx(tx) },
		BatchSize: cfg.Pipeline.BatchSize,
		BatchWait: cfg.Pipeline.BatchWait,
		Paused:    pauseWatch(db, store.PumpPause, log),
		OnNotable: recordProblem(db, log),
	}
	a.fstores = phaseStores(cfg, db, flights, clock, log, &popt)
	a.closers = append(a.closers, a.fstores.close)
	if err := a.fstores.redis.checkPersistence(ctx, w.metrics); err != nil {
		return err
	}
	if o.PumpOptions != nil {
		o.PumpOptions(&popt)
	}
	runner, err := jobRunner(cfg, db, a.fstores.history, clock, log)
	if err != nil {
		return err
	}
	a.closers = append(a.closers, func() { runner.History.Close() })
	popt.Jobs, popt.JobInfraDeadline = runner, cfg.Jobs.InfraDeadline
	runner.Rebuild, runner.Consistency = a.fstores.rebuild, a.fstores.consistency
	w.runner = runner
	w.metrics.Known(targetNames(cfg), reg.Tags())
	knownJobs(ctx, db.JobQueue, log)
	a.Pump = pump.New(newPumpStore(db), reg, popt)
	a.fstores.redis.wirePump(a.Pump, runner)
	return nil
}

// newDispatcher opens the delivery targets' sinks and builds the dispatcher the pump wakes.
func (a *App) newDispatcher(ctx context.Context, w *wiring) error {
	cfg, db, o, log, clock := a.Cfg, a.DB, a.o, a.log, a.o.Clock
	sinks, err := openSinks(ctx, db, cfg, clock, log)
	if err != nil {
		return err
	}
	a.closers = append(a.closers, func() {
		for _, s := range sinks {
			s.Close()
		}
	})
	if o.WrapSink != nil {
		for name, s := range sinks {
			sinks[name] = o.WrapSink(s)
		}
	}
	disp := dispatch.New(db.Outbox, sinks, dispatch.Options{
		Policy:       deliveryPolicy(cfg),
		PollInterval: cfg.Pipeline.PollInterval,
		SchdTarget:   handler.TargetSchd,
		FlushPeriod:  cfg.Schd.FlushPeriod,
		FlushLimit:   cfg.Schd.FlushLimit,
		Clock:        clock,
		Logger:       log,
		Metrics:      w.metrics,
		Paused:       targetPauses(db, log),
		OnSent:       o.OnSent,
		Families:     families(cfg.Targets),
	})
	a.Pump.SetOnEvents(disp.Wake)
	var earliest []string
	for name, tc := range cfg.Targets {
		if tc.StartAt == targetconf.StartAtEarliest {
			earliest = append(earliest, name)
		}
	}
	if err := db.Outbox.OpenTargets(ctx, slices.Sorted(maps.Keys(cfg.Targets)), earliest); err != nil {
		return fmt.Errorf("delivery targets: %w", err)
	}
	a.Dispatcher = disp
	return nil
}

// leaseDB is the database as the lease keeper uses it: every call on the lease's own pool, so
// a renewal or a check never waits for a connection behind the pump (store.Leases.PingLease).
type leaseDB struct{ *store.Leases }

// Ping checks the database on the lease's pool.
func (l leaseDB) Ping(ctx context.Context) error { return l.PingLease(ctx) }

// newKeeper fences the pump's writes with the pump lease and returns its keeper, which runs
// the pump, the daily jobs' scheduler, the sampler, the dispatcher and (but in shadow mode)
// the data requests while this instance holds the lease.
func (a *App) newKeeper(w *wiring) *lease.Keeper {
	cfg, db, log, clock := a.Cfg, a.DB, a.log, a.o.Clock
	p, disp, m, counts, reqs := a.Pump, a.Dispatcher, w.metrics, w.counts, w.reqs
	// Every processing write of the pump checks, in its transaction, that this instance
	// still holds the lease: a pump that outlived its lease cannot commit.
	db.Leases.SetFence(store.PumpLease, w.holder)
	return &lease.Keeper{
		DB: leaseDB{db.Leases}, Name: store.PumpLease, Holder: w.holder, TTL: lease.TTL,
		// A SQLite file has one host: a second instance on it is a mistake, not a standby.
		Standby: cfg.Database.Driver == "mysql",
		Clock:   clock, Log: log, IsDead: lease.DeadOnThisHost, Metrics: m,
		Start: func() func() {
			wctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			wg.Go(func() { p.Run(wctx) })
			// The daily jobs are enqueued by the instance that runs the pump.
			sched := &jobs.Scheduler{DB: db.JobQueue, Clock: clock, Location: cfg.Location(), Entries: schedule(cfg), Logger: log, Wake: p.Wake}
			wg.Go(func() { sched.Run(wctx) })
			sampler := &metrics.Sampler{DB: newAPIStore(db), Counts: counts, Targets: dispatch.TargetSamples(db.Outbox), Known: targetNames(cfg),
				Clock: clock, Log: log, Every: cfg.Metrics.SampleInterval}
			wg.Go(func() { sampler.Run(wctx, m) })
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

// newAPI builds the inbox and the API server with its routes, the console, the Eureka
// registrar and the metrics they expose.
func (a *App) newAPI(w *wiring) *api.Server {
	cfg, db, log, clock := a.Cfg, a.DB, a.log, a.o.Clock
	p, keeper, m := a.Pump, a.Keeper, w.metrics
	ap := apiPump{p: p, m: m, running: w.runPump, phaseA: a.fstores.redis != nil}
	in := inbox.New(db.Intake, clock, log, w.bodyLimit, ap.Wake)
	in.MaxInflightBytes = cfg.HTTP.MaxInflightBytes
	in.Deadline = cfg.HTTP.InboxDeadline
	in.Origins = cfg.HTTP.InboxOrigins
	in.Metrics = m
	a.inbox = in
	tokens := make([]api.Token, len(cfg.Auth.Tokens))
	for i, t := range cfg.Auth.Tokens {
		tokens[i] = api.Token(t)
	}
	d := api.Deps{DB: newAPIStore(db), Inbox: in, Clock: clock, Log: log, PumpRunning: w.runPump, Pump: ap, Instance: w.holder, Counts: w.counts,
		Auth: api.NewAuth(tokens, api.InboxRule(cfg.InboxRule()), clock), Targets: targetNames(cfg), Families: families(cfg.Targets), Jobs: w.runner,
		ConfigView: configView(cfg, w.bodyLimit), Loc: cfg.Location(), Metrics: m, Health: a.health,
		MaxStreams: cfg.HTTP.MaxStreams, MaxStreamsPerToken: cfg.HTTP.MaxStreamsPerToken}
	if w.runPump {
		d.Dispatcher = a.Dispatcher
	}
	if d.Auth.Open() {
		log.Warn("no auth.tokens configured: the API and the console answer only to loopback clients (127.0.0.1, ::1); the inbox stays open (http.inbox-allow restricts it)")
	}
	if keeper != nil {
		d.Lease = keeper
	}
	// Eureka (eureka.enabled): registers once the listener is open; never stops the start.
	a.registrar = newRegistrar(cfg, pumpHealth(db.SQL.PingContext, keeper, func() bool { return p.Trouble() != nil }), log)
	// Search: flights of the days around today, message bodies of the newest messages.
	finder := &api.Finder{Flights: a.fstores.reader, Ref: db.RefData, Bodies: db.Operations, ByFlight: db.Flights, Clock: clock, Loc: cfg.Location()}
	// Boards as of a past time; yesterday's, today's and tomorrow's folds kept up to date.
	boards := pump.NewBoards(p, db.Flights)
	a.closers = append(a.closers, boards.Keep(time.Minute))
	m.Register(append(append([]prometheus.Collector{p.TroubleMetric(), p.ParkedMetric(), flight.MismatchMetric()}, jobs.Collectors()...), logship.Collectors()...)...)
	m.Register(w.reqs.Collectors()...)
	if a.registrar != nil {
		m.Register(a.registrar.Failures())
	}
	d.StatusExtra = a.statusExtra(w.runner)
	a.fstores.redis.wireAPI(&d, p, m)
	srv := api.New(d)
	srv.Extra = append(srv.Extra, api.FlightRoutes(a.fstores.reader, db.RefData, finder, boardAsOf(boards)), api.FindRoutes(finder), api.MetricsRoute(m), srv.RequestRoutes(w.reqs, db.RequestTracker), a.fstores.routes)
	// The web console at / (embedded assets) and its two read-only routes.
	srv.Extra = append(srv.Extra, console.Routes(consoleStore{db.Flights, db.Processor}, clock, Decoding(cfg)))
	return srv
}

// apiPump is this process's pump as the API drives and reads it: woken and read for /readyz
// only where it runs (pipeline.autostart); halted only in phase A (Redis lost data).
type apiPump struct {
	p       *pump.Pump
	m       *metrics.Metrics
	running bool
	phaseA  bool
}

func (a apiPump) Wake() {
	if a.running {
		a.p.Wake()
	}
}

func (a apiPump) Foresee(ctx context.Context, id int64) (api.Foresight, error) {
	f, err := a.p.Foresee(ctx, id)
	return api.Foresight{Sets: f.Sets, Leaves: f.Leaves, Fails: f.Fails}, err
}

func (a apiPump) LastStep() time.Time {
	if !a.running {
		return time.Time{}
	}
	return a.m.LastPumpStep()
}

func (a apiPump) Halted() string {
	if !a.phaseA {
		return ""
	}
	if h := a.p.Halted(); h != nil {
		return h.Reason
	}
	return ""
}

// statusExtra is what the status adds to the API's own: the targets, the pump's trouble,
// recent steps and message in hand, the job in hand and the last jobs, the shadow's state.
func (a *App) statusExtra(runner *jobs.Runner) map[string]func(context.Context) (any, error) {
	db, p := a.DB, a.Pump
	extra := map[string]func(context.Context) (any, error){
		"targets": dispatch.StatusSection(db.Outbox, a.o.Clock, families(a.Cfg.Targets)),
		// The head whose outcome the pump cannot write (null when none): its row cannot say so.
		"pump_trouble": func(context.Context) (any, error) { return pumpTrouble(p.Trouble()), nil },
		// The recent problems, durable: parked, dead or warned messages and operator actions.
		"recent": func(ctx context.Context) (any, error) {
			ps, err := db.Triage.RecentProblems(ctx, 10)
			return api.Problems(ps), err
		},
		// The dead letters, and how many of them an operator acknowledged.
		"dead": func(ctx context.Context) (any, error) {
			c, err := db.Triage.DeadCounts(ctx)
			return api.DeadCounts(c), err
		},
		// The job in hand (null when none): its kind, what it is doing, for how long.
		"job": func(context.Context) (any, error) { return runner.Current(), nil },
		// The message in hand (null between steps): a long snapshot shows what it is at.
		"in_hand": func(context.Context) (any, error) {
			if h := p.InHand(); h != nil {
				return client.MessageInHand(*h), nil
			}
			return nil, nil
		},
		"last_jobs": api.LastJobs(db.JobQueue),
	}
	if a.Cfg.Shadow() {
		extra["shadow"] = func(context.Context) (any, error) { return shadowStatus(db), nil }
	}
	return extra
}

// pumpTrouble is the status's "pump_trouble" section: t as the API answers it, null when
// there is none.
func pumpTrouble(t *pump.Trouble) *client.PumpTrouble {
	if t == nil {
		return nil
	}
	return &client.PumpTrouble{MsgID: t.MsgID, Failures: t.Failures, LastError: t.LastError, Since: t.Since, Next: t.NextAttempt}
}

// Start makes the lease keeper's first move, before the listener is served, so that an
// instance that may not stand by exits (ExitLeaseHeld) before it answers anything.
func (a *App) Start(ctx context.Context) error {
	if a.Keeper == nil {
		return nil
	}
	var err error
	if a.firstWait, err = a.Keeper.Step(ctx); err != nil {
		return leaseError(err)
	}
	return nil
}

// leaseError gives the keeper's end its exit code.
func leaseError(err error) error {
	if _, ok := err.(*lease.StandbyImpossibleError); ok {
		return ExitError{Code: ExitLeaseHeld, Msg: "msgx serve: " + err.Error()}
	}
	return err
}

// Run serves until ctx ends (then nil), a listener fails, or the pump lease is lost to
// another instance while this one may not stand by; then it shuts down in order: deregister
// from Eureka, stop taking messages, stop the pump and the dispatcher, release the lease.
func (a *App) Run(ctx context.Context) error {
	log := a.log
	var wg sync.WaitGroup
	inboxCtx, cancelInbox := context.WithCancel(context.Background())
	wg.Go(func() { a.inbox.Run(inboxCtx) })
	// The database check behind /readyz and msgx_database_up, in the background on every
	// instance, so that they answer from memory while the database hangs.
	wg.Go(func() { a.health.Run(inboxCtx) })
	// Phase A: Redis's persistence read again when Redis first answers and after a reconnect.
	wg.Go(func() { a.fstores.redis.watchPersistence(inboxCtx) })
	keeperCtx, cancelKeeper := context.WithCancel(context.Background())
	defer cancelKeeper()
	keeperErr := make(chan error, 1)
	if a.Keeper != nil {
		wg.Go(func() { keeperErr <- a.Keeper.Run(keeperCtx, a.firstWait) })
	}
	serveErr := make(chan error, 2)
	go func() { serveErr <- a.httpSrv.Serve(a.o.Listener) }()
	if a.adminSrv != nil {
		go func() { serveErr <- a.adminSrv.Serve(a.o.AdminListener) }()
		log.Info("msgx admin listener (API and console)", "addr", a.o.AdminListener.Addr().String())
	}
	regCtx, stopRegistrar := context.WithCancel(ctx)
	defer stopRegistrar()
	regDone := make(chan struct{})
	if a.registrar != nil {
		go func() { defer close(regDone); a.registrar.Run(regCtx) }()
	} else {
		close(regDone)
	}
	log.Info("msgx serving", "addr", a.o.Listener.Addr().String(), "version", a.o.Release, "pump", a.Keeper != nil, "driver", a.Cfg.Database.Driver, "data_dir", a.Cfg.DataDir)
	wg.Go(func() { a.fstores.start(inboxCtx) }) // phase A: the consistency check on start-up

	var exit error
	select {
	case <-ctx.Done():
		log.Info("shutting down: finishing the message in hand")
	case err := <-serveErr:
		exit = fmt.Errorf("http server: %w", err)
	case err := <-keeperErr:
		log.Error("pump lease lost to another instance; stopping, since this one may not stand by", "err", err.Error())
		exit = leaseError(err)
	}
	stopRegistrar() // deregister from Eureka first (bounded by its 5s call timeout), so callers stop coming here
	<-regDone
	shutCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a.httpSrv.Shutdown(shutCtx) // stop taking messages; answered requests were already durable
	if a.adminSrv != nil {
		a.adminSrv.Shutdown(shutCtx)
	}
	cancelInbox()
	cancelKeeper() // stops the pump and the dispatcher, then releases the lease
	wg.Wait()
	log.Info("msgx stopped")
	return exit
}

// Close closes what New opened (the sinks, the flight stores, the history sink), last opened
// first. The database and the listeners are the caller's.
func (a *App) Close() {
	for i := len(a.closers) - 1; i >= 0; i-- {
		a.closers[i]()
	}
	a.closers = nil
}

// Listen binds http.addr and, when set, http.admin-addr (adminLn nil otherwise). An address
// that cannot be bound (in use, not this host's) is an error naming it and its key.
func Listen(cfg config.Config) (ln, adminLn net.Listener, err error) {
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

// pauseWatch returns the pump's pause check: whether the operator's pause name is set in the
// database (so a pause holds across restarts and on whichever instance runs the pump),
// logging each change once.
func pauseWatch(db *store.DB, name string, log *slog.Logger) func(ctx context.Context) bool {
	var mu sync.Mutex
	last := false
	return func(ctx context.Context) bool {
		p, err := db.Operations.Pause(ctx, name)
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

// recordProblem returns the pump's OnNotable: each notable outcome joins the durable list of
// recent problems (a write of at most 2 s; a failure is logged, never stops the pump).
func recordProblem(db *store.DB, log *slog.Logger) func(pump.Notable) {
	return func(n pump.Notable) {
		note := n.Note
		for _, w := range n.Warnings {
			note = strings.TrimPrefix(note+"; warning: "+w, "; ")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		err := db.Triage.AddProblem(ctx, store.Problem{At: n.At, Kind: "outcome", MsgID: n.MsgID, TypeTag: n.TypeTag, State: n.State, Class: n.Class, Note: note})
		if err != nil {
			log.Warn("cannot record a recent problem", "msg_id", n.MsgID, "err", err.Error())
		}
	}
}
