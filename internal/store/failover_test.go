package store_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
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
	if n.Current() != cfg.Addr || n.Failovers() != 1 {
		t.Fatalf("current node %s after %d failovers, want %s after 1", n.Current(), n.Failovers(), cfg.Addr)
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
