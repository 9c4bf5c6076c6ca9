package pump

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"msgx/internal/pipeline"
	"msgx/internal/secret"
)

// status is what the pump shows of itself while it runs: the message in hand (InHand), the
// head whose outcome it cannot write (Trouble) and the last notable outcomes. Status, the
// metrics and the console read it from other goroutines, so it has its own lock.
type status struct {
	clock     pipeline.Clock
	onNotable func(Notable) // Options.OnNotable

	mu      sync.Mutex
	trouble *Trouble  // the head whose outcome the pump cannot write; nil when none
	recent  []Notable // the last notable outcomes, newest last
	hand    *InHand   // what the pump works on
}

// Notable is an outcome an operator should see without reading the log: a message parked,
// or one applied with warnings. The pump keeps the last recentKeep of them for status.
type Notable struct {
	MsgID    int64
	TypeTag  string
	State    string
	Class    string
	At       time.Time
	Note     string
	Warnings []string
}

const recentKeep = 10

// recentFirst returns the last notable outcomes, newest first.
func (s *status) recentFirst() []Notable {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Notable, len(s.recent))
	for i, n := range s.recent {
		out[len(out)-1-i] = n
	}
	return out
}

// notable keeps n in the recent list and tells Options.OnNotable.
func (s *status) notable(n Notable) {
	n.Note = secret.Redact(n.Note) // status shows it: a cause may quote a URL
	if len(n.Warnings) > 3 {
		n.Warnings = append(slices.Clip(n.Warnings[:3]), fmt.Sprintf("… %d more (see the message)", len(n.Warnings)-3))
	}
	if s.onNotable != nil {
		s.onNotable(n)
	}
	s.mu.Lock()
	s.recent = append(s.recent, n)
	if len(s.recent) > recentKeep {
		s.recent = slices.Delete(s.recent, 0, len(s.recent)-recentKeep)
	}
	s.mu.Unlock()
}

// Trouble says that the pump could not finish its head: the database refused or did not
// answer the writes of the head's outcome (even a minimal DEAD record). The pump counts each
// such attempt in memory, backs off by the retry policy and tries again; status and metrics
// show it, since the head's own row cannot.
type Trouble struct {
	MsgID       int64
	Failures    int
	LastError   string
	Since       time.Time
	NextAttempt time.Time
}

// troubled returns a copy of the current trouble, or nil.
func (s *status) troubled() *Trouble {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.trouble == nil {
		return nil
	}
	t := *s.trouble
	return &t
}

// clearTrouble records that the pump is in no trouble.
func (s *status) clearTrouble() {
	s.mu.Lock()
	s.trouble = nil
	s.mu.Unlock()
}

// headFailed counts a failed attempt to record head id's outcome (err) and returns how long
// to back off by policy and how many attempts failed in a row.
func (s *status) headFailed(id int64, err error, policy pipeline.RetryPolicy, now time.Time) (time.Duration, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.trouble
	if t == nil || t.MsgID != id {
		t = &Trouble{MsgID: id, Since: now}
		s.trouble = t
	}
	t.Failures++
	t.LastError = secret.Redact(err.Error()) // status shows it as a value
	wait := policy.Delay(t.Failures)
	t.NextAttempt = now.Add(wait)
	return wait, t.Failures
}

// inHand returns a copy of what the pump works on, or nil between steps.
func (s *status) inHand() *InHand {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hand == nil {
		return nil
	}
	h := *s.hand
	d := s.clock.Now().Sub(h.Since)
	h.RunningFor, h.RunningSeconds = d.Round(time.Millisecond).String(), d.Seconds()
	return &h
}

// working records that the pump works on message id at stage doing; a new id restarts the
// clock, a later stage of the same message keeps it.
func (s *status) working(id int64, tag, doing string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hand == nil || s.hand.MsgID != id {
		s.hand = &InHand{MsgID: id, Since: s.clock.Now()}
	}
	if tag != "" {
		s.hand.Tag = tag
	}
	s.hand.Doing = doing
}

// committing records that a batch of n messages headed by id is being committed.
func (s *status) committing(id int64, n int) {
	s.working(id, "", fmt.Sprintf("committing a batch of %d messages", n))
}

// idle records that the pump finished its step.
func (s *status) idle() {
	s.mu.Lock()
	s.hand = nil
	s.mu.Unlock()
}
