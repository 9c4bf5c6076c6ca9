package flight

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"msgx/internal/store"
)

// Mark is phase A's SQL side of the guard against a Redis that lost data (table REDIS_MARK,
// migration 00014; package redisflight keeps the Redis side): the epoch msgx gave the Redis
// flight picture under a key prefix, and the high-water mark, the highest message id whose
// flight script Redis applied as far as SQL knows.
type Mark struct {
	Epoch string
	MsgID int64
}

// RedisMark returns the mark kept for the Redis key prefix, ok=false when there is none yet.
func (s *Store) RedisMark(ctx context.Context, prefix string) (m Mark, ok bool, err error) {
	err = s.db.SQLDB().QueryRowContext(ctx, `SELECT EPOCH, MSG_ID FROM REDIS_MARK WHERE KEY_PREFIX = ?`, prefix).Scan(&m.Epoch, &m.MsgID)
	switch {
	case err == sql.ErrNoRows:
		return Mark{}, false, nil
	case err != nil:
		return Mark{}, false, store.Unavailable(fmt.Errorf("read the Redis mark: %w", err))
	}
	return m, true, nil
}

// SetRedisMark writes the mark of the prefix as m, whatever it was (the first start, and
// REDIS_RESTORE, which makes Redis and SQL agree again).
func (s *Store) SetRedisMark(ctx context.Context, prefix string, m Mark, now time.Time) error {
	return s.db.Tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE REDIS_MARK SET EPOCH = ?, MSG_ID = ?, UPDATED_AT = ? WHERE KEY_PREFIX = ?`, m.Epoch, m.MsgID, store.T(now), prefix)
		if err != nil {
			return store.Unavailable(fmt.Errorf("write the Redis mark: %w", err))
		}
		if n, _ := res.RowsAffected(); n > 0 {
			return nil
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO REDIS_MARK (KEY_PREFIX, EPOCH, MSG_ID, UPDATED_AT) VALUES (?, ?, ?, ?)`, prefix, m.Epoch, m.MsgID, store.T(now)); err != nil {
			return store.Unavailable(fmt.Errorf("write the Redis mark: %w", err))
		}
		return nil
	})
}

// RaiseRedisMarkTx raises the mark of the prefix under epoch to msgID inside tx (the pump's
// batch transaction), never lowering it.
func RaiseRedisMarkTx(ctx context.Context, tx *sql.Tx, prefix, epoch string, msgID int64, now time.Time) error {
	if _, err := tx.ExecContext(ctx, `UPDATE REDIS_MARK SET MSG_ID = ?, UPDATED_AT = ? WHERE KEY_PREFIX = ? AND EPOCH = ? AND MSG_ID < ?`,
		msgID, store.T(now), prefix, epoch, msgID); err != nil {
		return store.Unavailable(fmt.Errorf("raise the Redis mark to %d: %w", msgID, err))
	}
	return nil
}

// HasFlights says whether FLIGHT_STATE holds any row.
func (s *Store) HasFlights(ctx context.Context) (bool, error) {
	var n int
	err := s.db.SQLDB().QueryRowContext(ctx, `SELECT 1 FROM FLIGHT_STATE LIMIT 1`).Scan(&n)
	switch {
	case err == sql.ErrNoRows:
		return false, nil
	case err != nil:
		return false, store.Unavailable(fmt.Errorf("read FLIGHT_STATE: %w", err))
	}
	return true, nil
}

// MirrorVersions returns the version FLIGHT_STATE holds of each of flids it has (absent ones
// are not in the map), read through tx when it is not nil (the pump's batch transaction, which
// sees the mirror writes of the messages before in the batch), else from the database. Phase
// A asks it only of flights Redis lacks: a flight the mirror holds and Redis does not is one
// Redis lost (redisflight.Guard).
func (s *Store) MirrorVersions(ctx context.Context, tx *sql.Tx, flids []int64) (map[int64]int64, error) {
	var q interface {
		QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	} = s.db.SQLDB()
	if tx != nil {
		q = tx
	}
	out := make(map[int64]int64, len(flids))
	const chunk = 500
	for len(flids) > 0 {
		part := flids[:min(chunk, len(flids))]
		flids = flids[len(part):]
		args := make([]any, len(part))
		for i, id := range part {
			args[i] = id
		}
		rows, err := q.QueryContext(ctx, `SELECT FLID, VERSION FROM FLIGHT_STATE WHERE FLID IN (`+marks(len(part))+`)`, args...)
		if err != nil {
			return nil, store.Unavailable(fmt.Errorf("read the versions of %d flights in FLIGHT_STATE: %w", len(part), err))
		}
		for rows.Next() {
			var flid, ver int64
			if err := rows.Scan(&flid, &ver); err != nil {
				rows.Close()
				return nil, store.Unavailable(fmt.Errorf("read the versions of flights in FLIGHT_STATE: %w", err))
			}
			out[flid] = ver
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, store.Unavailable(fmt.Errorf("read the versions of flights in FLIGHT_STATE: %w", err))
		}
	}
	return out, nil
}
