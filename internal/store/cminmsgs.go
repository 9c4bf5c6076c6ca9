package store

// This file owns what msgx reads and writes in the legacy columns of CMINMSGS (docs/sis-format.md
// §4.1): the back-fill of the META values once a message is processed, the adoption of rows
// the legacy gateway inserted straight into the table, and the legacy's local-time datetime
// columns.
//
// In shadow mode (SetShadow) msgx reads the live legacy table beside the legacy and writes
// nothing into it: adoption takes every VALID row above the shadow's watermark whatever its
// CMINMSGS_DATE_PROCESSED (the legacy marks rows within seconds) and does not mark them
// taken, there is no back-fill, the inbox and ARCHIVE refuse (ErrShadow), and so do data
// requests (COUTMSGS). Only msgx's own tables are written.
//
// The table may be the legacy's own, with its narrow types (VARCHAR(4) names, a MEDIUMINT
// sequence, DATETIME without fractions), so the real column types are learnt from the
// database and every value is fitted to its column in Go: text is cut at a character
// boundary, a number out of range is left NULL, a date out of range is left NULL. Whatever the
// database still refuses is dropped (the refused statement undoes itself): the back-fill is best effort and never
// fails a message.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	mysqldrv "github.com/go-sql-driver/mysql"

	"msgx/internal/pipeline"
)

// The legacy columns msgx writes besides the raw text and the status.
const (
	colReceived  = "CMINMSGS_DATE_RECEIVED"
	colProcessed = "CMINMSGS_DATE_PROCESSED"
	colName      = "CMINMSGS_SUBSYSTEM_NAME"
	colSeq       = "CMINMSGS_SUBSYSTEM_SEQUENCE"
	colSent      = "CMINMSGS_SUBSYSTEM_DATE_SENT"
	colSubtype   = "CMINMSGS_SUBSYSTEM_SUBTYPE"
	colTypeTag   = "CMINMSGS_SUBSYSTEM_TYPE"
	colClob      = "CMINMSGS_CLOB_MSG"
)

// LegacyOptions say how msgx treats the legacy side of CMINMSGS.
type LegacyOptions struct {
	// Location is the zone the legacy datetime columns (CMINMSGS_DATE_RECEIVED,
	// _DATE_PROCESSED, _SUBSYSTEM_DATE_SENT) are written in: the airport's local time
	// (legacy.timezone). Nil means UTC.
	Location *time.Location
	// AdoptFromID, when positive, leaves gateway rows with a lower id alone
	// (inbox.adopt-from-id).
	AdoptFromID int64
	// AdoptSince, when set, leaves gateway rows received before it alone (inbox.adopt-since).
	AdoptSince time.Time
	// Logger gets one WARN per message whose back-fill did not fit; nil means slog.Default().
	Logger *slog.Logger
}

// legacyState is the DB's knowledge of the legacy table: its options and the column types,
// learnt once the table exists.
type legacyState struct {
	mu   sync.Mutex
	opt  LegacyOptions
	cols map[string]colType // nil until learnt

	noSkipLocked atomic.Bool // the server does not know FOR UPDATE SKIP LOCKED

	// Shadow mode (SetShadow): whether it is on, and the watermark: only rows with higher
	// ids are adopted.
	shadow      bool
	shadowAfter int64
}

// ErrShadow is returned by every write msgx would make into a legacy table while it runs in
// shadow mode (the inbox, ARCHIVE, data requests): in shadow msgx writes only its own tables.
var ErrShadow = errors.New("shadow mode: msgx writes nothing into the legacy tables")

// ShadowWatermarkCounter is the MSGX_COUNTER row that keeps the shadow's watermark.
const ShadowWatermarkCounter = "shadow.watermark"

// SetShadow turns shadow mode on: from now on msgx adopts every VALID CMINMSGS row with an id
// above afterID whatever its CMINMSGS_DATE_PROCESSED, and writes nothing into the legacy tables
// (see the file comment). Call it before the inbox and the pump start.
func (in *Intake) SetShadow(afterID int64) {
	st := in.leg()
	st.mu.Lock()
	st.shadow, st.shadowAfter = true, max(afterID, 0)
	st.mu.Unlock()
}

// Shadow reports whether the database runs in shadow mode, and its watermark.
func (in *Intake) Shadow() bool {
	on, _ := in.shadowMode()
	return on
}

