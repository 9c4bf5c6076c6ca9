package store_test

import (
	"bytes"
	"context"
	"database/sql"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mysqldrv "github.com/go-sql-driver/mysql"

	"msgx/internal/store"
	"msgx/internal/store/storetest"
)

// The freezer's modes: what it does once it sees a client send COMMIT.
const (
	freezeOff          = iota
	freezeAfterCommit  // the COMMIT reaches the server, its answer never reaches the client
	freezeBeforeCommit // the COMMIT never reaches the server, whose session ends (rolled back)
)

// freezer forwards connections to addr and, once frozen, forwards nothing and answers nothing
// on any of them (it still accepts): a node stopped by SIGSTOP, without stopping the shared
// server. In the commit modes it freezes by itself at the first COMMIT a client sends.
type freezer struct {
	l      net.Listener
	frozen atomic.Bool
	mode   atomic.Int32
}

func startFreezer(t *testing.T, addr string) *freezer {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &freezer{l: l}
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	// swallow is set when the server's next answer on that connection is to be lost.
	pipe := func(dst, src net.Conn, up bool, swallow *atomic.Bool) {
		defer dst.Close()
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if up && n > 0 && !f.frozen.Load() && bytes.Contains(buf[:n], []byte("COMMIT")) {
				switch f.mode.Load() {
				case freezeAfterCommit:
					swallow.Store(true)
					dst.Write(buf[:n])
					n = 0
				case freezeBeforeCommit:
					f.frozen.Store(true)
					dst.Close() // the server rolls the session back
					n = 0
				}
			}
			if !up && n > 0 && swallow.Load() {
				f.frozen.Store(true) // the commit's answer: lost, and the node hangs from now on
				n = 0
			}
			for f.frozen.Load() {
				time.Sleep(10 * time.Millisecond)
			}
			if n > 0 {
				if _, werr := dst.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	}
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
			mu.Lock()
			conns = append(conns, c, up)
			mu.Unlock()
			var swallow atomic.Bool
			go pipe(up, c, true, &swallow)
			go pipe(c, up, false, &swallow)
		}
	}()
	return f
}

