package dispatch

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"msgx/internal/pipeline"
	"msgx/internal/secret"
	"msgx/internal/store"
)

// Replay moves DEAD events back to PENDING and wakes the loops, even one whose head is
// backing off (a replayed event may come before that head); see the function Replay.
func (d *Dispatcher) Replay(ctx context.Context, target string, ids []int64) (moved, skipped int, err error) {
	moved, skipped, err = d.db.ReplayEvents(ctx, target, ids)
	if moved > 0 {
		d.Kick()
	}
	return moved, skipped, err
}

// Replay moves DEAD events back to PENDING (see store.Events.ReplayEvents). A process that
// runs no Dispatcher can call it; the running loops find the events at their next poll, or,
// for a target whose head is backing off, at that head's next attempt.
func Replay(ctx context.Context, db store.Events, target string, ids []int64) (moved, skipped int, err error) {
	return db.ReplayEvents(ctx, target, ids)
}

// Filter selects events for List. Zero fields select everything.
type Filter struct {
	Target  string // one target, or "" for all
	State   string // PENDING, SENT or DEAD, or "" for all
	AfterID int64  // only events with a larger EVENT_ID (paging in EVENT_ID order)
	Limit   int    // at most this many (default 100, at most 1000)
	Newest  bool   // newest first instead of delivery (EVENT_ID) order
}

// List limits.
const (
	DefaultListLimit = 100
	MaxListLimit     = 1000
)

// List returns the events f selects, in EVENT_ID order (newest first with f.Newest).
func List(ctx context.Context, db store.Events, f Filter) ([]Event, error) {
	var st pipeline.EventStatus
	if f.State != "" {
		st = pipeline.EventStatus(strings.ToUpper(f.State))
		if st != pipeline.EventPending && st != pipeline.EventSent && st != pipeline.EventDead {
			return nil, fmt.Errorf("dispatch: unknown event state %q (want PENDING, SENT or DEAD)", f.State)
		}
	}
	limit := f.Limit
	if limit <= 0 {
		limit = DefaultListLimit
	}
	return db.ListEvents(ctx, store.EventFilter{Target: f.Target, State: st, AfterID: f.AfterID, Limit: min(limit, MaxListLimit), Newest: f.Newest})
}

// TargetStats is the delivery state of one target.
type TargetStats struct {
	Target  string
	Pending int64
	Dead    int64
	// Sent counts every event of the target ever marked SENT, including rows deleted since.
	Sent int64
	// OldestPendingAt is when the oldest PENDING event was created; nil when none is pending.
	OldestPendingAt *time.Time
	// OldestPendingAge is how long the oldest PENDING event has waited.
	OldestPendingAge time.Duration
	// Head is the target's head: its lowest PENDING event, with its attempts and last error;
	// nil when none is pending.
	Head *Event

	// BlockedSince is, while the head is failing, when it first failed: the target has
	// delivered nothing since, as everything behind the head waits for it. Nil when the head
	// is not failing (or nothing is pending). It is the head's first failure, not its latest,
	// so it stays put through an outage however many attempts the head makes.
	BlockedSince *time.Time
	// BlockedFor is how long the target has been blocked at now.
	BlockedFor time.Duration
	// ErrorClass, LastError and NextAttemptAt are the failing head's class (INFRA while it
	// is retried), last error and next attempt; nil when it is not failing.
	ErrorClass    *string
	LastError     *string
	NextAttemptAt *time.Time

	// Rejecting says the target refuses what it is given: at least RejectingMin of its
	// events went DEAD after its last SENT one (or it never sent any). Such a target is not
	// blocked (its dead events leave the queue) but delivers nothing.
	Rejecting bool
}

// The "rejecting" judgement of a target (TargetStats.Rejecting).
const (
	RecentWindow = 20 // how many of a target's latest DEAD events are read
	RejectingMin = 3  // how many DEAD events after the last SENT one make it rejecting
)

// blocked fills the blocked fields from the head at now.
func (s *TargetStats) blocked(now time.Time) {
	h := s.Head
	if h == nil || h.FirstFailedAt == nil || h.State != pipeline.EventPending {
		return
	}
	since := *h.FirstFailedAt
	s.BlockedSince = &since
	s.BlockedFor = max(0, now.Sub(since))
	s.ErrorClass, s.LastError, s.NextAttemptAt = h.ErrorClass, h.LastError, h.NextAttemptAt
}

// Stats returns, per target that has events, how many are pending, dead and sent, the age of
// the oldest pending one at now, the head, and whether the head is failing: since when
// (blocked_since), with its last error and next attempt. Targets are sorted by name. It reads
// index ranges that grow with the pending and dead events, never the sent ones
// (store.Events.EventCounts), so it stays fast with millions of events.
func Stats(ctx context.Context, db store.Events, now time.Time) ([]TargetStats, error) {
	counts, err := db.EventCounts(ctx)
	if err != nil {
		return nil, err
	}
	return StatsWith(ctx, db, counts, now)
}

// StatsWith is Stats with the outbox's counts already read (store.Events.EventCounts).
func StatsWith(ctx context.Context, db store.Events, counts []store.EventCount, now time.Time) ([]TargetStats, error) {
	byName := map[string]*TargetStats{}
	for _, c := range counts {
		s := byName[c.Target]
		if s == nil {
			s = &TargetStats{Target: c.Target}
			byName[c.Target] = s
		}
		switch c.State {
		case pipeline.EventPending:
			s.Pending = c.Count
			if c.Oldest.Valid {
				s.OldestPendingAt = c.Oldest.Ptr()
				s.OldestPendingAge = max(0, now.Sub(c.Oldest.Time))
			}
		case pipeline.EventDead:
			s.Dead = c.Count
		case pipeline.EventSent:
			s.Sent = c.Count
		}
	}
	out := make([]TargetStats, 0, len(byName))
	for _, s := range byName {
		if s.Pending > 0 {
			head, err := db.PendingEvents(ctx, s.Target, 1)
			if err != nil {
				return nil, err
			}
			if len(head) == 1 {
				s.Head = &head[0]
				s.Head.Payload = store.ShownPayload(s.Head.Raw)
				if h := s.Head.LastError; h != nil {
					// An older msgx stored the error as the sink formed it.
					r := secret.Redact(*h)
					s.Head.LastError = &r
				}
				s.blocked(now)
			}
		}
		if s.Dead >= RejectingMin {
			rej, err := rejecting(ctx, db, s.Target)
			if err != nil {
				return nil, err
			}
			s.Rejecting = rej
		}
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b TargetStats) int { return strings.Compare(a.Target, b.Target) })
	return out, nil
}

// rejecting reports whether at least RejectingMin of target's events went DEAD after its last
// SENT one. It reads two short index ranges (TARGET, STATE, EVENT_ID): the newest SENT event
// and the newest RecentWindow DEAD ones.
func rejecting(ctx context.Context, db store.Events, target string) (bool, error) {
	sent, err := db.ListEvents(ctx, store.EventFilter{Target: target, State: pipeline.EventSent, Limit: 1, Newest: true})
	if err != nil {
		return false, err
	}
	dead, err := db.ListEvents(ctx, store.EventFilter{Target: target, State: pipeline.EventDead, Limit: RecentWindow, Newest: true})
	if err != nil {
		return false, err
	}
	n := 0
	for _, e := range dead {
		if len(sent) > 0 && e.EventID < sent[0].EventID {
			break
		}
		n++
	}
	return n >= RejectingMin, nil
}
