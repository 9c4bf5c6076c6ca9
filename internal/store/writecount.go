package store

// Counted writes (msgx bench): the rows each INSERT, UPDATE and DELETE wrote, by table, and
// the b-tree writes they cost, counted as the statements run instead of estimated.
//
// The connections of both dialects (stmtcache.go on SQLite, failover.go on MySQL) hand every
// statement they executed, with the driver's result, to the counter installed with
// CountWrites; with none installed that is one atomic load per statement. The rows of a
// statement are the database's own count (RowsAffected; on MySQL, where one query may carry
// several statements, each statement's: AllRowsAffected), attributed to the table the
// statement names. Its b-tree writes are those rows × (1 + the secondary indexes the write
// touches), from the schema read when counting starts: an INSERT or a DELETE touches every
// index of the table, an UPDATE the ones holding a column it sets (whether or not the value
// differs: InnoDB skips a secondary index whose key did not change, so on MySQL it is an
// upper bound), and one setting a column of the primary key (or SQLite's rowid) every index.
// The table itself (SQLite's table b-tree, InnoDB's clustered index) is the 1.
//
// An upsert (INSERT … ON CONFLICT DO UPDATE, ON DUPLICATE KEY UPDATE) is counted as updates
// of the columns its update part sets: msgx's one upsert adds to a row that exists. MySQL
// reports 2 for a row an upsert updated, SQLite 1; both count one row (msgx's upserts are
// single-row). Writes later rolled back are counted: the database did them.

import (
	"context"
	"database/sql/driver"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// TableWrites is what the counted statements wrote to one table.
type TableWrites struct {
	Inserted, Updated, Deleted int64 // rows, as the database reported them per statement
	BTree                      int64 // b-tree writes: each row × (1 + the indexes it touched)
}

// Rows is the rows inserted, updated and deleted.
func (t TableWrites) Rows() int64 { return t.Inserted + t.Updated + t.Deleted }

// WriteCounter counts the writes of the statements a DB runs while it is installed
// (CountWrites). It is safe for concurrent use.
type WriteCounter struct {
	dialect Dialect
	tables  map[string]tableIndexes // by upper-case name

	mu     sync.Mutex
	plans  map[string]stmtPlan // by statement text (bounded by maxPlans)
	counts map[string]*TableWrites
}

// maxPlans bounds the statement texts a counter remembers: multi-row inserts differ by their
// rows; past it, a statement is parsed each time.
const maxPlans = 4096

// tableIndexes is what the counter knows of a table's indexes.
type tableIndexes struct {
	secondary [][]string      // each secondary index's columns, upper case
	all       map[string]bool // columns whose change touches every index (primary key, rowid)
}

// CountWrites reads the schema's indexes and installs a new counter on d, replacing any
// other: every statement d runs from now on is counted in it until StopCountingWrites.
func (d *DB) CountWrites(ctx context.Context) (*WriteCounter, error) {
	if d.writes == nil {
		return nil, fmt.Errorf("store: this database's connections cannot count writes")
	}
	tables, err := d.readIndexes(ctx)
	if err != nil {
		return nil, err
	}
	w := &WriteCounter{dialect: d.Dialect, tables: tables, plans: map[string]stmtPlan{}, counts: map[string]*TableWrites{}}
	d.writes.Store(w)
	return w, nil
}

// StopCountingWrites removes the installed counter, if any.
func (d *DB) StopCountingWrites() {
	if d.writes != nil {
		d.writes.Store(nil)
	}
}

// Counts returns the writes counted so far, by table (upper-case name).
func (w *WriteCounter) Counts() map[string]TableWrites {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]TableWrites, len(w.counts))
	for t, c := range w.counts {
		out[t] = *c
	}
	return out
}

// countWrites gives the counter installed in p (none: nothing is done) the statement q that
// ran with result res.
func countWrites(p *atomic.Pointer[WriteCounter], q string, res driver.Result, err error) {
	if p == nil || err != nil || res == nil {
		return
	}
	if w := p.Load(); w != nil {
		w.note(q, res)
	}
}

// countRows is countWrites for a query run for its rows: a write with RETURNING (the inbox's
// insert of CMINMSGS) wrote as many rows as it returns, counted when its rows are closed.
func countRows(p *atomic.Pointer[WriteCounter], q string, rows driver.Rows, err error) (driver.Rows, error) {
	if p == nil || err != nil || rows == nil {
		return rows, err
	}
	w := p.Load()
	if w == nil || !isWrite(q) {
		return rows, err
	}
	return &countedRows{Rows: rows, w: w, q: q}, nil
}

