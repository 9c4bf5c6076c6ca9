package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	mysqldrv "github.com/go-sql-driver/mysql"

	"msgx/internal/pipeline"
)

// Batching is the pump's batched side of PROC_STATE: the next due messages with their raw
// text in one read, and one transaction in which a run of them commits, a savepoint per
// message, so the run shares one durable commit (one fsync) instead of paying one each.
type Batching interface {
	// Due returns up to limit unfinished messages (PENDING or FAILED) in id order.
	Due(ctx context.Context, limit int) ([]*Due, error)
	// BeginBatch opens the batch transaction; the pump lease is checked in it at Commit.
	BeginBatch(ctx context.Context) (*Batch, error)
}

var _ Batching = (*Processor)(nil)

// Due is an unfinished message as the pump reads it for a batch: its processing state, its
// raw text (from CMINMSGS or, once archived, CMINMSGS_HST) and the identity key it holds.
type Due struct {
	Message
	Raw   string
	RawOK bool // false: the text is in neither table
	// RawLater says the text is longer than DueRawLimit and was left out of the batch read:
	// read it with Raw when its turn comes.
	RawLater bool
	// BoundKey is the IDENTITY_KEY the row holds ("" when none). The key is bound only by the
	// success transaction, so a row holding the key of its own identity has been applied
	// (its commit's answer was lost) and must not be applied again.
	BoundKey string
}

// DueRawLimit is the longest raw text Due brings with a message (bytes on MySQL, characters
// on SQLite): a batch read of 200 messages stays a few megabytes even when snapshots of
// thousands of flights are waiting.
const DueRawLimit = 64 << 10

