package lease

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"msgx/internal/pipeline"
	"msgx/internal/store"
	"msgx/internal/testkit"
)

// fakeLeases is one PUMP_LEASE row with the semantics of the store's, and a switch that
// makes the database unreachable for some clients at some times.
type fakeLeases struct {
	clock  *testkit.Clock
	holder string
	until  time.Time
	// down says whether client who cannot reach the database now.
	down func(who string, now time.Time) bool
}

// leaseConn is one instance's connection to the fake database.
type leaseConn struct {
	f        *fakeLeases
	who      string
	acquires []time.Time // when AcquireLease was called
	pings    int
	// beforeTakeOver, when set, runs once before TakeOverLease (to let another win the race).
	beforeTakeOver func()
}

func (c *leaseConn) unreachable() error {
	if c.f.down != nil && c.f.down(c.who, c.f.clock.Now()) {
		return store.Unavailable(errors.New("dial tcp 127.0.0.1:3306: connect: connection refused"))
	}
	return nil
}

func (c *leaseConn) AcquireLease(_ context.Context, name, holder string, ttl time.Duration, now time.Time) error {
	c.acquires = append(c.acquires, now)
	if err := c.unreachable(); err != nil {
		return err
	}
	if c.f.holder != "" && c.f.holder != holder && c.f.until.After(now) {
		return &store.LeaseHeldError{Holder: c.f.holder, Until: c.f.until}
	}
	c.f.holder, c.f.until = holder, now.Add(ttl)
	return nil
}

func (c *leaseConn) TakeOverLease(_ context.Context, claim store.LeaseClaim, dead string, now time.Time) error {
	holder, ttl := claim.Holder, claim.TTL
	if fn := c.beforeTakeOver; fn != nil {
		c.beforeTakeOver = nil
		fn()
	}
	if err := c.unreachable(); err != nil {
		return err
	}
	if c.f.holder != dead {
		return errors.New("no longer held by " + dead)
	}
	c.f.holder, c.f.until = holder, now.Add(ttl)
	return nil
}

func (c *leaseConn) RenewLease(_ context.Context, name, holder string, ttl time.Duration, now time.Time) error {
	if err := c.unreachable(); err != nil {
		return err
	}
	if c.f.holder != holder {
		return errors.New("no longer held by " + holder)
	}
	c.f.until = now.Add(ttl)
	return nil
}

func (c *leaseConn) Ping(context.Context) error {
	c.pings++
	if c.f.down != nil && c.f.down(c.who, c.f.clock.Now()) {
		return errors.New("dial tcp 127.0.0.1:3306: connect: connection refused")
	}
	return nil
}

func (c *leaseConn) ReleaseLease(_ context.Context, name, holder string) error {
	if err := c.unreachable(); err != nil {
		return err
	}
	if c.f.holder == holder {
		c.f.holder, c.f.until = "", time.Time{}
	}
	return nil
}

// node is one simulated `msgx serve`: its keeper, when it moves next, and when its pump ran.
type node struct {
	k       *Keeper
	conn    *leaseConn
	next    time.Time
	dieAt   time.Time // zero: lives on; else killed -9 then (no shutdown, lease left behind)
	dead    bool
	err     error
	runs    [][2]time.Time // [start, stop) of each period the pump and dispatcher ran
	running bool
}

var t0 = time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC)

func newNode(f *fakeLeases, holder string, standby bool, isDead func(string) bool) *node {
	n := &node{conn: &leaseConn{f: f, who: holder}, next: f.clock.Now()}
	if isDead == nil {
		isDead = func(string) bool { return false }
	}
	n.k = &Keeper{
		DB: n.conn, Name: store.PumpLease, Holder: holder, TTL: 15 * time.Second, Standby: standby,
		Clock: f.clock, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), IsDead: isDead,
		Start: func() func() {
			if n.running {
				panic("workers started twice")
			}
			n.running = true
			n.runs = append(n.runs, [2]time.Time{f.clock.Now()})
			return func() {
				n.running = false
				n.runs[len(n.runs)-1][1] = f.clock.Now()
			}
		},
	}
	return n
}