// isWrite says whether q starts with INSERT, UPDATE, DELETE or REPLACE.
func isWrite(q string) bool {
	q = strings.TrimLeft(q, " \t\r\n")
	for _, kw := range []string{"INSERT", "UPDATE", "DELETE", "REPLACE"} {
		if len(q) >= len(kw) && strings.EqualFold(q[:len(kw)], kw) {
			return true
		}
	}
	return false
}

// countedRows counts the rows a write returned, and notes them when closed.
type countedRows struct {
	driver.Rows
	w    *WriteCounter
	q    string
	n    int64
	done bool
}

func (r *countedRows) Next(dest []driver.Value) error {
	err := r.Rows.Next(dest)
	if err == nil {
		r.n++
	}
	return err
}

func (r *countedRows) Close() error {
	if !r.done {
		r.done = true
		r.w.note(r.q, returned(r.n))
	}
	return r.Rows.Close()
}

// returned is the result of a write that returned n rows.
type returned int64

func (n returned) LastInsertId() (int64, error) { return 0, nil }
func (n returned) RowsAffected() (int64, error) { return int64(n), nil }

// note counts the statements of q with the rows res says each one affected.
func (w *WriteCounter) note(q string, res driver.Result) {
	stmts := splitStatements(q)
	var rows []int64
	if all, ok := res.(interface{ AllRowsAffected() []int64 }); ok {
		rows = all.AllRowsAffected()
	} else if n, err := res.RowsAffected(); err == nil {
		// One count for the query (SQLite: the last statement's): the last statement's.
		rows = make([]int64, len(stmts))
		rows[len(rows)-1] = n
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for i, s := range stmts {
		if i >= len(rows) || rows[i] <= 0 {
			continue
		}
		p, ok := w.plans[s]
		if !ok {
			p = w.plan(s)
			if len(w.plans) < maxPlans {
				w.plans[s] = p
			}
		}
		if p.op == opNone {
			continue
		}
		n := rows[i]
		if p.upsert && w.dialect == MySQL {
			n = (n + 1) / 2 // 1 inserted, 2 updated (one row: msgx's upserts are single-row)
		}
		c := w.counts[p.table]
		if c == nil {
			c = &TableWrites{}
			w.counts[p.table] = c
		}
		switch p.op {
		case opInsert:
			c.Inserted += n
		case opUpdate:
			c.Updated += n
		case opDelete:
			c.Deleted += n
		}
		c.BTree += n * int64(p.btrees)
	}
}

// Statement kinds.
const (
	opNone = iota
	opInsert
	opUpdate
	opDelete
)

// stmtPlan is what a statement writes: its kind, its table and the b-trees each of its rows
// writes.
type stmtPlan struct {
	op     int
	table  string
	btrees int
	upsert bool
}

// plan parses statement s.
func (w *WriteCounter) plan(s string) stmtPlan {
	toks := tokenize(s)
	word := func(i int) string {
		if i < len(toks) && toks[i].depth == 0 {
			return strings.ToUpper(toks[i].text)
		}
		return ""
	}
	var p stmtPlan
	i := 0
	switch word(0) {
	case "INSERT", "REPLACE":
		p.op, i = opInsert, 1
		for word(i) == "OR" || word(i) == "IGNORE" || word(i) == "REPLACE" || word(i) == "ROLLBACK" || word(i) == "ABORT" || word(i) == "FAIL" {
			i++
		}
		if word(i) == "INTO" {
			i++
		}
	case "UPDATE":
		p.op, i = opUpdate, 1
		if word(i) == "OR" {
			i += 2
		}
	case "DELETE":
		p.op, i = opDelete, 1
		if word(i) == "FROM" {
			i++
		}
	default:
		return stmtPlan{}
	}
	if i >= len(toks) {
		return stmtPlan{}
	}
	p.table = tableName(toks[i].text)
	ix := w.tables[p.table]
	every := 1 + len(ix.secondary)
	p.btrees = every
	var set []string
	switch p.op {
	case opUpdate:
		set = assigned(toks, i+1, "SET")
	case opInsert:
		for j := i + 1; j < len(toks); j++ {
			if word(j) == "DUPLICATE" {
				p.upsert, set = true, assigned(toks, j, "UPDATE")
				break
			}
			if word(j) == "DO" && word(j+1) == "UPDATE" {
				p.upsert, set = true, assigned(toks, j, "SET")
				break
			}
		}
	}
	if p.op == opUpdate || p.upsert {
		p.op, p.btrees = opUpdate, 1
		for _, c := range set {
			if ix.all[c] {
				return stmtPlan{op: p.op, table: p.table, btrees: every, upsert: p.upsert}
			}
		}
		for _, cols := range ix.secondary {
			for _, c := range cols {
				if slices.Contains(set, c) {
					p.btrees++
					break
				}
			}
		}
	}
	return p
}

// assigned returns the columns assigned (upper case, unqualified) in the list after the first
// word kw at depth 0 from toks[from]: `SET A = ?, B = B + 1 WHERE …`.
func assigned(toks []token, from int, kw string) []string {
	i := from
	for i < len(toks) && !(toks[i].depth == 0 && strings.EqualFold(toks[i].text, kw)) {
		i++
	}
	var cols []string
	expectCol := true
	for i++; i < len(toks); i++ {
		t := toks[i]
		if t.depth != 0 {
			continue
		}
		switch up := strings.ToUpper(t.text); {
		case up == "WHERE" || up == "FROM" || up == "ORDER" || up == "LIMIT" || up == "RETURNING":
			return cols
		case up == ",":
			expectCol = true
		case expectCol && t.word:
			cols = append(cols, tableName(t.text))
			expectCol = false
		}
	}
	return cols
}

// tableName is an identifier without its quotes and qualifier, upper case.
func tableName(s string) string {
	if k := strings.LastIndexByte(s, '.'); k >= 0 {
		s = s[k+1:]
	}
	return strings.ToUpper(strings.Trim(s, "`\"[]"))
}

// token is a word (an identifier, keyword or number, a quoted identifier included), a
// string literal or one character of punctuation, with the depth of parentheses it is in.
type token struct {
	text  string
	depth int
	word  bool
}

// tokenize splits one statement into tokens.
func tokenize(s string) []token {
	var out []token
	depth := 0
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '-' && i+1 < len(s) && s[i+1] == '-':
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case c == '\'':
			j := skipQuoted(s, i)
			out = append(out, token{text: s[i:j], depth: depth})
			i = j
		case c == '`' || c == '"':
			j := skipQuoted(s, i)
			out = append(out, token{text: s[i:j], depth: depth, word: true})
			i = j
		case isWordByte(c):
			j := i
			for j < len(s) && (isWordByte(s[j]) || s[j] == '.' || s[j] == '`' || s[j] == '"') {
				if s[j] == '`' || s[j] == '"' {
					j = skipQuoted(s, j)
					continue
				}
				j++
			}
			out = append(out, token{text: s[i:j], depth: depth, word: true})
			i = j
		default:
			if c == ')' {
				depth--
			}
			out = append(out, token{text: s[i : i+1], depth: depth})
			if c == '(' {
				depth++
			}
			i++
		}
	}
	return out
}

