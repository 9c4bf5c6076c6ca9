package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"msgx/internal/app"
	"msgx/internal/config"
	"msgx/internal/handler"
	"msgx/internal/pipeline"
	"msgx/internal/store"
	"msgx/internal/target"
	"msgx/internal/targetconf"
)

// system is msgx in-process, built by app.New as `msgx serve` builds it (the lease keeper, the
// pause checks, the fence, the sampler and every other part), on the bench database, with the
// inbox behind a real HTTP listener on the loopback and the dispatcher delivering to file
// sinks in the bench's work directory. The pump is stopped and started with the operator's
// pause (store.PumpPause), so that a backlog can be built and then processed; the inbox and
// the dispatcher run throughout.
type system struct {
	db    DB
	clock pipeline.Clock
	app   *app.App
	url   string
	// targets are the delivery targets, the four the handlers emit to and the copies
	// (Options.Targets), in that order.
	targets []string

	stop context.CancelFunc
	done chan error
}

// pauser is who the bench's pauses of the pump are written by.
const pauser = "msgx bench"

// benchConfig is cfg as the bench runs it: its settings (pipeline, delivery, schd, sis,
// identity, http limits) with the parts that would reach outside the bench's database and
// work directory off: phase B without a Redis projection, the embedded default file sinks
// under workDir (with copies more targets, copyTargets), normal mode, no Eureka, history
// files under workDir, no admin listener, and no daily job (a fresh database would run the
// day's jobs among the bench's messages).
func benchConfig(cfg config.Config, workDir string, copies int) config.Config {
	cfg.DataDir = workDir
	cfg.Targets = copyTargets(copies)
	cfg.Phase = "B"
	cfg.Mode = "normal"
	cfg.Eureka.Enabled = false
	on := true
	cfg.Pipeline.Autostart = &on
	cfg.HTTP.Addr, cfg.HTTP.AdminAddr = "127.0.0.1:0", ""
	cfg.History.Elasticsearch.URL = ""
	cfg.Jobs.ArchiveAt, cfg.Jobs.HistorySweepAt, cfg.Jobs.RetentionAt = "off", "off", "off"
	cfg.ConsistencyCheck.DailyAt = "off"
	return cfg
}

// copyTargets is the bench's targets with n copies: nil (the embedded default, a file sink
// per target the handlers emit to) for none, else those four file sinks and n more, each a
// file sink taking a copy (copy-of) of every event of one of the four in turn, as a webhook
// does: COPY1_KAFKA_FLOP, COPY2_KAFKA_SCHD, …, each writing to <data-dir>/outbox/<NAME>.jsonl.
func copyTargets(n int) map[string]target.Config {
	if n <= 0 {
		return nil
	}
	out := map[string]target.Config{}
	for _, t := range handler.Targets {
		out[t] = target.Config{Sink: targetconf.SinkFile}
	}
	for _, name := range copyNames(n) {
		out[name] = target.Config{Sink: targetconf.SinkFile, CopyOf: name[strings.IndexByte(name, '_')+1:]}
	}
	return out
}

// copyNames names n copy targets, each of the emitted targets in turn.
func copyNames(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("COPY%d_%s", i+1, handler.Targets[i%len(handler.Targets)])
	}
	return out
}

// startSystem builds msgx (build: app.New) on db (migrated) with the settings of cfg, delivering to
// file sinks under workDir, the four targets' and copies more (copyTargets); deliveries are
// recorded in rec. log receives what the parts log. It measures the pump's first step (the
// start-up adoption) before the pump runs, then pauses the pump and starts msgx: startPump
// resumes it.
func startSystem(ctx context.Context, cfg config.Config, db DB, build app.Builder, clock pipeline.Clock, log *slog.Logger, workDir string, copies int, rec *Deliveries) (s *system, firstStep time.Duration, err error) {
	cfg = benchConfig(cfg, workDir, copies)
	ln, err := net.Listen("tcp", cfg.HTTP.Addr)
	if err != nil {
		return nil, 0, fmt.Errorf("listen on the loopback: %w", err)
	}
	a, err := build(ctx, cfg, app.Options{Listener: ln, Log: log, Clock: clock, Version: "bench", Release: "bench",
		WrapSink: rec.Sink, OnSent: rec.Sent})
	if err != nil {
		ln.Close()
		return nil, 0, err
	}
	s = &system{db: db, clock: clock, app: a, url: a.URL, done: make(chan error, 1),
		targets: append(slices.Clone(handler.Targets), copyNames(max(0, copies))...)}
	if d := a.Dispatcher; d != nil {
		// The pump's commits that inserted events, noted before the Wake app.New wires: the end
		// of the process stage (Stages).
		a.Pump.SetOnEvents(func() { rec.PumpCommitted(); d.Wake() })
	}
	// The pump's first step adopts the gateway rows of CMINMSGS and logs the backlog: a scan
	// whose cost follows the table, paid once per start. It is measured on its own so that it
	// does not count as part of the snapshot. (The queue is empty: nothing it writes is fenced.)
	start := clock.Now()
	if _, err := a.Pump.Step(ctx); err != nil {
		a.Close()
		ln.Close()
		return nil, 0, fmt.Errorf("the pump's first step: %w", err)
	}
	firstStep = clock.Now().Sub(start)
	if err := db.SetPause(ctx, store.PumpPause, pauser, "building a backlog", clock.Now()); err != nil {
		a.Close()
		ln.Close()
		return nil, 0, err
	}
	if err := a.Start(ctx); err != nil {
		a.Close()
		ln.Close()
		return nil, 0, err
	}
	runCtx, stop := context.WithCancel(context.Background())
	s.stop = stop
	go func() { s.done <- a.Run(runCtx) }()
	return s, firstStep, nil
}

