package store

// A hung node is left in seconds (issue 33). With several nodes (database.hosts) a probe asks
// the current node every ProbeEvery for SELECT 1 on a connection of its own, within
// ProbeTimeout. A node that answers, whatever it answers (a donor, a joiner, a node that
// refuses queries with error 1047), is alive: what it may be used for is failover.go's
// business, which gives a connection up when its node says it is not synced and moves at the
// next connection. Only a node that does not answer at all within the probe's deadline
// (stopped by SIGSTOP, frozen, cut off by the network) is marked down: new connections go to
// the next node, and every network connection to it is closed, so the statements waiting on
// it fail at once with the driver's invalid-connection error instead of each waiting for the
// statement deadline.
//
// 6d6af09 marked a node down also when it answered "not synced", and closed the connections of
// a donor (wsrep_local_state 2) during a state transfer; the pump then went silent. A donor is
// not hung: it is left by the ordinary rules, never cut off.

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"syscall"
	"time"

	mysqldrv "github.com/go-sql-driver/mysql"
)

// Defaults of the probe (OpenOptions.ProbeEvery, ProbeTimeout; database.probe-every,
// database.probe-timeout).
const (
	DefaultProbeEvery   = time.Second
	DefaultProbeTimeout = 2 * time.Second
)

// probeQuery is what the probe asks: the cheapest statement a server answers, which needs
// neither the cluster (no wsrep_sync_wait on the probe's connection) nor a table.
var probeQuery = `SELECT 1`

// liveConns are the open network connections to each node.
type liveConns struct {
	mu  sync.Mutex
	set map[*trackedConn]struct{}
}

// trackedConn is a network connection to node, known to its live set until it is closed.
type trackedConn struct {
	net.Conn
	live *liveConns
	node int
	once sync.Once
}

// SyscallConn is the TCP connection's: the driver checks through it that a pooled connection
// was not closed by its server before it uses it again (checkConnLiveness), as it does on the
// connections it dials itself.
func (t *trackedConn) SyscallConn() (syscall.RawConn, error) {
	if sc, ok := t.Conn.(syscall.Conn); ok {
		return sc.SyscallConn()
	}
	return nil, errors.New("store: not a TCP connection")
}

func (t *trackedConn) Close() error {
	t.once.Do(func() {
		t.live.mu.Lock()
		delete(t.live.set, t)
		t.live.mu.Unlock()
	})
	return t.Conn.Close()
}

// dialer returns the driver's dial function for node k: a TCP connection with keep-alives (as
// the driver sets them on its own connections) that c's live set tracks.
func (c *nodeConnector) dialer(k int) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		d := net.Dialer{KeepAlive: 15 * time.Second}
		nc, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		live := c.live
		t := &trackedConn{Conn: nc, live: live, node: k}
		live.mu.Lock()
		if live.set == nil {
			live.set = map[*trackedConn]struct{}{}
		}
		live.set[t] = struct{}{}
		live.mu.Unlock()
		return t, nil
	}
}

// closeNode closes every network connection to node k and returns how many it closed.
func (l *liveConns) closeNode(k int) int {
	l.mu.Lock()
	var drop []*trackedConn
	for t := range l.set {
		if t.node == k {
			drop = append(drop, t)
		}
	}
	l.mu.Unlock()
	for _, t := range drop {
		t.Close()
	}
	return len(drop)
}

// count is how many network connections to node k are open.
func (l *liveConns) count(k int) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for t := range l.set {
		if t.node == k {
			n++
		}
	}
	return n
}

// markDown moves new connections off node k, when it is still the current node, to the next
// one, and closes every network connection to k: a statement waiting for its answer fails at
// once with the driver's invalid-connection error, which the pool and the callers handle as
// a lost node (their transaction was not committed, or its outcome is unknown).
func (c *nodeConnector) markDown(k int, why error) {
	if len(c.nodes) < 2 {
		return
	}
	next := (k + 1) % len(c.nodes)
	if c.cur.CompareAndSwap(int32(k), int32(next)) {
		c.moved(FailoverHung)
	}
	closed := c.live.closeNode(k)
	c.log.Warn("database node does not answer the probe; marked down, moved to the next node and closed its connections",
		"node", c.nodes[c.cur.Load()], "from", c.nodes[k], "reason", FailoverHung, "closed", closed, "err", why.Error())
}

// runProbe probes the current node every every, each probe bounded by timeout, until ctx ends.
func (c *nodeConnector) runProbe(ctx context.Context, every, timeout time.Duration) {
	var conn driver.Conn
	node := -1
	drop := func() {
		if conn != nil {
			go conn.Close() // its node may not answer the goodbye
			conn, node = nil, -1
		}
	}
	defer drop()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		k := int(c.cur.Load())
		if node != k {
			drop()
		}
		pctx, cancel := context.WithTimeout(ctx, timeout)
		err := c.probeOnce(pctx, k, &conn)
		hung := err != nil && pctx.Err() != nil
		cancel()
		if err == nil {
			node = k
			continue
		}
		drop()
		if ctx.Err() != nil {
			return
		}
		if hung {
			c.markDown(k, fmt.Errorf("no answer within %s: %w", timeout, err))
		}
		// Any other failure is an answer (refused, reset, an error reply): the node is
		// dead or not ready, and failover.go's rules leave it; its connections stay.
	}
}

// probeOnce asks node k probeQuery on *conn (opened when nil, outside the pool: no session
// set-up, no synced check) within ctx.
func (c *nodeConnector) probeOnce(ctx context.Context, k int, conn *driver.Conn) error {
	if *conn == nil {
		nc, err := c.conns[k].Connect(ctx)
		if err != nil {
			return err
		}
		*conn = nc
	}
	qc, ok := (*conn).(driver.QueryerContext)
	if !ok {
		return errors.New("store: mysql connection cannot run queries")
	}
	rows, err := qc.QueryContext(ctx, probeQuery, nil)
	if err != nil {
		return err
	}
	row := make([]driver.Value, len(rows.Columns()))
	for err == nil {
		err = rows.Next(row)
	}
	rows.Close()
	if err != io.EOF {
		return err
	}
	return nil
}

// nodeLost says err is a failure of the connection's node (lost, closed by markDown, not
// synced): the same statement may succeed on the next node.
func nodeLost(err error) bool {
	return errors.Is(err, mysqldrv.ErrInvalidConn) || errors.Is(err, driver.ErrBadConn) || IsNodeNotReady(err)
}