// Due returns up to limit unfinished messages in id order, each with its raw text (up to
// DueRawLimit), in one query. Each state is read by its own seek on IDX_PROC_HEAD (STATE, CMINMSGS_ID), as Head
// does, so the read costs limit rows however long the backlog is.
func (p *Processor) Due(ctx context.Context, limit int) ([]*Due, error) {
	if limit <= 0 {
		limit = 1
	}
	q := fmt.Sprintf(`SELECT `+messageCols+`, p.IDENTITY_KEY,
			c.CMINMSGS_ID, CASE WHEN LENGTH(c.CMINMSGS_CLOB_MSG) <= %[2]d THEN c.CMINMSGS_CLOB_MSG END, LENGTH(c.CMINMSGS_CLOB_MSG) <= %[2]d,
			h.CMINMSGS_ID, CASE WHEN LENGTH(h.CMINMSGS_CLOB_MSG) <= %[2]d THEN h.CMINMSGS_CLOB_MSG END, LENGTH(h.CMINMSGS_CLOB_MSG) <= %[2]d
		FROM (SELECT CMINMSGS_ID FROM (SELECT CMINMSGS_ID FROM PROC_STATE WHERE STATE = ? ORDER BY CMINMSGS_ID LIMIT %[1]d) a
			UNION ALL SELECT CMINMSGS_ID FROM (SELECT CMINMSGS_ID FROM PROC_STATE WHERE STATE = ? ORDER BY CMINMSGS_ID LIMIT %[1]d) b) due
		JOIN PROC_STATE p ON p.CMINMSGS_ID = due.CMINMSGS_ID
		LEFT JOIN CMINMSGS c ON c.CMINMSGS_ID = p.CMINMSGS_ID
		LEFT JOIN CMINMSGS_HST h ON c.CMINMSGS_ID IS NULL AND h.CMINMSGS_ID = p.CMINMSGS_ID
		ORDER BY p.CMINMSGS_ID LIMIT %[1]d`, limit, DueRawLimit)
	rows, err := p.db.SQL.QueryContext(ctx, q, pipeline.Pending, pipeline.Failed)
	if err != nil {
		return nil, Unavailable(fmt.Errorf("due messages: %w", err))
	}
	defer rows.Close()
	var out []*Due
	for rows.Next() {
		var key, live, hst sql.NullString
		var liveID, hstID sql.NullInt64
		var liveFits, hstFits sql.NullBool
		m, err := p.scanMessage(extraScan{rows, []any{&key, &liveID, &live, &liveFits, &hstID, &hst, &hstFits}})
		if err != nil {
			return nil, Unavailable(fmt.Errorf("due messages: %w", err))
		}
		u := &Due{Message: *m, BoundKey: key.String}
		switch {
		case liveID.Valid:
			u.Raw, u.RawOK, u.RawLater = live.String, true, liveFits.Valid && !liveFits.Bool
		case hstID.Valid:
			u.Raw, u.RawOK, u.RawLater = hst.String, true, hstFits.Valid && !hstFits.Bool
		}
		out = append(out, u)
	}
	if err := rows.Err(); err != nil {
		return nil, Unavailable(fmt.Errorf("due messages: %w", err))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// extraScan scans the message columns and then the extra destinations of one row.
type extraScan struct {
	rows  *sql.Rows
	extra []any
}

func (e extraScan) Scan(dest ...any) error { return e.rows.Scan(append(dest, e.extra...)...) }

// ErrBatchBroken says the batch transaction can no longer be used (the database rolled it
// back, or a savepoint could not be restored): nothing of it is committed.
var ErrBatchBroken = errors.New("the batch transaction is broken")

// Batch is the pump's open batch transaction. Each message's writes run under a savepoint of
// their own, so a message that fails is rolled back alone and the ones before it stay.
type Batch struct {
	d    *DB
	conn *sql.Conn // the connection the batch holds until it ends
	tx   *sql.Tx
	n    int // savepoints made
	// later holds the MSG_EVENT rows and back-fills of the messages that succeeded, written
	// by Flush; nil: each message writes its own under its savepoint (DeferWrites).
	later *deferred
	// queue holds the successes waiting to be sent several per round trip (Queue,
	// SendQueued); refs is what the batch knows of REF_DATA records (batchqueue.go).
	queue      []*queued
	queueBytes int
	refs       map[refID]refState
	// fenceChecked says Flush checked the lease in its last round trip (MySQL), so Commit
	// need not check it again.
	fenceChecked bool
}

// deferred is what the messages of a batch leave for Flush: their events in order, their
// CMINMSGS back-fills and the flights they named.
type deferred struct {
	events    []eventRow
	backfills []backfillRow
	flights   []flightRow // their MSG_FLIGHT rows
}

// backfillRow is the back-fill of one message.
type backfillRow struct {
	id int64
	b  Backfill
	at time.Time
}

func (l *deferred) add(id int64, tag string, evs []pipeline.Event, b Backfill, flids []int64, now time.Time) {
	for _, f := range flids {
		l.flights = append(l.flights, flightRow{flid: f, msgID: id})
	}
	for _, e := range evs {
		l.events = append(l.events, eventRow{msgID: id, tag: tag, ev: e, at: now})
	}
	l.backfills = append(l.backfills, backfillRow{id: id, b: b, at: now})
}

// DeferWrites makes the messages that succeed in this batch leave their MSG_EVENT rows and
// their CMINMSGS back-fill for Flush, which writes those of the whole batch many per statement
// (on MySQL each statement is a round trip; a FLOP's two were a third of its statements).
// What a message's own step writes is unchanged: the identity bind and SUCCEEDED, its
// reference and flight changes, under its savepoint.
//
// The deferred writes can fail only through the database (an outage) or a value it refuses
// (an event's target or key longer than its column): Flush then says so, and the caller rolls
// the batch back and does it again without DeferWrites, so the message whose value is refused
// fails alone under its savepoint, exactly as it would one by one.
func (b *Batch) DeferWrites() {
	if b.later == nil {
		b.later = &deferred{}
	}
}

// ErrFlush says Flush could not write the batch's deferred writes: the batch must be rolled
// back (and done again without DeferWrites).
var ErrFlush = errors.New("the batch's deferred writes failed")

// Flush writes what the batch's messages deferred (DeferWrites): their back-fills, then their
// events in message order (EVENT_ID follows it, as one by one), eventChunk rows per statement,
// then the flights they named (MSG_FLIGHT, flightChunk rows per statement). On MySQL the
// events, the flights and the lease check Commit would make go in one multi-statement round
// trip (multiExec): after the queue, a batch's writes cost the back-fill's round trip, that
// one and the COMMIT, instead of one each. An error wraps ErrFlush (and the database's
// error); the batch must then be rolled back.
func (b *Batch) Flush(ctx context.Context) error {
	if b.later == nil {
		return nil
	}
	l := *b.later
	*b.later = deferred{}
	if err := b.d.Processor.backfillRows(ctx, b.tx, l.backfills); err != nil {
		return fmt.Errorf("%w: %w", ErrFlush, err)
	}
	var x execer = b.tx
	var m *multiExec
	if b.d.Dialect == MySQL {
		m = &multiExec{b: b}
		x = m
	}
	if _, err := insertEventRows(ctx, x, l.events); err != nil {
		return fmt.Errorf("%w: %w", ErrFlush, err)
	}
	if err := insertFlightRows(ctx, x, b.d.Dialect, l.flights); err != nil {
		return fmt.Errorf("%w: %w", ErrFlush, err)
	}
	if m == nil {
		return nil
	}
	fence := b.d.Leases.fence != nil
	if fence {
		m.add(fenceUpdate, b.d.Leases.fence.name, b.d.Leases.fence.holder)
	}
	rows, err := m.send(ctx)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrFlush, Unavailable(err))
	}
	// A lease lost shows as no row changed: Commit checks it again and says so (ErrFenced).
	b.fenceChecked = fence && len(rows) > 0 && rows[len(rows)-1] == 1
	return nil
}

