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
// received date, status VALID, and CMINMSGS_DATE_PROCESSED set, so a legacy poller still
// running leaves it alone) and its PENDING PROC_STATE row. It returns their ids in order.
// On return without error the rows are durable.
//
// Inbox transactions take the inbox lock (a row lock on INBOX_LOCK on MySQL; SQLite's write
// lock does the same) before their first insert, so two inbox nodes get ids in the order they
// commit, and the pump never sees a higher id of theirs before a lower one.
//
// The same transaction adopts the gateway rows that got lower ids than these (rows another
// program inserted straight into CMINMSGS since the last PROC_STATE row), so a message of
// ours never overtakes a gateway row that was committed before it. It reads them without a
// lock and skips rows another transaction holds: it never waits for the gateway.
func (d *DB) InsertMessages(ctx context.Context, raws []string, now time.Time) ([]int64, error) {
	ids := make([]int64, 0, len(raws))
	err := d.Tx(ctx, func(tx *sql.Tx) error {
		ids = ids[:0]
		if d.Dialect == MySQL {
			var name string
			if err := tx.QueryRowContext(ctx, `SELECT NAME FROM INBOX_LOCK WHERE NAME = 'inbox' FOR UPDATE`).Scan(&name); err != nil && err != sql.ErrNoRows {
				return Unavailable(fmt.Errorf("take the inbox lock: %w", err))
			}
		}
		cols, err := d.columns(ctx, tx)
		if err != nil {
			return err
		}
		var prev sql.NullInt64
		if err := tx.QueryRowContext(ctx, `SELECT MAX(CMINMSGS_ID) FROM PROC_STATE`).Scan(&prev); err != nil {
			return Unavailable(err)
		}
		loc := d.legacyOpts().Location
		recv, taken := legacyTime(now, loc, cols[colReceived]), legacyTime(now, loc, cols[colProcessed])
		q := `INSERT INTO CMINMSGS (CMINMSGS_CLOB_MSG, CMINMSGS_DATE_RECEIVED, CMINMSGS_STATUS) VALUES (?, ?, ?)`
		if _, ok := cols[colProcessed]; ok {
			q = `INSERT INTO CMINMSGS (CMINMSGS_CLOB_MSG, CMINMSGS_DATE_RECEIVED, CMINMSGS_STATUS, CMINMSGS_DATE_PROCESSED) VALUES (?, ?, ?, ?)`
		}
		ins, err := tx.PrepareContext(ctx, q)
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
			if c := cols[colClob]; c.bytes > 0 && len(raw) > c.bytes {
				return fmt.Errorf("%w: a message of %d bytes does not fit CMINMSGS_CLOB_MSG (%s, %d bytes)", ErrTooLarge, len(raw), c.decl, c.bytes)
			}
			args := []any{raw, recv, StatusValid}
			if _, ok := cols[colProcessed]; ok {
				args = append(args, taken)
			}
			res, err := ins.ExecContext(ctx, args...)
			if err != nil {
				if tooLarge(err) {
					return fmt.Errorf("%w: a message of %d bytes: %v", ErrTooLarge, len(raw), err)
				}
				if IsDataError(err) {
					// The column refuses this text (4-byte characters in a legacy utf8mb3
					// table, say): retrying cannot help, so it is not an outage.
					return fmt.Errorf("%w: %v", ErrUnstorable, err)
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
		for after := prev.Int64; len(ids) > 0 && after < ids[0]-1; {
			cand, err := d.adoptCandidates(ctx, tx, cols, after, ids[0]-1, adoptChunk)
			if err != nil || len(cand) == 0 {
				return err
			}
			if _, err := d.adoptIDs(ctx, tx, cols, cand, now); err != nil {
				return err
			}
			after = cand[len(cand)-1]
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return ids, nil
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

// ErrUnstorable is returned when the database refuses a message's text for good (a data error
// other than its size, such as characters the CMINMSGS column's character set cannot hold);
// the inbox answers 422.
var ErrUnstorable = errors.New("the database cannot store this message")

// ErrTooLarge is returned when the database refuses a message for its size (MySQL's
// max_allowed_packet); the inbox answers 413.
var ErrTooLarge = errors.New("message too large for the database")

func tooLarge(err error) bool {
	var me *mysqldrv.MySQLError
	return errors.Is(err, mysqldrv.ErrPktTooLarge) || (errors.As(err, &me) && me.Number == 1153)
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
