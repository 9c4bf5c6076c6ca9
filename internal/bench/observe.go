package bench

import (
	"context"
	"log/slog"
	"runtime"
	"sync"
	"time"

	"msgx/internal/pipeline"
	"msgx/internal/target"
)

// HeapSampler records the highest heap in use (runtime.MemStats.HeapInuse) seen while it runs.
type HeapSampler struct {
	done chan struct{}
	wg   sync.WaitGroup
	mu   sync.Mutex
	peak uint64
}

// StartHeapSampler samples the heap every interval until Stop.
func StartHeapSampler(interval time.Duration) *HeapSampler {
	h := &HeapSampler{done: make(chan struct{})}
	h.sample()
	h.wg.Go(func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-h.done:
				return
			case <-t.C:
				h.sample()
			}
		}
	})
	return h
}

func (h *HeapSampler) sample() {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	h.mu.Lock()
	h.peak = max(h.peak, ms.HeapInuse)
	h.mu.Unlock()
}

// Stop ends the sampling (after one last sample) and returns the peak in bytes.
func (h *HeapSampler) Stop() uint64 {
	close(h.done)
	h.wg.Wait()
	h.sample()
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.peak
}

// Deliveries records when each event was delivered, two ways: when its sink acknowledged it
// (recordingSink, which also learns the event's message), and when the dispatcher had
// committed it SENT (its "events sent" log record, written right after that commit and
// listing the event ids). The commit is what SENT means; the acknowledgement is the fallback
// should the log record not name the events.
type Deliveries struct {
	clock pipeline.Clock

	mu        sync.Mutex
	msgOf     map[int64]int64     // event id → message id
	targetOf  map[int64]string    // event id → target
	acked     map[int64]time.Time // event id → sink acknowledgement
	committed map[int64]time.Time // event id → SENT committed
}

// NewDeliveries returns an empty record.
func NewDeliveries(clock pipeline.Clock) *Deliveries {
	return &Deliveries{clock: clock, msgOf: map[int64]int64{}, targetOf: map[int64]string{},
		acked: map[int64]time.Time{}, committed: map[int64]time.Time{}}
}

// Sink wraps s so that every record it delivers is noted.
func (d *Deliveries) Sink(s target.Sink) target.Sink { return &recordingSink{inner: s, d: d} }

type recordingSink struct {
	inner target.Sink
	d     *Deliveries
}

// Send implements target.Sink: the records the inner sink delivered are noted as acknowledged.
func (r *recordingSink) Send(ctx context.Context, recs []target.Record) (int, error) {
	n, err := r.inner.Send(ctx, recs)
	now := r.d.clock.Now()
	r.d.mu.Lock()
	for _, rec := range recs[:max(0, min(n, len(recs)))] {
		r.d.msgOf[rec.EventID] = rec.MsgID
		r.d.targetOf[rec.EventID] = rec.Target
		r.d.acked[rec.EventID] = now
	}
	r.d.mu.Unlock()
	return n, err
}

// Close implements target.Sink.
func (r *recordingSink) Close() error { return r.inner.Close() }

// sentLogMessage is the dispatcher's log message after it committed events SENT, with the
// attribute sentLogIDs listing them.
const (
	sentLogMessage = "events sent"
	sentLogIDs     = "event_ids"
)

// Handler wraps next so that the dispatcher's "events sent" records are noted as commits;
// every record still goes to next when next takes its level.
func (d *Deliveries) Handler(next slog.Handler) slog.Handler { return &sentHandler{next: next, d: d} }

type sentHandler struct {
	next slog.Handler
	d    *Deliveries
}

func (h *sentHandler) Enabled(ctx context.Context, l slog.Level) bool { return true }

func (h *sentHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == sentLogMessage {
		at := h.d.clock.Now()
		r.Attrs(func(a slog.Attr) bool {
			if a.Key != sentLogIDs {
				return true
			}
			if ids, ok := a.Value.Any().([]int64); ok {
				h.d.mu.Lock()
				for _, id := range ids {
					h.d.committed[id] = at
				}
				h.d.mu.Unlock()
			}
			return false
		})
	}
	if h.next.Enabled(ctx, r.Level) {
		return h.next.Handle(ctx, r)
	}
	return nil
}

func (h *sentHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &sentHandler{next: h.next.WithAttrs(as), d: h.d}
}

func (h *sentHandler) WithGroup(name string) slog.Handler {
	return &sentHandler{next: h.next.WithGroup(name), d: h.d}
}

// Uncommitted counts the events on targets a sink acknowledged but whose SENT commit has not
// been seen.
func (d *Deliveries) Uncommitted(targets map[string]bool) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for ev := range d.acked {
		if _, ok := d.committed[ev]; !ok && targets[d.targetOf[ev]] {
			n++
		}
	}
	return n
}

// SentAt returns, per message, when the last of its events on the given targets was SENT,
// and whether every one of those times is a commit seen in the log (false: at least one is
// the sink's acknowledgement).
func (d *Deliveries) SentAt(targets map[string]bool) (map[int64]time.Time, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := map[int64]time.Time{}
	allCommits := true
	for ev, msg := range d.msgOf {
		if !targets[d.targetOf[ev]] {
			continue
		}
		at, ok := d.committed[ev]
		if !ok {
			at, allCommits = d.acked[ev], false
		}
		if at.After(out[msg]) {
			out[msg] = at
		}
	}
	return out, allCommits
}
