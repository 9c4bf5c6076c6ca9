// Package flight defines the flight-store contract (Contract, contract.go) that the SQL store
// here and the Redis store of phase A (package redisflight) both implement, and is the SQL
// flight store: the store of phase B, and FLIGHT_STATE's mirror in phase A. It owns the table FLIGHT_STATE, one row
// per flight keyed by (FDAY, FLID) with FLID unique, holding the flight's whole record as JSON
// (the handlers' record type, keyed by SIS element names). It writes the flight changes of a
// Decision inside the pump's success transaction (store.FlightWriter), serves the handlers'
// read-only view (handler.View) and the reads of the flights API.
//
// FDAY is the flight's local operation day (YYYY-MM-DD in the airport zone); VERSION starts
// at 1 and grows by one on every change of the row; CMINMSGS_ID is the message that last
// changed it; MAID (migration 00005, indexed) copies the record's code-share master FLID, NULL
// when it names none, so the code-share lookups seek an index instead of scanning records.
package flight

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"msgx/internal/pipeline"
	"msgx/internal/store"
)

// DB is what the SQL flight store needs of the msgx database: its SQL handle, for the table
// FLIGHT_STATE it owns, and the reference data its view reads keys of.
type DB interface {
	store.SQLHandle
	RefList(ctx context.Context, typ string) ([]store.RefEntry, error)
}

// Store is the SQL flight store over one msgx database.
type Store struct {
	db    DB
	clock pipeline.Clock
	loc   *time.Location
	tx    *sql.Tx // set by InTx: the view reads through the pump's batch transaction
	// seen is what the view knows of flights through tx (InTx): for each flight read or
	// written through it, where it is stored and at which version (and its record, when
	// known), or that it is not stored. A handler's read of a flight it holds is answered from
	// it, and a write of one of them in the same transaction takes its version from it instead
	// of reading it again.
	seen map[int64]seenRow
	// barrier runs before a read that seen cannot answer and that must see every write made
	// before it (SetBarrier).
	barrier func(ctx context.Context) error
}

// seenRow is what the view knows of a flight: where it is stored, or that it is not.
type seenRow struct {
	row
	found bool
	rec   []byte // its record; nil when only where it is stored is known
}

// InTx returns the store whose view reads through tx, the pump's open batch transaction, so a
// handler sees the writes of the messages before it in the batch (a transaction sees its own
// uncommitted writes on SQLite and MySQL alike).
//
// It is the batch's view of the flights: it remembers each flight it read or wrote through
// tx (its record, day and version), answers a handler's read of it from there (Prefetch
// reads the flights a batch names in a few queries, ahead of the decisions), and its
// WriteFlights and FlightStatement, given the same tx, take the version the write is
// guarded by from there and note the flight as written. What it remembers is as true as
// the writes it saw: when one of them is rolled back (a message failing under its
// savepoint), the caller calls Forget.
func (s *Store) InTx(tx *sql.Tx) *Store {
	c := *s
	c.tx = tx
	c.seen = map[int64]seenRow{}
	c.barrier = nil
	return &c
}

// Prefetch reads, through the transaction of InTx, the flights of flids it does not know
// yet, a few hundred per query, so the handlers' reads of them that follow read nothing.
// Without a transaction it does nothing.
func (s *Store) Prefetch(ctx context.Context, flids []int64) error {
	if s.seen == nil {
		return nil
	}
	var want []int64
	for _, id := range flids {
		if c, ok := s.seen[id]; !ok || (c.found && c.rec == nil) {
			want = append(want, id)
		}
	}
	_, err := s.readFlights(ctx, want)
	return err
}

// SetBarrier sets fn to run before every read through the transaction that what the view
// knows cannot answer (flights by day or by code-share master, reference keys): the
// pump's batch sends the writes it holds back (store.Batch.Queue) before such a read.
func (s *Store) SetBarrier(fn func(ctx context.Context) error) { s.barrier = fn }

// Forget drops what the view knows of flights: after a write it saw was rolled back.
func (s *Store) Forget() {
	if s.seen != nil {
		clear(s.seen)
	}
}

