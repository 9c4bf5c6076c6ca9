package pipeline

import (
	"testing"
	"time"
)

func TestDelay(t *testing.T) {
	p := RetryPolicy{Steps: DefaultBackoff, Cap: 60 * time.Second}
	for attempt, want := range map[int]time.Duration{-1: time.Second, 0: time.Second, 1: time.Second, 2: 2 * time.Second,
		3: 4 * time.Second, 4: 8 * time.Second, 5: 16 * time.Second, 6: 16 * time.Second, 100: 16 * time.Second} {
		if got := p.Delay(attempt); got != want {
			t.Errorf("Delay(%d) = %s, want %s", attempt, got, want)
		}
	}
	capped := RetryPolicy{Steps: []time.Duration{time.Second, 90 * time.Second}, Cap: 60 * time.Second}
	if got := capped.Delay(2); got != 60*time.Second {
		t.Errorf("capped Delay(2) = %s, want 60s", got)
	}
}

func TestOnFailure(t *testing.T) {
	p := RetryPolicy{MaxAttempts: 5, Steps: DefaultBackoff, Cap: time.Minute, HeadDeadline: 10 * time.Minute}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	v := p.OnFailure(Infra, 1, t0, t0)
	if v.Dead || !v.NextAttemptAt.Equal(t0.Add(time.Second)) || v.Class != Infra {
		t.Fatalf("first failure: %+v", v)
	}
	if v := p.OnFailure(Infra, 5, t0, t0.Add(time.Minute)); !v.Dead || v.Class != Exhausted {
		t.Fatalf("fifth failure must be DEAD/EXHAUSTED: %+v", v)
	}
	if v := p.OnFailure(CodecError, 2, t0, t0.Add(11*time.Minute)); !v.Dead || v.Class != Exhausted {
		t.Fatalf("failure past the head deadline must be DEAD/EXHAUSTED: %+v", v)
	}
	for _, c := range []ErrorClass{Malformed, Rejected} {
		if v := p.OnFailure(c, 1, t0, t0); !v.Dead || v.Class != c || v.Parked {
			t.Errorf("%s must be DEAD at once with its class: %+v", c, v)
		}
	}
	// With no park classes the deterministic failures retry, then go EXHAUSTED.
	for _, c := range DefaultPark {
		if v := p.OnFailure(c, 1, t0, t0); v.Dead {
			t.Errorf("%s without park classes must retry: %+v", c, v)
		}
	}
	parking := p
	parking.Park = DefaultPark
	for _, c := range DefaultPark {
		if v := parking.OnFailure(c, 1, t0, t0); !v.Dead || !v.Parked || v.Class != c || !c.Replayable() {
			t.Errorf("%s must be parked at once under its own class: %+v", c, v)
		}
	}
	if v := parking.OnFailure(Infra, 1, t0, t0); v.Dead {
		t.Errorf("INFRA must retry whatever is parked: %+v", v)
	}
	if !p.Overdue(t0, t0.Add(10*time.Minute+time.Millisecond)) || p.Overdue(t0, t0.Add(9*time.Minute)) {
		t.Error("Overdue must fire just past the deadline from the first failure, not before")
	}
}

func TestReplayable(t *testing.T) {
	for _, c := range []ErrorClass{CodecError, Unsupported, Infra, Exhausted, Orphan} {
		if !c.Replayable() {
			t.Errorf("%s must be replayable", c)
		}
	}
	if Malformed.Replayable() {
		t.Error("MALFORMED must never be replayable")
	}
}

func TestIdentity(t *testing.T) {
	if got := Identity("AODB", "AIRL", "ADD", "42", "20260101", false); got != "AODB|AIRL|ADD|42" {
		t.Errorf("got %q", got)
	}
	if got := Identity("AODB", "AIRL", "ADD", "42", "20260101", true); got != "AODB|AIRL|ADD|42|20260101" {
		t.Errorf("with day: got %q", got)
	}
}

func TestBackoffDoublesToItsLimit(t *testing.T) {
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second}
	for i, w := range want {
		if got := Backoff(i+1, time.Second, 5*time.Second); got != w {
			t.Errorf("Backoff(%d) = %s, want %s", i+1, got, w)
		}
	}
	if got := Backoff(0, time.Second, 5*time.Second); got != time.Second {
		t.Errorf("Backoff(0) = %s, want the first wait", got)
	}
	if got := Backoff(1000, time.Second, 5*time.Second); got != 5*time.Second {
		t.Errorf("Backoff(1000) = %s, want it capped", got)
	}
}