// execer is what the writes of a batch need of a transaction (or of a multiExec).
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// multiExec gathers statements that need nothing read back and sends them in the batch's
// transaction as multi-statement queries (MySQL), each of at most about queueBytes.
type multiExec struct {
	b    *Batch
	q    []string
	args []any
	size int
}

// ExecContext adds a statement; it is sent with the others (send), or at once with those
// before it when they would make the query too large. Its result is nil.
func (m *multiExec) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	n := len(query)
	for _, a := range args {
		if s, ok := a.(string); ok {
			n += 2 * len(s) // escaped, at worst
		} else {
			n += 24
		}
	}
	if m.size > 0 && m.size+n > queueBytes {
		if _, err := m.send(ctx); err != nil {
			return nil, err
		}
	}
	m.add(query, args...)
	m.size += n
	return nil, nil
}

func (m *multiExec) add(query string, args ...any) {
	m.q = append(m.q, query)
	m.args = append(m.args, args...)
}

// send sends the statements gathered in one round trip and returns the rows each changed.
func (m *multiExec) send(ctx context.Context) ([]int64, error) {
	if len(m.q) == 0 {
		return nil, nil
	}
	rows, err := m.b.execAll(ctx, strings.Join(m.q, ";\n"), m.args)
	m.q, m.args, m.size = nil, nil, 0
	return rows, err
}

// backfillChunk is how many messages' back-fills one MySQL statement carries.
const backfillChunk = 100

// backfillRows writes the back-fills of rows, as backfill does each. The back-fills of a
// chunk are one UPDATE of CMINMSGS joined to the chunk's values (joinedBackfill): one
// statement for the database to parse and run instead of one per message (on MySQL, one per
// message in a multi-statement query; on SQLite, inside the batch's hold of the write lock).
// A chunk the database refuses a value of (the statement changes nothing) is done again one
// by one by backfill, which sets what it can and logs the rest (a value cut to fit is then
// logged twice).
func (p *Processor) backfillRows(ctx context.Context, tx *sql.Tx, rows []backfillRow) error {
	if len(rows) == 0 || p.db.Intake.Shadow() {
		return nil // nothing to fill, or (shadow mode) the legacy's columns are the legacy's
	}
	cols, err := p.db.Intake.columns(ctx, tx)
	if err != nil || cols == nil {
		return err // nil: no CMINMSGS, nothing to fill
	}
	o := p.db.Intake.legacyOpts()
	for start := 0; start < len(rows); start += backfillChunk {
		chunk := rows[start:min(start+backfillChunk, len(rows))]
		var j joinedBackfill
		for _, r := range chunk {
			sets, a, misfits := backfillSets(cols, r.b, o.Location, r.at)
			if len(misfits) > 0 {
				o.Logger.Warn("legacy back-fill: values do not fit their CMINMSGS columns", "msg_id", r.id, "misfits", strings.Join(misfits, "; "))
			}
			j.add(r.id, sets, a)
		}
		if q, args := j.statement(p.db.Dialect); q != "" {
			_, err := tx.ExecContext(ctx, q, args...)
			if err == nil {
				continue
			}
			if !IsDataError(err) {
				return Unavailable(fmt.Errorf("back-fill CMINMSGS %d..%d: %w", chunk[0].id, chunk[len(chunk)-1].id, err))
			}
		}
		for _, r := range chunk {
			if err := p.db.Intake.backfill(ctx, tx, r.id, r.b, r.at); err != nil {
				return err
			}
		}
	}
	return nil
}