// before runs the barrier, if any, before a read that must see every write made so far.
func (s *Store) before(ctx context.Context) error {
	if s.barrier == nil {
		return nil
	}
	return s.barrier(ctx)
}

// reader is what the view reads through: the batch transaction when there is one.
func (s *Store) reader() interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
} {
	if s.tx != nil {
		return s.tx
	}
	return s.db.SQLDB()
}

// New returns the flight store over db. clock and loc are what the view reports as now and
// as the airport zone (nil: the system clock, UTC).
func New(db DB, clock pipeline.Clock, loc *time.Location) *Store {
	if clock == nil {
		clock = pipeline.SystemClock{}
	}
	if loc == nil {
		loc = time.UTC
	}
	return &Store{db: db, clock: clock, loc: loc}
}

// Now returns the clock's current time.
func (s *Store) Now() time.Time { return s.clock.Now() }

// Location returns the airport's time zone.
func (s *Store) Location() *time.Location { return s.loc }

// WriteFlights applies writes inside tx, in order: an upsert inserts the flight or replaces
// its record (moving the row when its day changed), a delete removes it (absent: no-op).
// Every change advances VERSION by compare-and-set, and MAID (the code-share master the record
// names, for CodeSharesOf) follows the record.
//
// When every write names a different flight, which is what a Decision holds, the writes are
// applied a few hundred rows per statement (a snapshot of thousands of flights would otherwise
// pay a round trip per flight): the deletes, then the compare-and-set removal of the rows to
// replace (all or nothing: one that changed under us fails the batch), then the inserts of the
// new rows and of the replacing ones. Otherwise, and for a single write, they are applied one
// by one.
func (s *Store) WriteFlights(ctx context.Context, tx *sql.Tx, msgID int64, writes []pipeline.FlightWrite, now time.Time) (err error) {
	var seen map[int64]seenRow
	if s.tx != nil && s.tx == tx {
		seen = s.seen
	}
	stored, err := storedRows(ctx, tx, writes, seen)
	if err != nil {
		return err
	}
	if seen != nil {
		after := afterWrites(writes, stored)
		defer func() {
			for _, w := range writes {
				if err != nil {
					delete(seen, w.FLID) // failed: not known any more
				} else {
					seen[w.FLID] = after[w.FLID]
				}
			}
		}()
	}
	maids := make([]sql.NullInt64, len(writes))
	for i, w := range writes {
		if w.Delete {
			continue
		}
		if maids[i], err = checkWrite(w); err != nil {
			return err
		}
	}
	// One flight (a FLOP's write) goes one by one too: replacing it in place is one UPDATE
	// where the batched path deletes and inserts it again.
	if len(writes) == 1 || !distinctFlights(writes) {
		for i, w := range writes {
			if err := s.write(ctx, tx, msgID, w, maids[i], stored, now); err != nil {
				return err
			}
		}
		return nil
	}
	return writeBatch(ctx, tx, msgID, writes, maids, stored, now)
}

// afterWrites returns what the flights of writes are once they are applied in order over
// stored: deleted, or stored with the written record at the next version.
func afterWrites(writes []pipeline.FlightWrite, stored map[int64]row) map[int64]seenRow {
	out := make(map[int64]seenRow, len(writes))
	for id, r := range stored {
		out[id] = seenRow{row: r, found: true}
	}
	for _, w := range writes {
		cur := out[w.FLID]
		switch {
		case w.Delete:
			out[w.FLID] = seenRow{}
		case cur.found:
			out[w.FLID] = seenRow{row: row{day: w.Day, version: cur.version + 1}, found: true, rec: w.Record}
		default:
			out[w.FLID] = seenRow{row: row{day: w.Day, version: 1}, found: true, rec: w.Record}
		}
	}
	return out
}

