package store

// A hung node is left in seconds (issue 33): with several nodes (database.hosts) a probe asks
// the current node every ProbeEvery whether it answers and is synced, on a connection of its
// own, within ProbeTimeout. A node that does not (stopped by SIGSTOP, cut off, killed, left
// sync) is marked down: new connections go to the next node, and every network connection
// to the node is closed, so the statements waiting on it fail at once (and the pool drops
// them) instead of each waiting for the read timeout (30 s by default). Long statements on a
// node that answers are never cut: the probe runs beside them.

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	mysqldrv "github.com/go-sql-driver/mysql"
)

// Defaults of the probe (OpenOptions.ProbeEvery, ProbeTimeout).
const (
	DefaultProbeEvery   = time.Second
	DefaultProbeTimeout = 2 * time.Second
)

// liveConns are the open network connections to each node.
type liveConns struct {
	mu  sync.Mutex
	set map[*trackedConn]struct{}
}

// trackedConn is a network connection to node, known to its connector until it is closed.
type trackedConn struct {
	net.Conn
	owner *nodeConnector
	node  int
	once  sync.Once
}

func (t *trackedConn) Close() error {
	t.once.Do(func() {
		t.owner.live.mu.Lock()
		delete(t.owner.live.set, t)
		t.owner.live.mu.Unlock()
	})
	return t.Conn.Close()
}

// dialer returns the driver's dial function for node k: a TCP connection (with keep-alives,
// as the driver sets them on its own) that the connector tracks.
func (c *nodeConnector) dialer(k int) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		d := net.Dialer{KeepAlive: 15 * time.Second}
		nc, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		t := &trackedConn{Conn: nc, owner: c, node: k}
		c.live.mu.Lock()
		if c.live.set == nil {
			c.live.set = map[*trackedConn]struct{}{}
		}
		c.live.set[t] = struct{}{}
		c.live.mu.Unlock()
		return t, nil
	}
}

// markDown moves new connections off node k when it is the current node, and closes every
// network connection to it: a statement waiting for its answer fails at once with the
// driver's invalid-connection error.
func (c *nodeConnector) markDown(k int, why error) {
	if len(c.nodes) < 2 {
		return
	}
	next := (k + 1) % len(c.nodes)
	if !c.cur.CompareAndSwap(int32(k), int32(next)) {
		return
	}
	c.moved(FailoverFailed)
	c.log.Warn("database node does not answer the probe; marked down, moved to the next node", "node", c.nodes[next], "from", c.nodes[k],
		"reason", FailoverFailed, "err", why.Error())
	c.live.mu.Lock()
	var drop []*trackedConn
	for t := range c.live.set {
		if t.node == k {
			drop = append(drop, t)
		}
	}
	c.live.mu.Unlock()
	for _, t := range drop {
		t.Close()
	}
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
		err := c.probeOnce(pctx, k, &conn, timeout)
		cancel()
		if conn != nil && node != k {
			node = k
		}
		if err == nil {
			continue
		}
		drop()
		if ctx.Err() != nil {
			return
		}
		c.markDown(k, err)
	}
}

// probeOnce checks node k on *conn (opened when nil): it answers, within ctx, and is synced.
func (c *nodeConnector) probeOnce(ctx context.Context, k int, conn *driver.Conn, timeout time.Duration) error {
	if *conn == nil {
		nc, err := c.conns[k].Connect(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("no connection within %s: %w", timeout, err)
			}
			return err
		}
		*conn = nc
	}
	if _, err := synced(ctx, *conn); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("no answer within %s: %w", timeout, err)
		}
		return err
	}
	return nil
}

// nodeLost says err is a failure of the connection's node (lost, closed by markDown, not
// synced): the same statement may succeed on the next node.
func nodeLost(err error) bool {
	return errors.Is(err, mysqldrv.ErrInvalidConn) || errors.Is(err, driver.ErrBadConn) || IsNodeNotReady(err)
}

// onNextNode runs do, and once more when it failed the way a lost node fails and there is
// another node to go to (the pool has moved, or moves at its next connection) while ctx
// lasts: the inbox's commit refused by a node that hangs or dies is tried on the next node
// within http.inbox-deadline before the sender sees a 503. A message the lost node committed
// after all is stored twice; the pump recognises the copy as a re-send.
func (d *DB) onNextNode(ctx context.Context, do func() error) error {
	err := do()
	if err == nil || d.nodes == nil || len(d.nodes.nodes) < 2 || !nodeLost(err) || ctx.Err() != nil {
		return err
	}
	d.nodes.log.Warn("database node lost under a statement; trying the next node once", "node", d.nodes.Current(), "err", err.Error())
	return do()
}
