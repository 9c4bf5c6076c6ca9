package pump_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"msgx/internal/handler"
	"msgx/internal/pipeline"
	"msgx/internal/pump"
	"msgx/internal/store"
	"msgx/internal/store/storetest"
	"msgx/internal/testkit"
)

// The wait for a batch to fill (pipeline.batch-wait) runs on the pump's clock: with a clock the
// test moves, an hour's wait passes at once, by that clock, and the batch is then taken.
func TestTheBatchWaitRunsOnThePumpsClock(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		clock := testkit.NewClock(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
		e := &env{db: db, clock: clock, t: t, pump: pump.New(storetest.Pump(db), handler.Default(handler.Options{}), pump.Options{
			Policy: defaultPolicy, Clock: clock, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			BatchSize: 10, BatchWait: time.Hour})}
		ids := e.post(refMsg("STTS", "ADD", "1", stts("A", "a"), 1), refMsg("STTS", "ADD", "2", stts("B", "b"), 1))
		start := clock.Now()
		done := make(chan struct{})
		go func() {
			defer close(done)
			e.step()
		}()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatal("the batch wait waited in real time, not on the pump's clock")
		}
		if waited := clock.Now().Sub(start); waited < time.Hour {
			t.Fatalf("the clock moved %s, want the batch wait's hour", waited)
		}
		for _, id := range ids {
			e.want(id, pipeline.Succeeded, "")
		}
	})
}

// Run's context ends the wait for a batch to fill: a pump stopped while it waits returns at
// once, leaving the messages it waited with for the next start.
func TestStoppingEndsTheBatchWait(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		p := pump.New(storetest.Pump(db), handler.Default(handler.Options{}), pump.Options{
			Policy: defaultPolicy, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), BatchSize: 10, BatchWait: time.Hour})
		e := &env{db: db, clock: testkit.NewClock(time.Now()), t: t, pump: p}
		ids := e.post(refMsg("STTS", "ADD", "1", stts("A", "a"), 1), refMsg("STTS", "ADD", "2", stts("B", "b"), 1))
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- p.Run(ctx) }()
		time.Sleep(200 * time.Millisecond) // the step reaches its wait; stopped sooner, it takes nothing either
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Run kept waiting for the batch to fill after its context ended")
		}
		for _, id := range ids {
			e.want(id, pipeline.Pending, "")
		}
	})
}
