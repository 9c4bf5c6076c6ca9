package lease

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"msgx/internal/store"
	"msgx/internal/testkit"
)

// Run waits on the keeper's clock: the first wait, then one check a second and a renewal
// every TTL/3, each when the test moves the clock there, never in real time. Between moves
// the keeper stands where it was (the row reads as the keeper's last step left it).
func TestRunWaitsOnTheKeepersClock(t *testing.T) {
	t.Parallel()
	clock := testkit.NewClock(t0)
	f := &fakeLeases{clock: clock}
	conn := &leaseConn{f: f, who: "a"}
	started := 0
	k := &Keeper{DB: conn, Name: store.PumpLease, Holder: "a", TTL: 15 * time.Second, Standby: true, Clock: clock,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), IsDead: func(string) bool { return false },
		Start: func() func() { started++; return func() {} }}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- k.Run(ctx, 10*time.Second) }()
	// waiting waits until Run waits on the clock again; what Run wrote before is then seen.
	waiting := func(what string) {
		t.Helper()
		testkit.Eventually(t, 10*time.Second, what, func() bool { return clock.Waiting() == 1 })
	}
	waiting("the first wait on the clock")
	clock.Add(10*time.Second - time.Millisecond)
	if running, _ := k.State(); running || len(conn.acquires) != 0 {
		t.Fatalf("the lease tried (%d) or taken (%v) before the first wait ended on the clock", len(conn.acquires), running)
	}
	clock.Add(time.Millisecond)
	waiting("the wait after taking the lease")
	if running, _ := k.State(); !running || started != 1 || !f.until.Equal(t0.Add(25*time.Second)) {
		t.Fatalf("after the first wait: running %v, started %d, lease until %s", running, started, f.until)
	}
	for i := 1; i <= 5; i++ {
		clock.Add(time.Second)
		waiting("the wait after a check")
		if i < 5 && (conn.pings != i || !f.until.Equal(t0.Add(25*time.Second))) {
			t.Fatalf("%d s after taking the lease: %d pings, lease until %s; want %d pings, no renewal", i, conn.pings, f.until, i)
		}
	}
	if want := t0.Add(30 * time.Second); !f.until.Equal(want) || conn.pings != 4 {
		t.Fatalf("a renewal period (5 s) after taking the lease: lease until %s, %d pings; want renewed until %s after 4 pings", f.until, conn.pings, want)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if f.holder != "" {
		t.Fatalf("the lease is still held by %q after Run ended", f.holder)
	}
}
