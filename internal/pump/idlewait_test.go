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

// Run's idle wait (Options.PollInterval) runs on the pump's clock: a message that arrives
// without a Wake (a row the gateway inserted) waits while the clock stands, and is taken
// once the clock is moved past the poll interval, an hour here, at once in real time.
func TestTheIdleWaitRunsOnThePumpsClock(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		clock := testkit.NewClock(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
		p := pump.New(storetest.Pump(db), handler.Default(handler.Options{}), pump.Options{
			Policy: defaultPolicy, Clock: clock, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), PollInterval: time.Hour})
		e := &env{db: db, clock: clock, t: t, pump: p}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- p.Run(ctx) }()
		defer func() {
			cancel()
			if err := <-done; err != nil {
				t.Error(err)
			}
		}()
		testkit.Eventually(t, 10*time.Second, "Run waiting on the clock", func() bool { return clock.Waiting() == 1 })
		ids := e.post(refMsg("STTS", "ADD", "1", stts("A", "a"), 1))
		clock.Add(time.Hour - time.Second)
		e.want(ids[0], pipeline.Pending, "") // the wait is not over: Run has not stepped since
		clock.Add(time.Second)
		testkit.Eventually(t, 10*time.Second, "the message taken after the poll interval on the clock", func() bool {
			return e.msg(ids[0]).State == pipeline.Succeeded
		})
	})
}
