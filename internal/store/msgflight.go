package store

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"
)

// MSG_FLIGHT records the flights (FLIDs) each decoded message names, written with the
// message's outcome (Outcome.Flights, Success.Flights) whatever that outcome is, so a
// flight's messages — the failed, parked, skipped and unchanged ones too — are found by an
// index seek (SearchMessages with FLID).

// flightChunk is how many MSG_FLIGHT rows one INSERT carries at most (two placeholders a
// row, far below either database's limit): a 3,000-flight schedule is six statements.
const flightChunk = 500

// flightRow is one MSG_FLIGHT row.
type flightRow struct {
	flid, msgID int64
}

// flightRowsOf returns the MSG_FLIGHT rows of message msgID naming flids.
func flightRowsOf(msgID int64, flids []int64) []flightRow {
	rows := make([]flightRow, 0, len(flids))
	for _, f := range flids {
		rows = append(rows, flightRow{flid: f, msgID: msgID})
	}
	return rows
}

// insertFlightRows writes rows, flightChunk per multi-row INSERT. A row already there (the
// message recorded again: a retry, a replay, a batch done again) is left as it is.
func insertFlightRows(ctx context.Context, tx execer, dialect Dialect, rows []flightRow) error {
	for len(rows) > 0 {
		n := min(len(rows), flightChunk)
		chunk := rows[:n]
		rows = rows[n:]
		args := make([]any, 0, 2*n)
		for _, r := range chunk {
			args = append(args, r.flid, r.msgID)
		}
		q := dialect.InsertIgnore() + ` INTO MSG_FLIGHT (FLID, CMINMSGS_ID) VALUES ` +
			strings.TrimSuffix(strings.Repeat("(?, ?),", n), ",")
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			return Unavailable(fmt.Errorf("flights of message %d: %w", chunk[0].msgID, err))
		}
	}
	return nil
}

// MessageFlights returns the FLIDs recorded for message id, in order.
func (fl *Flights) MessageFlights(ctx context.Context, id int64) ([]int64, error) {
	rows, err := fl.db.SQL.QueryContext(ctx, `SELECT FLID FROM MSG_FLIGHT WHERE CMINMSGS_ID = ? ORDER BY FLID`, id)
	if err != nil {
		return nil, Unavailable(fmt.Errorf("flights of message %d: %w", id, err))
	}
	defer rows.Close()
	out := []int64{}
	for rows.Next() {
		var f int64
		if err := rows.Scan(&f); err != nil {
			return nil, Unavailable(fmt.Errorf("flights of message %d: %w", id, err))
		}
		out = append(out, f)
	}
	return out, Unavailable(rows.Err())
}

// ProcessedBetween returns when each message finished (SUCCEEDED, SKIPPED or DEAD: only
// those have a processing time) in [from, to], oldest first, read through the index
// IDX_PROC_PROCESSED: the range is all it reads.
func (fl *Flights) ProcessedBetween(ctx context.Context, from, to time.Time) ([]time.Time, error) {
	rows, err := fl.db.SQL.QueryContext(ctx, `SELECT PROCESSED_AT FROM PROC_STATE WHERE PROCESSED_AT >= ? AND PROCESSED_AT <= ? ORDER BY PROCESSED_AT`, T(from), T(to))
	if err != nil {
		return nil, Unavailable(fmt.Errorf("messages processed since %s: %w", from.UTC().Format(time.RFC3339), err))
	}
	defer rows.Close()
	out := []time.Time{}
	for rows.Next() {
		var t NullTime
		if err := rows.Scan(&t); err != nil {
			return nil, Unavailable(fmt.Errorf("messages processed since %s: %w", from.UTC().Format(time.RFC3339), err))
		}
		if t.Valid {
			out = append(out, t.Time)
		}
	}
	return out, Unavailable(rows.Err())
}

// windowTags are the type tags of the schedules that replace a window: a flight they do not
// name may be one they deleted.
var windowTags = []any{"SCHD-DNLD", "SCHD-RESP"}

// AppliedAfter returns, in id order, the SUCCEEDED messages after message `after` that may
// have set something of flids or of the reference TYPEs refTypes: the messages naming one of
// flids (MSG_FLIGHT), the schedules replacing a window when flids is not empty, and every
// message of one of refTypes (its type tags TYPE-…). They are what a message applied out of
// its order must not undo (invariant I6); a message retention purged is no longer among them.
func (p *Processor) AppliedAfter(ctx context.Context, after int64, flids []int64, refTypes []string) ([]int64, error) {
	seen := map[int64]bool{}
	add := func(q string, args ...any) error {
		rows, err := p.db.SQL.QueryContext(ctx, q, args...)
		if err != nil {
			return Unavailable(fmt.Errorf("messages applied after %d: %w", after, err))
		}
		defer rows.Close()
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				return Unavailable(fmt.Errorf("messages applied after %d: %w", after, err))
			}
			seen[id] = true
		}
		return Unavailable(rows.Err())
	}
	for part := range slices.Chunk(flids, flightChunk) {
		args := []any{after}
		for _, f := range part {
			args = append(args, f)
		}
		if err := add(`SELECT f.CMINMSGS_ID FROM MSG_FLIGHT f JOIN PROC_STATE p ON p.CMINMSGS_ID = f.CMINMSGS_ID
WHERE f.CMINMSGS_ID > ? AND p.STATE = 'SUCCEEDED' AND f.FLID IN (`+placeholders(len(part))+`)`, args...); err != nil {
			return nil, err
		}
	}
	var tags []string
	var args []any
	if len(flids) > 0 {
		tags = append(tags, `TYPE_TAG IN (`+placeholders(len(windowTags))+`)`)
		args = append(args, windowTags...)
	}
	for _, typ := range refTypes {
		// TYPE-anything: from "TYPE-" up to "TYPE." ('.' follows '-'), a range, no LIKE escapes.
		tags = append(tags, `(TYPE_TAG >= ? AND TYPE_TAG < ?)`)
		args = append(args, typ+"-", typ+".")
	}
	if len(tags) > 0 {
		if err := add(`SELECT CMINMSGS_ID FROM PROC_STATE WHERE STATE = 'SUCCEEDED' AND CMINMSGS_ID > ? AND (`+strings.Join(tags, ` OR `)+`)`,
			append([]any{after}, args...)...); err != nil {
			return nil, err
		}
	}
	out := make([]int64, 0, len(seen))
	for id := range seen {
		out = append(out, id)
	}
	slices.Sort(out)
	return out, nil
}

// LastApplied returns the highest SUCCEEDED message id, 0 when there is none: one seek on
// IDX_PROC_HEAD (STATE, CMINMSGS_ID). A message below it is applied out of its order.
func (p *Processor) LastApplied(ctx context.Context) (int64, error) {
	var id sql.NullInt64
	if err := p.db.SQL.QueryRowContext(ctx, `SELECT MAX(CMINMSGS_ID) FROM PROC_STATE WHERE STATE = 'SUCCEEDED'`).Scan(&id); err != nil {
		return 0, Unavailable(fmt.Errorf("the last applied message: %w", err))
	}
	return id.Int64, nil
}
