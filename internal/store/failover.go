package store

// Several database nodes (issue 22): msgx writes through one node of a MariaDB Galera cluster
// at a time and moves to the next when that node fails, the way MariaDB's own connectors do
// sequential failover. The connector below is what database/sql opens connections with, so
// the pool reconnects to whichever node is current.

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	mysqldrv "github.com/go-sql-driver/mysql"
)

// Nodes tells which database node msgx uses and how often it moved to another.
type Nodes interface {
	// Current is the node (host:port) new connections go to.
	Current() string
	// All are the configured nodes, in the order they are tried.
	All() []string
	// Failovers counts the moves to another node since the start by reason, every one of
	// FailoverReasons present (0 until its first move).
	Failovers() map[string]int64
}

// The reasons of a move to another node (msgx_db_failovers_total{reason}).
const (
	// FailoverStart is a move before msgx ever connected: it starts while its first node is
	// down, and moves at every start until that node is back; nothing failed over.
	FailoverStart = "start"
	// FailoverFailed is a move away from the node in use, because it failed or was not synced.
	FailoverFailed = "failed"
	// FailoverHung is a move away from the node in use because it did not answer the probe
	// within database.probe-timeout (stopped, frozen, cut off): it was marked down and every
	// connection to it closed (probe.go).
	FailoverHung = "hung"
)

// FailoverReasons are the reasons Nodes.Failovers counts.
var FailoverReasons = []string{FailoverStart, FailoverFailed, FailoverHung}

// nodeConnector opens connections to the current node of a list, and makes the next node that
// answers and is synced the current one when it cannot (sequential failover). A connection to
// a node that is no longer current, or that failed the way a lost node does, is given up by
// the pool instead of being used again.
type nodeConnector struct {
	nodes   []string
	conns   []driver.Connector // one go-sql-driver connector per node
	session []string           // run on every new connection
	log     *slog.Logger

	// cur is the current node's index; a pool that follows another (the long statements',
	// share) shares it, and live, with that pool's connector.
	cur *atomic.Int32
	// connected is set at the first connection made: a move before it is the start's.
	connected atomic.Bool
	mu        sync.Mutex
	failovers map[string]int64 // by reason
	moving    chan struct{}    // a one-slot lock: one connection attempt decides at a time

	live *liveConns // with several nodes: the network connections to each, for markDown (probe.go)

	// attempt bounds the connection to one node (open: the handshake, the synced check and
	// the session set-up) when there are several: the probe's timeout. 0: the caller's bound.
	attempt time.Duration

	// writes holds the counter of writes, if one is installed (writecount.go); nil: none.
	writes *atomic.Pointer[WriteCounter]
}

func newNodeConnector(cfg *mysqldrv.Config, hosts []string, session []string, log *slog.Logger) (*nodeConnector, error) {
	net := "tcp" // database.hosts are host:port
	if len(hosts) == 0 {
		hosts, net = []string{cfg.Addr}, cfg.Net // the DSN's own address, a socket too
	}
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	c := &nodeConnector{nodes: hosts, session: session, log: log, moving: make(chan struct{}, 1), cur: new(atomic.Int32), live: &liveConns{}}
	for k, h := range hosts {
		nc := cfg.Clone()
		nc.Net, nc.Addr = net, h
		if len(hosts) > 1 {
			nc.DialFunc = c.dialer(k)
		}
		conn, err := mysqldrv.NewConnector(nc)
		if err != nil {
			return nil, fmt.Errorf("store: mysql node %s: %w", h, err)
		}
		c.conns = append(c.conns, conn)
	}
	return c, nil
}

// share makes c (the long statements' pool) go to other's current node and move with it:
// both use one current node, and markDown closes the connections of both.
func (c *nodeConnector) share(other *nodeConnector) {
	if other != nil {
		c.writes = other.writes
	}
	if other != nil && len(other.nodes) == len(c.nodes) {
		c.cur, c.live = other.cur, other.live
	}
}

// Current implements Nodes.
func (c *nodeConnector) Current() string { return c.nodes[c.cur.Load()] }

// All implements Nodes.
func (c *nodeConnector) All() []string { return append([]string(nil), c.nodes...) }

// Failovers implements Nodes.
func (c *nodeConnector) Failovers() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int64, len(FailoverReasons))
	for _, r := range FailoverReasons {
		out[r] = c.failovers[r]
	}
	return out
}

