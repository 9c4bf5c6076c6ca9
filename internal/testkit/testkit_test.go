package testkit

import (
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

var t0 = time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)

// Set, Add and Sleep move the clock; a step clock moves on each Now; goroutines may read and
// move it at once (the race detector watches).
func TestClockMovesAsTold(t *testing.T) {
	c := NewClock(t0)
	if got := c.Now(); !got.Equal(t0) {
		t.Fatalf("Now %s, want %s", got, t0)
	}
	if got := c.Now(); !got.Equal(t0) {
		t.Fatalf("a second Now moved the clock: %s", got)
	}
	if got := c.Add(time.Minute); !got.Equal(t0.Add(time.Minute)) || !c.Now().Equal(got) {
		t.Fatalf("Add: %s, Now %s", got, c.Now())
	}
	c.Set(t0.Add(-time.Hour))
	if got := c.Now(); !got.Equal(t0.Add(-time.Hour)) {
		t.Fatalf("after Set: %s", got)
	}
	if err := c.Sleep(t.Context(), 2*time.Second); err != nil || !c.Now().Equal(t0.Add(-time.Hour+2*time.Second)) {
		t.Fatalf("Sleep: %v, Now %s", err, c.Now())
	}
	s := NewStepClock(t0, time.Millisecond)
	if a, b := s.Now(), s.Now(); !a.Equal(t0.Add(time.Millisecond)) || b.Sub(a) != time.Millisecond {
		t.Fatalf("step clock: %s then %s", a, b)
	}

	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 100 {
				c.Add(time.Second)
				c.Now()
			}
		})
	}
	wg.Wait()
	if got := c.Now(); !got.Equal(t0.Add(-time.Hour + 2*time.Second + 400*time.Second)) {
		t.Fatalf("after 400 concurrent Adds of 1 s: %s", got)
	}
}

// A timer fires when the clock is moved to its time, by Add, Set, Sleep or a step clock's
// Now, never before and never in real time; a stopped timer never fires; Waiting counts the
// timers not yet fired or stopped.
func TestClockTimersFireWhenTheClockGetsThere(t *testing.T) {
	c := NewClock(t0)
	fired := func(ch <-chan time.Time) (time.Time, bool) {
		select {
		case at := <-ch:
			return at, true
		default:
			return time.Time{}, false
		}
	}
	ch, _ := c.Timer(time.Minute)
	stopped, stop := c.Timer(time.Minute)
	stop()
	if n := c.Waiting(); n != 1 {
		t.Fatalf("Waiting %d, want 1 (one stopped)", n)
	}
	c.Add(59 * time.Second)
	if at, ok := fired(ch); ok {
		t.Fatalf("fired at %s, a second before its time", at)
	}
	c.Add(2 * time.Second)
	if at, ok := fired(ch); !ok || !at.Equal(t0.Add(61*time.Second)) {
		t.Fatalf("fired %v at %s, want at %s", ok, at, t0.Add(61*time.Second))
	}
	if _, ok := fired(stopped); ok {
		t.Fatal("a stopped timer fired")
	}
	if n := c.Waiting(); n != 0 {
		t.Fatalf("Waiting %d after the timer fired", n)
	}
	if _, ok := fired(must(c.Timer(0))); !ok {
		t.Fatal("a timer of 0 did not fire at once")
	}
	later, _ := c.Timer(time.Hour)
	c.Set(t0.Add(2 * time.Hour))
	if _, ok := fired(later); !ok {
		t.Fatal("Set past a timer's time did not fire it")
	}
	slept, _ := c.Timer(time.Second)
	c.Sleep(t.Context(), time.Second)
	if _, ok := fired(slept); !ok {
		t.Fatal("Sleep past a timer's time did not fire it")
	}
	s := NewStepClock(t0, time.Second)
	stepped, _ := s.Timer(time.Second)
	s.Now()
	if _, ok := fired(stepped); !ok {
		t.Fatal("a step clock's Now past a timer's time did not fire it")
	}
}

func must(ch <-chan time.Time, _ func()) <-chan time.Time { return ch }

// stop is what recorder's Fatalf and Skipf panic with, to end the helper as testing does.
type stop struct{ skipped bool }

// recorder is a testing.TB whose Fatalf and Skipf record the message and stop the caller.
type recorder struct {
	testing.TB
	msg string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
	panic(stop{})
}
func (r *recorder) Skipf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
	panic(stop{skipped: true})
}

