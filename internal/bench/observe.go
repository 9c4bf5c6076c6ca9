package bench

import (
	"context"
	"runtime"
	"slices"
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
// committed it SENT (the dispatcher's OnSent, called right after that commit). The commit is
// what SENT means; the acknowledgement is the fallback should a commit not be seen.
type Deliveries struct {
	clock pipeline.Clock

	mu        sync.Mutex
	msgOf     map[sent]int64     // an event of a target → its message id
	acked     map[sent]time.Time // → its sink's acknowledgement
	committed map[sent]time.Time // → its SENT commit
	pumped    []time.Time        // the pump's commits that inserted events, in order
}

// sent is an event of a target: the targets that take a shared event share its id.
type sent struct {
	target string
	id     int64
}

// NewDeliveries returns an empty record.
func NewDeliveries(clock pipeline.Clock) *Deliveries {
	return &Deliveries{clock: clock, msgOf: map[sent]int64{}, acked: map[sent]time.Time{}, committed: map[sent]time.Time{}}
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
		k := sent{rec.Target, rec.EventID}
		r.d.msgOf[k] = rec.MsgID
		r.d.acked[k] = now
	}
	r.d.mu.Unlock()
	return n, err
}

// Close implements target.Sink.
func (r *recordingSink) Close() error { return r.inner.Close() }

// Sent is the dispatcher's OnSent: it notes the events a commit has just marked SENT.
func (d *Deliveries) Sent(target string, ids []int64) {
	at := d.clock.Now()
	d.mu.Lock()
	for _, id := range ids {
		d.committed[sent{target, id}] = at
	}
	d.mu.Unlock()
}

// PumpCommitted notes a commit of the pump that inserted events (the pump's OnEvents, called
// right after it, before the dispatcher's Wake).
func (d *Deliveries) PumpCommitted() {
	at := d.clock.Now()
	d.mu.Lock()
	d.pumped = append(d.pumped, at)
	d.mu.Unlock()
}

// pumpCommitAfter returns the first commit of the pump noted at or after t: the commit of the
// batch a message decided at t was in (the pump commits its batches one after the other, and
// a message with events is in a batch that inserted events). False when none was noted.
func (d *Deliveries) pumpCommitAfter(t time.Time) (time.Time, bool) {
	i, _ := slices.BinarySearchFunc(d.pumped, t, func(c, t time.Time) int { return c.Compare(t) })
	if i == len(d.pumped) {
		return time.Time{}, false
	}
	return d.pumped[i], true
}

// Uncommitted counts the events on targets a sink acknowledged but whose SENT commit has not
// been seen.
func (d *Deliveries) Uncommitted(targets map[string]bool) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for ev := range d.acked {
		if _, ok := d.committed[ev]; !ok && targets[ev.target] {
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
		if !targets[ev.target] {
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