func isWordByte(c byte) bool {
	return c == '_' || c == '$' || c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= 0x80
}

// skipQuoted returns the index after the quoted text that starts at s[i] (its quote doubled,
// or escaped with a backslash, inside it).
func skipQuoted(s string, i int) int {
	q := s[i]
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case '\\':
			j++
		case q:
			if j+1 < len(s) && s[j+1] == q {
				j++
				continue
			}
			return j + 1
		}
	}
	return len(s)
}

// splitStatements splits q at the semicolons outside quotes; empty statements are left out.
func splitStatements(q string) []string {
	if !strings.Contains(q, ";") {
		return []string{q}
	}
	var out []string
	start := 0
	for i := 0; i < len(q); {
		switch q[i] {
		case '\'', '"', '`':
			i = skipQuoted(q, i)
			continue
		case ';':
			if s := strings.TrimSpace(q[start:i]); s != "" {
				out = append(out, s)
			}
			start = i + 1
		}
		i++
	}
	if s := strings.TrimSpace(q[start:]); s != "" {
		out = append(out, s)
	}
	return out
}

// readIndexes reads every table's secondary indexes and the columns that touch all of them.
func (d *DB) readIndexes(ctx context.Context) (map[string]tableIndexes, error) {
	if d.Dialect == MySQL {
		return d.readIndexesMySQL(ctx)
	}
	return d.readIndexesSQLite(ctx)
}

