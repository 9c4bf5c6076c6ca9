package store

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"time"
)

// The reads of a board as of a past time (pump.BoardAsOf): which applied messages a local day's
// flights were made of, when each was applied, and their texts, so that the day can be folded
// again, in inbox order, up to any minute.

// Applied is a SUCCEEDED message and when the pump applied it (PROC_STATE.PROCESSED_AT).
type Applied struct {
	ID  int64
	At  time.Time
	Tag string
}

// SchedulesUpTo returns the SUCCEEDED schedules (type tags SCHD-…) applied at or before at, in
// id order: the messages that may have created, moved or deleted a day's flights.
func (fl *Flights) SchedulesUpTo(ctx context.Context, at time.Time) ([]Applied, error) {
	return fl.applied(ctx, "schedules applied by "+at.UTC().Format(time.RFC3339),
		`SELECT CMINMSGS_ID, PROCESSED_AT, TYPE_TAG FROM PROC_STATE WHERE STATE = 'SUCCEEDED' AND TYPE_TAG >= 'SCHD-' AND TYPE_TAG < 'SCHD.' AND PROCESSED_AT <= ?`,
		T(at))
}

// AppliedNamingUpTo returns the SUCCEEDED messages applied at or before at that named one of
// flids (MSG_FLIGHT), in id order. It reads MSG_FLIGHT by its primary key (FLID, …) and then
// PROC_STATE by its own, two seeks per row: a join let SQLite walk PROC_STATE instead (10 s for
// a 1,000-flight day).
func (fl *Flights) AppliedNamingUpTo(ctx context.Context, flids []int64, at time.Time) ([]Applied, error) {
	seen := map[int64]bool{}
	var ids []int64
	for part := range slices.Chunk(flids, flightChunk) {
		args := make([]any, len(part))
		for i, f := range part {
			args[i] = f
		}
		rows, err := fl.db.SQL.QueryContext(ctx, `SELECT CMINMSGS_ID FROM MSG_FLIGHT WHERE FLID IN (`+placeholders(len(part))+`)`, args...)
		if err != nil {
			return nil, Unavailable(fmt.Errorf("messages naming %d flights: %w", len(part), err))
		}
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return nil, Unavailable(fmt.Errorf("messages naming %d flights: %w", len(part), err))
			}
			if !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, Unavailable(fmt.Errorf("messages naming %d flights: %w", len(part), err))
		}
	}
	slices.Sort(ids)
	var out []Applied
	for part := range slices.Chunk(ids, flightChunk) {
		args := []any{T(at)}
		for _, id := range part {
			args = append(args, id)
		}
		as, err := fl.applied(ctx, fmt.Sprintf("the states of %d messages", len(part)),
			`SELECT CMINMSGS_ID, PROCESSED_AT, TYPE_TAG FROM PROC_STATE WHERE STATE = 'SUCCEEDED' AND PROCESSED_AT <= ? AND CMINMSGS_ID IN (`+placeholders(len(part))+`)`, args...)
		if err != nil {
			return nil, err
		}
		out = append(out, as...)
	}
	slices.SortFunc(out, func(a, b Applied) int { return cmpInt64(a.ID, b.ID) })
	return out, nil
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (fl *Flights) applied(ctx context.Context, what, q string, args ...any) ([]Applied, error) {
	rows, err := fl.db.SQL.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, Unavailable(fmt.Errorf("%s: %w", what, err))
	}
	defer rows.Close()
	var out []Applied
	for rows.Next() {
		var a Applied
		var at NullTime
		var tag sql.NullString
		if err := rows.Scan(&a.ID, &at, &tag); err != nil {
			return nil, Unavailable(fmt.Errorf("%s: %w", what, err))
		}
		a.At, a.Tag = at.Time, tag.String
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, Unavailable(fmt.Errorf("%s: %w", what, err))
	}
	slices.SortFunc(out, func(a, b Applied) int { return cmpInt64(a.ID, b.ID) })
	return out, nil
}

// Raws returns the raw texts of the messages ids, from CMINMSGS or, once ARCHIVE moved them,
// CMINMSGS_HST (see Raw), by id; an id in neither is absent from the map.
func (fl *Flights) Raws(ctx context.Context, ids []int64) (map[int64]string, error) {
	out := make(map[int64]string, len(ids))
	for _, table := range []string{"CMINMSGS", "CMINMSGS_HST"} {
		var want []int64
		for _, id := range ids {
			if _, ok := out[id]; !ok {
				want = append(want, id)
			}
		}
		for part := range slices.Chunk(want, flightChunk) {
			args := make([]any, len(part))
			for i, id := range part {
				args[i] = id
			}
			rows, err := fl.db.SQL.QueryContext(ctx, `SELECT CMINMSGS_ID, CMINMSGS_CLOB_MSG FROM `+table+` WHERE CMINMSGS_ID IN (`+placeholders(len(part))+`)`, args...)
			if err != nil {
				return nil, Unavailable(fmt.Errorf("read %d messages from %s: %w", len(part), table, err))
			}
			for rows.Next() {
				var id int64
				var raw string
				if err := rows.Scan(&id, &raw); err != nil {
					rows.Close()
					return nil, Unavailable(fmt.Errorf("read %d messages from %s: %w", len(part), table, err))
				}
				out[id] = raw
			}
			err = rows.Err()
			rows.Close()
			if err != nil {
				return nil, Unavailable(fmt.Errorf("read %d messages from %s: %w", len(part), table, err))
			}
		}
	}
	return out, nil
}

// HistoryFrom returns when the oldest message msgx still keeps was processed: retention purges
// the oldest finished messages with all they own, so a day folded again from the messages is
// known only from this time on. ok is false when no message was processed yet.
func (fl *Flights) HistoryFrom(ctx context.Context) (from time.Time, ok bool, err error) {
	var t NullTime
	if err := fl.db.SQL.QueryRowContext(ctx, `SELECT MIN(PROCESSED_AT) FROM PROC_STATE`).Scan(&t); err != nil {
		return time.Time{}, false, Unavailable(fmt.Errorf("the oldest message kept: %w", err))
	}
	return t.Time, t.Valid, nil
}