// FlightStatement is store.FlightStatementer's: for a flight the view knows through tx (InTx,
// the same tx), the guarded UPDATE that replaces its record on the same day at the version
// known, or the INSERT of a flight known not to be stored; ok is false for any other write
// (WriteFlights does those). From then on the view counts the write made: the flight is
// known with the written record at the next version.
func (s *Store) FlightStatement(tx *sql.Tx, msgID int64, w pipeline.FlightWrite, now time.Time) (string, []any, bool) {
	if s.tx == nil || s.tx != tx || w.Delete {
		return "", nil, false
	}
	cur, ok := s.seen[w.FLID]
	if !ok || (cur.found && cur.day != w.Day) {
		return "", nil, false
	}
	maid, err := checkWrite(w)
	if err != nil {
		return "", nil, false
	}
	var q string
	var args []any
	version := int64(1)
	if cur.found {
		q, args = replaceInPlace(msgID, w, maid, cur.version, now)
		version = cur.version + 1
	} else {
		q = `INSERT INTO FLIGHT_STATE (FDAY, FLID, RECORD, VERSION, CMINMSGS_ID, UPDATED_AT, MAID) VALUES (?, ?, ?, 1, ?, ?, ?)`
		args = []any{w.Day, w.FLID, string(w.Record), msgID, store.T(now), maid}
	}
	s.seen[w.FLID] = seenRow{row: row{day: w.Day, version: version}, found: true, rec: w.Record}
	return q, args, true
}

// replaceInPlace is the guarded UPDATE that replaces flight w.FLID's record at version.
func replaceInPlace(msgID int64, w pipeline.FlightWrite, maid sql.NullInt64, version int64, now time.Time) (string, []any) {
	return `UPDATE FLIGHT_STATE SET RECORD = ?, VERSION = ?, CMINMSGS_ID = ?, UPDATED_AT = ?, MAID = ? WHERE FLID = ? AND VERSION = ?`,
		[]any{string(w.Record), version + 1, msgID, store.T(now), maid, w.FLID, version}
}

// checkWrite checks an upsert's day and record and returns the record's MAID (NULL if none).
func checkWrite(w pipeline.FlightWrite) (sql.NullInt64, error) {
	if !validDay(w.Day) {
		return sql.NullInt64{}, fmt.Errorf("flight %d: day %q is not YYYY-MM-DD", w.FLID, w.Day)
	}
	var m struct {
		MAID *int64 `json:"MAID"`
	}
	// Unmarshal checks the whole record is JSON before it reads MAID.
	if err := json.Unmarshal(w.Record, &m); err != nil {
		var typeErr *json.UnmarshalTypeError
		if !errors.As(err, &typeErr) {
			return sql.NullInt64{}, fmt.Errorf("flight %d: record is not JSON", w.FLID)
		}
		return sql.NullInt64{}, nil // JSON whose MAID is not a number names no master
	}
	if m.MAID == nil {
		return sql.NullInt64{}, nil
	}
	return sql.NullInt64{Int64: *m.MAID, Valid: true}, nil
}

func distinctFlights(writes []pipeline.FlightWrite) bool {
	seen := make(map[int64]struct{}, len(writes))
	for _, w := range writes {
		if _, dup := seen[w.FLID]; dup {
			return false
		}
		seen[w.FLID] = struct{}{}
	}
	return true
}

// batchRows bounds the rows of one multi-row statement, batchBytes the records it carries
// (well under MariaDB's default max_allowed_packet of 16 MB).
const (
	batchRows  = 250
	batchBytes = 4 << 20
)

// newRow is one row writeBatch inserts.
type newRow struct {
	w       pipeline.FlightWrite
	version int64
	maid    sql.NullInt64
}