func (d *DB) readIndexesMySQL(ctx context.Context) (map[string]tableIndexes, error) {
	rows, err := d.SQL.QueryContext(ctx, `SELECT TABLE_NAME, INDEX_NAME, COLUMN_NAME FROM information_schema.STATISTICS
WHERE TABLE_SCHEMA = DATABASE() ORDER BY TABLE_NAME, INDEX_NAME, SEQ_IN_INDEX`)
	if err != nil {
		return nil, Unavailable(fmt.Errorf("store: read the indexes: %w", err))
	}
	defer rows.Close()
	out := map[string]tableIndexes{}
	byName := map[[2]string]int{}
	for rows.Next() {
		var table, index string
		var col *string
		if err := rows.Scan(&table, &index, &col); err != nil {
			return nil, Unavailable(fmt.Errorf("store: read the indexes: %w", err))
		}
		table = strings.ToUpper(table)
		ti := out[table]
		if ti.all == nil {
			ti.all = map[string]bool{}
		}
		c := ""
		if col != nil {
			c = strings.ToUpper(*col)
		}
		if index == "PRIMARY" {
			ti.all[c] = true
		} else {
			k := [2]string{table, index}
			n, ok := byName[k]
			if !ok {
				n = len(ti.secondary)
				byName[k] = n
				ti.secondary = append(ti.secondary, nil)
			}
			ti.secondary[n] = append(ti.secondary[n], c)
		}
		out[table] = ti
	}
	if err := rows.Err(); err != nil {
		return nil, Unavailable(fmt.Errorf("store: read the indexes: %w", err))
	}
	return out, nil
}

func (d *DB) readIndexesSQLite(ctx context.Context) (map[string]tableIndexes, error) {
	conn, err := d.SQL.Conn(ctx)
	if err != nil {
		return nil, Unavailable(fmt.Errorf("store: read the indexes: %w", err))
	}
	defer conn.Close()
	type table struct {
		name      string
		withoutRW bool
	}
	var tables []table
	rows, err := conn.QueryContext(ctx, `SELECT name, COALESCE(sql, '') FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`)
	if err != nil {
		return nil, Unavailable(fmt.Errorf("store: read the tables: %w", err))
	}
	for rows.Next() {
		var t table
		var ddl string
		if err := rows.Scan(&t.name, &ddl); err != nil {
			rows.Close()
			return nil, Unavailable(fmt.Errorf("store: read the tables: %w", err))
		}
		t.withoutRW = strings.Contains(strings.ToUpper(ddl), "WITHOUT ROWID")
		tables = append(tables, t)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, Unavailable(fmt.Errorf("store: read the tables: %w", err))
	}
	out := map[string]tableIndexes{}
	for _, t := range tables {
		ti := tableIndexes{all: map[string]bool{}}
		// The primary key's columns: the rowid's alias, or the key a WITHOUT ROWID table is.
		var pk []string
		cols, err := conn.QueryContext(ctx, `SELECT name, pk FROM pragma_table_info(?) WHERE pk > 0`, t.name)
		if err != nil {
			return nil, Unavailable(fmt.Errorf("store: read the columns of %s: %w", t.name, err))
		}
		for cols.Next() {
			var name string
			var n int
			if err := cols.Scan(&name, &n); err != nil {
				cols.Close()
				return nil, Unavailable(fmt.Errorf("store: read the columns of %s: %w", t.name, err))
			}
			pk = append(pk, strings.ToUpper(name))
		}
		cols.Close()
		idx, err := conn.QueryContext(ctx, `SELECT l.name, l.origin, COALESCE(i.name, '') FROM pragma_index_list(?) l, pragma_index_info(l.name) i ORDER BY l.name, i.seqno`, t.name)
		if err != nil {
			return nil, Unavailable(fmt.Errorf("store: read the indexes of %s: %w", t.name, err))
		}
		pkIndex := false
		byName := map[string]int{}
		for idx.Next() {
			var name, origin, col string
			if err := idx.Scan(&name, &origin, &col); err != nil {
				idx.Close()
				return nil, Unavailable(fmt.Errorf("store: read the indexes of %s: %w", t.name, err))
			}
			if origin == "pk" {
				pkIndex = true
				if t.withoutRW {
					continue // the table's own b-tree
				}
			}
			n, ok := byName[name]
			if !ok {
				n = len(ti.secondary)
				byName[name] = n
				ti.secondary = append(ti.secondary, nil)
			}
			ti.secondary[n] = append(ti.secondary[n], strings.ToUpper(col))
		}
		idx.Close()
		if t.withoutRW || (!pkIndex && len(pk) == 1) {
			for _, c := range pk {
				ti.all[c] = true
			}
		}
		out[strings.ToUpper(t.name)] = ti
	}
	return out, nil
}
