package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
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
// Inbox transactions take the inbox lock (a write of the INBOX_LOCK row on MySQL; SQLite's
// write lock does the same) before their first insert, so two inbox nodes get ids in the order they
// commit, and the pump never sees a higher id of theirs before a lower one.
//
// The same transaction adopts the gateway rows that got lower ids than these (rows another
// program inserted straight into CMINMSGS since the last PROC_STATE row), so a message of
// ours never overtakes a gateway row that was committed before it. It reads them without a
// lock and skips rows another transaction holds: it never waits for the gateway.
func (in *Intake) InsertMessages(ctx context.Context, raws []string, now time.Time) ([]int64, error) {
	return in.insertMessages(ctx, raws, nil, now)
}

func (in *Intake) insertMessages(ctx context.Context, raws, traces []string, now time.Time) ([]int64, error) {
	if in.Shadow() {
		return nil, fmt.Errorf("%w: the inbox writes CMINMSGS; in shadow mode the legacy gateway fills it", ErrShadow)
	}
	ids := make([]int64, 0, len(raws))
	// built says the transaction's statements all succeeded: an error after it is its
	// commit's, whose outcome is unknown (committed, perhaps, with only the answer lost).
	built := false
	insert := func(tx *sql.Tx) error {
		ids, built = ids[:0], false
		if err := in.lockInbox(ctx, tx); err != nil {
			return err
		}
		cols, err := in.columns(ctx, tx)
		if err != nil {
			return err
		}
		var prev sql.NullInt64
		if err := tx.QueryRowContext(ctx, `SELECT MAX(CMINMSGS_ID) FROM PROC_STATE`).Scan(&prev); err != nil {
			return Unavailable(err)
		}
		loc := in.legacyOpts().Location
		recv, taken := legacyTime(now, loc, cols[colReceived]), legacyTime(now, loc, cols[colProcessed])
		for _, raw := range raws {
			if in.maxPacket > 0 && escapedLen(raw)+packetSlack > in.maxPacket {
				return fmt.Errorf("%w: a message of %d bytes does not fit MySQL's max_allowed_packet (%d)", ErrTooLarge, len(raw), in.maxPacket)
			}
			if c := cols[colClob]; c.bytes > 0 && len(raw) > c.bytes {
				return fmt.Errorf("%w: a message of %d bytes does not fit CMINMSGS_CLOB_MSG (%s, %d bytes)", ErrTooLarge, len(raw), c.decl, c.bytes)
			}
		}
		_, withTaken := cols[colProcessed]
		for start := 0; start < len(raws); {
			end := in.inboxChunk(raws, start)
			got, err := insertRaws(ctx, tx, raws[start:end], withTaken, recv, taken)
			if err != nil {
				return err
			}
			ids = append(ids, got...)
			start = end
		}
		if err := insertPending(ctx, tx, ids, traces, now); err != nil {
			return err
		}
		for after := prev.Int64; len(ids) > 0 && after < ids[0]-1; {
			cand, err := in.adoptCandidates(ctx, tx, cols, after, ids[0]-1, adoptChunk)
			if err != nil || len(cand) == 0 {
				return err
			}
			if _, err := in.adoptIDs(ctx, tx, cols, cand, now); err != nil {
				return err
			}
			after = cand[len(cand)-1]
		}
		built = true
		return nil
	}
	err := in.db.Processor.ride(ctx, "inbox", insert)
	if err != nil && in.nextNodeMayHelp(ctx, err) {
		// The node was lost under the insert (it hung and the probe closed its connections,
		// it died, it left sync): once more on the next node, within the caller's deadline
		// (http.inbox-deadline), before the sender sees a 503. A commit whose outcome is
		// unknown is looked up first, so a message the lost node committed is never stored
		// twice.
		nodes := in.db.my.nodes
		nodes.log.Warn("database node lost under the inbox's insert; trying the next node once", "node", nodes.Current(),
			"at_commit", built, "err", err.Error())
		if built {
			var stored bool
			stored, err = in.storedAs(ctx, ids, raws)
			switch {
			case err != nil:
				return nil, Unavailable(fmt.Errorf("the inbox's commit was cut by a lost node and its outcome cannot be read: %w", err))
			case stored:
				return ids, nil
			}
		}
		err = in.db.Processor.ride(ctx, "inbox", insert)
	}
	if err != nil {
		return nil, err
	}
	return ids, nil
}