// writeBatch applies writes that each name a different flight, many rows per statement.
func writeBatch(ctx context.Context, tx *sql.Tx, msgID int64, writes []pipeline.FlightWrite, maids []sql.NullInt64, stored map[int64]row, now time.Time) error {
	var deletes []int64
	var replaced []row
	var replacedIDs []int64
	rows := make([]newRow, 0, len(writes))
	for i, w := range writes {
		cur, found := stored[w.FLID]
		switch {
		case w.Delete && found:
			deletes = append(deletes, w.FLID)
		case w.Delete:
		case found:
			replaced = append(replaced, cur)
			replacedIDs = append(replacedIDs, w.FLID)
			rows = append(rows, newRow{w: w, version: cur.version + 1, maid: maids[i]})
		default:
			rows = append(rows, newRow{w: w, version: 1, maid: maids[i]})
		}
	}
	for start := 0; start < len(deletes); start += batchRows {
		part := deletes[start:min(start+batchRows, len(deletes))]
		args := make([]any, len(part))
		for i, id := range part {
			args[i] = id
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM FLIGHT_STATE WHERE FLID IN (`+marks(len(part))+`)`, args...); err != nil {
			return store.Unavailable(fmt.Errorf("delete %d flights: %w", len(part), err))
		}
	}
	for start := 0; start < len(replaced); start += batchRows {
		end := min(start+batchRows, len(replaced))
		if err := removeGuarded(ctx, tx, replacedIDs[start:end], replaced[start:end]); err != nil {
			return err
		}
	}
	for start := 0; start < len(rows); {
		end, size := start, 0
		for end < len(rows) && end-start < batchRows && (end == start || size+len(rows[end].w.Record) <= batchBytes) {
			size += len(rows[end].w.Record)
			end++
		}
		if err := insertRows(ctx, tx, msgID, rows[start:end], now); err != nil {
			return err
		}
		start = end
	}
	return nil
}

// removeGuarded deletes the rows of flights ids at the versions read (the compare-and-set of
// a replace); a row whose version moved fails the message for a retry.
func removeGuarded(ctx context.Context, tx *sql.Tx, ids []int64, at []row) error {
	var q strings.Builder
	q.WriteString(`DELETE FROM FLIGHT_STATE WHERE `)
	args := make([]any, 0, 2*len(ids))
	for i, id := range ids {
		if i > 0 {
			q.WriteString(` OR `)
		}
		q.WriteString(`(FLID = ? AND VERSION = ?)`)
		args = append(args, id, at[i].version)
	}
	res, err := tx.ExecContext(ctx, q.String(), args...)
	if err != nil {
		return store.Unavailable(fmt.Errorf("replace %d flights: %w", len(ids), err))
	}
	if n, err := res.RowsAffected(); err != nil || n != int64(len(ids)) {
		return pipeline.Errorf(pipeline.Infra, "%d of %d flights (FLID %d…) changed under us", int64(len(ids))-n, len(ids), ids[0])
	}
	return nil
}

// insertRows inserts rows in one statement.
func insertRows(ctx context.Context, tx *sql.Tx, msgID int64, rows []newRow, now time.Time) error {
	var q strings.Builder
	q.WriteString(`INSERT INTO FLIGHT_STATE (FDAY, FLID, RECORD, VERSION, CMINMSGS_ID, UPDATED_AT, MAID) VALUES `)
	args := make([]any, 0, 7*len(rows))
	at := store.T(now)
	for i, r := range rows {
		if i > 0 {
			q.WriteByte(',')
		}
		q.WriteString(`(?, ?, ?, ?, ?, ?, ?)`)
		args = append(args, r.w.Day, r.w.FLID, string(r.w.Record), r.version, msgID, at, r.maid)
	}
	if _, err := tx.ExecContext(ctx, q.String(), args...); err != nil {
		return store.Unavailable(fmt.Errorf("write %d flights (FLID %d…): %w", len(rows), rows[0].w.FLID, err))
	}
	return nil
}

// marks returns n comma-separated placeholders.
func marks(n int) string { return strings.TrimSuffix(strings.Repeat("?,", n), ",") }

// row is where a stored flight is and its version.
type row struct {
	day     string
	version int64
}

// storedRows reads the day and version of every flight the writes touch, a few hundred per
// query, so a snapshot does not pay a round trip per flight for it. A flight in seen (read
// through the same transaction by the view, stored or known absent) is not read again.
func storedRows(ctx context.Context, tx *sql.Tx, writes []pipeline.FlightWrite, seen map[int64]seenRow) (map[int64]row, error) {
	const chunk = 500
	out := make(map[int64]row, len(writes))
	var ask []int64
	for _, w := range writes {
		r, ok := seen[w.FLID]
		switch {
		case !ok:
			ask = append(ask, w.FLID)
		case r.found:
			out[w.FLID] = r.row
		}
	}
	for start := 0; start < len(ask); start += chunk {
		part := ask[start:min(start+chunk, len(ask))]
		args := make([]any, len(part))
		for i, id := range part {
			args[i] = id
		}
		rows, err := tx.QueryContext(ctx, `SELECT FLID, FDAY, VERSION FROM FLIGHT_STATE WHERE FLID IN (`+marks(len(part))+`)`, args...)
		if err != nil {
			return nil, store.Unavailable(fmt.Errorf("read flights: %w", err))
		}
		for rows.Next() {
			var id int64
			var r row
			if err := rows.Scan(&id, &r.day, &r.version); err != nil {
				rows.Close()
				return nil, store.Unavailable(err)
			}
			r.day = strings.TrimSpace(r.day)
			out[id] = r
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, store.Unavailable(err)
		}
	}
	return out, nil
}

// write applies one checked write (the path of writes that name a flight more than once).
func (s *Store) write(ctx context.Context, tx *sql.Tx, msgID int64, w pipeline.FlightWrite, maid sql.NullInt64, stored map[int64]row, now time.Time) error {
	cur, found := stored[w.FLID]
	day, version := cur.day, cur.version
	if w.Delete {
		if !found {
			return nil
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM FLIGHT_STATE WHERE FLID = ?`, w.FLID); err != nil {
			return store.Unavailable(fmt.Errorf("delete flight %d: %w", w.FLID, err))
		}
		delete(stored, w.FLID)
		return nil
	}
	var err error
	switch {
	case !found:
		_, err = tx.ExecContext(ctx, `INSERT INTO FLIGHT_STATE (FDAY, FLID, RECORD, VERSION, CMINMSGS_ID, UPDATED_AT, MAID) VALUES (?, ?, ?, 1, ?, ?, ?)`,
			w.Day, w.FLID, string(w.Record), msgID, store.T(now), maid)
	case day != w.Day:
		if _, err = tx.ExecContext(ctx, `DELETE FROM FLIGHT_STATE WHERE FLID = ? AND VERSION = ?`, w.FLID, version); err == nil {
			_, err = tx.ExecContext(ctx, `INSERT INTO FLIGHT_STATE (FDAY, FLID, RECORD, VERSION, CMINMSGS_ID, UPDATED_AT, MAID) VALUES (?, ?, ?, ?, ?, ?, ?)`,
				w.Day, w.FLID, string(w.Record), version+1, msgID, store.T(now), maid)
		}
	default:
		var res sql.Result
		q, args := replaceInPlace(msgID, w, maid, version, now)
		res, err = tx.ExecContext(ctx, q, args...)
		if err == nil {
			if n, _ := res.RowsAffected(); n != 1 {
				return pipeline.Errorf(pipeline.Infra, "flight %d changed under us (version %d)", w.FLID, version)
			}
		}
	}
	if err != nil {
		return store.Unavailable(fmt.Errorf("write flight %d: %w", w.FLID, err))
	}
	if found {
		version++
	} else {
		version = 1
	}
	stored[w.FLID] = row{day: w.Day, version: version}
	return nil
}

