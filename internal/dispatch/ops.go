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
	moved, skipped, err = Replay(ctx, d.db, target, ids)
	if moved > 0 {
		d.Wake()
	}
	return moved, skipped, err
}

// replayChunk bounds the ids of one UPDATE.
const replayChunk = 500

// Replay moves DEAD events back to PENDING with ATTEMPTS 0 and NEXT_ATTEMPT_AT and
// FIRST_FAILED_AT cleared (so the head deadline counts from the next failure); ERROR_CLASS and
// LAST_ERROR are kept for audit. target "" means every target; no ids means every DEAD event
// of the target(s). An id that is not DEAD, not of target, unknown, or of class MALFORMED
// (a payload that can never be delivered) is skipped. It returns how many events moved and
// how many were skipped. A replayed event is delivered in EVENT_ID order with the target's
// other pending events, so it goes before any later event still pending.
//
// A process that runs no Dispatcher can call it; the running loops find the events at their
// next poll.
func Replay(ctx context.Context, db *store.DB, target string, ids []int64) (moved, skipped int, err error) {
	const set = `UPDATE MSG_EVENT SET STATE = 'PENDING', ATTEMPTS = 0, NEXT_ATTEMPT_AT = NULL, FIRST_FAILED_AT = NULL
WHERE STATE = 'DEAD' AND (ERROR_CLASS IS NULL OR ERROR_CLASS <> 'MALFORMED')`
	var tgt string
	var targs []any
	if target != "" {
		tgt, targs = " AND TARGET = ?", []any{target}
	}
	if len(ids) == 0 {
		res, err := db.SQL.ExecContext(ctx, set+tgt, targs...)
		if err != nil {
			return 0, 0, store.Unavailable(fmt.Errorf("dispatch: replay dead events of %q: %w", target, err))
		}
		n, _ := res.RowsAffected()
		var left int
		if err := db.SQL.QueryRowContext(ctx, `SELECT COUNT(*) FROM MSG_EVENT WHERE STATE = 'DEAD'`+tgt, targs...).Scan(&left); err != nil {
			return int(n), 0, store.Unavailable(fmt.Errorf("dispatch: count dead events of %q: %w", target, err))
		}
		return int(n), left, nil
	}
	ids = slices.Clone(ids)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	for chunk := range slices.Chunk(ids, replayChunk) {
		args := append(append([]any{}, targs...), idArgs(chunk)...)
		res, err := db.SQL.ExecContext(ctx, set+tgt+` AND EVENT_ID IN (`+placeholders(len(chunk))+`)`, args...)
		if err != nil {
			return moved, 0, store.Unavailable(fmt.Errorf("dispatch: replay events %d..%d: %w", chunk[0], chunk[len(chunk)-1], err))
		}
		n, _ := res.RowsAffected()
		moved += int(n)
	}
	return moved, len(ids) - moved, nil
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
func List(ctx context.Context, db *store.DB, f Filter) ([]Event, error) {
	var where []string
	var args []any
	if f.Target != "" {
		where, args = append(where, "TARGET = ?"), append(args, f.Target)
	}
	if f.State != "" {
		s := pipeline.EventStatus(strings.ToUpper(f.State))
		if s != pipeline.EventPending && s != pipeline.EventSent && s != pipeline.EventDead {
			return nil, fmt.Errorf("dispatch: unknown event state %q (want PENDING, SENT or DEAD)", f.State)
		}
		where, args = append(where, "STATE = ?"), append(args, string(s))
	}
	if f.AfterID > 0 {
		where, args = append(where, "EVENT_ID > ?"), append(args, f.AfterID)
	}
	limit := f.Limit
	if limit <= 0 {
		limit = DefaultListLimit
	}
	limit = min(limit, MaxListLimit)
	q := `SELECT ` + eventCols + ` FROM MSG_EVENT`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	if f.Newest {
		q += " ORDER BY EVENT_ID DESC"
	} else {
		q += " ORDER BY EVENT_ID"
	}
	q += " LIMIT ?"
	evs, err := queryEvents(ctx, db.SQL, q, append(args, limit)...)
	if err != nil {
		return nil, store.Unavailable(fmt.Errorf("dispatch: list events: %w", err))
	}
	if evs == nil {
		evs = []Event{}
	}
	return evs, nil
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
func Stats(ctx context.Context, db *store.DB, now time.Time) ([]TargetStats, error) {
	rows, err := db.SQL.QueryContext(ctx, `SELECT TARGET, STATE, COUNT(*), MIN(CREATED_AT) FROM MSG_EVENT GROUP BY TARGET, STATE`)
	if err != nil {
		return nil, store.Unavailable(fmt.Errorf("dispatch: event stats: %w", err))
	}
	defer rows.Close()
	byName := map[string]*TargetStats{}
	for rows.Next() {
		var (
			name, state string
			n           int64
			oldest      store.NullTime
		)
		if err := rows.Scan(&name, &state, &n, &oldest); err != nil {
			return nil, store.Unavailable(fmt.Errorf("dispatch: event stats: %w", err))
		}
		s := byName[name]
		if s == nil {
			s = &TargetStats{Target: name}
			byName[name] = s
		}
		switch pipeline.EventStatus(state) {
		case pipeline.EventPending:
			s.Pending = n
			if oldest.Valid {
				s.OldestPendingAt = oldest.Ptr()
				s.OldestPendingAge = max(0, now.Sub(oldest.Time))
			}
		case pipeline.EventDead:
			s.Dead = n
		case pipeline.EventSent:
			s.Sent = n
		}
	}
	if err := rows.Err(); err != nil {
		return nil, store.Unavailable(fmt.Errorf("dispatch: event stats: %w", err))
	}
	rows.Close()
	out := make([]TargetStats, 0, len(byName))
	for _, s := range byName {
		if s.Pending > 0 {
			head, err := pendingHead(ctx, db, s.Target, 1)
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
