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
	"msgx/internal/sis"
	"msgx/internal/store/storetest"
	"msgx/internal/testkit"
)

// TestInHandShowsTheMessageBeingDecided: while a handler takes its time (a large snapshot),
// status can say which message the pump holds, at which stage and for how long; between steps
// nothing is in hand. One by one and batched.
func TestInHandShowsTheMessageBeingDecided(t *testing.T) {
	t.Parallel()
	for _, batch := range []int{1, 50} {
		db := storetest.SQLite(t)
		clock := testkit.NewClock(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
		entered, release := make(chan struct{}), make(chan struct{})
		reg := handler.Default(handler.Options{})
		reg.Replace("STTS-ADD", handler.Func(func(ctx context.Context, view handler.View, msg *sis.Message) (pipeline.Decision, error) {
			close(entered)
			<-release
			return pipeline.Decision{}, nil
		}))
		p := pump.New(storetest.Pump(db), reg, pump.Options{Policy: defaultPolicy, Clock: clock, BatchSize: batch,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		e := &env{db: db, clock: clock, pump: p, t: t}
		ids := e.post(refMsg("STTS", "ADD", "1", stts("AB", "x"), 1))
		if h := p.InHand(); h != nil {
			t.Fatalf("batch %d: in hand before any step: %+v", batch, h)
		}
		done := make(chan error, 1)
		go func() { _, err := p.Step(context.Background()); done <- err }()
		<-entered
		clock.Add(1500 * time.Millisecond)
		h := p.InHand()
		if h == nil || h.MsgID != ids[0] || h.Tag != "STTS-ADD" || h.Doing != "deciding" || h.RunningFor != "1.5s" {
			t.Errorf("batch %d: in hand while deciding: %+v", batch, h)
		}
		close(release)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if h := p.InHand(); h != nil {
			t.Errorf("batch %d: still in hand after the step: %+v", batch, h)
		}
	}
}