func validDay(s string) bool {
	_, err := time.Parse(time.DateOnly, s)
	return err == nil && len(s) == 10
}

// Flight returns the stored record of flight flid, or ok=false when there is none.
func (s *Store) Flight(ctx context.Context, flid int64) ([]byte, bool, error) {
	if c, ok := s.seen[flid]; ok && (!c.found || c.rec != nil) {
		return c.rec, c.found, nil
	}
	var rec, day string
	var version int64
	err := s.reader().QueryRowContext(ctx, `SELECT RECORD, FDAY, VERSION FROM FLIGHT_STATE WHERE FLID = ?`, flid).Scan(&rec, &day, &version)
	if err == sql.ErrNoRows {
		if s.seen != nil {
			s.seen[flid] = seenRow{}
		}
		return nil, false, nil
	}
	if err != nil {
		return nil, false, store.Unavailable(fmt.Errorf("read flight %d: %w", flid, err))
	}
	if s.seen != nil {
		s.seen[flid] = seenRow{row: row{day: strings.TrimSpace(day), version: version}, found: true, rec: []byte(rec)}
	}
	return []byte(rec), true, nil
}

// Entry is one stored flight row.
type Entry struct {
	Day     string
	FLID    int64
	Version int64
	MsgID   *int64
	Record  json.RawMessage
	SODT    time.Time
	// UpdatedAt is when the record last changed (FLIGHT_STATE.UPDATED_AT); zero if unknown.
	UpdatedAt time.Time
}