// openBehind opens the test's database with node 1 behind f and node 2 the server itself,
// with a fast probe, and migrates it.
func openBehind(t *testing.T, f *freezer, addr, dsn string, logs *syncBuf) *store.DB {
	t.Helper()
	ctx := context.Background()
	db, err := store.OpenWith(ctx, "mysql", dsn, store.OpenOptions{Hosts: []string{f.l.Addr().String(), addr},
		Log: slog.New(slog.NewTextHandler(logs, nil)), ProbeEvery: 200 * time.Millisecond, ProbeTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return db
}

// A node that stops answering (its proxy frozen) is marked down by the probe within seconds:
// the pool moves to the next node, the statement waiting on the hung node fails at once rather
// than after the statement deadline, and the inbox's insert caught by it is done again on the
// next node, so the caller sees success well inside http.inbox-deadline (5 s).
func TestProbeLeavesAHungNode(t *testing.T) {
	dsn := storetest.MySQLDSN(t)
	cfg, err := mysqldrv.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	hung := startFreezer(t, cfg.Addr)
	var logs syncBuf
	db := openBehind(t, hung, cfg.Addr, dsn, &logs)
	ctx := context.Background()
	if _, err := db.Intake.InsertMessages(ctx, []string{"<a>before</a>"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	hung.frozen.Store(true)
	start := time.Now()
	ictx, cancel := context.WithTimeout(ctx, 5*time.Second) // the inbox's deadline
	defer cancel()
	ids, err := db.Intake.InsertMessages(ictx, []string{"<a>during</a>"}, time.Now())
	took := time.Since(start)
	t.Logf("an insert caught by the hang took %s: ids %v, err %v", took.Round(time.Millisecond), ids, err)
	if err != nil {
		t.Fatalf("the insert caught by the hang failed after %s: %v\n%s", took, err, logs.String())
	}
	n := db.Nodes()
	if n.Current() != cfg.Addr || n.Failovers()[store.FailoverHung] != 1 {
		t.Errorf("after the hang: on %s with moves %v, want %s after one hung", n.Current(), n.Failovers(), cfg.Addr)
	}
	if !strings.Contains(logs.String(), "does not answer the probe") {
		t.Errorf("the log does not say the probe marked the node down:\n%s", logs.String())
	}
	if open := db.OpenConnsTo(0); open != 0 {
		t.Errorf("%d connections to the hung node are still open", open)
	}
}

// The inbox's commit cut by a hung node is tried again on the next node, and stores each
// message once: a commit the lost node made (only its answer lost) is found there and its ids
// answered; one it never got is done again.
func TestInboxCommitCutByAHungNode(t *testing.T) {
	dsn := storetest.MySQLDSN(t)
	cfg, err := mysqldrv.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		mode int32
	}{{"answer lost", freezeAfterCommit}, {"commit never arrived", freezeBeforeCommit}} {
		t.Run(c.name, func(t *testing.T) {
			hung := startFreezer(t, cfg.Addr)
			var logs syncBuf
			db := openBehind(t, hung, cfg.Addr, dsn, &logs)
			ctx := context.Background()
			body := "<a>cut " + c.name + " " + time.Now().Format(time.RFC3339Nano) + "</a>"
			hung.mode.Store(c.mode)
			ictx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			start := time.Now()
			ids, err := db.Intake.InsertMessages(ictx, []string{body}, time.Now())
			took := time.Since(start)
			t.Logf("%s: the insert took %s: ids %v, err %v", c.name, took.Round(time.Millisecond), ids, err)
			if err != nil {
				t.Fatalf("the insert whose commit was cut failed after %s: %v\n%s", took, err, logs.String())
			}
			if !hung.frozen.Load() {
				t.Fatal("the proxy never saw the COMMIT: the test did not cut it")
			}
			direct, err := sql.Open("mysql", dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer direct.Close()
			var n int
			var id int64
			if err := direct.QueryRow(`SELECT COUNT(*), MAX(c.CMINMSGS_ID) FROM CMINMSGS c JOIN PROC_STATE p ON p.CMINMSGS_ID = c.CMINMSGS_ID WHERE c.CMINMSGS_CLOB_MSG = ?`, body).Scan(&n, &id); err != nil {
				t.Fatal(err)
			}
			if n != 1 || len(ids) != 1 || ids[0] != id {
				t.Errorf("%s: the message is stored %d times (id %d), the inbox answered %v; want once, that id\n%s", c.name, n, id, ids, logs.String())
			}
		})
	}
}

// A node that answers the probe, whatever it answers, is not marked down: a donor or a joiner
// of a state transfer answers "not synced" (error 1047 here), and the connections to it stay
// open for failover.go's rules (a statement that meets 1047 gives its connection up), never
// closed under the statements running on it.
func TestProbeKeepsAnAnsweringNode(t *testing.T) {
	dsn := storetest.MySQLDSN(t)
	cfg, err := mysqldrv.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer store.SetProbeQuery(`SIGNAL SQLSTATE '08S01' SET MYSQL_ERRNO = 1047, MESSAGE_TEXT = 'WSREP has not yet prepared node for application use'`)()
	donor := startFreezer(t, cfg.Addr)
	var logs syncBuf
	db := openBehind(t, donor, cfg.Addr, dsn, &logs)
	ctx := context.Background()
	// A statement running on the node all the while the probe hears "not synced".
	slow := make(chan error, 1)
	go func() { _, err := db.SQL.ExecContext(ctx, `DO SLEEP(2)`); slow <- err }()
	time.Sleep(1500 * time.Millisecond) // seven probes
	if err := <-slow; err != nil {
		t.Errorf("a statement on the node that answers the probe was cut: %v\n%s", err, logs.String())
	}
	n := db.Nodes()
	if n.Current() != donor.l.Addr().String() || n.Failovers()[store.FailoverHung] != 0 {
		t.Errorf("a node that answers the probe was left: on %s with moves %v\n%s", n.Current(), n.Failovers(), logs.String())
	}
	if db.OpenConnsTo(0) == 0 {
		t.Errorf("no connection to the node that answers the probe is open\n%s", logs.String())
	}
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// A batch whose connection is closed under it (the probe marking its node down) fails its
// next statement and is rolled back; neither waits for ever. The driver answers a statement it
// could not write at all with driver.ErrBadConn, on which database/sql's Conn.Raw closes the
// Conn, and that close waited for the lock the batch's own transaction holds: the pump's
// goroutine waited for itself (the silent pump of the node-kill test after 6d6af09).
func TestBatchOnAClosedConnectionReturns(t *testing.T) {
	dsn := storetest.MySQLDSN(t)
	cfg, err := mysqldrv.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	node := startFreezer(t, cfg.Addr) // forwards, never frozen: a node of its own
	ctx := context.Background()
	db, err := store.OpenWith(ctx, "mysql", dsn, store.OpenOptions{Hosts: []string{node.l.Addr().String(), cfg.Addr}, ProbeTimeout: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	b, err := db.Processor.BeginBatch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.ExecAll(ctx, `DO 1; DO 2`); err != nil {
		t.Fatal(err)
	}
	if n := db.CloseConnsTo(0); n == 0 {
		t.Fatal("no connection to node 1 to close")
	}
	done := make(chan error, 1)
	go func() {
		_, err := b.ExecAll(ctx, `DO 3; DO 4`)
		b.Rollback()
		done <- err
	}()
	select {
	case err := <-done:
		t.Logf("the batch's statement on the closed connection: %v", err)
		if err == nil {
			t.Error("a statement on a closed connection succeeded")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the batch's statement on a closed connection, or its rollback, never returned")
	}
	if _, err := db.SQL.ExecContext(ctx, `DO 5`); err != nil {
		t.Errorf("the pool after the closed connection: %v", err)
	}
}
