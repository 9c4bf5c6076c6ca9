package bench

import (
	"context"
	"testing"
	"time"

	"msgx/internal/target"
)

type stepClock struct{ t time.Time }

func (c *stepClock) Now() time.Time { c.t = c.t.Add(time.Millisecond); return c.t }

type okSink struct{}

func (okSink) Send(_ context.Context, recs []target.Record) (int, error) { return len(recs), nil }
func (okSink) Close() error                                              { return nil }

// TestDeliveriesPreferTheCommit: SENT is when the dispatcher reported its commit; an event whose
// commit was not seen falls back to its sink's acknowledgement, and says so.
func TestDeliveriesPreferTheCommit(t *testing.T) {
	clock := &stepClock{t: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}
	d := NewDeliveries(clock)
	sink := d.Sink(okSink{})
	// message 7 has events 1 (FLOP) and 2 (NOTIFY); message 8 has event 3 (FLOP) and event 4 on
	// the batched target, which is not asked for.
	sink.Send(context.Background(), []target.Record{{EventID: 1, MsgID: 7, Target: "F"}, {EventID: 3, MsgID: 8, Target: "F"}}) // acked at +1ms
	sink.Send(context.Background(), []target.Record{{EventID: 2, MsgID: 7, Target: "N"}})                                      // +2ms
	sink.Send(context.Background(), []target.Record{{EventID: 4, MsgID: 8, Target: "S"}})                                      // +3ms
	d.Sent("F", []int64{1, 3})                                                                                                 // +4ms
	targets := map[string]bool{"F": true, "N": true}
	if n := d.Uncommitted(targets); n != 1 {
		t.Fatalf("Uncommitted = %d, want 1 (event 2)", n)
	}
	sent, commits := d.SentAt(targets)
	base := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	if commits {
		t.Error("all commits claimed though event 2's was never seen")
	}
	if got := sent[7].Sub(base); got != 4*time.Millisecond {
		t.Errorf("message 7 SENT at +%v, want +4ms (event 1's commit, after event 2's ack at +2ms)", got)
	}
	if got := sent[8].Sub(base); got != 4*time.Millisecond {
		t.Errorf("message 8 SENT at +%v, want +4ms: the batched target is not counted", got)
	}
	d.Sent("N", []int64{2}) // +5ms
	sent, commits = d.SentAt(targets)
	if !commits || sent[7].Sub(base) != 5*time.Millisecond {
		t.Errorf("after event 2's commit: message 7 at +%v, all commits %v", sent[7].Sub(base), commits)
	}
}

func TestHeapSamplerSeesTheHeap(t *testing.T) {
	h := StartHeapSampler(time.Millisecond)
	buf := make([]byte, 8<<20)
	for i := range buf {
		buf[i] = byte(i)
	}
	// Wait for the sampling goroutine (not Stop's last sample) to have seen buf.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		h.mu.Lock()
		seen := h.peak >= 8<<20
		h.mu.Unlock()
		if seen || time.Now().After(deadline) {
			break
		}
	}
	peak := h.Stop()
	if peak < 8<<20 {
		t.Errorf("peak %d bytes, below the 8 MB held", peak)
	}
	_ = buf[len(buf)-1]
}