// simulate moves the nodes in time order until end, then closes the open run periods.
func simulate(t *testing.T, clock *testkit.Clock, end time.Time, nodes ...*node) {
	t.Helper()
	for {
		var n *node
		for _, c := range nodes {
			if c.dead || c.err != nil {
				continue
			}
			if !c.dieAt.IsZero() && !c.dieAt.After(c.next) {
				clock.Set(c.dieAt)
				c.dead = true
				if c.running {
					c.runs[len(c.runs)-1][1] = c.dieAt
					c.running = false
				}
				continue
			}
			if n == nil || c.next.Before(n.next) {
				n = c
			}
		}
		if n == nil || n.next.After(end) {
			break
		}
		clock.Set(n.next)
		wait, err := n.k.Step(context.Background())
		if err != nil {
			n.err = err
			continue
		}
		if wait <= 0 {
			t.Fatalf("%s: step asked for no wait at %s: a hot loop", n.k.Holder, clock.Now().Sub(t0))
		}
		n.next = clock.Now().Add(wait)
	}
	clock.Set(end)
	for _, c := range nodes {
		if c.running {
			c.runs[len(c.runs)-1][1] = end
		}
	}
}

// noOverlap fails when two nodes' pumps ran at the same time.
func noOverlap(t *testing.T, nodes ...*node) {
	t.Helper()
	for i, a := range nodes {
		for _, b := range nodes[i+1:] {
			for _, ra := range a.runs {
				for _, rb := range b.runs {
					if ra[0].Before(rb[1]) && rb[0].Before(ra[1]) {
						t.Fatalf("two pumps at once: %s ran %v–%v and %s ran %v–%v", a.k.Holder, ra[0].Sub(t0), ra[1].Sub(t0),
							b.k.Holder, rb[0].Sub(t0), rb[1].Sub(t0))
					}
				}
			}
		}
	}
}

func at(d time.Duration) time.Time { return t0.Add(d) }

func TestOutagePausesThePumpAndResumes(t *testing.T) {
	clock := testkit.NewClock(t0)
	f := &fakeLeases{clock: clock, down: func(_ string, now time.Time) bool {
		return !now.Before(at(20*time.Second)) && now.Before(at(50*time.Second))
	}}
	a := newNode(f, "a", true, nil)
	var during string
	simulate(t, clock, at(35*time.Second), a)
	if _, during = a.k.State(); !strings.HasPrefix(during, "paused") {
		t.Fatalf("state during the outage: %q", during)
	}
	simulate(t, clock, at(80*time.Second), a)
	if a.err != nil {
		t.Fatalf("the keeper gave up: %v", a.err)
	}
	if len(a.runs) != 2 {
		t.Fatalf("runs %v, want one before and one after the outage", a.runs)
	}
	// The pump stops within a second of the outage (a check each second between the
	// renewals every 5 s)…
	if stop := a.runs[0][1]; stop.Before(at(20*time.Second)) || stop.After(at(21*time.Second)) {
		t.Fatalf("pump stopped at %s, want within a second of the outage at 20s", stop.Sub(t0))
	}
	if a.conn.pings < 10 {
		t.Fatalf("%d checks between renewals in 20 s, want one a second", a.conn.pings)
	}
	// …waits without a hot loop (backoff capped at 5 s: a handful of tries in 30 s)…
	tries := 0
	for _, c := range a.conn.acquires {
		if !c.Before(at(20*time.Second)) && c.Before(at(50*time.Second)) {
			tries++
		}
	}
	if tries < 5 || tries > 12 {
		t.Fatalf("%d tries to take the lease during a 30 s outage", tries)
	}
	// …and starts again within the capped retry delay once the database answers, re-taking
	// its lease although it expired meanwhile (nobody else took it).
	if start := a.runs[1][0]; start.Before(at(50*time.Second)) || start.After(at(55*time.Second)) {
		t.Fatalf("pump resumed at %s, want within 5 s of the database's return at 50s", start.Sub(t0))
	}
	if running, note := a.k.State(); !running || f.holder != "a" {
		t.Fatalf("after the outage: running %v (%s), lease holder %q", running, note, f.holder)
	}
}

