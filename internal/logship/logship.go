// Package logship ships msgx's log lines to logstash and ties the lines of one message's
// journey together (seed §8).
//
// Shipper is an io.Writer for a slog JSON handler: each line goes into a bounded queue and a
// goroutine writes the queue to logstash over TCP (a tcp input with the json_lines codec),
// reconnecting with backoff. When logstash is slow or down the queue fills and further lines
// are dropped and counted (msgx_log_dropped_total): logging never blocks the pump or the
// dispatcher. Tee sends each record to several handlers (stderr and logstash).
//
// Correlate adds trace_id to every line that carries a msg_id whose message came with a W3C
// traceparent header (and trace_ids to a line carrying msg_ids), from Traces, the memory of
// msg_id → trace id that the store and the inbox fill as they store and read messages.
package logship

import (
	"context"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"msgx/internal/pipeline"
)

var dropped = prometheus.NewCounter(prometheus.CounterOpts{
	Name: "msgx_log_dropped_total",
	Help: "Log lines not shipped to logstash (log.logstash.addr) because its queue was full: logstash slow or down.",
})

// Collectors returns the log shipping's metrics: msgx_log_dropped_total.
func Collectors() []prometheus.Collector { return []prometheus.Collector{dropped} }

// Shipper queues log lines and writes them to a logstash TCP input.
type Shipper struct {
	addr    string
	queue   chan []byte
	dropped atomic.Uint64
	// Dial opens the connection; net.Dialer's by default. Tests replace it.
	Dial func(ctx context.Context, addr string) (net.Conn, error)
	// OnState, when set, is told each connect and disconnect (for a log line elsewhere: the
	// shipper does not log through itself).
	OnState func(connected bool, err error)
}

// New returns a shipper to addr (host:port) holding at most size lines while logstash is
// slow or down.
func New(addr string, size int) *Shipper {
	if size < 1 {
		size = 1
	}
	d := &net.Dialer{Timeout: 5 * time.Second}
	return &Shipper{addr: addr, queue: make(chan []byte, size), Dial: func(ctx context.Context, addr string) (net.Conn, error) {
		return d.DialContext(ctx, "tcp", addr)
	}}
}

// Write queues one line (a copy of p) and never blocks: when the queue is full the line is
// dropped and counted. It always reports success, so a handler writing to it never fails.
func (s *Shipper) Write(p []byte) (int, error) {
	line := make([]byte, len(p), len(p)+1)
	copy(line, p)
	if len(line) == 0 || line[len(line)-1] != '\n' {
		line = append(line, '\n')
	}
	select {
	case s.queue <- line:
	default:
		s.dropped.Add(1)
		dropped.Inc()
	}
	return len(p), nil
}

// Dropped returns how many lines this shipper dropped.
func (s *Shipper) Dropped() uint64 { return s.dropped.Load() }

// Run writes queued lines to logstash until ctx ends, reconnecting with backoff (0.5 s
// doubling to 10 s) whenever the connection fails. At the end it writes what is queued for up
// to two seconds more, then closes.
func (s *Shipper) Run(ctx context.Context) {
	var conn net.Conn
	failures := 0 // consecutive failed dials
	defer func() {
		if conn != nil {
			conn.SetWriteDeadline(time.Now().Add(2 * time.Second))
			for {
				select {
				case line := <-s.queue:
					if _, err := conn.Write(line); err != nil {
						conn.Close()
						return
					}
				default:
					conn.Close()
					return
				}
			}
		}
	}()
	for {
		if conn == nil {
			c, err := s.Dial(ctx, s.addr)
			if err != nil {
				if s.OnState != nil {
					s.OnState(false, err)
				}
				failures++
				if !pipeline.Sleep(ctx, pipeline.Backoff(failures, 500*time.Millisecond, 10*time.Second)) {
					return
				}
				continue
			}
			conn, failures = c, 0
			if s.OnState != nil {
				s.OnState(true, nil)
			}
		}
		select {
		case <-ctx.Done():
			return
		case line := <-s.queue:
			conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
			if _, err := conn.Write(line); err != nil {
				// The line is lost with the connection; count it with the drops.
				s.dropped.Add(1)
				dropped.Inc()
				conn.Close()
				conn = nil
				if s.OnState != nil {
					s.OnState(false, err)
				}
			}
		}
	}
}

// Tee returns a handler that passes each record to every one of hs that is enabled for it.
func Tee(hs ...slog.Handler) slog.Handler { return tee(hs) }

type tee []slog.Handler

func (t tee) Enabled(ctx context.Context, l slog.Level) bool {
	for _, h := range t {
		if h.Enabled(ctx, l) {
			return true
		}
	}
	return false
}

func (t tee) Handle(ctx context.Context, r slog.Record) error {
	var first error
	for _, h := range t {
		if h.Enabled(ctx, r.Level) {
			if err := h.Handle(ctx, r.Clone()); err != nil && first == nil {
				first = err
			}
		}
	}
	return first
}

func (t tee) WithAttrs(as []slog.Attr) slog.Handler {
	out := make(tee, len(t))
	for i, h := range t {
		out[i] = h.WithAttrs(as)
	}
	return out
}

func (t tee) WithGroup(name string) slog.Handler {
	out := make(tee, len(t))
	for i, h := range t {
		out[i] = h.WithGroup(name)
	}
	return out
}

// Traces remembers the trace ids of the most recent messages (msg_id → trace id), a bounded
// number of them, oldest forgotten first. It is safe for concurrent use.
type Traces struct {
	mu    sync.Mutex
	ids   map[int64]string
	order []int64 // ring of remembered ids
	next  int
}

// NewTraces returns a memory of at most n trace ids.
func NewTraces(n int) *Traces {
	if n < 1 {
		n = 1
	}
	return &Traces{ids: make(map[int64]string, n), order: make([]int64, 0, n)}
}

// Remember records the trace id of message id ("" is ignored).
func (t *Traces) Remember(id int64, trace string) {
	if trace == "" {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.ids[id]; ok {
		t.ids[id] = trace
		return
	}
	if len(t.order) < cap(t.order) {
		t.order = append(t.order, id)
	} else {
		delete(t.ids, t.order[t.next])
		t.order[t.next] = id
		t.next = (t.next + 1) % len(t.order)
	}
	t.ids[id] = trace
}

// Lookup returns the trace id of message id, or "".
func (t *Traces) Lookup(id int64) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.ids[id]
}
