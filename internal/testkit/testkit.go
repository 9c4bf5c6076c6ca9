// Package testkit is what msgx's tests share: a clock the test moves by hand, a polling wait
// (Eventually), a buffer one goroutine writes while another reads, and the rule for a server or
// tool a test needs (skip saying why, or fail under MSGX_TEST_REQUIRE_SERVICES=1).
//
// Only tests import it (the _test.go files and the test-support packages storetest and
// flighttest); no production package does.
package testkit

import (
	"bytes"
	"context"
	"os"
	"sync"
	"testing"
	"time"
)

// Clock is a clock the test moves: Now returns the time last set, plus the auto-step when one
// is set. Its timers (Timer) fire when it is moved to or past their time. It is safe for
// concurrent use; the zero value reads the zero time.
type Clock struct {
	mu     sync.Mutex
	t      time.Time
	step   time.Duration
	timers map[*timer]struct{} // waiting for the clock to reach their time
}

// timer is one wait on a Clock: c receives the clock's time once it reaches at.
type timer struct {
	at time.Time
	c  chan time.Time
}

// NewClock returns a Clock at t.
func NewClock(t time.Time) *Clock { return &Clock{t: t} }

// NewStepClock returns a Clock at t that moves step forward on each Now, before it answers:
// for code that times itself with two readings of its clock.
func NewStepClock(t time.Time, step time.Duration) *Clock { return &Clock{t: t, step: step} }

// Now returns the clock's time (after the auto-step, if any).
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(c.step)
	c.fire()
	return c.t
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.fire()
	c.mu.Unlock()
}

// Add moves the clock d forward (backward when d is negative) and returns the new time.
func (c *Clock) Add(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
	c.fire()
	return c.t
}

// Timer returns a channel that receives the clock's time once the clock is moved to d from
// now or past it (at once when d is not positive), and a function that cancels the timer:
// the wait of code that takes its timers from its clock (pipeline.Timer), which the test
// drives by moving the clock.
func (c *Clock) Timer(d time.Duration) (<-chan time.Time, func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &timer{at: c.t.Add(d), c: make(chan time.Time, 1)}
	if c.timers == nil {
		c.timers = map[*timer]struct{}{}
	}
	c.timers[t] = struct{}{}
	c.fire()
	return t.c, func() {
		c.mu.Lock()
		delete(c.timers, t)
		c.mu.Unlock()
	}
}

// Waiting returns how many timers wait for the clock to reach their time: a test waits
// (Eventually) until the code under test waits on the clock before it moves the clock.
func (c *Clock) Waiting() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// fire sends the time to every timer the clock has reached and forgets them; c.mu is held.
func (c *Clock) fire() {
	for t := range c.timers {
		if !c.t.Before(t.at) {
			t.c <- c.t
			delete(c.timers, t)
		}
	}
}

// Sleep moves the clock d forward at once and returns nil: the sleep of code that takes one
// (func(ctx, d) error), so that it waits on the test's clock and never in real time.
func (c *Clock) Sleep(_ context.Context, d time.Duration) error {
	c.Add(d)
	return nil
}

// Eventually polls cond every few milliseconds until it holds, and fails t, naming what and
// limit, when it still does not after limit: the tests' wait for what other goroutines or
// processes do, instead of a sleep of a guessed length.
func Eventually(t testing.TB, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	end := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("%s: not within %s", what, limit)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Buffer is a bytes.Buffer safe for concurrent Write and String: a logger's or a child
// process's output that the test reads while it is written. The zero value is empty.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// RequireServices reports whether a test must fail, not skip, when a server or tool it needs
// is absent: MSGX_TEST_REQUIRE_SERVICES=1, as .ci/run sets it.
func RequireServices() bool { return os.Getenv("MSGX_TEST_REQUIRE_SERVICES") == "1" }

// RequireService does nothing when err is nil. Otherwise what (a server and its address, or a
// tool) is unavailable: it fails t under RequireServices and skips t otherwise, saying what is
// missing and why in both cases.
func RequireService(t testing.TB, what string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if RequireServices() {
		t.Fatalf("%s is required (MSGX_TEST_REQUIRE_SERVICES=1) but not available: %v", what, err)
	}
	t.Skipf("%s not available, skipping (set MSGX_TEST_REQUIRE_SERVICES=1 to fail instead): %v", what, err)
}
