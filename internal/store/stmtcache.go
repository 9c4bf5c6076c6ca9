package store

// A statement cache for SQLite. database/sql runs a query with arguments through the
// driver's ExecerContext/QueryerContext, and modernc's SQLite compiles the SQL text for every
// call (sqlite3_prepare_v2: the parser and the code generator), which was a seventh of the
// pump's time and a fifth of a batch's statements' cost. The connections here keep the
// statements they run inside a transaction, compiled, by SQL text, and run them again
// reset (SQLite re-prepares a statement by itself when the schema changed).
//
// Only statements inside a transaction, and SELECTs, are cached: there no step waits for the
// write lock (the write transactions are BEGIN IMMEDIATE, the read-only ones and the reads in
// WAL mode take none), so the context of the call that prepared a statement, which modernc's
// busy handler watches, does not matter. A statement whose rows are still open (a query
// nested in the loop over its own rows) is run uncached.

import (
	"container/list"
	"context"
	"database/sql/driver"
	"errors"
	"strings"
	"sync/atomic"
	"time"
)

// stmtCacheSize bounds the statements one connection keeps; the least recently used goes
// first. The pump runs a few dozen distinct texts (multi-row inserts differ by their rows).
const stmtCacheSize = 128

// cachingConnector opens connections of the SQLite driver with a statement cache, all of
// them sharing one write gate.
type cachingConnector struct {
	drv    driver.Driver
	dsn    string
	gate   *writeGate
	writes *atomic.Pointer[WriteCounter] // writecount.go
}

func (c cachingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.drv.Open(c.dsn)
	if err != nil {
		return nil, err
	}
	cc, err := newCachingConn(conn, c.gate)
	if err == nil {
		cc.(*cachingConn).writes = c.writes
	}
	return cc, err
}

func (c cachingConnector) Driver() driver.Driver { return c.drv }

// innerConn is what the cache needs of the SQLite connection.
type innerConn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
}

type cachingConn struct {
	innerConn
	gate   *writeGate
	writes *atomic.Pointer[WriteCounter] // writecount.go; nil: none
	inTx   bool
	held   bool       // the connection holds the write gate
	lru    *list.List // of *cachedStmt, most recently used first
	stmts  map[string]*list.Element
}

type cachedStmt struct {
	query string
	stmt  driver.Stmt
	busy  bool // its rows are open
}

func newCachingConn(c driver.Conn, gate *writeGate) (driver.Conn, error) {
	ic, ok := c.(innerConn)
	if !ok {
		c.Close()
		return nil, errors.New("store: the sqlite driver's connection lacks the context interfaces")
	}
	return &cachingConn{innerConn: ic, gate: gate, lru: list.New(), stmts: map[string]*list.Element{}}, nil
}

// cacheable reports whether query is worth keeping: a single statement run inside a
// transaction (not BEGIN/COMMIT themselves, which the driver runs), or a query outside one
// (the pump's read of the due messages, the dispatcher's of a target's head): in WAL mode a
// read never waits for a lock.
func (c *cachingConn) cacheable(query string) bool {
	if strings.Contains(query, ";") {
		return false
	}
	return c.inTx || isSelect(query)
}

// isSelect reports whether query is a SELECT (leading white space ignored).
func isSelect(query string) bool {
	q := strings.TrimLeft(query, " \t\r\n")
	return len(q) >= 6 && strings.EqualFold(q[:6], "SELECT")
}

// get returns the cached statement for query, preparing and caching it when missing; nil
// when it is busy.
func (c *cachingConn) get(ctx context.Context, query string) (*cachedStmt, error) {
	if e, ok := c.stmts[query]; ok {
		cs := e.Value.(*cachedStmt)
		if cs.busy {
			return nil, nil
		}
		c.lru.MoveToFront(e)
		return cs, nil
	}
	st, err := c.innerConn.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	cs := &cachedStmt{query: query, stmt: st}
	c.stmts[query] = c.lru.PushFront(cs)
	for c.lru.Len() > stmtCacheSize {
		last := c.lru.Back()
		old := last.Value.(*cachedStmt)
		if old.busy {
			break // evicted once its rows close
		}
		c.lru.Remove(last)
		delete(c.stmts, old.query)
		old.stmt.Close()
	}
	return cs, nil
}

func (c *cachingConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	res, err := c.exec(ctx, query, args)
	countWrites(c.writes, query, res, err)
	return res, err
}

