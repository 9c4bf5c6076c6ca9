package dispatch

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"msgx/internal/pipeline"
	"msgx/internal/store"
)

// Replay moves DEAD events back to PENDING and wakes the loops; see the function Replay.
func (d *Dispatcher) Replay(ctx context.Context, target string, ids []int64) (moved, skipped int, err error) {
	moved, skipped, err = d.db.ReplayEvents(ctx, target, ids)
	if moved > 0 {
		d.Wake()
	}
	return moved, skipped, err
}

// Replay moves DEAD events back to PENDING (see store.Events.ReplayEvents). A process that
// runs no Dispatcher can call it; the running loops find the events at their next poll.
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
	Target  string `json:"target"`
	Pending int64  `json:"pending"`
	Dead    int64  `json:"dead"`
	Sent    int64  `json:"sent"`
	// OldestPendingAt is when the oldest PENDING event was created; nil when none is pending.
	OldestPendingAt *time.Time `json:"oldest_pending_at"`
	// OldestPendingAge is how long the oldest PENDING event has waited (JSON: seconds).
	OldestPendingAge time.Duration `json:"-"`
	// Head is the target's head: its lowest PENDING event, with its attempts and last error;
	// nil when none is pending.
	Head *Event `json:"head"`
}

// MarshalJSON adds oldest_pending_age_s, the age in seconds.
func (s TargetStats) MarshalJSON() ([]byte, error) {
	type plain TargetStats
	return json.Marshal(struct {
		plain
		AgeSeconds float64 `json:"oldest_pending_age_s"`
	}{plain(s), s.OldestPendingAge.Round(time.Millisecond).Seconds()})
}

// Stats returns, per target that has events, how many are pending, dead and sent, the age of
// the oldest pending one at now, and the head. Targets are sorted by name.
func Stats(ctx context.Context, db store.Events, now time.Time) ([]TargetStats, error) {
	counts, err := db.EventCounts(ctx)
	if err != nil {
		return nil, err
	}
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
			}
		}
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b TargetStats) int { return strings.Compare(a.Target, b.Target) })
	return out, nil
}
