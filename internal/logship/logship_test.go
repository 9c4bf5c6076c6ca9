package logship_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"msgx/internal/logship"
)

const trace = "4bf92f3577b34da6a3ce929d0e0e4736"

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// run starts s until the test ends.
func run(t *testing.T, s *logship.Shipper) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

func logger(s *logship.Shipper, traces *logship.Traces) *slog.Logger {
	return slog.New(logship.Correlate(logship.Tee(slog.NewTextHandler(io.Discard, nil), slog.NewJSONHandler(s, nil)), traces)).With("service", "msgx-test")
}

// readLine reads one JSON line from r, failing the test after a bounded wait.
func readLine(t *testing.T, conn net.Conn, r *bufio.Reader) map[string]any {
	t.Helper()
	conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	b, err := r.ReadBytes('\n')
	if err != nil {
		t.Fatalf("no line from the shipper: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("line %q is not JSON: %v", b, err)
	}
	return m
}

func accept(t *testing.T, ln net.Listener) net.Conn {
	t.Helper()
	ln.(*net.TCPListener).SetDeadline(time.Now().Add(30 * time.Second))
	c, err := ln.Accept()
	if err != nil {
		t.Fatalf("the shipper never connected: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// A local logstash gets every line as JSON, with the message's trace id on the lines of its
// journey.
func TestShipsJSONLinesWithTraceIDs(t *testing.T) {
	ln := listen(t)
	s := logship.New(ln.Addr().String(), 64)
	run(t, s)
	traces := logship.NewTraces(10)
	traces.Remember(7, trace)
	log := logger(s, traces)
	log.Info("message SUCCEEDED", "msg_id", int64(7), "type_tag", "FLOP-CHOT")
	log.With("msg_id", int64(7)).Warn("message FAILED")
	log.Info("events sent", "target", "KAFKA_FLOP", "msg_ids", []int64{7, 8, 7})
	log.Info("message received", "msg_id", int64(8))
	conn := accept(t, ln)
	r := bufio.NewReader(conn)
	l1, l2, l3, l4 := readLine(t, conn, r), readLine(t, conn, r), readLine(t, conn, r), readLine(t, conn, r)
	if l1["msg"] != "message SUCCEEDED" || l1["msg_id"] != float64(7) || l1["trace_id"] != trace || l1["service"] != "msgx-test" {
		t.Fatalf("first line: %v", l1)
	}
	if l2["trace_id"] != trace {
		t.Fatalf("a logger's msg_id: %v", l2)
	}
	if ids, _ := l3["trace_ids"].([]any); len(ids) != 1 || ids[0] != trace {
		t.Fatalf("events sent: %v", l3)
	}
	if _, ok := l4["trace_id"]; ok {
		t.Fatalf("a message without a trace got one: %v", l4)
	}
	if s.Dropped() != 0 {
		t.Fatalf("%d dropped", s.Dropped())
	}
}

// When logstash closes the connection, the shipper connects again and goes on.
func TestReconnectsAfterLogstashDropsTheConnection(t *testing.T) {
	ln := listen(t)
	s := logship.New(ln.Addr().String(), 64)
	run(t, s)
	log := logger(s, logship.NewTraces(1))
	log.Info("first")
	conn := accept(t, ln)
	if l := readLine(t, conn, bufio.NewReader(conn)); l["msg"] != "first" {
		t.Fatalf("first line %v", l)
	}
	conn.Close()
	// Lines written into the dead connection are lost; keep logging until one arrives on a
	// new connection.
	got := make(chan net.Conn, 1)
	go func() {
		ln.(*net.TCPListener).SetDeadline(time.Now().Add(30 * time.Second))
		c, err := ln.Accept()
		if err == nil {
			got <- c
		}
		close(got)
	}()
	var second net.Conn
	for i := 0; second == nil && i < 3000; i++ {
		log.Info("again")
		select {
		case second = <-got:
		case <-time.After(10 * time.Millisecond):
		}
	}
	if second == nil {
		t.Fatal("the shipper did not connect again")
	}
	defer second.Close()
	log.Info("again")
	if l := readLine(t, second, bufio.NewReader(second)); l["msg"] != "again" {
		t.Fatalf("line after reconnecting: %v", l)
	}
}

// With logstash gone, logging never blocks: the lines beyond the queue are dropped and
// counted.
func TestDropsRatherThanBlocksWhenLogstashIsDown(t *testing.T) {
	ln := listen(t)
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	s := logship.New(addr, 8)
	run(t, s)
	before := testutil.ToFloat64(logship.Collectors()[0])
	log := logger(s, logship.NewTraces(1))
	done := make(chan struct{})
	go func() {
		for i := 0; i < 1000; i++ {
			log.Info("message SUCCEEDED", "msg_id", int64(i))
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("logging blocked with logstash down")
	}
	if d := s.Dropped(); d < 1000-8 {
		t.Fatalf("%d lines dropped, want at least %d", d, 1000-8)
	}
	if d := testutil.ToFloat64(logship.Collectors()[0]) - before; d < 1000-8 {
		t.Fatalf("msgx_log_dropped_total moved by %v", d)
	}
}

func TestTraceID(t *testing.T) {
	for in, want := range map[string]string{
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01":       trace,
		" 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00 ":     trace,
		"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra": trace,
		"": "",
		"00-00000000000000000000000000000000-00f067aa0ba902b7-01":       "",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01":       "",
		"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01":       "",
		"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01":       "",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra": "",
		"00-4bf92f3577b34da6a3ce929d0e0e473-600f067aa0ba902b7-01":       "",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1":        "",
		"00-4bf92f3577b34da6a3ce929d0e0e47\u00e9-00f067aa0ba902b7-01":   "",
	} {
		got, ok := logship.TraceID(in)
		if got != want || ok != (want != "") {
			t.Errorf("TraceID(%q) = %q %v, want %q", in, got, ok, want)
		}
	}
}

func TestTracesForgetTheOldest(t *testing.T) {
	tr := logship.NewTraces(2)
	tr.Remember(1, "a")
	tr.Remember(2, "b")
	tr.Remember(2, "b2")
	tr.Remember(3, "c")
	if tr.Lookup(1) != "" || tr.Lookup(2) != "b2" || tr.Lookup(3) != "c" {
		t.Fatalf("lookups: %q %q %q", tr.Lookup(1), tr.Lookup(2), tr.Lookup(3))
	}
}
