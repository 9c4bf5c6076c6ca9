package flight

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"msgx/internal/store"
)

// The history sweep's reads and deletes of FLIGHT_STATE (HISTORY_SWEEP, invariant I4): the
// job reads the flights of old local days in chunks, writes them to the history sink, and
// deletes only the ones whose write succeeded.

// HistoryDay is one local day older than the sweep's bound, with how many flights it holds.
type HistoryDay struct {
	Day     string `json:"day"`
	Flights int    `json:"flights"`
}

// HistoryFlight is one stored flight as the history sweep writes it.
type HistoryFlight struct {
	Day       string          `json:"day"`
	FLID      int64           `json:"flid"`
	Version   int64           `json:"version"`
	MsgID     int64           `json:"msg_id,omitempty"` // the message that last changed it
	UpdatedAt time.Time       `json:"updated_at"`
	Record    json.RawMessage `json:"record"`
}

// HistoryDays returns the local days before `before` (YYYY-MM-DD) that hold flights, oldest
// first, with their counts: a range of the primary key (FDAY, FLID).
func (s *Store) HistoryDays(ctx context.Context, before string) ([]HistoryDay, error) {
	rows, err := s.db.SQLDB().QueryContext(ctx, `SELECT FDAY, COUNT(*) FROM FLIGHT_STATE WHERE FDAY < ? GROUP BY FDAY ORDER BY FDAY`, before)
	if err != nil {
		return nil, store.Unavailable(fmt.Errorf("history days before %s: %w", before, err))
	}
	defer rows.Close()
	var out []HistoryDay
	for rows.Next() {
		var d HistoryDay
		if err := rows.Scan(&d.Day, &d.Flights); err != nil {
			return nil, store.Unavailable(err)
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, store.Unavailable(err)
	}
	return out, nil
}

// HistoryChunk returns up to limit flights of day with FLID above afterFLID, in FLID order.
func (s *Store) HistoryChunk(ctx context.Context, day string, afterFLID int64, limit int) ([]HistoryFlight, error) {
	if limit <= 0 {
		limit = 500
	}
	rows, err := s.db.SQLDB().QueryContext(ctx, `SELECT FDAY, FLID, VERSION, CMINMSGS_ID, UPDATED_AT, RECORD FROM FLIGHT_STATE
		WHERE FDAY = ? AND FLID > ? ORDER BY FLID LIMIT ?`, day, afterFLID, limit)
	if err != nil {
		return nil, store.Unavailable(fmt.Errorf("history flights of %s: %w", day, err))
	}
	defer rows.Close()
	var out []HistoryFlight
	for rows.Next() {
		var f HistoryFlight
		var msg *int64
		var upd store.NullTime
		var rec string
		if err := rows.Scan(&f.Day, &f.FLID, &f.Version, &msg, &upd, &rec); err != nil {
			return nil, store.Unavailable(err)
		}
		if msg != nil {
			f.MsgID = *msg
		}
		f.UpdatedAt, f.Record = upd.Time, json.RawMessage(rec)
		out = append(out, f)
	}
	if err := rows.Err(); err != nil {
		return nil, store.Unavailable(err)
	}
	return out, nil
}

// DeleteHistory deletes the given flights in one transaction, each only if it is still the
// version the sweep read and wrote (a flight changed since stays for the next sweep), and
// returns how many it deleted. The sweep passes only the flights whose history write
// succeeded (I4).
func (s *Store) DeleteHistory(ctx context.Context, flights []HistoryFlight) (int, error) {
	deleted := 0
	for start := 0; start < len(flights); start += batchRows {
		part := flights[start:min(start+batchRows, len(flights))]
		err := s.db.Tx(ctx, func(tx *sql.Tx) error {
			n := 0
			for _, f := range part {
				res, err := tx.ExecContext(ctx, `DELETE FROM FLIGHT_STATE WHERE FDAY = ? AND FLID = ? AND VERSION = ?`, f.Day, f.FLID, f.Version)
				if err != nil {
					return store.Unavailable(fmt.Errorf("delete swept flight %d of %s: %w", f.FLID, f.Day, err))
				}
				k, _ := res.RowsAffected()
				n += int(k)
			}
			deleted += n
			return nil
		})
		if err != nil {
			return deleted, err
		}
	}
	return deleted, nil
}