// nextNodeMayHelp says whether an inbox insert that failed with err may be done on the next
// node: err is a lost node's (nodeLost), there are several nodes and ctx lasts.
func (in *Intake) nextNodeMayHelp(ctx context.Context, err error) bool {
	return in.db.my != nil && len(in.db.my.nodes.nodes) > 1 && nodeLost(err) && ctx.Err() == nil
}

// storedAs says whether the inbox's insert whose commit was cut is durable after all: the
// rows of ids hold raws, with their PROC_STATE rows (on Galera a read that waits for every
// transaction the cluster ordered before it, wsrep_sync_wait, so a commit the lost node
// replicated is seen). All of them or none: the transaction was one; anything else is an
// error.
func (in *Intake) storedAs(ctx context.Context, ids []int64, raws []string) (bool, error) {
	if len(ids) != len(raws) || len(ids) == 0 {
		return false, fmt.Errorf("%d ids for %d messages", len(ids), len(raws))
	}
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	rows, err := in.db.SQL.QueryContext(ctx, `SELECT c.CMINMSGS_ID, c.CMINMSGS_CLOB_MSG FROM CMINMSGS c JOIN PROC_STATE p ON p.CMINMSGS_ID = c.CMINMSGS_ID
WHERE c.CMINMSGS_ID IN (`+placeholders(len(ids))+`)`, args...)
	if err != nil {
		return false, err
	}
	defer rows.Close()
	want := make(map[int64]string, len(ids))
	for i, id := range ids {
		want[id] = raws[i]
	}
	found := 0
	for rows.Next() {
		var id int64
		var raw string
		if err := rows.Scan(&id, &raw); err != nil {
			return false, err
		}
		if w, ok := want[id]; !ok || w != raw {
			return false, fmt.Errorf("CMINMSGS %d holds another message than the one inserted", id)
		}
		found++
	}
	if err := rows.Err(); err != nil {
		return false, err
	}
	switch found {
	case 0:
		return false, nil
	case len(ids):
		return true, nil
	}
	return false, fmt.Errorf("%d of the transaction's %d messages are stored", found, len(ids))
}

// lockInbox takes the inbox lock in tx on MySQL (SQLite's write lock is one already). It
// writes the INBOX_LOCK row rather than locking it with SELECT … FOR UPDATE: on a Galera
// cluster only a changed row is certified (a lock, or an UPDATE that changes nothing, stays
// on its node), so two inbox nodes on two database nodes conflict here and one of them is
// redone with a later id, instead of both committing their ids out of order. A schema
// older than the TAKEN column (a test between migrations) gets the plain row lock.
func (in *Intake) lockInbox(ctx context.Context, tx *sql.Tx) error {
	if in.db.Dialect != MySQL {
		return nil
	}
	_, err := tx.ExecContext(ctx, `UPDATE INBOX_LOCK SET TAKEN = TAKEN + 1 WHERE NAME = 'inbox'`)
	if isMySQLError(err, myBadField) {
		var name string
		if err = tx.QueryRowContext(ctx, `SELECT NAME FROM INBOX_LOCK WHERE NAME = 'inbox' FOR UPDATE`).Scan(&name); err == sql.ErrNoRows {
			err = nil
		}
	}
	if err != nil {
		return Unavailable(fmt.Errorf("take the inbox lock: %w", err))
	}
	return nil
}

// packetSlack is what an insert adds to the message in the packet: the statement and the
// other values.
const packetSlack = 4 << 10

// Bounds of one multi-row CMINMSGS insert: rows, and bytes of message text (kept well under
// MySQL's max_allowed_packet as well).
const (
	inboxChunkRows  = 200
	inboxChunkBytes = 4 << 20
)

// inboxChunk returns the end of the chunk of raws that starts at start: at least one message,
// at most inboxChunkRows, and no more text than inboxChunkBytes or half the packet limit.
func (in *Intake) inboxChunk(raws []string, start int) int {
	limit := inboxChunkBytes
	if in.maxPacket > 0 && in.maxPacket/2 < limit {
		limit = in.maxPacket / 2
	}
	size, end := 0, start
	for end < len(raws) && end-start < inboxChunkRows {
		n := escapedLen(raws[end]) + 64
		if end > start && size+n > limit {
			break
		}
		size += n
		end++
	}
	return end
}

