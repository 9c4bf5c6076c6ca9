package dispatch_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"msgx/internal/dispatch"
	"msgx/internal/store"
	"msgx/internal/store/storetest"
	"msgx/internal/target"
	"msgx/internal/testkit"
)

// countingEvents is the outbox with its transactions counted, and a Change that fails while
// breakChange is set (a write the database refuses).
type countingEvents struct {
	*store.Outbox
	txs         atomic.Int64
	breakChange atomic.Bool
}

func (c *countingEvents) EventTx(ctx context.Context, fn func(store.EventTx) error) error {
	c.txs.Add(1)
	return c.Outbox.EventTx(ctx, func(tx store.EventTx) error { return fn(breakableTx{EventTx: tx, c: c}) })
}

type breakableTx struct {
	store.EventTx
	c *countingEvents
}

func (b breakableTx) Change(evs []*store.Event, ch store.EventChange) (int, error) {
	if b.c.breakChange.Load() {
		return 0, store.Unavailable(errors.New("the database refuses the write"))
	}
	return b.EventTx.Change(evs, ch)
}

// meetSinks returns a fail function for fake sinks that holds each Send until n Sends have
// begun (so the targets' steps are in the same round), then answers with outcome.
func meetSinks(t *testing.T, n int) func(outcome func([]target.Record) (int, error)) func([]target.Record) (int, error) {
	var mu sync.Mutex
	arrived := 0
	all := make(chan struct{})
	return func(outcome func([]target.Record) (int, error)) func([]target.Record) (int, error) {
		return func(recs []target.Record) (int, error) {
			mu.Lock()
			if arrived++; arrived == n {
				close(all)
			}
			mu.Unlock()
			select {
			case <-all:
			case <-time.After(5 * time.Second):
				t.Error("the other target's Send never began")
			}
			return outcome(recs)
		}
	}
}

// roundHarness is a dispatcher over a counting outbox with fake sinks for the targets named.
func roundHarness(t *testing.T, db *store.DB, opt dispatch.Options, names ...string) (*dispatch.Dispatcher, *countingEvents, map[string]*fakeSink, *testkit.Clock) {
	t.Helper()
	ce := &countingEvents{Outbox: db.Outbox}
	clock := testkit.NewClock(t0)
	fakes := map[string]*fakeSink{}
	sinks := map[string]target.Sink{}
	for _, n := range names {
		fakes[n] = &fakeSink{}
		sinks[n] = fakes[n]
	}
	opt.Policy, opt.Clock, opt.Logger = policy, clock, slog.New(slog.DiscardHandler)
	return dispatch.New(ce, sinks, opt), ce, fakes, clock
}

// deliverTogether runs one DeliverOnce of each target at the same time and returns their
// errors in the order of names.
func deliverTogether(d *dispatch.Dispatcher, names ...string) []error {
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, n := range names {
		wg.Go(func() { _, _, errs[i] = d.DeliverOnce(context.Background(), n) })
	}
	wg.Wait()
	return errs
}

// TestRoundSharesOneCommit: two targets sending in the same round record their outcomes in
// one transaction: one target's events SENT, the other's failure recorded on its head alone
// (backoff, the event behind it untouched), and the failing target's order kept once its
// sink is back.
func TestRoundSharesOneCommit(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		// A linger far longer than the test, so that the commit waits for the other target
		// however slowly the machine schedules it.
		d, ce, sinks, clock := roundHarness(t, db, dispatch.Options{CommitLinger: time.Minute}, "KAFKA_FLOP", "REDIS_NOTIFY")
		a1 := insert(t, db, ev{target: "KAFKA_FLOP", key: "101"})
		b1 := insert(t, db, ev{target: "REDIS_NOTIFY", kind: "notify"})
		a2 := insert(t, db, ev{target: "KAFKA_FLOP", key: "102"})
		b2 := insert(t, db, ev{target: "REDIS_NOTIFY", kind: "notify"})
		meet := meetSinks(t, 2)
		sinks["KAFKA_FLOP"].setFail(meet(func(recs []target.Record) (int, error) { return len(recs), nil }))
		sinks["REDIS_NOTIFY"].setFail(meet(func([]target.Record) (int, error) { return 0, errDown }))

		for i, err := range deliverTogether(d, "KAFKA_FLOP", "REDIS_NOTIFY") {
			if err != nil {
				t.Fatalf("step %d: %v", i, err)
			}
		}
		if n := ce.txs.Load(); n != 1 {
			t.Fatalf("the round's outcomes took %d transactions, want 1", n)
		}
		wantState(t, db, "SENT", a1, a2)
		r := get(t, db, b1)
		if r.State != "PENDING" || r.Attempts != 1 || r.Class.String != "INFRA" || !r.NextAttemptAt.Time.Equal(t0.Add(time.Second)) {
			t.Fatalf("failing target's head: %+v", r)
		}
		if r := get(t, db, b2); r.State != "PENDING" || r.Attempts != 0 || r.NextAttemptAt.Valid {
			t.Fatalf("event behind the failing head was charged: %+v", r)
		}

		// Its sink back and its head due, the failing target sends its events in order.
		clock.Add(time.Second)
		sinks["REDIS_NOTIFY"].succeed()
		if n, _, err := d.DeliverOnce(context.Background(), "REDIS_NOTIFY"); err != nil || n != 2 {
			t.Fatalf("recovered target: sent %d, %v", n, err)
		}
		if got := ids(sinks["REDIS_NOTIFY"].last(t)); !slices.Equal(got, []int64{b1, b2}) {
			t.Fatalf("recovered target sent %v, want %v", got, []int64{b1, b2})
		}
		wantState(t, db, "SENT", b1, b2)
	})
}

