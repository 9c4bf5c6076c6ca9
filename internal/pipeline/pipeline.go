// Package pipeline holds the vocabulary every other package shares: the processing and
// delivery states, the error classes and how an error carries one, the retry policy
// (backoff, attempts, head deadline), the message identity, the clock, and the Decision a
// handler returns for the pump to apply. It owns no table and does no I/O.
package pipeline

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ProcStatus is the processing state of one inbound message (PROC_STATE.STATE).
type ProcStatus string

// Processing states. SUCCEEDED, SKIPPED and DEAD are terminal; FAILED waits for its next attempt.
const (
	Pending   ProcStatus = "PENDING"
	Succeeded ProcStatus = "SUCCEEDED"
	Skipped   ProcStatus = "SKIPPED"
	Failed    ProcStatus = "FAILED"
	Dead      ProcStatus = "DEAD"
)

// Valid reports whether s is one of the five processing states.
func (s ProcStatus) Valid() bool {
	switch s {
	case Pending, Succeeded, Skipped, Failed, Dead:
		return true
	}
	return false
}

// Terminal reports whether a message in state s is finished.
func (s ProcStatus) Terminal() bool { return s == Succeeded || s == Skipped || s == Dead }

// EventStatus is the delivery state of one outbound event (MSG_EVENT.STATE).
type EventStatus string

// Delivery states. A failing event stays PENDING with a later next-attempt time.
const (
	EventPending EventStatus = "PENDING"
	EventSent    EventStatus = "SENT"
	EventDead    EventStatus = "DEAD"
)

// ErrorClass says why a message or event is not (yet) done. Both sides share it.
type ErrorClass string

// The error classes of DESIGN.md §2.
const (
	// Malformed input breaks SIS itself and can never become valid: DEAD at once, never
	// replayed.
	Malformed ErrorClass = "MALFORMED"
	// CodecError is valid SIS the decoder cannot read (yet): parked at once by default,
	// replayable once msgx can read it.
	CodecError ErrorClass = "CODEC_ERROR"
	// Unsupported means no decoder or handler for the type tag: parked at once by default,
	// replayable once msgx has one.
	Unsupported ErrorClass = "UNSUPPORTED"
	// Infra is a failed dependency (database, broker, network).
	Infra ErrorClass = "INFRA"
	// Exhausted is the class given on escalation to DEAD after retries or the head deadline.
	Exhausted ErrorClass = "EXHAUSTED"
	// Orphan is a FLOP for a flight the store does not have: DEAD at once, replayable.
	Orphan ErrorClass = "ORPHAN"
	// Rejected is a delivery the receiver refused for good (a 4xx other than 408/429).
	Rejected ErrorClass = "REJECTED"
	// Parked is a message an operator set aside (POST /api/v1/messages/{id}/park): DEAD,
	// replayable.
	Parked ErrorClass = "PARKED"
)

// ParseErrorClass returns the class named s, or false.
func ParseErrorClass(s string) (ErrorClass, bool) {
	for _, c := range Classes {
		if string(c) == s {
			return c, true
		}
	}
	return "", false
}

// Classes lists every error class.
var Classes = []ErrorClass{Malformed, CodecError, Unsupported, Infra, Exhausted, Orphan, Rejected, Parked}

// Replayable reports whether replay may move a FAILED or DEAD row of class c back to PENDING.
// Every class but MALFORMED is.
func (c ErrorClass) Replayable() bool {
	switch c {
	case CodecError, Unsupported, Infra, Exhausted, Orphan, Rejected, Parked:
		return true
	}
	return false
}

// TerminalAtOnce reports whether a failure of class c goes straight to DEAD whatever the
// policy: MALFORMED input and a REJECTED delivery. The other deterministic classes are parked
// at once by RetryPolicy.Park.
func (c ErrorClass) TerminalAtOnce() bool { return c == Malformed || c == Rejected }

// DefaultPark is the default of pipeline.park-classes: the failures that retrying cannot
// change, because the same bytes give the same answer until msgx itself changes.
var DefaultPark = []ErrorClass{CodecError, Unsupported, Orphan}

// Parkable reports whether c may be listed in pipeline.park-classes: the replayable classes
// that are not INFRA (which time can fix) or given by msgx itself (EXHAUSTED).
func (c ErrorClass) Parkable() bool { return c == CodecError || c == Unsupported || c == Orphan }

// Error is an error with its class. Create one with Errorf or Wrap.
type Error struct {
	Class ErrorClass
	Err   error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Errorf formats an error of class c.
func Errorf(c ErrorClass, format string, args ...any) error {
	return &Error{Class: c, Err: fmt.Errorf(format, args...)}
}

// Wrap gives err the class c, unless err is nil.
func Wrap(c ErrorClass, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Class: c, Err: err}
}

// ClassOf returns the class carried by err, or INFRA when err carries none: an error nobody
// classified is treated as a dependency failure and retried, never as bad input.
func ClassOf(err error) ErrorClass {
	var e *Error
	if errors.As(err, &e) {
		return e.Class
	}
	return Infra
}

// Clock tells the time. Logic takes one so tests can drive time by hand. A clock may also keep
// timers on its own time (testkit.Clock does); the loops that wait take their timers from it
// through Timer, so a test that moves the clock drives their waits too.
type Clock interface{ Now() time.Time }