// insertRaws inserts a chunk of messages into CMINMSGS with one statement and returns their
// ids in the order of raws. RETURNING (SQLite 3.35, MariaDB 10.5) gives the ids exactly even
// when the gateway inserts at the same time; one statement gets its ids in the order of its
// rows (SQLite's single writer, InnoDB's consecutive lock mode for a simple insert), so the
// sorted ids are the rows' ids in order.
func insertRaws(ctx context.Context, tx *sql.Tx, raws []string, withTaken bool, recv, taken any) ([]int64, error) {
	row := `(?, ?, ?)`
	q := `INSERT INTO CMINMSGS (CMINMSGS_CLOB_MSG, CMINMSGS_DATE_RECEIVED, CMINMSGS_STATUS) VALUES `
	if withTaken {
		row = `(?, ?, ?, ?)`
		q = `INSERT INTO CMINMSGS (CMINMSGS_CLOB_MSG, CMINMSGS_DATE_RECEIVED, CMINMSGS_STATUS, CMINMSGS_DATE_PROCESSED) VALUES `
	}
	args := make([]any, 0, 4*len(raws))
	for _, raw := range raws {
		args = append(args, raw, recv, StatusValid)
		if withTaken {
			args = append(args, taken)
		}
	}
	q += strings.TrimSuffix(strings.Repeat(row+",", len(raws)), ",") + ` RETURNING CMINMSGS_ID`
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, insertError(err, raws)
	}
	defer rows.Close()
	ids := make([]int64, 0, len(raws))
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, Unavailable(err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, insertError(err, raws)
	}
	if len(ids) != len(raws) {
		return nil, Unavailable(fmt.Errorf("insert CMINMSGS: %d ids returned for %d messages", len(ids), len(raws)))
	}
	slices.Sort(ids)
	return ids, nil
}

// insertError classifies a refused CMINMSGS insert: too large (413), a text the column cannot
// hold (422: retrying cannot help, so it is not an outage), else the database is unavailable.
func insertError(err error, raws []string) error {
	size := 0
	for _, r := range raws {
		size += len(r)
	}
	switch {
	case tooLarge(err):
		return fmt.Errorf("%w: %d message(s) of %d bytes: %v", ErrTooLarge, len(raws), size, err)
	case IsDataError(err):
		return fmt.Errorf("%w: %v", ErrUnstorable, err)
	}
	return Unavailable(fmt.Errorf("insert CMINMSGS: %w", err))
}

// insertPending gives the new messages their PENDING state, one statement per chunk of rows.
// traces, when not nil, holds each message's trace id ("" for none), stored in TRACE_ID.
func insertPending(ctx context.Context, tx *sql.Tx, ids []int64, traces []string, now time.Time) error {
	row, cols := `(?, ?, 0, ?, ?)`, `CMINMSGS_ID, STATE, ATTEMPTS, CREATED_AT, UPDATED_AT`
	if traces != nil {
		row, cols = `(?, ?, 0, ?, ?, ?)`, cols+`, TRACE_ID`
	}
	for start := 0; start < len(ids); start += inboxChunkRows {
		chunk := ids[start:min(start+inboxChunkRows, len(ids))]
		args := make([]any, 0, 5*len(chunk))
		for i, id := range chunk {
			args = append(args, id, pipeline.Pending, T(now), T(now))
			if traces != nil {
				args = append(args, nullStr(traces[start+i]))
			}
		}
		q := `INSERT INTO PROC_STATE (` + cols + `) VALUES ` +
			strings.TrimSuffix(strings.Repeat(row+",", len(chunk)), ",")
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			return Unavailable(fmt.Errorf("insert PROC_STATE for %d messages: %w", len(chunk), err))
		}
	}
	return nil
}

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
	return errors.Is(err, mysqldrv.ErrPktTooLarge) || isMySQLError(err, myPacketTooLarge)
}

// Heads returns the highest CMINMSGS id, the highest id with a processing state and how many
// of the ids in (after, msgs] have one, read in one statement: when that is all of them, the
// pump's adoption knows that no id is missing without reading them (Unstated).
func (in *Intake) Heads(ctx context.Context, after int64) (msgs, states, stated int64, err error) {
	var m, p, n sql.NullInt64
	err = in.db.SQL.QueryRowContext(ctx, `SELECT h.M, h.P, (SELECT COUNT(*) FROM PROC_STATE WHERE CMINMSGS_ID > ? AND CMINMSGS_ID <= h.M)
FROM (SELECT (SELECT MAX(CMINMSGS_ID) FROM CMINMSGS) AS M, (SELECT MAX(CMINMSGS_ID) FROM PROC_STATE) AS P) h`, after).Scan(&m, &p, &n)
	if err != nil {
		return 0, 0, 0, Unavailable(err)
	}
	return m.Int64, p.Int64, n.Int64, nil
}