// joinedBackfill builds the UPDATE that back-fills several messages at once: CMINMSGS joined
// to a derived table of one row of values per message, the SET list backfillSets gives (the
// same columns for every message: each legacy column it knows, set to a value or NULL)
// taking its values from the row. A message whose SET list differs from the first one's, if
// ever, makes the chunk go one by one (mixed).
type joinedBackfill struct {
	n     int      // messages added
	sets  []string // the first message's SET list
	rows  strings.Builder
	args  []any
	mixed bool
}

func (j *joinedBackfill) add(id int64, sets []string, args []any) {
	switch j.n++; {
	case j.n == 1:
		j.sets = sets
	case !slices.Equal(sets, j.sets):
		j.mixed = true
	}
	if j.rows.Len() == 0 {
		j.rows.WriteString("SELECT ? AS msgx_id")
		for i := range args {
			fmt.Fprintf(&j.rows, ", ? AS msgx_v%d", i)
		}
	} else {
		j.rows.WriteString(" UNION ALL SELECT ?" + strings.Repeat(", ?", len(args)))
	}
	j.args = append(append(j.args, id), args...)
}

// statement returns the joined UPDATE; "" when there is none (no message, no column to set,
// or mixed SET lists).
func (j *joinedBackfill) statement(dialect Dialect) (string, []any) {
	if len(j.sets) == 0 || j.mixed {
		return "", nil
	}
	sets := make([]string, len(j.sets))
	v := 0
	for i, s := range j.sets {
		var b strings.Builder
		for _, c := range s {
			if c != '?' {
				b.WriteRune(c)
				continue
			}
			fmt.Fprintf(&b, "msgx_v.msgx_v%d", v)
			v++
		}
		sets[i] = b.String()
	}
	if dialect == MySQL {
		return `UPDATE CMINMSGS JOIN (` + j.rows.String() + `) msgx_v ON CMINMSGS.CMINMSGS_ID = msgx_v.msgx_id SET ` + strings.Join(sets, ", "), j.args
	}
	return `UPDATE CMINMSGS SET ` + strings.Join(sets, ", ") + ` FROM (` + j.rows.String() + `) msgx_v WHERE CMINMSGS.CMINMSGS_ID = msgx_v.msgx_id`, j.args
}

// BeginBatch opens a batch transaction. The pump lease is not checked here but at Commit:
// a batch of phase A waits on Redis between its SQL writes, and a lock on the lease row held
// meanwhile would make the lease's renewal wait behind Redis (a Redis stall would look like a
// database outage and cost the lease).
func (p *Processor) BeginBatch(ctx context.Context) (*Batch, error) {
	conn, err := p.db.SQL.Conn(ctx)
	if err != nil {
		return nil, Unavailable(fmt.Errorf("store: begin batch: %w", err))
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		conn.Close()
		return nil, Unavailable(fmt.Errorf("store: begin batch: %w", err))
	}
	return &Batch{d: p.db, conn: conn, tx: tx}, nil
}

// Tx is the batch's transaction, for reads that must see the batch's own writes (the
// handlers' view).
func (b *Batch) Tx() *sql.Tx { return b.tx }

