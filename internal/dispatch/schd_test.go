package dispatch_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"msgx/internal/dispatch"
	"msgx/internal/pipeline"
	"msgx/internal/store"
	"msgx/internal/store/storetest"
)

const schd = "KAFKA_SCHD"

func schdHarness(t *testing.T, db *store.DB, opt dispatch.Options) *harness {
	t.Helper()
	opt.SchdTarget = schd
	if opt.Policy.MaxAttempts == 0 {
		opt.Policy = policy
	}
	return newHarness(t, db, opt, schd)
}

// flightRec inserts a schedule event for flight key with version v.
func flightRec(t *testing.T, db *store.DB, key string, v int) int64 {
	t.Helper()
	payload := fmt.Sprintf(`{"FLID":%q,"v":%d}`, key, v)
	if key == "" {
		payload = fmt.Sprintf(`{"v":%d}`, v)
	}
	return insert(t, db, ev{target: schd, kind: "schd", key: key, payload: payload})
}

func TestSchdBatchKeepsNewestPerFlight(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		h := schdHarness(t, db, dispatch.Options{})
		all := []int64{
			flightRec(t, db, "1", 1),
			flightRec(t, db, "2", 1),
			flightRec(t, db, "1", 2),
			flightRec(t, db, "", 1), // no key: kept as it is
			flightRec(t, db, "3", 1),
			flightRec(t, db, "2", 2),
			flightRec(t, db, "", 2),
		}
		n, wait := h.flush(t, false) // no flush yet: the first one is due at once
		if n != len(all) || wait != 0 {
			t.Fatalf("flush: sent %d, wait %v; want %d, 0", n, wait, len(all))
		}
		sink := h.sinks[schd]
		if sink.numCalls() != 1 {
			t.Fatalf("%d sends, want one", sink.numCalls())
		}
		recs := sink.last(t)
		if len(recs) != 1 {
			t.Fatalf("%d records, want one", len(recs))
		}
		r := recs[0]
		want := `[{"FLID":"1","v":2},{"v":1},{"FLID":"3","v":1},{"FLID":"2","v":2},{"v":2}]`
		if string(r.Value) != want {
			t.Fatalf("batch value\n got %s\nwant %s", r.Value, want)
		}
		if r.Key != "" || r.EventID != all[len(all)-1] || r.Target != schd || r.Delete {
			t.Fatalf("batch record: %+v", r)
		}
		wantState(t, db, "SENT", all...) // the superseded ones too
		lines := h.log.lines(t, "schd batch sent")
		if len(lines) != 1 || lines[0]["count"] != 7.0 || lines[0]["records"] != 5.0 ||
			lines[0]["first_event_id"] != float64(all[0]) || lines[0]["last_event_id"] != float64(all[6]) {
			t.Fatalf("batch log: %v", lines)
		}
	})
}

func TestSchdPeriodAndLimit(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		h := schdHarness(t, db, dispatch.Options{FlushPeriod: 3 * time.Second, FlushLimit: 3})
		flightRec(t, db, "1", 1)
		if n, _ := h.flush(t, false); n != 1 {
			t.Fatalf("first flush sent %d", n)
		}
		// Within the period, under the limit: nothing goes.
		h.clock.Add(time.Second)
		a := flightRec(t, db, "1", 2)
		b := flightRec(t, db, "2", 1)
		if n, wait := h.flush(t, false); n != 0 || wait != 2*time.Second {
			t.Fatalf("under the limit: sent %d, wait %v; want 0, 2s", n, wait)
		}
		// The limit reached flushes at once, within the period.
		c := flightRec(t, db, "3", 1)
		d := flightRec(t, db, "4", 1) // one more than the limit: left for the next batch
		if n, _ := h.flush(t, false); n != 3 {
			t.Fatalf("at the limit: sent %d, want 3", n)
		}
		wantState(t, db, "SENT", a, b, c)
		wantState(t, db, "PENDING", d)
		// The last flush moved to now: the leftover waits a full period.
		if n, wait := h.flush(t, false); n != 0 || wait != 3*time.Second {
			t.Fatalf("after the limit flush: sent %d, wait %v; want 0, 3s", n, wait)
		}
		// force sends regardless of the period.
		if n, _ := h.flush(t, true); n != 1 {
			t.Fatalf("forced flush sent %d", n)
		}
		// At the period's end, an empty outbox sends nothing and leaves the last flush.
		h.clock.Add(3 * time.Second)
		calls := h.sinks[schd].numCalls()
		if n, wait := h.flush(t, false); n != 0 || wait != dispatch.DefaultPollInterval || h.sinks[schd].numCalls() != calls {
			t.Fatalf("empty flush: sent %d, wait %v", n, wait)
		}
		e := flightRec(t, db, "5", 1)
		if n, _ := h.flush(t, false); n != 1 {
			t.Fatalf("event after a quiet period: sent %d, want 1 at once", n)
		}
		wantState(t, db, "SENT", e)
	})
}

