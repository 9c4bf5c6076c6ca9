package bench

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"msgx/internal/api"
	"msgx/internal/config"
	"msgx/internal/dispatch"
	"msgx/internal/flight"
	"msgx/internal/handler"
	"msgx/internal/jobs"
	"msgx/internal/pipeline"
	"msgx/internal/pump"
	"msgx/internal/store"
	"msgx/internal/target"
	"msgx/internal/targetconf"
)

// system is msgx in-process, its parts wired the way `msgx serve` wires them: the inbox behind
// a real HTTP listener on the loopback, the pump, and the dispatcher delivering to file sinks
// in the bench's work directory. The pump can be stopped and started again, so that a backlog
// can be built and then processed; the inbox and the dispatcher run throughout.
type system struct {
	db    *store.DB
	clock pipeline.Clock
	pump  *pump.Pump
	disp  *dispatch.Dispatcher
	sinks map[string]target.Sink
	url   string
	http  *http.Server

	stopAll context.CancelFunc
	wg      sync.WaitGroup

	pumpMu   sync.Mutex
	pumpStop func() // non-nil while the pump runs
}

// startSystem wires and starts msgx on db (migrated) with the settings of cfg, delivering to
// file sinks under workDir; deliveries are recorded in rec. log receives what the parts log.
func startSystem(cfg config.Config, db *store.DB, clock pipeline.Clock, log *slog.Logger, workDir string, rec *Deliveries) (*system, error) {
	ctx, cancel := context.WithCancel(context.Background())
	s := &system{db: db, clock: clock, stopAll: cancel}
	sinks, err := openFileSinks(ctx, workDir, rec, log)
	if err != nil {
		cancel()
		return nil, err
	}
	s.sinks = sinks
	policy, delivery := cfg.RetryPolicy(), cfg.DeliveryPolicy()
	flights := flight.New(db, clock, cfg.Location())
	s.pump = pump.New(db, handler.Default(handler.Options{AllowEmptyRefReplace: cfg.Ref.AllowEmptyReplace}), pump.Options{
		Policy:       policy,
		PollInterval: cfg.Pipeline.PollInterval,
		Identity:     pipeline.IdentityMode(cfg.Identity.Mode),
		SIS:          cfg.Decoding(),
		Clock:        clock,
		Logger:       log,
		Jobs:         &jobs.Runner{DB: db, Clock: clock},
		Flights:      flights,
		View:         flights,
		ViewIn:       func(tx *sql.Tx) handler.View { return flights.InTx(tx) },
		BatchSize:    cfg.Pipeline.BatchSize,
		BatchWait:    cfg.Pipeline.BatchWait,
	})
	s.disp = dispatch.New(db, sinks, dispatch.Options{
		Policy:       delivery,
		PollInterval: cfg.Pipeline.PollInterval,
		SchdTarget:   handler.TargetSchd,
		FlushPeriod:  cfg.Schd.FlushPeriod,
		FlushLimit:   cfg.Schd.FlushLimit,
		Clock:        clock,
		Logger:       log,
		OnSent:       rec.Sent,
	})
	s.pump.SetOnEvents(s.disp.Wake)
	inbox := api.NewInbox(db, clock, log, cfg.HTTP.MaxBodyBytes, s.pump.Wake)
	inbox.MaxInflightBytes = cfg.HTTP.MaxInflightBytes
	srv := &api.Server{DB: db, Inbox: inbox, Clock: clock, Log: log, PumpRunning: true, Wake: s.pump.Wake}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		s.closeSinks()
		cancel()
		return nil, fmt.Errorf("listen on the loopback: %w", err)
	}
	s.url = "http://" + ln.Addr().String()
	s.http = &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	s.wg.Go(func() { inbox.Run(ctx) })
	s.wg.Go(func() {
		if err := s.disp.Run(ctx); err != nil {
			log.Error("dispatcher stopped", "err", err.Error())
		}
	})
	s.wg.Go(func() { s.http.Serve(ln) })
	return s, nil
}

// openFileSinks opens a file sink for every target the handlers emit to, under workDir, each
// wrapped to record its deliveries.
func openFileSinks(ctx context.Context, workDir string, rec *Deliveries, log *slog.Logger) (map[string]target.Sink, error) {
	sinks := map[string]target.Sink{}
	for _, name := range handler.Targets {
		s, err := target.Open(ctx, name, target.Config{Sink: targetconf.SinkFile, Logger: log.With("target", name)}, workDir)
		if err != nil {
			for _, o := range sinks {
				o.Close()
			}
			return nil, fmt.Errorf("file sink for %s: %w", name, err)
		}
		sinks[name] = rec.Sink(s)
	}
	return sinks, nil
}

// startPump runs the pump until stopPump.
func (s *system) startPump() {
	s.pumpMu.Lock()
	defer s.pumpMu.Unlock()
	if s.pumpStop != nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { s.pump.Run(ctx) })
	s.pumpStop = func() { cancel(); wg.Wait() }
	s.pump.Wake()
}