// timers is a Clock that keeps timers on its own time: Timer returns a channel that receives
// once the clock has reached d from now, and a function that releases the timer.
type timers interface {
	Timer(d time.Duration) (<-chan time.Time, func())
}

// SystemClock is the real clock, in UTC.
type SystemClock struct{}

// Now returns the current time in UTC.
func (SystemClock) Now() time.Time { return time.Now().UTC() }

// DefaultBackoff is the step table of DESIGN.md §2: 1, 2, 4, 8, 16 seconds.
var DefaultBackoff = []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second}

// RetryPolicy decides what happens after a failure. Both the pump and the dispatcher use it.
type RetryPolicy struct {
	MaxAttempts  int             // failures allowed before DEAD/EXHAUSTED
	Steps        []time.Duration // backoff per attempt; the last step repeats
	Cap          time.Duration   // no delay exceeds it
	HeadDeadline time.Duration   // a head failing for longer than this since its first failure is DEAD
	// Park lists the classes that go DEAD at once under their own class (replayable), since
	// retrying them cannot succeed (pipeline.park-classes). Empty: they retry, then EXHAUSTED.
	Park []ErrorClass
}

// Parks reports whether p parks failures of class c at once.
func (p RetryPolicy) Parks(c ErrorClass) bool {
	for _, x := range p.Park {
		if x == c {
			return true
		}
	}
	return false
}

// Delay returns the wait after the attempt-th failure (1-based). attempt ≤ 0 uses the first step.
func (p RetryPolicy) Delay(attempt int) time.Duration {
	steps := p.Steps
	if len(steps) == 0 {
		steps = DefaultBackoff
	}
	i := attempt - 1
	if i < 0 {
		i = 0
	}
	if i >= len(steps) {
		i = len(steps) - 1
	}
	d := steps[i]
	if p.Cap > 0 && d > p.Cap {
		d = p.Cap
	}
	return d
}

// Verdict is the outcome of one failure under a RetryPolicy.
type Verdict struct {
	Dead          bool       // escalate to DEAD
	Parked        bool       // DEAD at once under its own class because retrying cannot help
	Class         ErrorClass // class to record (EXHAUSTED on escalation of a retryable class)
	NextAttemptAt time.Time  // when to try again; zero when Dead
	Reason        string     // why it escalated, for the log and the last error
}

// OnFailure judges a failure of class c. attempts is the count including this failure;
// firstFailure is when the row first failed (now, for a first failure).
func (p RetryPolicy) OnFailure(c ErrorClass, attempts int, firstFailure, now time.Time) Verdict {
	if c.TerminalAtOnce() {
		return Verdict{Dead: true, Class: c}
	}
	if p.Parks(c) {
		return Verdict{Dead: true, Parked: true, Class: c, Reason: "parked: " + string(c) + " is in pipeline.park-classes (retrying cannot change it; replay once msgx can handle it)"}
	}
	if p.MaxAttempts > 0 && attempts >= p.MaxAttempts {
		return Verdict{Dead: true, Class: Exhausted, Reason: fmt.Sprintf("%d attempts used (max %d)", attempts, p.MaxAttempts)}
	}
	if p.HeadDeadline > 0 && !firstFailure.IsZero() && now.Sub(firstFailure) > p.HeadDeadline {
		return Verdict{Dead: true, Class: Exhausted, Reason: fmt.Sprintf("failing for %s since %s (head deadline %s)",
			now.Sub(firstFailure).Round(time.Millisecond), firstFailure.UTC().Format(time.RFC3339), p.HeadDeadline)}
	}
	return Verdict{Class: c, NextAttemptAt: now.Add(p.Delay(attempts))}
}

// Overdue reports whether a FAILED head whose first failure was at firstFailure must be
// escalated now, before its next attempt is due. It is the check the seed could never make
// fire: the anchor is the first failure, not the last update.
func (p RetryPolicy) Overdue(firstFailure, now time.Time) bool {
	return p.HeadDeadline > 0 && !firstFailure.IsZero() && now.Sub(firstFailure) > p.HeadDeadline
}

// Backoff is the wait after the n-th consecutive failure (1-based; n ≤ 1 is the first) of a
// retry that doubles: first, 2×first, 4×first … never more than limit. The lease keeper, the
// database wait, the log shipper and the Eureka registrar retry with it.
func Backoff(n int, first, limit time.Duration) time.Duration {
	d := first
	for i := 1; i < n && d < limit; i++ {
		d *= 2
	}
	return min(d, limit)
}

// Timer is a wait of d on clock: the channel receives once d has passed on the clock's own
// timers when it keeps them (a test's clock, moved by hand), else on the wall clock; stop
// releases the timer. The pump's idle wait, the job schedule's and the lease keeper's waits
// go through it.
func Timer(clock Clock, d time.Duration) (c <-chan time.Time, stop func()) {
	if t, ok := clock.(timers); ok {
		return t.Timer(d)
	}
	t := time.NewTimer(d)
	return t.C, func() { t.Stop() }
}

// Sleep waits d, or until ctx ends: it reports whether the whole of d passed.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// OrDefault returns v, or def when v is zero or negative: how a count or a duration an option
// leaves unset takes its default.
func OrDefault[T ~int | ~int64 | ~float64](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}