func TestSchdFailureBacksOffTheWholeBatch(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		h := schdHarness(t, db, dispatch.Options{FlushPeriod: 3 * time.Second, FlushLimit: 10})
		sink := h.sinks[schd]
		first := []int64{flightRec(t, db, "1", 1), flightRec(t, db, "2", 1), flightRec(t, db, "1", 2)}
		sink.failAll(errDown)
		if n, wait := h.flush(t, false); n != 0 || wait != time.Second {
			t.Fatalf("failed flush: sent %d, wait %v; want 0, 1s", n, wait)
		}
		for _, id := range first {
			r := get(t, db, id)
			if r.State != "PENDING" || r.Attempts != 1 || !r.NextAttemptAt.Time.Equal(t0.Add(time.Second)) ||
				!r.FirstFailedAt.Time.Equal(t0) || r.Class.String != "INFRA" {
				t.Fatalf("event %d after a failed batch: %+v", id, r)
			}
		}
		// A batch whose head is not due is not claimed, even forced, even with new events.
		late := flightRec(t, db, "3", 1)
		h.clock.Add(500 * time.Millisecond)
		calls := sink.numCalls()
		for _, force := range []bool{false, true} {
			if n, wait := h.flush(t, force); n != 0 || wait != 500*time.Millisecond || sink.numCalls() != calls {
				t.Fatalf("head not due (force %v): sent %d, wait %v, calls %d→%d", force, n, wait, calls, sink.numCalls())
			}
		}
		if r := get(t, db, late); r.Attempts != 0 {
			t.Fatalf("unclaimed event charged: %+v", r)
		}
		// Second failure: the batch (now with the late event) backs off 2s together.
		h.clock.Add(500 * time.Millisecond)
		if _, wait := h.flush(t, false); wait != 2*time.Second {
			t.Fatalf("second failure: wait %v, want 2s", wait)
		}
		if r := get(t, db, first[0]); r.Attempts != 2 || !r.FirstFailedAt.Time.Equal(t0) {
			t.Fatalf("head after the second failure: %+v", r)
		}
		if r := get(t, db, late); r.Attempts != 1 || !r.FirstFailedAt.Time.Equal(t0.Add(time.Second)) {
			t.Fatalf("late event after the second failure: %+v", r)
		}
		// The last flush did not move on failure: when the backoff ends at t0+3s the batch goes
		// at once; had the failure at t0+1s moved it, the period would hold it until t0+4s.
		h.clock.Add(2 * time.Second)
		sink.succeed()
		if n, _ := h.flush(t, false); n != 4 {
			t.Fatalf("recovered: sent %d, want 4", n)
		}
		wantState(t, db, "SENT", append(first, late)...)
		if got := string(sink.last(t)[0].Value); got != `[{"FLID":"2","v":1},{"FLID":"1","v":2},{"FLID":"3","v":1}]` {
			t.Fatalf("recovered batch %s", got)
		}
		warn := h.log.lines(t, "schd batch failed")
		if len(warn) != 2 || warn[0]["level"] != "WARN" || warn[0]["count"] != 3.0 {
			t.Fatalf("failure log: %v", warn)
		}
	})
}

func TestSchdLastFlushMovesOnlyOnSuccess(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		h := schdHarness(t, db, dispatch.Options{FlushPeriod: 3 * time.Second, FlushLimit: 100})
		sink := h.sinks[schd]
		flightRec(t, db, "1", 1)
		h.flush(t, false) // success at t0
		h.clock.Add(3 * time.Second)
		a := flightRec(t, db, "1", 2)
		sink.failAll(errDown)
		if _, wait := h.flush(t, false); wait != time.Second {
			t.Fatalf("failure at t0+3s: wait %v", wait)
		}
		// t0+3.5s: new event, but the head is backing off.
		h.clock.Add(500 * time.Millisecond)
		b := flightRec(t, db, "2", 1)
		// t0+4s: due. Had the failure moved the last flush to t0+3s, the period would hold the
		// batch until t0+6s.
		h.clock.Add(500 * time.Millisecond)
		sink.succeed()
		if n, _ := h.flush(t, false); n != 2 {
			t.Fatalf("retry at t0+4s sent %d, want 2", n)
		}
		wantState(t, db, "SENT", a, b)
		// Success moved it: the next event waits until t0+7s.
		h.clock.Add(time.Second)
		flightRec(t, db, "3", 1)
		if n, wait := h.flush(t, false); n != 0 || wait != 2*time.Second {
			t.Fatalf("after the success: sent %d, wait %v; want 0, 2s", n, wait)
		}
	})
}