func TestTakeOverByStandbyWithinTheLeaseTime(t *testing.T) {
	clock := testkit.NewClock(t0)
	f := &fakeLeases{clock: clock}
	a := newNode(f, "host-a/pid-1/aa", true, nil)
	b := newNode(f, "host-b/pid-2/bb", true, nil)
	b.next = at(2 * time.Second)   // out of step with a's renewals
	a.dieAt = at(31 * time.Second) // kill -9 on another host: its lease must expire
	simulate(t, clock, at(20*time.Second), a, b)
	if running, note := b.k.State(); running || !strings.Contains(note, "standby") || !strings.Contains(note, a.k.Holder) {
		t.Fatalf("second instance while the first holds the lease: running %v, %q", running, note)
	}
	if len(b.runs) != 0 || b.err != nil {
		t.Fatalf("the standby ran %v / ended %v", b.runs, b.err)
	}
	simulate(t, clock, at(60*time.Second), a, b)
	noOverlap(t, a, b)
	if len(b.runs) != 1 {
		t.Fatalf("the standby never took over: %v", b.runs)
	}
	// a renewed last at 30s, so its lease ran to 45s; b takes it as it expires.
	if start := b.runs[0][0]; start.Before(at(45*time.Second)) || start.After(at(45*time.Second+200*time.Millisecond)) {
		t.Fatalf("take-over at %s, want just after the dead holder's lease expired at 45s", start.Sub(t0))
	}
	if start := b.runs[0][0]; start.Sub(a.dieAt) > 15*time.Second {
		t.Fatalf("take-over %s after the holder died, more than the lease time", start.Sub(a.dieAt))
	}
}

func TestOutageOfOneInstanceHandsTheLeaseOver(t *testing.T) {
	clock := testkit.NewClock(t0)
	// a loses the database from 20s to 60s; b can reach it all along.
	f := &fakeLeases{clock: clock, down: func(who string, now time.Time) bool {
		return who == "a" && !now.Before(at(20*time.Second)) && now.Before(at(60*time.Second))
	}}
	a := newNode(f, "a", true, nil)
	b := newNode(f, "b", true, nil)
	b.next = at(100 * time.Millisecond)
	simulate(t, clock, at(90*time.Second), a, b)
	noOverlap(t, a, b)
	if len(a.runs) != 1 || len(b.runs) != 1 {
		t.Fatalf("runs: a %v, b %v", a.runs, b.runs)
	}
	// a stopped at its first failed renewal (20s), long before its lease (renewed at 15s)
	// expired at 30s, when b took it.
	if a.runs[0][1].After(at(20*time.Second)) || b.runs[0][0].Before(at(30*time.Second)) || b.runs[0][0].After(at(31*time.Second)) {
		t.Fatalf("hand-over: a stopped at %s, b started at %s", a.runs[0][1].Sub(t0), b.runs[0][0].Sub(t0))
	}
	if running, note := a.k.State(); running || !strings.Contains(note, "standby: instance b") {
		t.Fatalf("a after the database came back: running %v, %q", running, note)
	}
}

func TestTakeOverByAnotherStopsThePumpAtOnce(t *testing.T) {
	clock := testkit.NewClock(t0)
	f := &fakeLeases{clock: clock}
	a := newNode(f, "a", true, nil)
	simulate(t, clock, at(12*time.Second), a)
	// Another instance took the row (an operator's take-over, say) at 12s.
	f.holder, f.until = "other", at(40*time.Second)
	simulate(t, clock, at(30*time.Second), a)
	if len(a.runs) != 1 || a.runs[0][1] != at(15*time.Second) {
		t.Fatalf("runs %v: the pump must stop at the next renewal (15s)", a.runs)
	}
	if running, note := a.k.State(); running || !strings.Contains(note, "standby: instance other") {
		t.Fatalf("running %v, %q", running, note)
	}
}

func TestTakeOverOfADeadProcessOfThisHostIsImmediate(t *testing.T) {
	clock := testkit.NewClock(t0)
	f := &fakeLeases{clock: clock, holder: "here/pid-7/dead", until: at(14 * time.Second)}
	a := newNode(f, "here/pid-8/live", true, func(h string) bool { return h == "here/pid-7/dead" })
	simulate(t, clock, at(time.Second), a)
	if len(a.runs) != 1 || a.runs[0][0] != t0 || f.holder != a.k.Holder {
		t.Fatalf("runs %v, holder %q: the lease of a dead local process is taken at once", a.runs, f.holder)
	}
}

func TestTakeOverImpossibleWithoutStandbyExitsWithCode3(t *testing.T) {
	clock := testkit.NewClock(t0)
	f := &fakeLeases{clock: clock, holder: "live", until: at(10 * time.Second)}
	a := newNode(f, "a", false, nil)
	_, err := a.k.Step(context.Background())
	var e *StandbyImpossibleError
	if !errors.As(err, &e) || !strings.Contains(e.Error(), "holds the pump lease") {
		t.Fatalf("step: %v, want StandbyImpossibleError (exit code 3)", err)
	}
	if len(a.runs) != 0 {
		t.Fatal("the pump ran without the lease")
	}
}