// FlightsBetween returns the records of the stored flights whose SODT is in [from, to], in
// SODT then FLID order.
func (s *Store) FlightsBetween(ctx context.Context, from, to time.Time) ([][]byte, error) {
	if to.Before(from) {
		return nil, nil
	}
	es, err := s.query(ctx, `WHERE FDAY >= ? AND FDAY <= ?`, from.In(s.loc).Format(time.DateOnly), to.In(s.loc).Format(time.DateOnly))
	if err != nil {
		return nil, err
	}
	return RecordsBetween(es, from, to), nil
}

// RecordsBetween returns the records of the entries whose SODT lies in [from, to], in the
// entries' order: the last step of FlightsBetween, whichever store read the entries.
func RecordsBetween(es []Entry, from, to time.Time) [][]byte {
	out := make([][]byte, 0, len(es))
	for _, e := range es {
		if e.SODT.Before(from) || e.SODT.After(to) {
			continue
		}
		out = append(out, e.Record)
	}
	return out
}

// FlightsOf returns the stored records of those of flids that are stored, in no particular
// order, a few hundred per query: a snapshot reads the flights it names in a few round trips
// instead of one per flight. Through a transaction (InTx) it remembers where each of flids is
// stored, or that it is not, for WriteFlights.
func (s *Store) FlightsOf(ctx context.Context, flids []int64) ([][]byte, error) {
	if s.seen == nil {
		return s.readFlights(ctx, flids)
	}
	out := make([][]byte, 0, len(flids))
	var want []int64
	for _, id := range flids {
		c, ok := s.seen[id]
		switch {
		case !ok || (c.found && c.rec == nil):
			want = append(want, id)
		case c.found:
			out = append(out, c.rec)
		}
	}
	read, err := s.readFlights(ctx, want)
	if err != nil {
		return nil, err
	}
	return append(out, read...), nil
}

// readFlights reads the records of those of flids that are stored, a few hundred per query,
// noting each one (stored or not) in seen when the view reads through a transaction.
func (s *Store) readFlights(ctx context.Context, flids []int64) ([][]byte, error) {
	const chunk = 500
	out := make([][]byte, 0, len(flids))
	for start := 0; start < len(flids); start += chunk {
		part := flids[start:min(start+chunk, len(flids))]
		args := make([]any, len(part))
		for i, id := range part {
			args[i] = id
		}
		rows, err := s.reader().QueryContext(ctx, `SELECT RECORD, FLID, FDAY, VERSION FROM FLIGHT_STATE WHERE FLID IN (`+marks(len(part))+`)`, args...)
		if err != nil {
			return nil, store.Unavailable(fmt.Errorf("read flights: %w", err))
		}
		if s.seen != nil {
			for _, id := range part {
				s.seen[id] = seenRow{} // not stored, unless read below
			}
		}
		for rows.Next() {
			var rec, day string
			var id, version int64
			if err := rows.Scan(&rec, &id, &day, &version); err != nil {
				rows.Close()
				return nil, store.Unavailable(err)
			}
			if s.seen != nil {
				s.seen[id] = seenRow{row: row{day: strings.TrimSpace(day), version: version}, found: true, rec: []byte(rec)}
			}
			out = append(out, []byte(rec))
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, store.Unavailable(err)
		}
	}
	return out, nil
}