// Commit checks the pump lease inside the batch transaction (the fence: its row locked on
// MySQL, so a take-over waits for this commit rather than overlapping it) and commits the
// batch; on return without error every message of it is durable. A batch of an instance
// that no longer holds the lease is rolled back (ErrFenced): nothing of it is written.
// On SQLite the batch carries the writes queued to ride (riders.go) into its commit.
func (b *Batch) Commit(ctx context.Context) error {
	defer b.conn.Close()
	if !b.fenceChecked {
		if err := b.d.Leases.checkFence(ctx, b.tx); err != nil {
			b.tx.Rollback()
			return err
		}
	}
	group := b.d.Processor.riders.take()
	err := carry(ctx, b.tx, group)
	if err != nil {
		b.tx.Rollback()
	} else {
		err = b.tx.Commit()
	}
	settle(group, err == nil)
	if err != nil {
		return Unavailable(fmt.Errorf("store: commit batch: %w", err))
	}
	return nil
}

// Rollback abandons the batch: nothing of it is written.
func (b *Batch) Rollback() {
	b.tx.Rollback()
	b.conn.Close()
}

// step runs fn under a fresh savepoint, rolled back to when fn fails, so a failed step leaves
// the batch as it was before it. A savepoint that cannot be made or restored breaks the batch
// (ErrBatchBroken, wrapping fn's error).
//
// On SQLite every step's savepoint has the same name (no step ever goes back past its own)
// and is released when the step ends: kept open, each one made every page a later message
// touched be checked against it and kept the sub-journal growing for the whole batch;
// released, the outermost savepoint truncates it. Releasing merges the step into the
// transaction, changing nothing else.
//
// On MySQL, where each statement is a round trip, fn gets the SAVEPOINT statement as lead to
// send with its first write (a multi-statement query; MySQL stops at the first statement that
// fails), and nothing is released. Each step's savepoint has a name of its own, so a
// rollback to a savepoint that was not made fails (breaking the batch) rather than going
// back to an earlier step's.
func (b *Batch) step(ctx context.Context, fn func(lead string) error) error {
	b.n++
	name, lead := "msgx_step", ""
	if b.d.Dialect == MySQL {
		name = fmt.Sprintf("msgx_sp%d", b.n)
		lead = "SAVEPOINT " + name + "; "
	} else if _, err := b.tx.ExecContext(ctx, `SAVEPOINT `+name); err != nil {
		return fmt.Errorf("%w: savepoint: %w", ErrBatchBroken, Unavailable(err))
	}
	err := fn(lead)
	if err != nil {
		if _, rerr := b.tx.ExecContext(ctx, `ROLLBACK TO SAVEPOINT `+name); rerr != nil {
			return fmt.Errorf("%w: rollback to savepoint after %w: %w", ErrBatchBroken, err, Unavailable(rerr))
		}
	}
	if b.d.Dialect == SQLite {
		if _, rerr := b.tx.ExecContext(ctx, `RELEASE SAVEPOINT `+name); rerr != nil {
			return fmt.Errorf("%w: release savepoint: %w", ErrBatchBroken, Unavailable(rerr))
		}
	}
	return err
}

// Succeed is Processing.Succeed inside the batch: the message's effects and SUCCEEDED under a
// savepoint of their own; on any error none of them is left in the batch. The messages queued
// before it (Queue) must have been sent (SendQueued) first: statements go in message order.
//
// It reads and writes REF_DATA past the batch's reference cache, so it forgets that cache.
func (b *Batch) Succeed(ctx context.Context, id int64, s Success, flights FlightWriter, now time.Time) (events, refChanged int, err error) {
	b.refs = nil
	err = b.step(ctx, func(lead string) error {
		var err error
		events, refChanged, err = b.d.Processor.succeedTx(ctx, b.tx, lead, id, s, flights, b.later, now)
		return err
	})
	if err != nil {
		if errors.Is(err, ErrBatchBroken) {
			return 0, 0, err
		}
		return 0, 0, effectsError(id, err)
	}
	return events, refChanged, nil
}