// startPump resumes the pump (it runs under the lease keeper throughout).
func (s *system) startPump(ctx context.Context) error {
	if _, err := s.db.ClearPause(ctx, store.PumpPause); err != nil {
		return err
	}
	s.app.Pump.Wake()
	return nil
}

// stopPump pauses the pump: it stops after the step in hand.
func (s *system) stopPump(ctx context.Context) error {
	return s.db.SetPause(context.WithoutCancel(ctx), store.PumpPause, pauser, "between the bench's phases", s.clock.Now())
}

// close stops msgx (as a SIGTERM stops serve) and closes its sinks.
func (s *system) close() {
	s.stop()
	<-s.done
	s.app.Close()
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
		if !pipeline.Sleep(ctx, interval) {
			return fmt.Errorf("waiting for %s: %w", what, context.Cause(ctx))
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
	if err := s.db.SQLDB().QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM (SELECT 1 AS X FROM PROC_STATE WHERE STATE = 'PENDING' LIMIT 1) p),
		(SELECT COUNT(*) FROM PROC_STATE WHERE STATE IN ('FAILED', 'DEAD'))`).Scan(&pending, &bad); err != nil {
		return 0, store.Unavailable(fmt.Errorf("look for pending messages: %w", err))
	}
	if bad > 0 {
		var id int64
		var state, last string
		s.db.SQLDB().QueryRowContext(ctx, `SELECT CMINMSGS_ID, STATE, COALESCE(LAST_ERROR, '') FROM PROC_STATE
WHERE STATE IN ('FAILED', 'DEAD') ORDER BY CMINMSGS_ID LIMIT 1`).Scan(&id, &state, &last)
		return 0, fmt.Errorf("%w: %d failed, the first is message %d, %s: %s", errFailed, bad, id, state, last)
	}
	return pending, nil
}

// pendingEvents counts the events not yet SENT on the event-by-event targets (the schedule
// target is sent in periodic batches, see Run; its copies are sent event by event), and fails
// when one went DEAD on any target.
func (s *system) pendingEvents(ctx context.Context) (int, error) {
	return s.pendingEventsOn(ctx, s.eachTargets())
}

// eachTargets are the targets sent event by event: all but the schedule target.
func (s *system) eachTargets() []string {
	var each []string
	for _, t := range s.targets {
		if t != handler.TargetSchd {
			each = append(each, t)
		}
	}
	return each
}

// pendingEventsOn counts the events not yet SENT on targets, and fails when one went DEAD on
// any target. It reads the store's counts (EventCounts), which read only the index ranges
// above each delivery mark: a count of the PENDING state as stored (the delivered rows under
// the mark included) took 8 ms a poll on MariaDB after a day, every 10 ms while draining.
func (s *system) pendingEventsOn(ctx context.Context, targets []string) (int, error) {
	counts, err := s.db.EventCounts(ctx)
	if err != nil {
		return 0, err
	}
	var pending, dead int64
	for _, c := range counts {
		switch {
		case c.State == pipeline.EventDead:
			dead += c.Count
		case c.State == pipeline.EventPending && slices.Contains(targets, c.Target):
			pending += c.Count
		}
	}
	if dead > 0 {
		return 0, fmt.Errorf("%d events went DEAD: the file sinks refused them", dead)
	}
	return int(pending), nil
}
