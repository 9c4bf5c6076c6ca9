// Package dispatch delivers the outbox: the MSG_EVENT rows the pump commits. It owns their
// delivery state (STATE, ATTEMPTS, NEXT_ATTEMPT_AT, FIRST_FAILED_AT, ERROR_CLASS, LAST_ERROR,
// SENT_AT); the rows themselves are inserted by the pump (internal/store).
//
// Every target has its own loop and is its own FIFO in EVENT_ID order: the head (its lowest
// PENDING event) is sent first, and while it backs off nothing behind it is sent. A failing
// head blocks its own target only; its loop sleeps the head's whole backoff, and new events
// (Wake) queue behind it without cutting the backoff short. Stats shows a blocked target and
// since when (blocked_since: its head's first failure).
//
// A failed send is INFRA or REJECTED, nothing else (deliveryClass). INFRA (network, timeout,
// 5xx, 408/429, broker or server down, and any error nobody classified) keeps the head
// PENDING: after the retry policy's max attempts (none in `msgx serve`'s delivery policy), or
// once it has been failing for longer than the head deadline since its first failure
// (delivery.head-deadline, a day by default), the head goes DEAD as EXHAUSTED (kept, with its
// attempts and last error) and the target moves on. A refusal of the event itself (REJECTED:
// a 4xx other than 408/429, a record too large, an event the sink cannot encode) goes DEAD at
// once. Dead events come back with Replay.
//
// The targets' loops run on their own, but what their steps of one round delivered (a
// message's events go to several targets, and the pump's commit wakes them all at once) is
// recorded in one shared transaction: one durable commit for the round instead of one per
// target (commit.go). Each target still waits for its own outcome's commit before it reads
// again, so its order, its fences and its backoff are exactly those of a target alone.
//
// The schedule target (KAFKA_SCHD, D3) is never sent event by event: FlushSchd sends the
// pending schedule events as one batch, keeping only the newest event per flight, split into
// as many records as the sink's record size limit needs.
//
// Every write that moves an event on (SENT, backoff, DEAD, replay) is conditional on the
// row's current state, and a move out of PENDING on the exact state the decision was taken
// on (fenced): an operator's replay or another instance's write that came in between is never
// overwritten. A write that finds the row changed is dropped and the row is read again.
//
// Delivery is at least once: an event is marked SENT only after its sink said it was
// delivered, so a crash in between sends it again, with the same event id.
package dispatch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"msgx/internal/metrics"
	"msgx/internal/pipeline"
	"msgx/internal/store"
	"msgx/internal/target"
)

// Defaults and limits of Options.
const (
	DefaultPollInterval  = time.Second
	MinPollInterval      = 50 * time.Millisecond
	DefaultFlushPeriod   = 3 * time.Second
	DefaultFlushLimit    = 500
	DefaultSendBatch     = 100
	DefaultSendRuns      = 5
	DefaultShutdownGrace = 10 * time.Second
)

// writeTimeout bounds the database writes that record a send's outcome. They run even when
// the caller's context has ended, so a delivered event is not left PENDING by a shutdown.
const writeTimeout = 30 * time.Second

// Options configures a Dispatcher. The zero value works: default intervals, no batched
// target, and a policy that retries for ever on the default backoff.
type Options struct {
	// Policy is the retry policy shared with the pump: max attempts, backoff steps and cap,
	// head deadline.
	Policy pipeline.RetryPolicy
	// PollInterval is the fallback poll of every idle loop (default 1s, never under 50ms).
	// Wake makes the idle loops look at once; a backing-off head is retried when it is due
	// (after its whole backoff, up to the policy's cap), not at the next poll or Wake.
	PollInterval time.Duration
	// SchdTarget names the batched schedule target (KAFKA_SCHD). Its events are sent only by
	// FlushSchd, never one by one. Empty: no batched target.
	SchdTarget string
	// FlushPeriod is the schedule batch period (default 3s).
	FlushPeriod time.Duration
	// FlushLimit is the schedule batch size; that many pending events flush at once
	// (default 500).
	FlushLimit int
	// SendBatch is how many consecutive due events one Sink.Send call carries at most
	// (default 100).
	SendBatch int
	// SendRuns is how many Sends of up to SendBatch events one step of a target may make
	// before it commits their SENT marks, once (default 5). Under load a step then commits
	// up to SendBatch×SendRuns events at a time instead of SendBatch: fewer commits, each
	// one a durable write that the pump waits for on SQLite. An idle target's step has a
	// few events and makes one Send, as before.
	SendRuns int
	// CommitLinger is how long the first target to finish sending in a round may wait for
	// the others still sending before it begins the shared transaction that records their
	// outcomes (committer). Zero (the default) waits for none: the writes that come while
	// the transaction waits for the database (on SQLite, for the write lock behind the pump)
	// share it anyway, and a wait here would only let the pump take the lock first.
	CommitLinger time.Duration
	// ShutdownGrace is how long a send in flight may go on after Run's context ends before
	// its context is cancelled too (default 10s).
	ShutdownGrace time.Duration
	// Clock tells the time (default pipeline.SystemClock), and the loops wait on it
	// (pipeline.Timer): a clock that keeps timers of its own (testkit.Clock) ends their waits
	// when it is moved, not by the wall clock.
	Clock pipeline.Clock
	// Logger receives one line per sent batch, failure and dead event (default slog.Default()).
	Logger *slog.Logger
	// OnSent, when set, is called with the target and the ids of the events a commit has just
	// marked SENT (msgx bench measures accept→SENT with it). It must not block.
	OnSent func(target string, ids []int64)
	// Metrics receives the dispatcher's counters and histograms (events sent and dead, the
	// delivery latency, the last step's time); nil records none.
	Metrics *metrics.Metrics
	// Families maps each target to the family of its payload (event.Render): itself for the
	// four targets a flight change is rendered for, the one it is a copy-of otherwise. A
	// stored canonical event (kind event.KindChange) is rendered for its target's family
	// before it is sent; one of a target with no family goes DEAD as MALFORMED. Events of
	// every other kind need none.
	Families map[string]string
	// Paused, when set, is asked before each step of a target: while it answers true the
	// target's events wait (an operator paused it; POST /api/v1/targets/{name}/pause).
	Paused func(ctx context.Context, target string) bool
}