func TestSchdWholeBatchDead(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		p := policy
		p.MaxAttempts = 2
		h := schdHarness(t, db, dispatch.Options{Policy: p})
		sink := h.sinks[schd]
		batch := []int64{flightRec(t, db, "1", 1), flightRec(t, db, "1", 2), flightRec(t, db, "2", 1)}
		sink.failAll(errDown)
		_, wait := h.flush(t, true)
		h.clock.Add(wait)
		if n, wait := h.flush(t, true); n != 0 || wait != 0 {
			t.Fatalf("second failure: sent %d, wait %v; want 0, 0", n, wait)
		}
		for _, id := range batch {
			r := get(t, db, id)
			if r.State != "DEAD" || r.Class.String != "EXHAUSTED" || r.Attempts != 2 {
				t.Fatalf("event %d: %+v", id, r)
			}
		}
		dead := h.log.lines(t, "schd batch dead")
		if len(dead) != 1 || dead[0]["level"] != "ERROR" || dead[0]["count"] != 3.0 {
			t.Fatalf("dead log: %v", dead)
		}
		// The target moves on.
		sink.succeed()
		next := flightRec(t, db, "1", 3)
		if n, _ := h.flush(t, true); n != 1 {
			t.Fatalf("after the dead batch sent %d", n)
		}
		wantState(t, db, "SENT", next)
		// Replay brings the batch back; it goes out again, newest per flight.
		if moved, _, err := h.d.Replay(context.Background(), schd, nil); err != nil || moved != 3 {
			t.Fatalf("replay moved %d, %v", moved, err)
		}
		if n, _ := h.flush(t, true); n != 3 {
			t.Fatalf("replayed batch sent %d", n)
		}
		if got := string(sink.last(t)[0].Value); got != `[{"FLID":"1","v":2},{"FLID":"2","v":1}]` {
			t.Fatalf("replayed batch %s", got)
		}
	})
}

func TestSchdRejectedBatchDeadAtOnce(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		h := schdHarness(t, db, dispatch.Options{})
		a := flightRec(t, db, "1", 1)
		h.sinks[schd].failAll(pipeline.Errorf(pipeline.Rejected, "record too large"))
		h.flush(t, true)
		if r := get(t, db, a); r.State != "DEAD" || r.Class.String != "REJECTED" || r.Attempts != 1 {
			t.Fatalf("rejected batch: %+v", r)
		}
	})
}

func TestSchdHeadDeadline(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		p := pipeline.RetryPolicy{MaxAttempts: 100, Steps: []time.Duration{time.Hour}, HeadDeadline: 10 * time.Minute}
		h := schdHarness(t, db, dispatch.Options{Policy: p})
		failed := []int64{flightRec(t, db, "1", 1), flightRec(t, db, "2", 1)}
		h.sinks[schd].failAll(errDown)
		h.flush(t, true)
		joined := flightRec(t, db, "3", 1) // never part of a failed send
		h.clock.Add(10*time.Minute + time.Second)
		calls := h.sinks[schd].numCalls()
		if n, wait := h.flush(t, false); n != 0 || wait != 0 || h.sinks[schd].numCalls() != calls {
			t.Fatalf("escalation: sent %d, wait %v", n, wait)
		}
		for _, id := range failed {
			if r := get(t, db, id); r.State != "DEAD" || r.Class.String != "EXHAUSTED" {
				t.Fatalf("event %d: %+v", id, r)
			}
		}
		wantState(t, db, "PENDING", joined)
		h.sinks[schd].succeed()
		if n, _ := h.flush(t, false); n != 1 {
			t.Fatalf("after escalation sent %d", n)
		}
	})
}

// The flush claims at most FlushLimit events, in EVENT_ID order.
func TestSchdClaimsUpToTheLimitInOrder(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		h := schdHarness(t, db, dispatch.Options{FlushLimit: 4})
		var all []int64
		for i := 0; i < 10; i++ {
			all = append(all, flightRec(t, db, fmt.Sprint(i), 1))
		}
		var batches [][]int64
		for {
			n, _ := h.flush(t, true)
			if n == 0 {
				break
			}
			batches = append(batches, []int64{h.sinks[schd].last(t)[0].EventID, int64(n)})
		}
		want := [][]int64{{all[3], 4}, {all[7], 4}, {all[9], 2}}
		if !slices.EqualFunc(batches, want, slices.Equal) {
			t.Fatalf("batches (newest id, size) %v, want %v", batches, want)
		}
	})
}