// TestRoundWriteRefusedFailsOnlyItsTarget: when one target's write breaks the shared
// transaction, the others' outcomes are committed on their own; the refused target's events
// stay PENDING as they were, and its step reports the database failure.
func TestRoundWriteRefusedFailsOnlyItsTarget(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		d, ce, sinks, _ := roundHarness(t, db, dispatch.Options{CommitLinger: time.Minute}, "KAFKA_FLOP", "REDIS_NOTIFY")
		a1 := insert(t, db, ev{target: "KAFKA_FLOP", key: "101"})
		b1 := insert(t, db, ev{target: "REDIS_NOTIFY", kind: "notify"})
		meet := meetSinks(t, 2)
		sinks["KAFKA_FLOP"].setFail(meet(func(recs []target.Record) (int, error) { return len(recs), nil }))
		sinks["REDIS_NOTIFY"].setFail(meet(func([]target.Record) (int, error) { return 0, errDown }))
		ce.breakChange.Store(true) // recording the failure of REDIS_NOTIFY's head fails

		errs := deliverTogether(d, "KAFKA_FLOP", "REDIS_NOTIFY")
		if errs[0] != nil {
			t.Fatalf("the target whose write went through failed: %v", errs[0])
		}
		if !errors.Is(errs[1], store.ErrUnavailable) {
			t.Fatalf("the refused target's step: %v, want the database failure", errs[1])
		}
		wantState(t, db, "SENT", a1)
		if r := get(t, db, b1); r.State != "PENDING" || r.Attempts != 0 {
			t.Fatalf("refused target's head: %+v, want PENDING untouched", r)
		}
		if n := ce.txs.Load(); n != 3 {
			t.Fatalf("%d transactions, want 3: the shared one, then each alone", n)
		}
	})
}

// TestCommitLingerIsBounded: a target whose Send hangs holds the others' commit for the
// linger at most.
func TestCommitLingerIsBounded(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		hung := newBlockSink()
		var wg sync.WaitGroup
		defer wg.Wait()
		defer close(hung.release)
		ce := &countingEvents{Outbox: db.Outbox}
		flop := &fakeSink{}
		d := dispatch.New(ce, map[string]target.Sink{"KAFKA_FLOP": flop, "WEBHOOK_DOWN": hung},
			dispatch.Options{Policy: policy, Clock: testkit.NewClock(t0), Logger: slog.New(slog.DiscardHandler), CommitLinger: 50 * time.Millisecond})
		insert(t, db, ev{target: "WEBHOOK_DOWN", kind: "notify"})
		a := insert(t, db, ev{target: "KAFKA_FLOP", key: "1"})
		wg.Go(func() { d.DeliverOnce(context.Background(), "WEBHOOK_DOWN") })
		<-hung.started
		start := time.Now()
		if n, _, err := d.DeliverOnce(context.Background(), "KAFKA_FLOP"); err != nil || n != 1 {
			t.Fatalf("sent %d, %v", n, err)
		}
		if took := time.Since(start); took < 50*time.Millisecond || took > 5*time.Second {
			t.Fatalf("the step took %s beside a hung target, want the linger (50ms) and no more than a little over", took)
		}
		wantState(t, db, "SENT", a)
	})
}
