package store_test

import (
	"bytes"
	"context"
	"io"
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

// freezer forwards connections to addr, and while frozen forwards nothing and answers nothing
// (it still accepts): a node stopped by SIGSTOP, without stopping the shared server.
type freezer struct {
	l      net.Listener
	frozen atomic.Bool
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
	pipe := func(dst, src net.Conn) {
		defer dst.Close()
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
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
			go pipe(up, c)
			go pipe(c, up)
		}
	}()
	return f
}

// A node that stops answering (its proxy frozen) is marked down by the probe within seconds:
// the pool moves to the next node, the statement waiting on the hung node fails at once rather
// than after the 30 s read timeout, and the inbox's insert caught by it is done again on the
// next node, so the caller sees success. Without the probe the insert waits for the read
// timeout and fails.
func TestProbeLeavesAHungNode(t *testing.T) {
	t.Parallel()
	dsn := storetest.MySQLDSN(t)
	cfg, err := mysqldrv.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	hung := startFreezer(t, cfg.Addr)
	var logs syncBuf
	ctx := context.Background()
	db, err := store.OpenWith(ctx, "mysql", dsn, store.OpenOptions{Hosts: []string{hung.l.Addr().String(), cfg.Addr},
		Log: slog.New(slog.NewTextHandler(&logs, nil)), ProbeEvery: 200 * time.Millisecond, ProbeTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := db.InsertMessages(ctx, []string{"<a>before</a>"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	hung.frozen.Store(true)
	start := time.Now()
	ictx, cancel := context.WithTimeout(ctx, 20*time.Second) // a hang detector, under the read timeout
	defer cancel()
	ids, err := db.InsertMessages(ictx, []string{"<a>during</a>"}, time.Now())
	took := time.Since(start)
	t.Logf("an insert caught by the hang took %s: ids %v, err %v", took.Round(time.Millisecond), ids, err)
	if err != nil {
		t.Fatalf("the insert caught by the hang failed after %s: %v\n%s", took, err, logs.String())
	}
	n := db.Nodes()
	if n.Current() != cfg.Addr || n.Failovers()[store.FailoverFailed] != 1 {
		t.Errorf("after the hang: on %s with moves %v, want %s after one failed", n.Current(), n.Failovers(), cfg.Addr)
	}
	if !strings.Contains(logs.String(), "does not answer the probe") {
		t.Errorf("the log does not say the probe marked the node down:\n%s", logs.String())
	}
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

var _ io.Writer = (*syncBuf)(nil)
