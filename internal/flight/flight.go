// Package flight is the SQL flight store of phase B: it owns the table FLIGHT_STATE, one row
// per flight keyed by (FDAY, FLID) with FLID unique, holding the flight's whole record as JSON
// (the handlers' record type, keyed by SIS element names). It writes the flight changes of a
// Decision inside the pump's success transaction (store.FlightWriter), serves the handlers'
// read-only view (handler.View) and the reads of the flights API.
//
// FDAY is the flight's local operation day (YYYY-MM-DD in the airport zone); VERSION starts
// at 1 and grows by one on every change of the row; CMINMSGS_ID is the message that last
// changed it.
package flight

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"msgx/internal/pipeline"
	"msgx/internal/store"
)

// Store is the SQL flight store over one msgx database.
type Store struct {
	db    *store.DB
	clock pipeline.Clock
	loc   *time.Location
	tx    *sql.Tx // set by InTx: the view reads through the pump's batch transaction
}

// InTx returns the store whose view reads through tx, the pump's open batch transaction, so a
// handler sees the writes of the messages before it in the batch (a transaction sees its own
// uncommitted writes on SQLite and MySQL alike).
func (s *Store) InTx(tx *sql.Tx) *Store {
	c := *s
	c.tx = tx
	return &c
}

// reader is what the view reads through: the batch transaction when there is one.
func (s *Store) reader() interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
} {
	if s.tx != nil {
		return s.tx
	}
	return s.db.SQL
}

// New returns the flight store over db. clock and loc are what the view reports as now and
// as the airport zone (nil: the system clock, UTC).
func New(db *store.DB, clock pipeline.Clock, loc *time.Location) *Store {
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
// Every change advances VERSION by compare-and-set.
func (s *Store) WriteFlights(ctx context.Context, tx *sql.Tx, msgID int64, writes []pipeline.FlightWrite, now time.Time) error {
	stored, err := storedRows(ctx, tx, writes)
	if err != nil {
		return err
	}
	for _, w := range writes {
		if err := s.write(ctx, tx, msgID, w, stored, now); err != nil {
			return err
		}
	}
	return nil
}

// row is where a stored flight is and its version.
type row struct {
	day     string
	version int64
}

// storedRows reads the day and version of every flight the writes touch, a few hundred per
// query, so a snapshot does not pay a round trip per flight for it.
func storedRows(ctx context.Context, tx *sql.Tx, writes []pipeline.FlightWrite) (map[int64]row, error) {
	const chunk = 500
	out := make(map[int64]row, len(writes))
	for start := 0; start < len(writes); start += chunk {
		part := writes[start:min(start+chunk, len(writes))]
		args := make([]any, len(part))
		for i, w := range part {
			args[i] = w.FLID
		}
		rows, err := tx.QueryContext(ctx, `SELECT FLID, FDAY, VERSION FROM FLIGHT_STATE WHERE FLID IN (`+
			strings.TrimSuffix(strings.Repeat("?,", len(part)), ",")+`)`, args...)
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

func (s *Store) write(ctx context.Context, tx *sql.Tx, msgID int64, w pipeline.FlightWrite, stored map[int64]row, now time.Time) error {
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
	if !validDay(w.Day) {
		return fmt.Errorf("flight %d: day %q is not YYYY-MM-DD", w.FLID, w.Day)
	}
	if !json.Valid(w.Record) {
		return fmt.Errorf("flight %d: record is not JSON", w.FLID)
	}
	var err error
	switch {
	case !found:
		_, err = tx.ExecContext(ctx, `INSERT INTO FLIGHT_STATE (FDAY, FLID, RECORD, VERSION, CMINMSGS_ID, UPDATED_AT) VALUES (?, ?, ?, 1, ?, ?)`,
			w.Day, w.FLID, string(w.Record), msgID, store.T(now))
	case day != w.Day:
		if _, err = tx.ExecContext(ctx, `DELETE FROM FLIGHT_STATE WHERE FLID = ? AND VERSION = ?`, w.FLID, version); err == nil {
			_, err = tx.ExecContext(ctx, `INSERT INTO FLIGHT_STATE (FDAY, FLID, RECORD, VERSION, CMINMSGS_ID, UPDATED_AT) VALUES (?, ?, ?, ?, ?, ?)`,
				w.Day, w.FLID, string(w.Record), version+1, msgID, store.T(now))
		}
	default:
		var res sql.Result
		res, err = tx.ExecContext(ctx, `UPDATE FLIGHT_STATE SET RECORD = ?, VERSION = ?, CMINMSGS_ID = ?, UPDATED_AT = ? WHERE FLID = ? AND VERSION = ?`,
			string(w.Record), version+1, msgID, store.T(now), w.FLID, version)
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
	var rec string
	err := s.reader().QueryRowContext(ctx, `SELECT RECORD FROM FLIGHT_STATE WHERE FLID = ?`, flid).Scan(&rec)
	if err == sql.ErrNoRows {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, store.Unavailable(fmt.Errorf("read flight %d: %w", flid, err))
	}
	return []byte(rec), true, nil
}

// Entry is one stored flight row.
type Entry struct {
	Day     string          `json:"day"`
	FLID    int64           `json:"FLID"`
	Version int64           `json:"version"`
	MsgID   *int64          `json:"msg_id"`
	Record  json.RawMessage `json:"record"`
	SODT    time.Time       `json:"-"`
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
	out := make([][]byte, 0, len(es))
	for _, e := range es {
		if e.SODT.Before(from) || e.SODT.After(to) {
			continue
		}
		out = append(out, e.Record)
	}
	return out, nil
}

// CodeShareFlights returns the records of every stored flight that names a code-share master
// (has a MAID).
func (s *Store) CodeShareFlights(ctx context.Context) ([][]byte, error) {
	es, err := s.query(ctx, `WHERE RECORD LIKE ?`, `%"MAID":%`)
	if err != nil {
		return nil, err
	}
	out := make([][]byte, 0, len(es))
	for _, e := range es {
		var m struct {
			MAID *int64 `json:"MAID"`
		}
		if json.Unmarshal(e.Record, &m) == nil && m.MAID != nil {
			out = append(out, e.Record)
		}
	}
	return out, nil
}

// RefKeys returns the keys of the REF_DATA records of one type, sorted.
func (s *Store) RefKeys(ctx context.Context, typ string) ([]string, error) {
	if s.tx != nil {
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
	rows, err := s.reader().QueryContext(ctx, `SELECT FDAY, FLID, RECORD, VERSION, CMINMSGS_ID FROM FLIGHT_STATE `+where, args...)
	if err != nil {
		return nil, store.Unavailable(fmt.Errorf("read flights: %w", err))
	}
	defer rows.Close()
	out := []Entry{}
	for rows.Next() {
		var e Entry
		var rec string
		var msg sql.NullInt64
		if err := rows.Scan(&e.Day, &e.FLID, &rec, &e.Version, &msg); err != nil {
			return nil, store.Unavailable(err)
		}
		e.Day = strings.TrimSpace(e.Day)
		e.Record = json.RawMessage(rec)
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