// CodeShareFlights returns the records of every stored flight that names a code-share master
// (has a MAID), found through the indexed MAID column.
func (s *Store) CodeShareFlights(ctx context.Context) ([][]byte, error) {
	es, err := s.query(ctx, `WHERE MAID IS NOT NULL`)
	if err != nil {
		return nil, err
	}
	return records(es), nil
}

// CodeSharesOf returns the records of the stored flights whose MAID is one of masters: what
// a handler needs to rebuild those masters' code-share lists, at a cost that follows the
// masters asked for, not the history stored.
func (s *Store) CodeSharesOf(ctx context.Context, masters []int64) ([][]byte, error) {
	const chunk = 500
	var out [][]byte
	for start := 0; start < len(masters); start += chunk {
		part := masters[start:min(start+chunk, len(masters))]
		args := make([]any, len(part))
		for i, m := range part {
			args[i] = m
		}
		es, err := s.query(ctx, `WHERE MAID IN (`+marks(len(part))+`)`, args...)
		if err != nil {
			return nil, err
		}
		out = append(out, records(es)...)
	}
	return out, nil
}

func records(es []Entry) [][]byte {
	out := make([][]byte, 0, len(es))
	for _, e := range es {
		out = append(out, e.Record)
	}
	return out
}

// RefKeys returns the keys of the REF_DATA records of one type, sorted.
func (s *Store) RefKeys(ctx context.Context, typ string) ([]string, error) {
	if s.tx != nil {
		if err := s.before(ctx); err != nil {
			return nil, err
		}
		return store.RefKeysTx(ctx, s.tx, typ)
	}
	es, err := s.db.RefList(ctx, typ)
	if err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(es))
	for _, e := range es {
		keys = append(keys, e.Key)
	}
	sort.Strings(keys)
	return keys, nil
}

// Day returns the flights of a local day (YYYY-MM-DD) in SODT then FLID order.
func (s *Store) Day(ctx context.Context, day string) ([]Entry, error) {
	if !validDay(day) {
		return nil, fmt.Errorf("day %q is not YYYY-MM-DD", day)
	}
	return s.query(ctx, `WHERE FDAY = ?`, day)
}

// Get returns the stored row of flight flid, or nil.
func (s *Store) Get(ctx context.Context, flid int64) (*Entry, error) {
	es, err := s.query(ctx, `WHERE FLID = ?`, flid)
	if err != nil || len(es) == 0 {
		return nil, err
	}
	return &es[0], nil
}

func (s *Store) query(ctx context.Context, where string, args ...any) ([]Entry, error) {
	if err := s.before(ctx); err != nil {
		return nil, err
	}
	rows, err := s.reader().QueryContext(ctx, `SELECT FDAY, FLID, RECORD, VERSION, CMINMSGS_ID, UPDATED_AT FROM FLIGHT_STATE `+where, args...)
	if err != nil {
		return nil, store.Unavailable(fmt.Errorf("read flights: %w", err))
	}
	defer rows.Close()
	out := []Entry{}
	for rows.Next() {
		var e Entry
		var rec string
		var msg sql.NullInt64
		var upd store.NullTime
		if err := rows.Scan(&e.Day, &e.FLID, &rec, &e.Version, &msg, &upd); err != nil {
			return nil, store.Unavailable(err)
		}
		e.UpdatedAt = upd.Time
		e.Day = strings.TrimSpace(e.Day)
		e.Record = json.RawMessage(rec)
		if s.seen != nil {
			s.seen[e.FLID] = seenRow{row: row{day: e.Day, version: e.Version}, found: true, rec: e.Record}
		}
		if msg.Valid {
			v := msg.Int64
			e.MsgID = &v
		}
		var m struct {
			SODT time.Time `json:"SODT"`
		}
		_ = json.Unmarshal(e.Record, &m) // a record without a readable SODT sorts first
		e.SODT = m.SODT
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, store.Unavailable(err)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].SODT.Equal(out[j].SODT) {
			return out[i].SODT.Before(out[j].SODT)
		}
		return out[i].FLID < out[j].FLID
	})
	return out, nil
}