// ShadowAfter reports whether the database runs in shadow mode and the watermark it adopts
// above.
func (in *Intake) ShadowAfter() (bool, int64) { return in.shadowMode() }

func (in *Intake) shadowMode() (bool, int64) {
	st := in.leg()
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.shadow, st.shadowAfter
}

// ShadowWatermark returns the shadow's durable watermark: the highest CMINMSGS id when the
// shadow first started, stored in MSGX_COUNTER (msgx's own table) then, so a restarted shadow
// goes on from where it began instead of from the rows present at its restart.
func (in *Intake) ShadowWatermark(ctx context.Context, now time.Time) (int64, error) {
	var wm int64
	err := in.db.Tx(ctx, func(tx *sql.Tx) error {
		var top sql.NullInt64
		if err := tx.QueryRowContext(ctx, `SELECT MAX(CMINMSGS_ID) FROM CMINMSGS`).Scan(&top); err != nil {
			return Unavailable(fmt.Errorf("shadow watermark: %w", err))
		}
		if _, err := tx.ExecContext(ctx, in.db.Dialect.InsertIgnore()+` INTO MSGX_COUNTER (NAME, VALUE, UPDATED_AT) VALUES (?, ?, ?)`,
			ShadowWatermarkCounter, top.Int64, T(now)); err != nil {
			return Unavailable(fmt.Errorf("shadow watermark: %w", err))
		}
		if err := tx.QueryRowContext(ctx, `SELECT VALUE FROM MSGX_COUNTER WHERE NAME = ?`, ShadowWatermarkCounter).Scan(&wm); err != nil {
			return Unavailable(fmt.Errorf("shadow watermark: %w", err))
		}
		return nil
	})
	return wm, err
}

// SetLegacy sets how the legacy columns are read and written. Call it before the inbox and
// the pump start.
func (in *Intake) SetLegacy(o LegacyOptions) {
	st := in.leg()
	st.mu.Lock()
	st.opt = o
	st.mu.Unlock()
}

func (in *Intake) leg() *legacyState {
	if in.legacy == nil {
		in.legacy = &legacyState{}
	}
	return in.legacy
}