// moved counts a move to another node for reason.
func (c *nodeConnector) moved(reason string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.failovers == nil {
		c.failovers = map[string]int64{}
	}
	c.failovers[reason]++
}

// Driver implements driver.Connector.
func (c *nodeConnector) Driver() driver.Driver { return c.conns[0].Driver() }

// Connect implements driver.Connector: a connection to the current node when it answers and
// is synced, else to the next one in order that does, which becomes the current node.
func (c *nodeConnector) Connect(ctx context.Context) (driver.Conn, error) {
	select {
	case c.moving <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-c.moving }()
	start := int(c.cur.Load())
	var errs []error
	for i := range c.nodes {
		k := (start + i) % len(c.nodes)
		octx, cancel := ctx, context.CancelFunc(func() {})
		if len(c.nodes) > 1 && c.attempt > 0 && i < len(c.nodes)-1 {
			// A node that takes the connection and answers nothing (hung, or a joiner that
			// holds the handshake during its state transfer) must not eat the caller's whole
			// deadline, nor hold every other connection attempt behind the one-slot lock:
			// past the attempt's bound the next node is tried. The last node tried has the
			// caller's deadline.
			octx, cancel = context.WithTimeout(ctx, c.attempt)
		}
		conn, err := c.open(octx, k)
		cancel()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", c.nodes[k], err))
			if ctx.Err() != nil {
				break
			}
			continue
		}
		if k != start {
			c.cur.Store(int32(k))
			reason := FailoverFailed
			if !c.connected.Load() {
				reason = FailoverStart
			}
			c.moved(reason)
			c.log.Warn("database node failed; moved to the next node", "node", c.nodes[k], "from", c.nodes[start],
				"reason", reason, "err", errors.Join(errs...).Error())
		}
		c.connected.Store(true)
		return &nodeConn{Conn: conn, owner: c, node: k}, nil
	}
	if len(c.nodes) == 1 {
		return nil, errs[0]
	}
	return nil, fmt.Errorf("no database node answers and is synced: %w", errors.Join(errs...))
}

// open connects to node k, checks that it is synced and sets the session up.
func (c *nodeConnector) open(ctx context.Context, k int) (driver.Conn, error) {
	conn, err := c.conns[k].Connect(ctx)
	if err != nil {
		return nil, err
	}
	galera, err := synced(ctx, conn)
	if err == nil {
		stmts := c.session
		if galera {
			// Reads wait until this node has applied every transaction the cluster committed
			// before them: after a failover the pump never decides on a stale head.
			stmts = append(stmts[:len(stmts):len(stmts)], "SET SESSION wsrep_sync_wait = 1")
		}
		err = execAll(ctx, conn, stmts)
	}
	if err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}

// synced reports whether the server of conn is a Galera node (wsrep_on), and fails when it is
// one that is not ready and synced (wsrep_ready ON, wsrep_local_state 4). A server without
// wsrep is synced by definition.
func synced(ctx context.Context, conn driver.Conn) (galera bool, err error) {
	on, err := showValues(ctx, conn, `SHOW VARIABLES LIKE 'wsrep_on'`)
	if err != nil {
		return false, err
	}
	if on["wsrep_on"] != "ON" {
		return false, nil
	}
	st, err := showValues(ctx, conn, `SHOW STATUS WHERE Variable_name IN ('wsrep_ready', 'wsrep_local_state')`)
	if err != nil {
		return true, err
	}
	if st["wsrep_ready"] != "ON" || st["wsrep_local_state"] != "4" {
		return true, fmt.Errorf("galera node not synced (wsrep_ready=%s, wsrep_local_state=%s)", st["wsrep_ready"], st["wsrep_local_state"])
	}
	return true, nil
}

// showValues runs a SHOW statement of name/value rows on conn.
func showValues(ctx context.Context, conn driver.Conn, q string) (map[string]string, error) {
	qc, ok := conn.(driver.QueryerContext)
	if !ok {
		return nil, errors.New("store: mysql connection cannot run queries")
	}
	rows, err := qc.QueryContext(ctx, q, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", q, err)
	}
	defer rows.Close()
	out := map[string]string{}
	row := make([]driver.Value, len(rows.Columns()))
	for {
		if err := rows.Next(row); err == io.EOF {
			return out, nil
		} else if err != nil {
			return nil, fmt.Errorf("%s: %w", q, err)
		}
		if len(row) >= 2 {
			out[text(row[0])] = text(row[1])
		}
	}
}

