package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	mysqldrv "github.com/go-sql-driver/mysql"

	"msgx/internal/pipeline"
)

// StatusValid is the CMINMSGS_STATUS of a row the pump may process; the legacy gateway writes
// it too, and only such rows are adopted.
const StatusValid = "VALID"

// InsertMessages stores raw messages in one transaction: for each, a CMINMSGS row (raw text,
// received date, status VALID) and its PENDING PROC_STATE row. It returns their ids in order.
// On return without error the rows are durable.
func (d *DB) InsertMessages(ctx context.Context, raws []string, now time.Time) ([]int64, error) {
	ids := make([]int64, 0, len(raws))
	err := d.Tx(ctx, func(tx *sql.Tx) error {
		ins, err := tx.PrepareContext(ctx, `INSERT INTO CMINMSGS (CMINMSGS_CLOB_MSG, CMINMSGS_DATE_RECEIVED, CMINMSGS_STATUS) VALUES (?, ?, ?)`)
		if err != nil {
			return Unavailable(err)
		}
		defer ins.Close()
		ps, err := tx.PrepareContext(ctx, `INSERT INTO PROC_STATE (CMINMSGS_ID, STATE, ATTEMPTS, CREATED_AT, UPDATED_AT) VALUES (?, ?, 0, ?, ?)`)
		if err != nil {
			return Unavailable(err)
		}
		defer ps.Close()
		for _, raw := range raws {
			res, err := ins.ExecContext(ctx, raw, T(now), StatusValid)
			if err != nil {
				if tooLarge(err) {
					return fmt.Errorf("%w: a message of %d bytes: %v", ErrTooLarge, len(raw), err)
				}
				return Unavailable(fmt.Errorf("insert CMINMSGS: %w", err))
			}
			id, err := res.LastInsertId()
			if err != nil {
				return err
			}
			if _, err := ps.ExecContext(ctx, id, pipeline.Pending, T(now), T(now)); err != nil {
				return Unavailable(fmt.Errorf("insert PROC_STATE %d: %w", id, err))
			}
			ids = append(ids, id)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return ids, nil
}

// ErrTooLarge is returned when the database refuses a message for its size (MySQL's
// max_allowed_packet); the inbox answers 413.
var ErrTooLarge = errors.New("message too large for the database")

func tooLarge(err error) bool {
	var me *mysqldrv.MySQLError
	return errors.Is(err, mysqldrv.ErrPktTooLarge) || (errors.As(err, &me) && me.Number == 1153)
}

// AdoptLegacy gives a PENDING PROC_STATE row to every VALID CMINMSGS row above afterID that
// has none (rows another program, such as the legacy gateway, inserted directly), so they join
// the order. It returns how many it adopted and the highest CMINMSGS_ID it saw.
func (d *DB) AdoptLegacy(ctx context.Context, afterID int64, now time.Time) (int, int64, error) {
	var maxID sql.NullInt64
	if err := d.SQL.QueryRowContext(ctx, `SELECT MAX(CMINMSGS_ID) FROM CMINMSGS`).Scan(&maxID); err != nil {
		return 0, afterID, Unavailable(err)
	}
	if !maxID.Valid || maxID.Int64 <= afterID {
		return 0, afterID, nil
	}
	res, err := d.SQL.ExecContext(ctx, `INSERT INTO PROC_STATE (CMINMSGS_ID, STATE, ATTEMPTS, CREATED_AT, UPDATED_AT)
		SELECT c.CMINMSGS_ID, ?, 0, ?, ? FROM CMINMSGS c
		WHERE c.CMINMSGS_ID > ? AND c.CMINMSGS_ID <= ? AND c.CMINMSGS_STATUS = ?
		AND NOT EXISTS (SELECT 1 FROM PROC_STATE p WHERE p.CMINMSGS_ID = c.CMINMSGS_ID)`,
		pipeline.Pending, T(now), T(now), afterID, maxID.Int64, StatusValid)
	if err != nil {
		return 0, afterID, Unavailable(fmt.Errorf("adopt CMINMSGS rows: %w", err))
	}
	n, _ := res.RowsAffected()
	return int(n), maxID.Int64, nil
}

// Unadopted reports whether a VALID CMINMSGS row above afterID has no PROC_STATE row yet,
// and the highest CMINMSGS_ID: one indexed read, cheap enough to make before every head.
func (d *DB) Unadopted(ctx context.Context, afterID int64) (bool, int64, error) {
	var id, maxID sql.NullInt64
	err := d.SQL.QueryRowContext(ctx, `SELECT (SELECT MIN(c.CMINMSGS_ID) FROM CMINMSGS c WHERE c.CMINMSGS_ID > ? AND c.CMINMSGS_STATUS = ?
		AND NOT EXISTS (SELECT 1 FROM PROC_STATE p WHERE p.CMINMSGS_ID = c.CMINMSGS_ID)), (SELECT MAX(CMINMSGS_ID) FROM CMINMSGS)`,
		afterID, StatusValid).Scan(&id, &maxID)
	if err != nil {
		return false, 0, Unavailable(err)
	}
	return id.Valid, maxID.Int64, nil
}

// Raw returns the raw text of message id; ok is false when the row is gone.
func (d *DB) Raw(ctx context.Context, id int64) (raw string, ok bool, err error) {
	err = d.SQL.QueryRowContext(ctx, `SELECT CMINMSGS_CLOB_MSG FROM CMINMSGS WHERE CMINMSGS_ID = ?`, id).Scan(&raw)
	if err == sql.ErrNoRows {
		return "", false, nil
	}
	if err != nil {
		return "", false, Unavailable(err)
	}
	return raw, true, nil
}

// MaxMessageID returns the highest CMINMSGS_ID (0 when empty).
func (d *DB) MaxMessageID(ctx context.Context) (int64, error) {
	var id sql.NullInt64
	if err := d.SQL.QueryRowContext(ctx, `SELECT MAX(CMINMSGS_ID) FROM CMINMSGS`).Scan(&id); err != nil {
		return 0, Unavailable(err)
	}
	return id.Int64, nil
}