func (c *cachingConn) exec(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if !c.cacheable(query) {
		return c.innerConn.ExecContext(ctx, query, args)
	}
	cs, err := c.get(ctx, query)
	if err != nil {
		return nil, err
	}
	if cs == nil {
		return c.innerConn.ExecContext(ctx, query, args)
	}
	return cs.stmt.(driver.StmtExecContext).ExecContext(ctx, args)
}

func (c *cachingConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	rows, err := c.query(ctx, query, args)
	return countRows(c.writes, query, rows, err)
}

func (c *cachingConn) query(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	if !c.cacheable(query) {
		return c.innerConn.QueryContext(ctx, query, args)
	}
	cs, err := c.get(ctx, query)
	if err != nil {
		return nil, err
	}
	if cs == nil {
		return c.innerConn.QueryContext(ctx, query, args)
	}
	rows, err := cs.stmt.(driver.StmtQueryContext).QueryContext(ctx, args)
	if err != nil {
		return nil, err
	}
	cs.busy = true
	return &cachedRows{Rows: rows, cs: cs}, nil
}

func (c *cachingConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	if !opts.ReadOnly { // a read-only one is a deferred BEGIN: it never takes the write lock
		held, err := c.gate.enter(ctx)
		if err != nil {
			return nil, err
		}
		c.held = held
	}
	tx, err := c.innerConn.BeginTx(ctx, opts)
	if err != nil {
		c.leave()
		return nil, err
	}
	c.inTx = true
	return cachingTx{tx: tx, c: c}, nil
}

// leave ends the connection's transaction: it lets the next writer in.
func (c *cachingConn) leave() {
	c.inTx = false
	if c.held {
		c.held = false
		c.gate.leave()
	}
}

func (c *cachingConn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

// Close finalizes the cached statements, then closes the connection.
func (c *cachingConn) Close() error {
	c.leave()
	for e := c.lru.Front(); e != nil; e = e.Next() {
		e.Value.(*cachedStmt).stmt.Close()
	}
	c.lru.Init()
	clear(c.stmts)
	return c.innerConn.Close()
}

func (c *cachingConn) Ping(ctx context.Context) error {
	if p, ok := c.innerConn.(driver.Pinger); ok {
		return p.Ping(ctx)
	}
	return nil
}

func (c *cachingConn) ResetSession(ctx context.Context) error {
	if r, ok := c.innerConn.(driver.SessionResetter); ok {
		return r.ResetSession(ctx)
	}
	return nil
}

func (c *cachingConn) IsValid() bool {
	if v, ok := c.innerConn.(driver.Validator); ok {
		return v.IsValid()
	}
	return true
}

// cachingTx ends the connection's transaction: statements after it are not cached.
type cachingTx struct {
	tx driver.Tx
	c  *cachingConn
}

func (t cachingTx) Commit() error {
	defer t.c.leave()
	return t.tx.Commit()
}

func (t cachingTx) Rollback() error {
	defer t.c.leave()
	return t.tx.Rollback()
}

// writeGate queues the write transactions of one SQLite database in the process, first come
// first served. Every one is BEGIN IMMEDIATE, so only one runs at a time anyway; left
// to SQLite, the others poll the lock with sleeps of 1, 2, 5, … 100 ms (the busy handler),
// and under load a writer that just missed the lock sleeps on while the pump, the inbox
// and the dispatcher's targets take turns: that was most of accept→SENT. Queued here, the
// next writer starts the moment the one before commits. A writer that waited for the gate
// longer than the busy timeout goes on to SQLite's own wait (and its busy error), so a
// transaction left open elsewhere in the process fails as it did, never hangs.
type writeGate struct {
	ch      chan struct{}
	timeout time.Duration
}

func newWriteGate(timeout time.Duration) *writeGate {
	return &writeGate{ch: make(chan struct{}, 1), timeout: timeout}
}

// enter waits for the gate; held is false when it gave up waiting (the caller goes on
// without it).
func (g *writeGate) enter(ctx context.Context) (held bool, err error) {
	if g == nil {
		return false, nil
	}
	select {
	case g.ch <- struct{}{}:
		return true, nil
	default:
	}
	t := time.NewTimer(g.timeout)
	defer t.Stop()
	select {
	case g.ch <- struct{}{}:
		return true, nil
	case <-t.C:
		return false, nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

func (g *writeGate) leave() { <-g.ch }

// cachedRows frees its statement for the next call when closed (the driver resets it).
type cachedRows struct {
	driver.Rows
	cs *cachedStmt
}

func (r *cachedRows) Close() error {
	err := r.Rows.Close()
	r.cs.busy = false
	return err
}