func (in *Intake) legacyOpts() LegacyOptions {
	st := in.leg()
	st.mu.Lock()
	defer st.mu.Unlock()
	o := st.opt
	if o.Location == nil {
		o.Location = time.UTC
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// colKind is how a value is fitted to a column.
type colKind int

const (
	kindOther colKind = iota // unknown: written as is
	kindText
	kindInt
	kindTime
)

// colType is what msgx knows of one CMINMSGS column.
type colType struct {
	decl     string // the declared type, as the database gives it
	kind     colKind
	chars    int // text: most characters (0: no limit known)
	bytes    int // text: most bytes (0: no limit known)
	min, max int64
	fsp      int // time: digits of fractional seconds
}

// parseColType reads a declared column type ("varchar(4)", "mediumint(9)", "MEDIUMINT",
// "datetime(6)", "bigint(20) unsigned", "TEXT") the way MySQL understands it. SQLite does not
// enforce such types, but a legacy-shaped table declares them and msgx fits values alike on
// both.
func parseColType(decl string) colType {
	c := colType{decl: decl}
	s := strings.ToLower(strings.TrimSpace(decl))
	unsigned := strings.Contains(s, "unsigned")
	base, arg := s, -1
	if i := strings.IndexByte(s, '('); i >= 0 {
		base = s[:i]
		if j := strings.IndexByte(s[i:], ')'); j > 0 {
			if n, err := strconv.Atoi(strings.TrimSpace(strings.Split(s[i+1:i+j], ",")[0])); err == nil {
				arg = n
			}
		}
	}
	base = strings.TrimSpace(strings.Fields(base + " x")[0])
	ints := map[string]int{"tinyint": 8, "smallint": 16, "mediumint": 24, "int": 32, "integer": 32, "bigint": 64}
	if bits, ok := ints[base]; ok {
		c.kind = kindInt
		switch {
		case bits == 64 && unsigned:
			c.min, c.max = 0, math.MaxInt64 // what an int64 can say
		case bits == 64:
			c.min, c.max = math.MinInt64, math.MaxInt64
		case unsigned:
			c.min, c.max = 0, 1<<bits-1
		default:
			c.min, c.max = -(1 << (bits - 1)), 1<<(bits-1)-1
		}
		return c
	}
	switch base {
	case "varchar", "char", "nvarchar", "nchar", "character", "varchar2":
		c.kind = kindText
		if arg > 0 {
			c.chars = arg
		}
	case "tinytext":
		c.kind, c.bytes = kindText, 255
	case "text":
		c.kind, c.bytes = kindText, 65535
		if !strings.Contains(s, "(") {
			c.bytes = 0 // SQLite's TEXT: no limit
		}
	case "mediumtext":
		c.kind, c.bytes = kindText, 1<<24-1
	case "longtext", "clob":
		c.kind, c.bytes = kindText, 1<<32-1
	case "datetime", "timestamp":
		c.kind = kindTime
		if arg > 0 {
			c.fsp = min(arg, 6)
		}
	}
	return c
}

// learnColumns reads the column types of CMINMSGS (information_schema on MySQL, table_info
// on SQLite). It returns nil without error when the table does not exist yet.
func learnColumns(ctx context.Context, dialect Dialect, q querier) (map[string]colType, error) {
	query := `SELECT name, type FROM pragma_table_info('CMINMSGS')`
	if dialect == MySQL {
		query = `SELECT COLUMN_NAME, COLUMN_TYPE FROM information_schema.COLUMNS
			WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'CMINMSGS'`
	}
	rows, err := q.QueryContext(ctx, query)
	if err != nil {
		return nil, Unavailable(fmt.Errorf("read the column types of CMINMSGS: %w", err))
	}
	defer rows.Close()
	cols := map[string]colType{}
	for rows.Next() {
		var name, decl string
		if err := rows.Scan(&name, &decl); err != nil {
			return nil, fmt.Errorf("read the column types of CMINMSGS: %w", err)
		}
		c := parseColType(decl)
		if dialect == MySQL && c.kind == kindText && strings.EqualFold(strings.TrimSpace(decl), "text") {
			c.bytes = 65535 // MySQL's TEXT; SQLite's has no limit
		}
		cols[strings.ToUpper(name)] = c
	}
	if err := rows.Err(); err != nil {
		return nil, Unavailable(fmt.Errorf("read the column types of CMINMSGS: %w", err))
	}
	if len(cols) == 0 {
		return nil, nil
	}
	// msgx's own SQLite table keeps its times as TEXT with microseconds.
	for _, n := range []string{colReceived, colProcessed, colSent} {
		if c, ok := cols[n]; ok && c.kind != kindTime {
			c.kind, c.fsp = kindTime, 6
			cols[n] = c
		}
	}
	return cols, nil
}

// columns returns the column types of CMINMSGS, learning them through q the first time the
// table exists.
func (in *Intake) columns(ctx context.Context, q querier) (map[string]colType, error) {
	st := in.leg()
	st.mu.Lock()
	cols := st.cols
	st.mu.Unlock()
	if cols != nil {
		return cols, nil
	}
	cols, err := learnColumns(ctx, in.db.Dialect, q)
	if err != nil || cols == nil {
		return nil, err
	}
	st.mu.Lock()
	st.cols = cols
	st.mu.Unlock()
	return cols, nil
}

// legacyTime formats t for legacy datetime column c: wall-clock time in the legacy zone,
// with as many fractional digits as the column keeps.
func legacyTime(t time.Time, loc *time.Location, c colType) any {
	if t.IsZero() {
		return nil
	}
	layout := "2006-01-02 15:04:05"
	if c.fsp > 0 {
		layout += "." + strings.Repeat("0", c.fsp)
	}
	return t.In(loc).Format(layout)
}

// timeFits reports whether t can be stored in a MySQL DATETIME/TIMESTAMP column.
func timeFits(t time.Time, loc *time.Location, c colType) bool {
	w := t.In(loc)
	if strings.HasPrefix(strings.ToLower(c.decl), "timestamp") {
		return w.Year() >= 1970 && w.Year() <= 2037
	}
	return w.Year() >= 1000 && w.Year() <= 9999
}

// LegacyTime reads a legacy datetime column: the wall-clock value it holds is local time in
// legacy.timezone. It returns nil for NULL. CMINMSGS_DATE_RECEIVED, _DATE_PROCESSED and
// _SUBSYSTEM_DATE_SENT must be read through it (msgx's own columns are UTC).
func (in *Intake) LegacyTime(n NullTime) *time.Time {
	if !n.Valid {
		return nil
	}
	loc := in.legacyOpts().Location
	w := n.Time
	t := time.Date(w.Year(), w.Month(), w.Day(), w.Hour(), w.Minute(), w.Second(), w.Nanosecond(), loc).UTC()
	return &t
}

// LegacyNow returns now as the legacy datetime columns hold it (for tests and tools that write
// CMINMSGS rows the way the gateway does).
func (in *Intake) LegacyNow(now time.Time) string {
	return now.In(in.legacyOpts().Location).Format("2006-01-02 15:04:05")
}

// fitText cuts s to at most chars characters and bytes bytes, at a character boundary
// (0: no limit). It reports whether it cut.
func fitText(s string, chars, bytes int) (string, bool) {
	cut := false
	if chars > 0 && utf8.RuneCountInString(s) > chars {
		n := 0
		for i := range s {
			if n == chars {
				s, cut = s[:i], true
				break
			}
			n++
		}
	}
	if bytes > 0 && len(s) > bytes {
		i := bytes
		for i > 0 && !utf8.RuneStart(s[i]) {
			i--
		}
		s, cut = s[:i], true
	}
	return s, cut
}

// backfillSets fits b to the columns and returns the SET list, its arguments and what did not
// fit (for the log). Columns the table does not have are left out.
func backfillSets(cols map[string]colType, b Backfill, loc *time.Location, now time.Time) (sets []string, args []any, misfits []string) {
	set := func(col string, v any) {
		sets = append(sets, col+" = ?")
		args = append(args, v)
	}
	text := func(col, v string) {
		c, ok := cols[col]
		if !ok {
			return
		}
		if v == "" {
			set(col, nil)
			return
		}
		fit, cut := fitText(v, c.chars, c.bytes)
		if cut {
			misfits = append(misfits, fmt.Sprintf("%s cut to %q (%s)", col, fit, c.decl))
		}
		set(col, fit)
	}
	text(colName, b.SNDR)
	text(colTypeTag, b.TYPE)
	text(colSubtype, b.STYP)
	if c, ok := cols[colSeq]; ok {
		switch n, err := parseSeq(b.SEQN); {
		case c.kind == kindText:
			text(colSeq, b.SEQN)
		case err != nil:
			if b.SEQN != "" {
				misfits = append(misfits, fmt.Sprintf("%s left NULL: %v", colSeq, err))
			}
			set(colSeq, nil)
		case c.kind == kindInt && (n < c.min || n > c.max):
			misfits = append(misfits, fmt.Sprintf("%s left NULL: %d is out of the range of %s (%d..%d)", colSeq, n, c.decl, c.min, c.max))
			set(colSeq, nil)
		default:
			set(colSeq, n)
		}
	}
	if c, ok := cols[colSent]; ok {
		switch {
		case b.DTTM.IsZero():
			set(colSent, nil)
		case !timeFits(b.DTTM, loc, c):
			misfits = append(misfits, fmt.Sprintf("%s left NULL: %s does not fit %s", colSent, b.DTTM.In(loc).Format(time.DateTime), c.decl))
			set(colSent, nil)
		default:
			set(colSent, legacyTime(b.DTTM, loc, c))
		}
	}
	if c, ok := cols[colProcessed]; ok {
		// Set when msgx took the row (inbox or adoption); only rows taken by an older msgx
		// still have it NULL.
		sets = append(sets, colProcessed+" = COALESCE("+colProcessed+", ?)")
		args = append(args, legacyTime(now, loc, c))
	}
	return sets, args, misfits
}

// backfill writes the META values of message id into its legacy CMINMSGS columns, in tx and
// best effort: values that do not fit their column are cut (text) or left NULL (numbers,
// dates) and logged, and if the database still refuses the update with a data error, the
// message goes on without it (logged), only CMINMSGS_DATE_PROCESSED set. Only a failure to
// reach the database is an error.
//
// A refused UPDATE needs no savepoint of its own: both databases undo a statement that fails
// (SQLite's statement journal, InnoDB's statement rollback of a data error), and every other
// error ends the message (the caller's savepoint or transaction). The savepoint it had cost
// three statements per message, and on SQLite a copy of every page the message touched.
func (in *Intake) backfill(ctx context.Context, tx *sql.Tx, id int64, b Backfill, now time.Time) error {
	if in.Shadow() {
		return nil // the legacy's columns are the legacy's
	}
	cols, err := in.columns(ctx, tx)
	if err != nil {
		return err
	}
	if cols == nil {
		return nil // no CMINMSGS: nothing to fill
	}
	o := in.legacyOpts()
	sets, args, misfits := backfillSets(cols, b, o.Location, now)
	if len(misfits) > 0 {
		o.Logger.Warn("legacy back-fill: values do not fit their CMINMSGS columns", "msg_id", id, "misfits", strings.Join(misfits, "; "))
	}
	if len(sets) == 0 {
		return nil
	}
	_, err = tx.ExecContext(ctx, `UPDATE CMINMSGS SET `+strings.Join(sets, ", ")+` WHERE CMINMSGS_ID = ?`, append(args, id)...)
	if err == nil {
		return nil
	}
	if !IsDataError(err) {
		return Unavailable(fmt.Errorf("back-fill CMINMSGS %d: %w", id, err))
	}
	o.Logger.Warn("legacy back-fill refused by the database; the message goes on without it", "msg_id", id, "err", err.Error())
	// The one column the legacy poller relies on: it must leave the row alone.
	if c, ok := cols[colProcessed]; ok {
		_, err := tx.ExecContext(ctx, `UPDATE CMINMSGS SET `+colProcessed+` = COALESCE(`+colProcessed+`, ?) WHERE CMINMSGS_ID = ?`,
			legacyTime(now, o.Location, c), id)
		if err != nil && !IsDataError(err) {
			return Unavailable(fmt.Errorf("back-fill CMINMSGS %d: %w", id, err))
		}
		if err != nil {
			o.Logger.Warn("legacy back-fill: cannot set CMINMSGS_DATE_PROCESSED either", "msg_id", id, "err", err.Error())
		}
	}
	return nil
}

func parseSeq(s string) (int64, error) {
	var n int64
	if s == "" || len(s) > 18 {
		return 0, fmt.Errorf("bad sequence %q", s)
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("bad sequence %q", s)
		}
		n = n*10 + int64(c-'0')
	}
	return n, nil
}

// adoptable is the condition (on alias c) a CMINMSGS row must meet to be adopted: VALID, not
// taken by the legacy poller (CMINMSGS_DATE_PROCESSED NULL), and within the adoption bounds.
func (in *Intake) adoptable(cols map[string]colType) (string, []any) {
	o := in.legacyOpts()
	w := `c.CMINMSGS_STATUS = ?`
	args := []any{StatusValid}
	if shadow, after := in.shadowMode(); shadow {
		// The legacy takes every row within seconds: the shadow sees the same traffic only
		// if it ignores that mark, and keeps to the rows above its watermark instead.
		w += ` AND c.CMINMSGS_ID > ?`
		args = append(args, after)
	} else if _, ok := cols[colProcessed]; ok || cols == nil {
		w += ` AND c.` + colProcessed + ` IS NULL`
	}
	if o.AdoptFromID > 0 {
		w += ` AND c.CMINMSGS_ID >= ?`
		args = append(args, o.AdoptFromID)
	}
	if !o.AdoptSince.IsZero() {
		w += ` AND c.` + colReceived + ` >= ?`
		args = append(args, legacyTime(o.AdoptSince, o.Location, cols[colReceived]))
	}
	return w, args
}

// adoptChunk bounds the rows one adoption transaction takes.
const adoptChunk = 500

// adoptCandidates returns the ids in (after, upTo] of rows that are adoptable and have no
// PROC_STATE row, at most limit, in id order. It is a plain read: it takes no lock, so it
// never waits for a gateway's open transaction.
func (in *Intake) adoptCandidates(ctx context.Context, q querier, cols map[string]colType, after, upTo int64, limit int) ([]int64, error) {
	if from := in.legacyOpts().AdoptFromID; from > 0 {
		after = max(after, from-1) // the scan starts at the bound, not at the first row
	}
	if shadow, wm := in.shadowMode(); shadow {
		after = max(after, wm)
	}
	w, wargs := in.adoptable(cols)
	args := append([]any{after, upTo}, wargs...)
	rows, err := q.QueryContext(ctx, `SELECT c.CMINMSGS_ID FROM CMINMSGS c
		WHERE c.CMINMSGS_ID > ? AND c.CMINMSGS_ID <= ? AND `+w+`
		AND NOT EXISTS (SELECT 1 FROM PROC_STATE p WHERE p.CMINMSGS_ID = c.CMINMSGS_ID)
		ORDER BY c.CMINMSGS_ID LIMIT `+strconv.Itoa(limit), args...)
	if err != nil {
		return nil, Unavailable(fmt.Errorf("find CMINMSGS rows to adopt: %w", err))
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, Unavailable(err)
	}
	return ids, nil
}

// adoptIDs adopts, in tx, those of ids that are adoptable: it locks them (on MySQL with SKIP
// LOCKED, so a row another transaction holds is left for a later step rather than waited
// for), gives each a PENDING PROC_STATE row unless it has one, and sets
// CMINMSGS_DATE_PROCESSED so a legacy poller still running leaves them alone. It returns how
// many PROC_STATE rows it created.
func (in *Intake) adoptIDs(ctx context.Context, tx *sql.Tx, cols map[string]colType, ids []int64, now time.Time) (int, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	w, wargs := in.adoptable(cols)
	args := make([]any, 0, len(ids)+len(wargs))
	for _, id := range ids {
		args = append(args, id)
	}
	args = append(args, wargs...)
	q := `SELECT c.CMINMSGS_ID FROM CMINMSGS c WHERE c.CMINMSGS_ID IN (` + placeholders(len(ids)) + `) AND ` + w
	var taken []int64
	for {
		lock := ""
		if in.db.Dialect == MySQL {
			lock = " FOR UPDATE SKIP LOCKED"
			if in.leg().noSkipLocked.Load() {
				lock = " FOR UPDATE"
			}
		}
		// A savepoint lets an old server's syntax error be retried without SKIP LOCKED.
		if in.db.Dialect == MySQL {
			if _, err := tx.ExecContext(ctx, `SAVEPOINT legacy_adopt`); err != nil {
				return 0, Unavailable(fmt.Errorf("adopt CMINMSGS rows: %w", err))
			}
		}
		rows, err := tx.QueryContext(ctx, q+lock, args...)
		if err != nil {
			if isMySQLError(err, 1064) && lock == " FOR UPDATE SKIP LOCKED" {
				in.leg().noSkipLocked.Store(true)
				if _, rerr := tx.ExecContext(ctx, `ROLLBACK TO SAVEPOINT legacy_adopt`); rerr != nil {
					return 0, Unavailable(rerr)
				}
				continue
			}
			return 0, Unavailable(fmt.Errorf("lock CMINMSGS rows to adopt: %w", err))
		}
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return 0, err
			}
			taken = append(taken, id)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return 0, Unavailable(err)
		}
		break
	}
	if len(taken) == 0 {
		return 0, nil
	}
	ignore := in.db.Dialect.InsertIgnore()
	vals := make([]any, 0, 4*len(taken))
	for _, id := range taken {
		vals = append(vals, id, pipeline.Pending, T(now), T(now))
	}
	res, err := tx.ExecContext(ctx, ignore+` INTO PROC_STATE (CMINMSGS_ID, STATE, ATTEMPTS, CREATED_AT, UPDATED_AT) VALUES `+
		strings.TrimSuffix(strings.Repeat("(?, ?, 0, ?, ?),", len(taken)), ","), vals...)
	if err != nil {
		return 0, Unavailable(fmt.Errorf("adopt CMINMSGS rows: %w", err))
	}
	n, _ := res.RowsAffected()
	if c, ok := cols[colProcessed]; ok && !in.Shadow() {
		up := []any{legacyTime(now, in.legacyOpts().Location, c)}
		for _, id := range taken {
			up = append(up, id)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE CMINMSGS SET `+colProcessed+` = ? WHERE CMINMSGS_ID IN (`+placeholders(len(taken))+`) AND `+colProcessed+` IS NULL`, up...); err != nil {
			return 0, Unavailable(fmt.Errorf("mark adopted CMINMSGS rows taken: %w", err))
		}
	}
	return int(n), nil
}

// AdoptLegacy adopts every adoptable CMINMSGS row with an id in (afterID, upTo] that has no
// PROC_STATE row (rows another program, such as the legacy gateway, inserted directly), in
// transactions of at most adoptChunk rows, so they join the order. It returns how many it
// adopted.
func (in *Intake) AdoptLegacy(ctx context.Context, afterID, upTo int64, now time.Time) (int, error) {
	total := 0
	for afterID < upTo {
		cols, err := in.columns(ctx, in.db.SQL)
		if err != nil {
			return total, err
		}
		ids, err := in.adoptCandidates(ctx, in.db.SQL, cols, afterID, upTo, adoptChunk)
		if err != nil || len(ids) == 0 {
			return total, err
		}
		var n int
		if err := in.db.Tx(ctx, func(tx *sql.Tx) error {
			var err error
			n, err = in.adoptIDs(ctx, tx, cols, ids, now)
			return err
		}); err != nil {
			return total, err
		}
		total += n
		afterID = ids[len(ids)-1]
	}
	return total, nil
}

// AdoptIDs adopts those of ids that are adoptable (see AdoptLegacy) in one transaction and
// returns the ids that have a PROC_STATE row afterwards (adopted now or before).
func (in *Intake) AdoptIDs(ctx context.Context, ids []int64, now time.Time) (stated []int64, err error) {
	if len(ids) == 0 {
		return nil, nil
	}
	cols, err := in.columns(ctx, in.db.SQL)
	if err != nil {
		return nil, err
	}
	err = in.db.Tx(ctx, func(tx *sql.Tx) error {
		if _, err := in.adoptIDs(ctx, tx, cols, ids, now); err != nil {
			return err
		}
		var err error
		stated, err = stateIDs(ctx, tx, ids)
		return err
	})
	return stated, err
}

// stateIDs returns those of ids that have a PROC_STATE row.
func stateIDs(ctx context.Context, q querier, ids []int64) ([]int64, error) {
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	return column[int64](ctx, q, `SELECT CMINMSGS_ID FROM PROC_STATE WHERE CMINMSGS_ID IN (`+placeholders(len(ids))+`)`, args...)
}

// column runs a query of one column and returns its values in the order read; a failure to
// run it is Unavailable.
func column[T any](ctx context.Context, q querier, query string, args ...any) ([]T, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, Unavailable(err)
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		var v T
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// Unstated returns the ids in (after, upTo] that have no PROC_STATE row (missing): rows not
// adopted, or ids that are not (yet) visible in CMINMSGS at all, such as a gateway row whose
// transaction has not committed, or an id no server gave out; and the ids of the range that
// have a CMINMSGS row or a PROC_STATE row (present): which servers' ids the range holds (IDStep).
// One statement. The caller bounds the range.
func (in *Intake) Unstated(ctx context.Context, after, upTo int64) (missing, present []int64, err error) {
	if upTo <= after {
		return nil, nil, nil
	}
	rows, err := in.db.SQL.QueryContext(ctx, `SELECT CMINMSGS_ID, 1 FROM PROC_STATE WHERE CMINMSGS_ID > ? AND CMINMSGS_ID <= ?
		UNION ALL SELECT CMINMSGS_ID, 0 FROM CMINMSGS WHERE CMINMSGS_ID > ? AND CMINMSGS_ID <= ?`, after, upTo, after, upTo)
	if err != nil {
		return nil, nil, Unavailable(err)
	}
	defer rows.Close()
	stated, seen := map[int64]bool{}, map[int64]bool{}
	for rows.Next() {
		var id int64
		var st bool
		if err := rows.Scan(&id, &st); err != nil {
			return nil, nil, err
		}
		seen[id] = true
		stated[id] = stated[id] || st
	}
	if err := rows.Err(); err != nil {
		return nil, nil, Unavailable(err)
	}
	for id := after + 1; id <= upTo; id++ {
		if !stated[id] {
			missing = append(missing, id)
		}
		if seen[id] {
			present = append(present, id)
		}
	}
	return missing, present, nil
}

// IDStep returns how far apart the ids one server gives out are: AUTO_INCREMENT's increment
// (on a Galera cluster its size, wsrep_auto_increment_control), 1 on SQLite. Ids in a class
// modulo the step that no present id is in were given out by no server the range heard from.
func (in *Intake) IDStep(ctx context.Context) (int64, error) {
	if in.db.Dialect != MySQL {
		return 1, nil
	}
	var step int64
	if err := in.db.SQL.QueryRowContext(ctx, `SELECT @@auto_increment_increment`).Scan(&step); err != nil {
		return 0, Unavailable(fmt.Errorf("read auto_increment_increment: %w", err))
	}
	return max(step, 1), nil
}

// Backlog says how many CMINMSGS rows are waiting to be adopted and when the oldest was
// received (nil when none), in the legacy zone: what the pump logs at start.
func (in *Intake) Backlog(ctx context.Context) (n int, oldest *time.Time, err error) {
	cols, err := in.columns(ctx, in.db.SQL)
	if err != nil {
		return 0, nil, err
	}
	if cols == nil {
		return 0, nil, nil
	}
	w, args := in.adoptable(cols)
	var first NullTime
	err = in.db.SQL.QueryRowContext(ctx, `SELECT COUNT(*), MIN(c.`+colReceived+`) FROM CMINMSGS c WHERE `+w+`
		AND NOT EXISTS (SELECT 1 FROM PROC_STATE p WHERE p.CMINMSGS_ID = c.CMINMSGS_ID)`, args...).Scan(&n, &first)
	if err != nil {
		return 0, nil, Unavailable(fmt.Errorf("count CMINMSGS rows to adopt: %w", err))
	}
	if t := in.LegacyTime(first); t != nil {
		local := t.In(in.legacyOpts().Location)
		return n, &local, nil
	}
	return n, nil, nil
}

// Visible returns those of ids that are visible in CMINMSGS (committed) and, among them, the
// ones that are adoptable and have no PROC_STATE row yet. It is a plain read that takes no
// lock: the pump calls it each step for the ids it is waiting for.
func (in *Intake) Visible(ctx context.Context, ids []int64) (visible, adoptable []int64, err error) {
	if len(ids) == 0 {
		return nil, nil, nil
	}
	cols, err := in.columns(ctx, in.db.SQL)
	if err != nil || cols == nil {
		return nil, nil, err
	}
	w, wargs := in.adoptable(cols)
	args := append([]any{}, wargs...)
	for _, id := range ids {
		args = append(args, id)
	}
	rows, err := in.db.SQL.QueryContext(ctx, `SELECT c.CMINMSGS_ID, CASE WHEN `+w+`
		AND NOT EXISTS (SELECT 1 FROM PROC_STATE p WHERE p.CMINMSGS_ID = c.CMINMSGS_ID) THEN 1 ELSE 0 END
		FROM CMINMSGS c WHERE c.CMINMSGS_ID IN (`+placeholders(len(ids))+`)`, args...)
	if err != nil {
		return nil, nil, Unavailable(fmt.Errorf("look for CMINMSGS rows: %w", err))
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var ok int
		if err := rows.Scan(&id, &ok); err != nil {
			return nil, nil, err
		}
		visible = append(visible, id)
		if ok == 1 {
			adoptable = append(adoptable, id)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, nil, Unavailable(err)
	}
	return visible, adoptable, nil
}

// The order across nodes (issue 7, item 4) also depends on how each MySQL session is set up:
// Open runs these on every new connection.

// sessionSetup returns the statements every MySQL session starts with, taking the isolation
// level and the lock wait bound out of the DSN's parameters when it names them.
func sessionSetup(cfg *mysqldrv.Config) ([]string, error) {
	level := "READ COMMITTED"
	for _, k := range []string{"transaction_isolation", "tx_isolation"} {
		v, ok := cfg.Params[k]
		if !ok {
			continue
		}
		delete(cfg.Params, k)
		switch strings.ToUpper(strings.Trim(v, "'\" ")) {
		case "READ-COMMITTED", "READ COMMITTED":
			level = "READ COMMITTED"
		case "REPEATABLE-READ", "REPEATABLE READ":
			level = "REPEATABLE READ"
		default:
			return nil, fmt.Errorf("store: mysql dsn: %s=%s: want READ-COMMITTED or REPEATABLE-READ", k, v)
		}
	}
	stmts := []string{"SET SESSION TRANSACTION ISOLATION LEVEL " + level}
	if _, ok := cfg.Params["innodb_lock_wait_timeout"]; !ok {
		stmts = append(stmts, "SET SESSION innodb_lock_wait_timeout = 10")
	}
	return stmts, nil
}
