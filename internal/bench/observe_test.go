package bench

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"msgx/internal/target"
	"msgx/internal/testkit"
)

type okSink struct{}

func (okSink) Send(_ context.Context, recs []target.Record) (int, error) { return len(recs), nil }
func (okSink) Close() error                                              { return nil }

// TestDeliveriesPreferTheCommit: SENT is when the dispatcher reported its commit; an event whose
// commit was not seen falls back to its sink's acknowledgement, and says so.
func TestDeliveriesPreferTheCommit(t *testing.T) {
	clock := testkit.NewStepClock(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), time.Millisecond) // each Now moves it 1 ms
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

// The sampler's ticker runs in synctest's fake time: one tick after buf is filled, the sampling
// goroutine (not Stop's last sample) has seen it, with no real wait.
func TestHeapSamplerSeesTheHeap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := StartHeapSampler(time.Millisecond)
		buf := make([]byte, 8<<20)
		for i := range buf {
			buf[i] = byte(i)
		}
		time.Sleep(time.Millisecond) // one tick
		synctest.Wait()              // the tick's sample is taken
		h.mu.Lock()
		seen := h.peak
		h.mu.Unlock()
		peak := h.Stop()
		if seen < 8<<20 || peak < 8<<20 {
			t.Errorf("peak %d bytes by the sampling goroutine, %d at Stop, below the 8 MB held", seen, peak)
		}
		_ = buf[len(buf)-1]
	})
}

// TestStagesSplitRequestToSent: a message's request→SENT splits at the inbox's answer, at the
// commit of the pump's batch it was decided in (the first commit noted after its decision),
// at its sink's acknowledgement and at the dispatcher's SENT commit; the batched target is
// left out of the stages.
func TestStagesSplitRequestToSent(t *testing.T) {
	base := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	clock := testkit.NewStepClock(base, time.Millisecond)
	d := NewDeliveries(clock)
	sink := d.Sink(okSink{})
	d.PumpCommitted() // +1ms: an earlier batch
	decided := map[int64]time.Time{7: base.Add(time.Millisecond + 500*time.Microsecond)}
	d.PumpCommitted()                                                                     // +2ms: message 7's batch
	d.PumpCommitted()                                                                     // +3ms: a later one
	sink.Send(context.Background(), []target.Record{{EventID: 1, MsgID: 7, Target: "F"}}) // acked at +4ms
	d.Sent("F", []int64{1})                                                               // +5ms
	sink.Send(context.Background(), []target.Record{{EventID: 2, MsgID: 7, Target: "KAFKA_SCHD"}})
	d.Sent("KAFKA_SCHD", []int64{2}) // +7ms
	posted := map[int64]postTimes{7: {start: base.Add(-10 * time.Millisecond), answered: base.Add(-4 * time.Millisecond)}}
	events := []event{{id: 1, msg: 7, target: "F"}, {id: 2, msg: 7, target: "KAFKA_SCHD"}}
	l, err := d.targetLatencies(context.Background(), posted, events, decided)
	if err != nil {
		t.Fatal(err)
	}
	var r Result
	l.report(&r)
	want := Stages{Accept: TargetLatency{Messages: 1, P50Ms: 6, P99Ms: 6, P999Ms: 6},
		Process: TargetLatency{Messages: 1, P50Ms: 6, P99Ms: 6, P999Ms: 6},
		Deliver: TargetLatency{Messages: 1, P50Ms: 3, P99Ms: 3, P999Ms: 3},
		Send:    TargetLatency{Messages: 1, P50Ms: 2, P99Ms: 2, P999Ms: 2}}
	if *r.Stages != want {
		t.Errorf("stages %+v, want %+v", *r.Stages, want)
	}
	if got := r.Targets["KAFKA_SCHD"].P50Ms; got != 17 {
		t.Errorf("KAFKA_SCHD request→SENT %v ms, want 17", got)
	}
}
