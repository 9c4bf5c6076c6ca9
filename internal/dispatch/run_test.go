package dispatch_test

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"msgx/internal/dispatch"
	"msgx/internal/pipeline"
	"msgx/internal/store"
	"msgx/internal/store/storetest"
	"msgx/internal/target"
	"msgx/internal/testkit"
)

// blockSink holds every Send until released or until its context ends.
type blockSink struct {
	started chan struct{} // closed when the first Send begins
	release chan struct{} // close to let sends succeed
	once    sync.Once
}

func newBlockSink() *blockSink {
	return &blockSink{started: make(chan struct{}), release: make(chan struct{})}
}

func (s *blockSink) Send(ctx context.Context, recs []target.Record) (int, error) {
	s.once.Do(func() { close(s.started) })
	select {
	case <-s.release:
		return len(recs), nil
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

func (s *blockSink) Close() error { return nil }

func state(t *testing.T, db *store.DB, id int64) string { return get(t, db, id).State }

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func TestRunWakeDeliversAndCancelStops(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		flop, sched := &fakeSink{}, &fakeSink{}
		hung := newBlockSink()
		d := dispatch.New(db.Outbox, map[string]target.Sink{"KAFKA_FLOP": flop, "KAFKA_SCHD": sched, "WEBHOOK_DOWN": hung}, dispatch.Options{
			Policy:        policy,
			PollInterval:  time.Hour, // only Wake can make the loops look again
			SchdTarget:    "KAFKA_SCHD",
			ShutdownGrace: 5 * time.Second,
			Clock:         pipeline.SystemClock{},
			Logger:        quiet(),
		})
		stuck := insert(t, db, ev{target: "WEBHOOK_DOWN", kind: "notify"})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- d.Run(ctx) }()

		<-hung.started // the down sink holds its loop …
		a := insert(t, db, ev{target: "KAFKA_FLOP", key: "1"})
		s := insert(t, db, ev{target: "KAFKA_SCHD", kind: "schd", key: "1"})
		d.Wake() // … and the others deliver at once on Wake
		testkit.Eventually(t, 5*time.Second, "KAFKA_FLOP and KAFKA_SCHD delivered", func() bool {
			return state(t, db, a) == "SENT" && state(t, db, s) == "SENT"
		})
		if err := d.Run(ctx); err == nil {
			t.Fatal("a second Run started")
		}

		// Cancel while the down sink's send is in flight: Run waits for it.
		cancel()
		select {
		case err := <-done:
			t.Fatalf("Run returned (%v) with a send in flight", err)
		case <-time.After(100 * time.Millisecond):
		}
		close(hung.release)
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("Run did not return after cancel")
		}
		if got := state(t, db, stuck); got != "SENT" {
			t.Fatalf("event delivered during shutdown is %s, want SENT", got)
		}
	})
}

// A send still hanging when the grace ends is cut short, and the event is not charged with
// a failure: it waits, PENDING, for the next start.
func TestRunShutdownGraceCutsAHungSend(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		hung := newBlockSink()
		d := dispatch.New(db.Outbox, map[string]target.Sink{"WEBHOOK_DOWN": hung}, dispatch.Options{
			Policy: policy, ShutdownGrace: 50 * time.Millisecond, Logger: quiet(),
		})
		id := insert(t, db, ev{target: "WEBHOOK_DOWN", kind: "notify"})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- d.Run(ctx) }()
		<-hung.started
		cancel()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("Run did not return after the grace")
		}
		if r := get(t, db, id); r.State != "PENDING" || r.Attempts != 0 || r.NextAttemptAt.Valid {
			t.Fatalf("interrupted event: %+v", r)
		}
	})
}

func TestRunRefusesANilSink(t *testing.T) {
	t.Parallel()
	db := storetest.SQLite(t)
	d := dispatch.New(db.Outbox, map[string]target.Sink{"KAFKA_FLOP": nil}, dispatch.Options{Logger: quiet()})
	if err := d.Run(context.Background()); err == nil {
		t.Fatal("Run started with a nil sink")
	}
}

// The loops wait on the dispatcher's clock: with a clock the test moves by hand, a failing
// head's hour of backoff passes when the test moves the clock an hour, and the head is then
// tried again and delivered, an hour later by that clock.
func TestTheLoopsWaitOnTheDispatchersClock(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		pol := pipeline.RetryPolicy{MaxAttempts: 100, Steps: []time.Duration{time.Hour}, Cap: 2 * time.Hour, HeadDeadline: 1000 * time.Hour}
		h := newHarness(t, db, dispatch.Options{Policy: pol, PollInterval: time.Minute}, "DOWN")
		var calls atomic.Int64
		h.sinks["DOWN"].setFail(func(recs []target.Record) (int, error) {
			if calls.Add(1) == 1 {
				return 0, errDown // the first attempt fails: the head backs off for an hour
			}
			return len(recs), nil
		})
		id := insert(t, db, ev{target: "DOWN", kind: "notify"})

		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- h.d.Run(ctx) }()
		defer func() { cancel(); <-done }()
		testkit.Eventually(t, 30*time.Second, "the first attempt failed and the loop waits on the clock",
			func() bool { return calls.Load() == 1 && h.clock.Waiting() > 0 })
		if state(t, db, id) != "PENDING" {
			t.Fatalf("event %d is %s before its backoff passed by the clock, want PENDING", id, state(t, db, id))
		}
		h.clock.Add(time.Hour)
		testkit.Eventually(t, 30*time.Second, "the head delivered after its backoff (waited in real time, not on the clock?)",
			func() bool { return state(t, db, id) == "SENT" })
		r := get(t, db, id)
		if r.Attempts != 1 || !r.SentAt.Valid || r.SentAt.Time.Before(t0.Add(time.Hour)) {
			t.Fatalf("head after its backoff: %+v; want sent on the second attempt, an hour after t0 by the clock", r)
		}
	})
}