func (o Options) normalized() Options {
	o.PollInterval = pipeline.OrDefault(o.PollInterval, DefaultPollInterval)
	if o.PollInterval < MinPollInterval {
		o.PollInterval = MinPollInterval
	}
	o.FlushPeriod = pipeline.OrDefault(o.FlushPeriod, DefaultFlushPeriod)
	o.FlushLimit = pipeline.OrDefault(o.FlushLimit, DefaultFlushLimit)
	o.SendBatch = pipeline.OrDefault(o.SendBatch, DefaultSendBatch)
	o.SendRuns = pipeline.OrDefault(o.SendRuns, DefaultSendRuns)
	o.ShutdownGrace = pipeline.OrDefault(o.ShutdownGrace, DefaultShutdownGrace)
	if o.Clock == nil {
		o.Clock = pipeline.SystemClock{}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// Dispatcher delivers MSG_EVENT rows to their sinks. Create one with New; it is safe for
// concurrent use.
type Dispatcher struct {
	db    store.Events
	opt   Options
	log   *slog.Logger
	sinks map[string]target.Sink
	names []string                 // sorted target names
	wake  map[string]chan struct{} // one per target, buffered 1: new events
	kick  map[string]chan struct{} // one per target, buffered 1: a replay; ends any sleep
	// timer makes the loops' timers; tests replace it to drive the waits by hand.
	timer func(name string, wait time.Duration) (<-chan time.Time, func())
	locks map[string]*sync.Mutex // serialises the steps of one target
	// commits shares one transaction among the outcomes of the targets' steps of a round.
	commits *committer
	// changes holds the decoded flight changes the targets render.
	changes *changes

	mu        sync.Mutex // guards lastFlush and running
	lastFlush time.Time  // last successful schedule flush; zero before the first
	running   bool
}

// New returns a dispatcher that delivers the events of every target in sinks (target name →
// sink). Events of a target with no sink wait in MSG_EVENT. The sinks stay the caller's to
// close.
func New(db store.Events, sinks map[string]target.Sink, opt Options) *Dispatcher {
	opt = opt.normalized()
	d := &Dispatcher{
		db:      db,
		opt:     opt,
		log:     opt.Logger.With("component", "dispatch"),
		sinks:   make(map[string]target.Sink, len(sinks)),
		wake:    make(map[string]chan struct{}, len(sinks)),
		kick:    make(map[string]chan struct{}, len(sinks)),
		timer:   func(_ string, wait time.Duration) (<-chan time.Time, func()) { return pipeline.Timer(opt.Clock, wait) },
		locks:   make(map[string]*sync.Mutex, len(sinks)),
		changes: newChanges(),
	}
	d.commits = newCommitter(db, opt.CommitLinger)
	for name, s := range sinks {
		d.sinks[name] = s
		d.names = append(d.names, name)
		d.wake[name] = make(chan struct{}, 1)
		d.kick[name] = make(chan struct{}, 1)
		d.locks[name] = new(sync.Mutex)
	}
	slices.Sort(d.names)
	return d
}

// Targets returns the names of the targets the dispatcher delivers, sorted.
func (d *Dispatcher) Targets() []string { return slices.Clone(d.names) }

// Wake makes every idle loop look for due events at once. The pump calls it after each
// commit that inserted events; it never blocks. A loop whose head is backing off ignores it:
// the new events queue behind that head, and retrying the head early would only shorten its
// backoff (under load, to nothing).
func (d *Dispatcher) Wake() { signal(d.wake) }

// Kick makes every loop look at once, even one whose head is backing off: after a replay,
// which may have put a due event before that head (Replay calls it; so should whoever
// replays through the store or the function Replay in a process running this dispatcher).
// It never blocks.
func (d *Dispatcher) Kick() { signal(d.kick) }

func signal(chans map[string]chan struct{}) {
	for _, ch := range chans {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// Run delivers until ctx ends: one goroutine per target, the schedule target on FlushSchd
// and every other on DeliverOnce. It returns nil once ctx is done and the sends in flight
// have finished (each gets up to ShutdownGrace), or an error at once if a sink is nil or Run
// is already running.
func (d *Dispatcher) Run(ctx context.Context) error {
	for _, name := range d.names {
		if d.sinks[name] == nil {
			return fmt.Errorf("dispatch: target %s has no sink", name)
		}
	}
	d.mu.Lock()
	if d.running {
		d.mu.Unlock()
		return errors.New("dispatch: Run is already running")
	}
	d.running = true
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		d.running = false
		d.mu.Unlock()
	}()

	d.log.Info("dispatcher started", "targets", d.names, "schd_target", d.opt.SchdTarget,
		"poll_interval", d.opt.PollInterval.String())
	var wg sync.WaitGroup
	for _, name := range d.names {
		step := func(ctx context.Context) (stepResult, error) { return d.deliver(ctx, name) }
		if name == d.opt.SchdTarget {
			step = func(ctx context.Context) (stepResult, error) { return d.flushSchd(ctx, false) }
		}
		wg.Go(func() { d.loop(ctx, name, step) })
	}
	<-ctx.Done()
	wg.Wait()
	d.log.Info("dispatcher stopped")
	return nil
}

// stepResult is what one step of a target's loop (deliver, flushSchd) tells the loop.
type stepResult struct {
	sent int           // events marked SENT
	wait time.Duration // how long the loop may sleep before the next step
	// blocked means the target's head is backing off after a failed send and wait is the
	// time until its next attempt: the loop sleeps all of it, and a Wake (new events, which
	// queue behind the head) does not end it early.
	blocked bool
}

// loop calls step until ctx ends. Between steps it sleeps: while the target is idle, at most
// the poll interval or until Wake; while its head backs off, until the head's next attempt
// (at most the policy's cap), a Wake ignored; after a database failure, the policy's delay
// for the count of failures in a row (Wake ignored too: the step would only fail again, or
// send again what it could not record).
func (d *Dispatcher) loop(ctx context.Context, name string, step func(context.Context) (stepResult, error)) {
	failures := 0
	for ctx.Err() == nil {
		if d.opt.Paused != nil && d.opt.Paused(ctx, name) {
			if !d.sleep(ctx, name, d.opt.PollInterval, false) {
				return
			}
			continue
		}
		res, err := step(ctx)
		d.opt.Metrics.DispatcherStepped()
		if ctx.Err() != nil {
			return
		}
		wait, hold := res.wait, res.blocked
		if err != nil {
			failures++
			wait, hold = d.opt.Policy.Delay(failures), true
			d.log.Warn("dispatch step failed", "target", name, "failures", failures,
				"retry_in", wait.String(), "error", err.Error())
		} else {
			failures = 0
		}
		wait = d.clampWait(wait, hold)
		if wait <= 0 {
			continue
		}
		if !d.sleep(ctx, name, wait, hold) {
			return
		}
	}
}

// clampWait bounds a loop's sleep: an idle wait by the poll interval (so rows another
// process changed are seen), a held one by the policy's cap, when it has one (a next attempt
// another instance stored under a longer cap is not waited for beyond ours).
func (d *Dispatcher) clampWait(wait time.Duration, hold bool) time.Duration {
	if !hold {
		return min(wait, d.opt.PollInterval)
	}
	if c := d.opt.Policy.Cap; c > 0 {
		return min(wait, max(c, d.opt.PollInterval))
	}
	return wait
}

// sleep waits wait for target name, or until Wake when hold is false, or until a replay
// through this dispatcher kicks the target. It returns false when ctx ended.
func (d *Dispatcher) sleep(ctx context.Context, name string, wait time.Duration, hold bool) bool {
	c, stop := d.timer(name, wait)
	defer stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-c:
			return true
		case <-d.kick[name]:
			return true
		case <-d.wake[name]:
			if !hold {
				return true
			}
			// New events queue behind a head that is backing off: nothing is due before it.
		}
	}
}

// sendContext returns the context for one Sink.Send: it outlives ctx by ShutdownGrace, so a
// send in flight at shutdown can finish.
func (d *Dispatcher) sendContext(ctx context.Context) (context.Context, context.CancelFunc) {
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() {
		t := time.NewTimer(d.opt.ShutdownGrace)
		defer t.Stop()
		select {
		case <-t.C:
			cancel()
		case <-sctx.Done():
		}
	})
	return sctx, func() { stop(); cancel() }
}

// writeContext returns the context for recording a send's outcome: not cancelled by ctx.
func writeContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
}

// delivered clamps the count a sink returned to what the contract allows: never more than
// were sent, and fewer than all when it reported a failure (at least once: when in doubt, the
// record is sent again).
func delivered(n, sent int, err error) int {
	n = max(0, min(n, sent))
	if err != nil && n == sent {
		n = sent - 1
	}
	return n
}
