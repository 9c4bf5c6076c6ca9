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
//
// The same transaction adopts the gateway rows that got lower ids than these (rows another
// program inserted straight into CMINMSGS since the last PROC_STATE row), so a message of
// ours never overtakes a gateway row that was committed before it.
func (d *DB) InsertMessages(ctx context.Context, raws []string, now time.Time) ([]int64, error) {
	ids := make([]int64, 0, len(raws))
	err := d.Tx(ctx, func(tx *sql.Tx) error {
		ids = ids[:0]
		var prev sql.NullInt64
		if err := tx.QueryRowContext(ctx, `SELECT MAX(CMINMSGS_ID) FROM PROC_STATE`).Scan(&prev); err != nil {
			return Unavailable(err)
		}
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
			if d.maxPacket > 0 && escapedLen(raw)+packetSlack > d.maxPacket {
				return fmt.Errorf("%w: a message of %d bytes does not fit MySQL's max_allowed_packet (%d)", ErrTooLarge, len(raw), d.maxPacket)
			}
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
		if len(ids) > 0 && ids[0] > prev.Int64+1 {
			if _, err := adopt(ctx, d.Dialect, tx, prev.Int64, ids[0]-1, now); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return ids, nil
}

// adopt gives a PENDING PROC_STATE row to the VALID CMINMSGS rows with ids in (after, upTo]
// that have none. A row another transaction adopts at the same moment is skipped, not an
// error.
func adopt(ctx context.Context, dialect Dialect, q interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}, after, upTo int64, now time.Time) (int, error) {
	ignore := "INSERT OR IGNORE"
	if dialect == MySQL {
		ignore = "INSERT IGNORE"
	}
	res, err := q.ExecContext(ctx, ignore+` INTO PROC_STATE (CMINMSGS_ID, STATE, ATTEMPTS, CREATED_AT, UPDATED_AT)
		SELECT c.CMINMSGS_ID, ?, 0, ?, ? FROM CMINMSGS c
		WHERE c.CMINMSGS_ID > ? AND c.CMINMSGS_ID <= ? AND c.CMINMSGS_STATUS = ?
		AND NOT EXISTS (SELECT 1 FROM PROC_STATE p WHERE p.CMINMSGS_ID = c.CMINMSGS_ID)`,
		pipeline.Pending, T(now), T(now), after, upTo, StatusValid)
	if err != nil {
		return 0, Unavailable(fmt.Errorf("adopt CMINMSGS rows: %w", err))
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}

// packetSlack is what an insert adds to the message in the packet: the statement and the
// other values.
const packetSlack = 4 << 10

// escapedLen is the length of s once the driver has escaped it into the statement.
func escapedLen(s string) int {
	n := len(s)
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case 0, '\n', '\r', '\\', '\'', '"', 0x1a:
			n++
		}
	}
	return n
}

// ErrTooLarge is returned when the database refuses a message for its size (MySQL's
// max_allowed_packet); the inbox answers 413.
var ErrTooLarge = errors.New("message too large for the database")

func tooLarge(err error) bool {
	var me *mysqldrv.MySQLError
	return errors.Is(err, mysqldrv.ErrPktTooLarge) || (errors.As(err, &me) && me.Number == 1153)
}

// AdoptLegacy gives a PENDING PROC_STATE row to every VALID CMINMSGS row with an id in
// (afterID, upTo] that has none (rows another program, such as the legacy gateway, inserted
// directly), so they join the order. It returns how many it adopted.
func (d *DB) AdoptLegacy(ctx context.Context, afterID, upTo int64, now time.Time) (int, error) {
	if upTo <= afterID {
		return 0, nil
	}
	return adopt(ctx, d.Dialect, d.SQL, afterID, upTo, now)
}

// Heads returns the highest CMINMSGS_ID and the highest PROC_STATE id: two index lookups.
// When the first is higher, rows were inserted straight into CMINMSGS since our last one.
func (d *DB) Heads(ctx context.Context) (msgs, states int64, err error) {
	var m, p sql.NullInt64
	err = d.SQL.QueryRowContext(ctx, `SELECT (SELECT MAX(CMINMSGS_ID) FROM CMINMSGS), (SELECT MAX(CMINMSGS_ID) FROM PROC_STATE)`).Scan(&m, &p)
	if err != nil {
		return 0, 0, Unavailable(err)
	}
	return m.Int64, p.Int64, nil
}