func text(v driver.Value) string {
	switch x := v.(type) {
	case []byte:
		return string(x)
	case string:
		return x
	case int64:
		return strconv.FormatInt(x, 10)
	}
	return fmt.Sprint(v)
}

// execAll runs stmts on conn.
func execAll(ctx context.Context, conn driver.Conn, stmts []string) error {
	ex, ok := conn.(driver.ExecerContext)
	if !ok {
		return errors.New("store: mysql connection cannot execute statements")
	}
	for _, s := range stmts {
		if _, err := ex.ExecContext(ctx, s, nil); err != nil {
			return fmt.Errorf("store: %s: %w", s, err)
		}
	}
	return nil
}

// nodeConn is a connection to one node. It remembers a failure that says its node is lost or
// not synced, and then, like a connection to a node that is no longer current, tells the pool
// not to use it again.
type nodeConn struct {
	driver.Conn
	owner *nodeConnector
	node  int
	lost  atomic.Bool
}

// note records err's verdict on the node and returns err.
func (n *nodeConn) note(err error) error {
	if err != nil && (IsNodeNotReady(err) || errors.Is(err, driver.ErrBadConn) || errors.Is(err, mysqldrv.ErrInvalidConn)) {
		n.lost.Store(true)
	}
	return err
}

// usable says whether the pool may use the connection again.
func (n *nodeConn) usable() bool {
	return !n.lost.Load() && int(n.owner.cur.Load()) == n.node
}

// IsValid implements driver.Validator.
func (n *nodeConn) IsValid() bool {
	if v, ok := n.Conn.(driver.Validator); ok && !v.IsValid() {
		return false
	}
	return n.usable()
}

// ResetSession implements driver.SessionResetter.
func (n *nodeConn) ResetSession(ctx context.Context) error {
	if !n.usable() {
		return driver.ErrBadConn
	}
	if r, ok := n.Conn.(driver.SessionResetter); ok {
		return r.ResetSession(ctx)
	}
	return nil
}

// CheckNamedValue implements driver.NamedValueChecker, as the MySQL driver's connection does.
func (n *nodeConn) CheckNamedValue(v *driver.NamedValue) error {
	if c, ok := n.Conn.(driver.NamedValueChecker); ok {
		return c.CheckNamedValue(v)
	}
	return driver.ErrSkip
}

// Ping implements driver.Pinger.
func (n *nodeConn) Ping(ctx context.Context) error {
	if p, ok := n.Conn.(driver.Pinger); ok {
		return n.note(p.Ping(ctx))
	}
	return nil
}

// ExecContext implements driver.ExecerContext.
func (n *nodeConn) ExecContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Result, error) {
	ex, ok := n.Conn.(driver.ExecerContext)
	if !ok {
		return nil, driver.ErrSkip
	}
	r, err := ex.ExecContext(ctx, q, args)
	countWrites(n.owner.writes, q, r, err)
	return r, n.note(err)
}

// QueryContext implements driver.QueryerContext.
func (n *nodeConn) QueryContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	qc, ok := n.Conn.(driver.QueryerContext)
	if !ok {
		return nil, driver.ErrSkip
	}
	r, err := qc.QueryContext(ctx, q, args)
	r, _ = countRows(n.owner.writes, q, r, err)
	return r, n.note(err)
}

// PrepareContext implements driver.ConnPrepareContext.
func (n *nodeConn) PrepareContext(ctx context.Context, q string) (driver.Stmt, error) {
	if pc, ok := n.Conn.(driver.ConnPrepareContext); ok {
		s, err := pc.PrepareContext(ctx, q)
		return s, n.note(err)
	}
	s, err := n.Conn.Prepare(q)
	return s, n.note(err)
}

// BeginTx implements driver.ConnBeginTx.
func (n *nodeConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	bt, ok := n.Conn.(driver.ConnBeginTx)
	if !ok {
		return nil, errors.New("store: mysql connection cannot begin a transaction with options")
	}
	tx, err := bt.BeginTx(ctx, opts)
	if err != nil {
		return nil, n.note(err)
	}
	return nodeTx{tx: tx, conn: n}, nil
}

// nodeTx is a transaction on a nodeConn; a commit that fails the way a lost node does marks
// the connection.
type nodeTx struct {
	tx   driver.Tx
	conn *nodeConn
}

func (t nodeTx) Commit() error   { return t.conn.note(t.tx.Commit()) }
func (t nodeTx) Rollback() error { return t.conn.note(t.tx.Rollback()) }
