package store_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"

	mysqldrv "github.com/go-sql-driver/mysql"

	"msgx/internal/store"
	"msgx/internal/store/storetest"
)

// closedAddr is a loopback address nothing listens on: a database node that is down.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// A node that does not answer is passed over for the next one in database.hosts, and the move
// is counted and logged with the node msgx moved to; a list of which no node answers is an
// outage (waited for), not a configuration error.
func TestHostsFailOverToTheNextNode(t *testing.T) {
	t.Parallel()
	dsn := storetest.MySQLDSN(t)
	cfg, err := mysqldrv.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	down := closedAddr(t)
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	db, err := store.OpenWith(context.Background(), "mysql", dsn, store.OpenOptions{Hosts: []string{down, cfg.Addr}, Log: log})
	if err != nil {
		t.Fatalf("open with the first node down: %v", err)
	}
	defer db.Close()
	n := db.Nodes()
	if moves := n.Failovers(); n.Current() != cfg.Addr || moves[store.FailoverStart] != 1 || moves[store.FailoverFailed] != 0 {
		t.Fatalf("current node %s after moves %v, want %s after one at the start", n.Current(), moves, cfg.Addr)
	}
	if !strings.Contains(logs.String(), "node="+cfg.Addr) || !strings.Contains(logs.String(), "moved to the next node") {
		t.Fatalf("the log does not name the node msgx moved to:\n%s", logs.String())
	}
	if _, err := db.Migrate(context.Background()); err != nil {
		t.Fatalf("migrate through the second node: %v", err)
	}

	_, err = store.OpenWith(context.Background(), "mysql", dsn, store.OpenOptions{Hosts: []string{down, closedAddr(t)}})
	if !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("no node answers: %v, want an unavailable database", err)
	}
}

// proxy forwards connections to addr until it is closed, which cuts them: a node that dies.
type proxy struct {
	l     net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func startProxy(t *testing.T, addr string) *proxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{l: l}
	t.Cleanup(p.close)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", addr)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			go func() { io.Copy(up, c); up.Close() }()
			go func() { io.Copy(c, up); c.Close() }()
		}
	}()
	return p
}

func (p *proxy) close() {
	p.l.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// msgx_db_failovers_total{reason}: the node in use dying is a failover (failed); a start
// while the first node is down is not one (start, the test above), so a restart with the first
// node down for maintenance does not look like a cluster in trouble.
func TestFailoverCountsItsReason(t *testing.T) {
	t.Parallel()
	dsn := storetest.MySQLDSN(t)
	cfg, err := mysqldrv.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	first := startProxy(t, cfg.Addr)
	ctx := context.Background()
	db, err := store.OpenWith(ctx, "mysql", dsn, store.OpenOptions{Hosts: []string{first.l.Addr().String(), cfg.Addr}})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	n := db.Nodes()
	if moves := n.Failovers(); n.Current() != first.l.Addr().String() || moves[store.FailoverStart] != 0 || moves[store.FailoverFailed] != 0 {
		t.Fatalf("started on %s with moves %v, want the first node and none", n.Current(), moves)
	}
	first.close()
	for i := 0; ; i++ {
		if err := db.SQL.PingContext(ctx); err == nil {
			break
		} else if i == 10 {
			t.Fatalf("the second node never answered: %v", err)
		}
	}
	if moves := n.Failovers(); n.Current() != cfg.Addr || moves[store.FailoverStart] != 0 || moves[store.FailoverFailed] != 1 {
		t.Fatalf("after the first node died: on %s with moves %v, want the second and one failed", n.Current(), moves)
	}
}

// Error 1047 (a Galera node out of the primary component) is the node's outage, never the
// data's fault: a message that meets it is retried, not failed.
func TestNodeNotReadyIsAnOutage(t *testing.T) {
	t.Parallel()
	err := fmt.Errorf("insert: %w", &mysqldrv.MySQLError{Number: 1047, Message: "WSREP has not yet prepared node for application use"})
	if !store.IsNodeNotReady(err) || store.IsDataError(err) || store.IsConfigRefusal(err) {
		t.Fatalf("1047: not ready %v, data error %v, config refusal %v", store.IsNodeNotReady(err), store.IsDataError(err), store.IsConfigRefusal(err))
	}
	if store.IsNodeNotReady(&mysqldrv.MySQLError{Number: 1213}) {
		t.Fatal("a deadlock is not a node out of the cluster")
	}
}