// stopPump stops the pump after the message in hand.
func (s *system) stopPump() {
	s.pumpMu.Lock()
	defer s.pumpMu.Unlock()
	if s.pumpStop != nil {
		s.pumpStop()
		s.pumpStop = nil
	}
}

// close stops everything and closes the sinks.
func (s *system) close() {
	s.stopPump()
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	s.http.Shutdown(sctx)
	cancel()
	s.stopAll()
	s.wg.Wait()
	s.closeSinks()
}

func (s *system) closeSinks() {
	for _, sk := range s.sinks {
		sk.Close()
	}
}

// client posts messages to the inbox the way a sender does.
type client struct {
	http *http.Client
	url  string
}

func newClient(url string, conns int) *client {
	return &client{url: url + "/cminmsgs/send", http: &http.Client{
		Timeout:   2 * time.Minute,
		Transport: &http.Transport{MaxIdleConns: conns, MaxIdleConnsPerHost: conns},
	}}
}

// post sends one message and returns the id it was stored under, once the inbox answered
// that it is durable.
func (c *client) post(ctx context.Context, body string) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/xml")
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, fmt.Errorf("post a message: %w", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("post a message: the inbox answered %d %s", resp.StatusCode, strings.TrimSpace(string(b)))
	}
	var id int64
	if _, err := fmt.Sscanf(string(b), "%d", &id); err != nil || id <= 0 {
		return 0, fmt.Errorf("post a message: the inbox answered %q, not an id", b)
	}
	return id, nil
}

// waitFor polls cond every interval until it holds, fails, or ctx ends.
func waitFor(ctx context.Context, interval time.Duration, what string, cond func() (bool, error)) error {
	for {
		ok, err := cond()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, context.Cause(ctx))
		case <-time.After(interval):
		}
	}
}

// errFailed says a message the bench sent did not succeed: the bench's messages are valid, so
// this is a fault to look into, and the figures would be wrong.
var errFailed = errors.New("a bench message did not succeed")

// pendingMessages says whether a message is not yet processed (1, else 0), and fails when one
// has failed, in one query that reads at most one PENDING entry of the head index (STATE,
// CMINMSGS_ID) and the (normally empty) FAILED and DEAD ranges: the bench polls it every
// 10 ms while the pump works, and a count of thousands of PENDING rows each time took the
// database's time from the pump it measures.
func (s *system) pendingMessages(ctx context.Context) (int, error) {
	var pending, bad int
	if err := s.db.SQL.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM (SELECT 1 AS X FROM PROC_STATE WHERE STATE = 'PENDING' LIMIT 1) p),
		(SELECT COUNT(*) FROM PROC_STATE WHERE STATE IN ('FAILED', 'DEAD'))`).Scan(&pending, &bad); err != nil {
		return 0, store.Unavailable(fmt.Errorf("look for pending messages: %w", err))
	}
	if bad > 0 {
		var id int64
		var state, last string
		s.db.SQL.QueryRowContext(ctx, `SELECT CMINMSGS_ID, STATE, COALESCE(LAST_ERROR, '') FROM PROC_STATE
WHERE STATE IN ('FAILED', 'DEAD') ORDER BY CMINMSGS_ID LIMIT 1`).Scan(&id, &state, &last)
		return 0, fmt.Errorf("%w: %d failed, the first is message %d, %s: %s", errFailed, bad, id, state, last)
	}
	return pending, nil
}

// pendingEvents counts the events not yet SENT on the event-by-event targets (the schedule
// target is sent in periodic batches, see Run), and fails when one went DEAD. Both counts
// read the head index (TARGET, STATE, EVENT_ID).
func (s *system) pendingEvents(ctx context.Context) (int, error) {
	var each, all []any
	for _, t := range handler.Targets {
		all = append(all, t)
		if t != handler.TargetSchd {
			each = append(each, t)
		}
	}
	in := func(n int) string { return strings.TrimSuffix(strings.Repeat("?,", n), ",") }
	var pending, dead int
	if err := s.db.SQL.QueryRowContext(ctx, `SELECT COUNT(*) FROM MSG_EVENT WHERE TARGET IN (`+in(len(each))+`) AND STATE = 'PENDING'`, each...).Scan(&pending); err != nil {
		return 0, store.Unavailable(fmt.Errorf("count pending events: %w", err))
	}
	if err := s.db.SQL.QueryRowContext(ctx, `SELECT COUNT(*) FROM MSG_EVENT WHERE TARGET IN (`+in(len(all))+`) AND STATE = 'DEAD'`, all...).Scan(&dead); err != nil {
		return 0, store.Unavailable(fmt.Errorf("count dead events: %w", err))
	}
	if dead > 0 {
		return 0, fmt.Errorf("%d events went DEAD: the file sinks refused them", dead)
	}
	return pending, nil
}