func TestOutageRetryDelayIsCapped(t *testing.T) {
	want := []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second}
	for i, w := range want {
		if got := RetryDelay(i + 1); got != w {
			t.Errorf("RetryDelay(%d) = %s, want %s", i+1, got, w)
		}
	}
	if RetryDelay(1000) != 5*time.Second {
		t.Error("retryDelay must stay capped")
	}
}

// Two standbys of one host see the holder die: one takes the lease over, the other, beaten to
// it, stands by behind the winner without a pause in between.
func TestTakeOverOfADeadProcessByTwoStandbys(t *testing.T) {
	clock := testkit.NewClock(t0)
	f := &fakeLeases{clock: clock, holder: "here/pid-7/dead", until: at(14 * time.Second)}
	dead := func(h string) bool { return h == "here/pid-7/dead" }
	a := newNode(f, "here/pid-8/a", true, dead)
	b := newNode(f, "here/pid-9/b", true, dead)
	// b read the row while the dead holder still had it, but a's take-over commits first.
	b.conn.beforeTakeOver = func() { a.k.Step(context.Background()) }
	if _, err := b.k.Step(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(a.runs) != 1 || len(b.runs) != 0 || f.holder != a.k.Holder {
		t.Fatalf("runs a %v b %v, holder %q", a.runs, b.runs, f.holder)
	}
	if _, note := b.k.State(); strings.HasPrefix(note, "paused") {
		t.Fatalf("losing the race is not a database outage: %q", note)
	}
	a.next, b.next = at(time.Second), at(600*time.Millisecond)
	simulate(t, clock, at(10*time.Second), a, b)
	noOverlap(t, a, b)
	if running, note := b.k.State(); running || !strings.Contains(note, "standby: instance "+a.k.Holder) {
		t.Fatalf("the slower one: running %v, %q", running, note)
	}
}

// hungDB answers until hang is closed, then takes every call and never answers it (a node cut
// off from its cluster): calls return only when their context ends.
type hungDB struct {
	leaseConn
	hang chan struct{}
}

func (h *hungDB) wait(ctx context.Context) error {
	select {
	case <-h.hang:
		<-ctx.Done()
		return ctx.Err()
	default:
		return nil
	}
}

func (h *hungDB) RenewLease(ctx context.Context, name, holder string, ttl time.Duration, now time.Time) error {
	if err := h.wait(ctx); err != nil {
		return err
	}
	return h.leaseConn.RenewLease(ctx, name, holder, ttl, now)
}

func (h *hungDB) Ping(ctx context.Context) error { return h.wait(ctx) }

// A database that hangs (takes the calls, answers nothing) is noticed within one renewal
// period, in real time, and the warning is logged before the workers are stopped: they may be
// stuck in a query of their own until the connection's read deadline, and the operator must
// not wait for that to learn why the pump paused.
func TestHungDatabaseIsNoticedWithinARenewalPeriod(t *testing.T) {
	t.Parallel()
	clock := pipeline.SystemClock{}
	f := &fakeLeases{clock: &testkit.Clock{}}
	db := &hungDB{leaseConn: leaseConn{f: f, who: "a"}, hang: make(chan struct{})}
	logs := &testkit.Buffer{}
	stopping := make(chan time.Time, 1)
	release := make(chan struct{})
	k := &Keeper{
		DB: db, Name: store.PumpLease, Holder: "a", TTL: TTL, Standby: true, Clock: clock,
		Log: slog.New(slog.NewTextHandler(logs, nil)), IsDead: func(string) bool { return false },
		Start: func() func() {
			return func() {
				stopping <- time.Now()
				<-release // a worker stuck in a query of its own
			}
		},
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- k.Run(ctx, 0) }()
	defer func() {
		cancel()
		<-done
	}()
	testkit.Eventually(t, 3*time.Second, "the lease taken", func() bool { r, _ := k.State(); return r })
	hungAt := time.Now()
	close(db.hang)
	var stopAt time.Time
	select {
	case stopAt = <-stopping:
	case <-time.After(2 * TTL):
		t.Fatalf("the workers were not stopped within %s of the database hanging", 2*TTL)
	}
	if took := stopAt.Sub(hungAt); took > k.renewEvery() {
		t.Errorf("the hung database was noticed after %s, want within one renewal period (%s)", took, k.renewEvery())
	}
	if !strings.Contains(logs.String(), "cannot renew the pump lease: the database does not answer") {
		t.Errorf("no warning logged before the workers were stopped; log:\n%s", logs.String())
	}
	if _, note := k.State(); !strings.HasPrefix(note, "paused") {
		t.Errorf("state while the database hangs: %q", note)
	}
	close(release)
}