// run calls f with a recorder and reports whether it stopped (and by Skipf) and the message.
func run(f func(tb testing.TB)) (stopped, skipped bool, msg string) {
	r := &recorder{}
	func() {
		defer func() {
			if v := recover(); v != nil {
				s := v.(stop)
				stopped, skipped = true, s.skipped
			}
		}()
		f(r)
	}()
	return stopped, skipped, r.msg
}

// Eventually returns once cond holds, polling (here in synctest's fake time: a goroutine makes
// it true after 3 s), and fails naming what and the limit when it never does.
func TestEventuallyWaitsThenFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		done := false
		go func() {
			time.Sleep(3 * time.Second)
			mu.Lock()
			done = true
			mu.Unlock()
		}()
		start := time.Now()
		stopped, _, msg := run(func(tb testing.TB) {
			Eventually(tb, 10*time.Second, "the flag", func() bool { mu.Lock(); defer mu.Unlock(); return done })
		})
		if stopped {
			t.Fatalf("Eventually failed though cond held after 3 s: %s", msg)
		}
		if waited := time.Since(start); waited < 3*time.Second || waited > 3*time.Second+100*time.Millisecond {
			t.Fatalf("Eventually returned after %s, want just after 3 s", waited)
		}

		start = time.Now()
		stopped, skipped, msg := run(func(tb testing.TB) {
			Eventually(tb, 2*time.Second, "the other flag", func() bool { return false })
		})
		if !stopped || skipped || msg != "the other flag: not within 2s" {
			t.Fatalf("a cond that never holds: stopped %v skipped %v %q", stopped, skipped, msg)
		}
		if waited := time.Since(start); waited < 2*time.Second {
			t.Fatalf("failed after %s, before the limit", waited)
		}
	})
}

// Writers and a reader at once: every write lands whole (the race detector watches).
func TestBufferTakesConcurrentWrites(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			for range 50 {
				fmt.Fprintf(&b, "w%d;", i)
				_ = b.String()
			}
		})
	}
	wg.Wait()
	for i := range 4 {
		if n := strings.Count(b.String(), fmt.Sprintf("w%d;", i)); n != 50 {
			t.Fatalf("writer %d: %d writes, want 50", i, n)
		}
	}
}

// A missing service skips, saying why; under MSGX_TEST_REQUIRE_SERVICES=1 it fails; no error
// does nothing.
func TestRequireServiceSkipsOrFails(t *testing.T) {
	down := fmt.Errorf("dial tcp 127.0.0.1:6379: connection refused")
	t.Setenv("MSGX_TEST_REQUIRE_SERVICES", "")
	if RequireServices() {
		t.Fatal("RequireServices with the variable empty")
	}
	if stopped, _, msg := run(func(tb testing.TB) { RequireService(tb, "Redis at 127.0.0.1:6379", nil) }); stopped {
		t.Fatalf("no error stopped the test: %s", msg)
	}
	stopped, skipped, msg := run(func(tb testing.TB) { RequireService(tb, "Redis at 127.0.0.1:6379", down) })
	if !stopped || !skipped || !strings.Contains(msg, "Redis at 127.0.0.1:6379 not available") || !strings.Contains(msg, "connection refused") {
		t.Fatalf("without the variable: stopped %v skipped %v %q, want a skip naming Redis and the error", stopped, skipped, msg)
	}
	t.Setenv("MSGX_TEST_REQUIRE_SERVICES", "1")
	if !RequireServices() {
		t.Fatal("RequireServices false under MSGX_TEST_REQUIRE_SERVICES=1")
	}
	stopped, skipped, msg = run(func(tb testing.TB) { RequireService(tb, "Redis at 127.0.0.1:6379", down) })
	if !stopped || skipped || !strings.Contains(msg, "Redis at 127.0.0.1:6379 is required") || !strings.Contains(msg, "connection refused") {
		t.Fatalf("under the variable: stopped %v skipped %v %q, want a failure naming Redis and the error", stopped, skipped, msg)
	}
}

// No production package imports testkit: only the tests and the test-support packages
// (storetest, flighttest) do, so msgx's binary carries none of it.
func TestOnlyTestsImportIt(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list over the module")
	}
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "msgx/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	support := map[string]bool{"msgx/internal/store/storetest": true, "msgx/internal/flight/flighttest": true}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, imports, _ := strings.Cut(line, " ")
		if !support[pkg] && slices.Contains(strings.Fields(imports), "msgx/internal/testkit") {
			t.Errorf("%s, a production package, imports testkit", pkg)
		}
	}
}