// execAll runs q, several statements, in the batch's transaction in one round trip and
// returns the rows each one affected (database/sql gives only the last one's).
func (b *Batch) execAll(ctx context.Context, q string, args []any) ([]int64, error) {
	var rows []int64
	err := b.conn.Raw(func(dc any) error {
		ex, ok := dc.(driver.ExecerContext)
		if !ok {
			return errors.New("the driver's connection cannot execute statements")
		}
		check, _ := dc.(driver.NamedValueChecker)
		nv := make([]driver.NamedValue, len(args))
		for i, a := range args {
			nv[i] = driver.NamedValue{Ordinal: i + 1, Value: a}
			if check != nil {
				if err := check.CheckNamedValue(&nv[i]); err != nil {
					return err
				}
			}
		}
		res, err := ex.ExecContext(ctx, q, nv)
		if err != nil {
			return notBadConn(err)
		}
		all, ok := res.(interface{ AllRowsAffected() []int64 })
		if !ok {
			return errors.New("the driver does not tell the rows of each statement")
		}
		rows = all.AllRowsAffected()
		return nil
	})
	return rows, err
}

// notBadConn returns err so that it no longer matches driver.ErrBadConn, as the invalid
// connection it is. Conn.Raw closes its sql.Conn when its function fails with ErrBadConn, and
// that close waits for the Conn's lock, which the batch's own transaction on the Conn holds
// until it ends: the pump's goroutine waited for itself for ever. The driver answers
// ErrBadConn when a statement could not be written at all, which is what a connection closed
// under the batch gives (the probe closing a hung node's connections, probe.go): in the node
// kill test the pump went silent, and the lease keeper waiting for it to stop with it. The
// connection is still given up: its nodeConn noted the failure, and the transaction's
// rollback fails on it and releases it.
func notBadConn(err error) error {
	if errors.Is(err, driver.ErrBadConn) {
		return fmt.Errorf("%w (the connection was closed: %s)", mysqldrv.ErrInvalidConn, err.Error())
	}
	return err
}

// lead runs the savepoint statement step gave, alone, for a step whose first statement does
// not take it along.
func (b *Batch) lead(ctx context.Context, lead string) error {
	if lead == "" {
		return nil
	}
	if _, err := b.tx.ExecContext(ctx, lead); err != nil {
		return fmt.Errorf("%w: savepoint: %w", ErrBatchBroken, Unavailable(err))
	}
	return nil
}

// Record is Processing.Record inside the batch, under a savepoint, with the same minimal
// record when the database refuses a value.
func (b *Batch) Record(ctx context.Context, id int64, o Outcome, now time.Time) error {
	record := func(minimal bool) func(string) error {
		return func(lead string) error {
			if err := b.lead(ctx, lead); err != nil {
				return err
			}
			return b.d.Processor.recordTx(ctx, b.tx, id, o, now, minimal)
		}
	}
	err := b.step(ctx, record(false))
	if err != nil && IsDataError(err) && !errors.Is(err, ErrBatchBroken) {
		first := err
		err = b.step(ctx, record(true))
		if err == nil {
			return nil
		}
		return fmt.Errorf("record %s for message %d: %v; minimal record: %w", o.State, id, first, err)
	}
	return err
}

// BoundTo is Processing.BoundTo read through the batch, so it sees the identities the batch
// bound.
func (b *Batch) BoundTo(ctx context.Context, identity string) (int64, bool, error) {
	var id int64
	err := b.tx.QueryRowContext(ctx, `SELECT CMINMSGS_ID FROM PROC_STATE WHERE IDENTITY_KEY = ?`, IdentityKey(identity)).Scan(&id)
	if err == sql.ErrNoRows {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, Unavailable(err)
	}
	return id, true, nil
}

// RefKeysTx returns the keys of the REF_DATA records of one type as tx sees them (with its
// own uncommitted writes), sorted: the handlers' view inside a batch.
func RefKeysTx(ctx context.Context, tx *sql.Tx, typ string) ([]string, error) {
	keys, err := refKeys(ctx, tx, typ)
	if err != nil {
		return nil, err
	}
	sort.Strings(keys)
	return keys, nil
}
