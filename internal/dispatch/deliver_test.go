package dispatch_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"msgx/internal/dispatch"
	"msgx/internal/pipeline"
	"msgx/internal/store"
	"msgx/internal/store/storetest"
	"msgx/internal/target"
)

func TestHeadFailureBlocksOnlyItsTarget(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		h := newHarness(t, db, dispatch.Options{Policy: policy}, "KAFKA_FLOP", "REDIS_NOTIFY")
		a1 := insert(t, db, ev{target: "KAFKA_FLOP", key: "101"})
		b1 := insert(t, db, ev{target: "REDIS_NOTIFY", kind: "notify"})
		a2 := insert(t, db, ev{target: "KAFKA_FLOP", key: "102"})
		b2 := insert(t, db, ev{target: "REDIS_NOTIFY", kind: "notify"})
		flop, notify := h.sinks["KAFKA_FLOP"], h.sinks["REDIS_NOTIFY"]
		flop.failAll(errDown)

		n, wait := h.deliver(t, "KAFKA_FLOP")
		if n != 0 || wait != time.Second {
			t.Fatalf("failing head: sent %d, wait %v; want 0, 1s", n, wait)
		}
		if got := ids(flop.last(t)); !slices.Equal(got, []int64{a1, a2}) {
			t.Fatalf("flop sink got %v, want the run %v", got, []int64{a1, a2})
		}
		r := get(t, db, a1)
		if r.State != "PENDING" || r.Attempts != 1 || r.Class.String != "INFRA" || !strings.Contains(r.LastError.String, "broker down") {
			t.Fatalf("head after failure: %+v", r)
		}
		if !r.NextAttemptAt.Time.Equal(t0.Add(time.Second)) || !r.FirstFailedAt.Time.Equal(t0) {
			t.Fatalf("head next attempt %v, first failure %v", r.NextAttemptAt.Time, r.FirstFailedAt.Time)
		}
		if r := get(t, db, a2); r.Attempts != 0 || r.NextAttemptAt.Valid || r.Class.Valid {
			t.Fatalf("event behind the head was charged with the failure: %+v", r)
		}

		// While the head backs off nothing behind it goes out.
		h.clock.Add(500 * time.Millisecond)
		calls := flop.numCalls()
		if n, wait := h.deliver(t, "KAFKA_FLOP"); n != 0 || wait != 500*time.Millisecond {
			t.Fatalf("backing-off head: sent %d, wait %v; want 0, 500ms", n, wait)
		}
		if flop.numCalls() != calls {
			t.Fatal("sink called while the head backs off")
		}

		// The other target is not held up.
		if n, _ := h.deliver(t, "REDIS_NOTIFY"); n != 2 {
			t.Fatalf("other target sent %d, want 2", n)
		}
		if got := ids(notify.last(t)); !slices.Equal(got, []int64{b1, b2}) {
			t.Fatalf("notify sink got %v", got)
		}
		wantState(t, db, "SENT", b1, b2)
		if r := get(t, db, b1); !r.SentAt.Valid || !r.SentAt.Time.Equal(t0.Add(500*time.Millisecond)) {
			t.Fatalf("SENT_AT %v, want the clock's now", r.SentAt)
		}

		// Once due and the sink is back, the head goes first, then the rest, in order.
		h.clock.Add(500 * time.Millisecond)
		flop.succeed()
		if n, wait := h.deliver(t, "KAFKA_FLOP"); n != 2 || wait != 0 {
			t.Fatalf("recovered: sent %d, wait %v", n, wait)
		}
		if got := ids(flop.last(t)); !slices.Equal(got, []int64{a1, a2}) {
			t.Fatalf("flop sink got %v after recovery", got)
		}
		wantState(t, db, "SENT", a1, a2)
		if n, wait := h.deliver(t, "KAFKA_FLOP"); n != 0 || wait != dispatch.DefaultPollInterval {
			t.Fatalf("idle target: sent %d, wait %v; want 0 and the poll interval", n, wait)
		}

		lines := h.log.lines(t, "events sent")
		if len(lines) != 2 || lines[1]["target"] != "KAFKA_FLOP" || lines[1]["count"] != 2.0 ||
			lines[1]["first_event_id"] != float64(a1) || lines[1]["last_event_id"] != float64(a2) {
			t.Fatalf("sent log lines: %v", lines)
		}
		warn := h.log.lines(t, "event delivery failed")
		if len(warn) != 1 || warn[0]["level"] != "WARN" || warn[0]["event_id"] != float64(a1) ||
			warn[0]["attempts"] != 1.0 || warn[0]["next_attempt_at"] != "2026-03-14T08:00:01Z" || warn[0]["error"] != "broker down" {
			t.Fatalf("failure log lines: %v", warn)
		}
	})
}

func TestBackoffSteps(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		cap  time.Duration
		want []time.Duration
	}{
		{"cap 60s", 60 * time.Second, []time.Duration{1, 2, 4, 8, 16, 16, 16}},
		{"cap 5s", 5 * time.Second, []time.Duration{1, 2, 4, 5, 5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			storetest.Each(t, func(t *testing.T, db *store.DB) {
				p := pipeline.RetryPolicy{MaxAttempts: 100, Steps: pipeline.DefaultBackoff, Cap: tc.cap, HeadDeadline: time.Hour}
				h := newHarness(t, db, dispatch.Options{Policy: p}, "KAFKA_FLOP")
				id := insert(t, db, ev{target: "KAFKA_FLOP"})
				h.sinks["KAFKA_FLOP"].failAll(errDown)
				for i, step := range tc.want {
					step *= time.Second
					now := h.clock.Now()
					if _, wait := h.deliver(t, "KAFKA_FLOP"); wait != step {
						t.Fatalf("failure %d: wait %v, want %v", i+1, wait, step)
					}
					r := get(t, db, id)
					if r.Attempts != i+1 || !r.NextAttemptAt.Time.Equal(now.Add(step)) || !r.FirstFailedAt.Time.Equal(t0) {
						t.Fatalf("failure %d: attempts %d, next %v, first %v", i+1, r.Attempts, r.NextAttemptAt.Time, r.FirstFailedAt.Time)
					}
					// One microsecond early is too early.
					h.clock.Add(step - time.Microsecond)
					calls := h.sinks["KAFKA_FLOP"].numCalls()
					if _, wait := h.deliver(t, "KAFKA_FLOP"); wait != time.Microsecond || h.sinks["KAFKA_FLOP"].numCalls() != calls {
						t.Fatalf("failure %d: retried before due (wait %v)", i+1, wait)
					}
					h.clock.Add(time.Microsecond)
				}
			})
		})
	}
}

func TestDeadAfterMaxAttemptsThenTargetMovesOn(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		p := policy
		p.MaxAttempts = 3
		h := newHarness(t, db, dispatch.Options{Policy: p}, "KAFKA_FLOP")
		first := insert(t, db, ev{target: "KAFKA_FLOP", key: "1"})
		second := insert(t, db, ev{target: "KAFKA_FLOP", key: "2"})
		sink := h.sinks["KAFKA_FLOP"]
		// Only the first event fails; the sink takes nothing while it is the head.
		sink.setFail(func(recs []target.Record) (int, error) {
			if recs[0].EventID == first {
				return 0, errDown
			}
			return len(recs), nil
		})
		for i := 1; i <= 3; i++ {
			_, wait := h.deliver(t, "KAFKA_FLOP")
			h.clock.Add(wait)
			if i < 3 && get(t, db, first).State != "PENDING" {
				t.Fatalf("dead after %d attempts, max 3", i)
			}
		}
		r := get(t, db, first)
		if r.State != "DEAD" || r.Class.String != "EXHAUSTED" || r.Attempts != 3 || !strings.Contains(r.LastError.String, "broker down") {
			t.Fatalf("after max attempts: %+v", r)
		}
		wantState(t, db, "PENDING", second)
		if n, _ := h.deliver(t, "KAFKA_FLOP"); n != 1 {
			t.Fatalf("target did not move on: sent %d", n)
		}
		wantState(t, db, "SENT", second)
		dead := h.log.lines(t, "event dead")
		if len(dead) != 1 || dead[0]["level"] != "ERROR" || dead[0]["event_id"] != float64(first) || dead[0]["error_class"] != "EXHAUSTED" {
			t.Fatalf("dead log lines: %v", dead)
		}
	})
}

func TestHeadDeadline(t *testing.T) {
	t.Parallel()
	t.Run("waiting head escalates", func(t *testing.T) {
		storetest.Each(t, func(t *testing.T, db *store.DB) {
			// One long backoff step: the head is still waiting when the deadline passes.
			p := pipeline.RetryPolicy{MaxAttempts: 100, Steps: []time.Duration{time.Hour}, HeadDeadline: 10 * time.Minute}
			h := newHarness(t, db, dispatch.Options{Policy: p}, "ES_FLIGHT")
			head := insert(t, db, ev{target: "ES_FLIGHT", kind: "es-upsert", key: "5"})
			next := insert(t, db, ev{target: "ES_FLIGHT", kind: "es-upsert", key: "6"})
			sink := h.sinks["ES_FLIGHT"]
			sink.failAll(errDown)
			h.deliver(t, "ES_FLIGHT")
			h.clock.Add(10 * time.Minute) // exactly the deadline: not yet past it
			if _, wait := h.deliver(t, "ES_FLIGHT"); wait != 50*time.Minute {
				t.Fatalf("at the deadline: wait %v, want 50m", wait)
			}
			wantState(t, db, "PENDING", head)
			h.clock.Add(time.Second)
			calls := sink.numCalls()
			if n, wait := h.deliver(t, "ES_FLIGHT"); n != 0 || wait != 0 {
				t.Fatalf("escalation step: sent %d, wait %v", n, wait)
			}
			if sink.numCalls() != calls {
				t.Fatal("escalation sent the head again")
			}
			r := get(t, db, head)
			if r.State != "DEAD" || r.Class.String != "EXHAUSTED" || r.Attempts != 1 ||
				!strings.Contains(r.LastError.String, "broker down") || !strings.Contains(r.LastError.String, "head deadline") {
				t.Fatalf("escalated head: %+v", r)
			}
			sink.succeed()
			if n, _ := h.deliver(t, "ES_FLIGHT"); n != 1 {
				t.Fatalf("after escalation sent %d, want 1", n)
			}
			wantState(t, db, "SENT", next)
		})
	})
	t.Run("measured from the first failure", func(t *testing.T) {
		storetest.Each(t, func(t *testing.T, db *store.DB) {
			p := pipeline.RetryPolicy{Steps: []time.Duration{time.Minute}, HeadDeadline: 10 * time.Minute}
			h := newHarness(t, db, dispatch.Options{Policy: p}, "ES_FLIGHT")
			head := insert(t, db, ev{target: "ES_FLIGHT", kind: "es-upsert", key: "5"})
			h.sinks["ES_FLIGHT"].failAll(errDown)
			// Fail every minute; every failure is recent, but the first one is what counts.
			for i := 0; i < 10; i++ {
				_, wait := h.deliver(t, "ES_FLIGHT")
				if wait != time.Minute {
					t.Fatalf("failure %d: wait %v", i+1, wait)
				}
				h.clock.Add(wait)
			}
			if r := get(t, db, head); r.State != "PENDING" || !r.FirstFailedAt.Time.Equal(t0) {
				t.Fatalf("before the deadline: %+v", r)
			}
			h.clock.Add(time.Second)
			h.deliver(t, "ES_FLIGHT")
			if r := get(t, db, head); r.State != "DEAD" || r.Class.String != "EXHAUSTED" || r.Attempts != 11 {
				t.Fatalf("11th failure, 10m01s after the first: %+v", r)
			}
		})
	})
}

func TestRejectedGoesDeadAtOnce(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		h := newHarness(t, db, dispatch.Options{Policy: policy}, "WEBHOOK_OPS")
		bad := insert(t, db, ev{target: "WEBHOOK_OPS", kind: "notify"})
		good := insert(t, db, ev{target: "WEBHOOK_OPS", kind: "notify"})
		sink := h.sinks["WEBHOOK_OPS"]
		sink.setFail(func(recs []target.Record) (int, error) {
			if recs[0].EventID == bad {
				return 0, pipeline.Errorf(pipeline.Rejected, "webhook answered 400")
			}
			return len(recs), nil
		})
		if n, wait := h.deliver(t, "WEBHOOK_OPS"); n != 0 || wait != 0 {
			t.Fatalf("rejected: sent %d, wait %v; want 0, 0 (move on)", n, wait)
		}
		r := get(t, db, bad)
		if r.State != "DEAD" || r.Class.String != "REJECTED" || r.Attempts != 1 || !strings.Contains(r.LastError.String, "400") {
			t.Fatalf("rejected event: %+v", r)
		}
		if n, _ := h.deliver(t, "WEBHOOK_OPS"); n != 1 {
			t.Fatalf("next event sent %d", n)
		}
		wantState(t, db, "SENT", good)
	})
}

func TestPartialSendMarksExactlyTheDelivered(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		h := newHarness(t, db, dispatch.Options{Policy: policy}, "KAFKA_FLOP")
		var evs []int64
		for i := 0; i < 5; i++ {
			evs = append(evs, insert(t, db, ev{target: "KAFKA_FLOP", key: "9"}))
		}
		sink := h.sinks["KAFKA_FLOP"]
		sink.setFail(func(recs []target.Record) (int, error) { return 2, errDown })
		if n, wait := h.deliver(t, "KAFKA_FLOP"); n != 2 || wait != time.Second {
			t.Fatalf("partial send: sent %d, wait %v; want 2, 1s", n, wait)
		}
		wantState(t, db, "SENT", evs[:2]...)
		if r := get(t, db, evs[2]); r.State != "PENDING" || r.Attempts != 1 || !r.NextAttemptAt.Valid {
			t.Fatalf("first undelivered: %+v", r)
		}
		for _, id := range evs[3:] {
			if r := get(t, db, id); r.State != "PENDING" || r.Attempts != 0 || r.NextAttemptAt.Valid {
				t.Fatalf("event %d behind the failure: %+v", id, r)
			}
		}
		h.clock.Add(time.Second)
		sink.succeed()
		if n, _ := h.deliver(t, "KAFKA_FLOP"); n != 3 {
			t.Fatalf("retry sent %d, want 3", n)
		}
		if got := ids(sink.last(t)); !slices.Equal(got, evs[2:]) {
			t.Fatalf("retry sent %v, want %v", got, evs[2:])
		}
	})
}

// A sink that claims everything it failed on gets the last record again (at least once).
func TestSinkReportingAllDeliveredWithAnErrorIsDistrusted(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		h := newHarness(t, db, dispatch.Options{Policy: policy}, "KAFKA_FLOP")
		a := insert(t, db, ev{target: "KAFKA_FLOP"})
		b := insert(t, db, ev{target: "KAFKA_FLOP"})
		h.sinks["KAFKA_FLOP"].setFail(func(recs []target.Record) (int, error) { return len(recs), errDown })
		if n, _ := h.deliver(t, "KAFKA_FLOP"); n != 1 {
			t.Fatalf("sent %d, want 1", n)
		}
		wantState(t, db, "SENT", a)
		if r := get(t, db, b); r.State != "PENDING" || r.Attempts != 1 {
			t.Fatalf("last record: %+v", r)
		}
	})
}

func TestSendBatchLimitsOneSend(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		h := newHarness(t, db, dispatch.Options{Policy: policy, SendBatch: 3, SendRuns: 1}, "KAFKA_FLOP")
		for i := 0; i < 7; i++ {
			insert(t, db, ev{target: "KAFKA_FLOP"})
		}
		var sizes []int
		for {
			n, wait := h.deliver(t, "KAFKA_FLOP")
			if n == 0 {
				break
			}
			if wait != 0 {
				t.Fatalf("after sending %d: wait %v, want 0", n, wait)
			}
			sizes = append(sizes, len(h.sinks["KAFKA_FLOP"].last(t)))
		}
		if !slices.Equal(sizes, []int{3, 3, 1}) {
			t.Fatalf("send sizes %v, want [3 3 1]", sizes)
		}
	})
}

// One step sends up to SendRuns Sends of SendBatch and commits them once; the records stay
// in order and a failure stops the step at the first undelivered record.
func TestSendRunsInOneStep(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		h := newHarness(t, db, dispatch.Options{Policy: policy, SendBatch: 3, SendRuns: 2}, "KAFKA_FLOP")
		var ids []int64
		for i := 0; i < 9; i++ {
			ids = append(ids, insert(t, db, ev{target: "KAFKA_FLOP"}))
		}
		sink := h.sinks["KAFKA_FLOP"]
		if n, wait := h.deliver(t, "KAFKA_FLOP"); n != 6 || wait != 0 {
			t.Fatalf("first step: sent %d, wait %v; want 6, 0", n, wait)
		}
		if sink.numCalls() != 2 {
			t.Fatalf("first step: %d sends, want 2 of 3", sink.numCalls())
		}
		wantState(t, db, "SENT", ids[:6]...)
		// The next run: the sink delivers one of the second Send and fails.
		calls := 0
		sink.setFail(func(recs []target.Record) (int, error) {
			calls++
			if calls == 1 {
				return len(recs), nil
			}
			return 0, errors.New("broker down")
		})
		insert(t, db, ev{target: "KAFKA_FLOP"})
		if n, _ := h.deliver(t, "KAFKA_FLOP"); n != 3 {
			t.Fatalf("second step: sent %d, want 3", n)
		}
		wantState(t, db, "SENT", ids[6:]...)
		var got []int64
		for _, c := range sink.calls {
			for _, r := range c {
				got = append(got, r.EventID)
			}
		}
		if !slices.IsSorted(got) {
			t.Fatalf("records out of order: %v", got)
		}
	})
}

func TestEnvelope(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		h := newHarness(t, db, dispatch.Options{Policy: policy}, "ES_FLIGHT", "REDIS_NOTIFY")
		up := insert(t, db, ev{target: "ES_FLIGHT", kind: "es-upsert", key: "4711", payload: `{ "FLID": 4711, "note": "<a & b>" }`, msgID: 42})
		del := insert(t, db, ev{target: "ES_FLIGHT", kind: "es-delete", key: "4712", payload: `{"FLID":4712}`, msgID: 43})
		note := insert(t, db, ev{target: "REDIS_NOTIFY", kind: "notify", payload: `[1,2]`})
		h.deliver(t, "ES_FLIGHT")
		h.deliver(t, "REDIS_NOTIFY")

		recs := h.sinks["ES_FLIGHT"].last(t)
		if len(recs) != 2 {
			t.Fatalf("got %d records", len(recs))
		}
		r := recs[0]
		if r.EventID != up || r.MsgID != 42 || r.TypeTag != "FLOP-CHOT" || r.Target != "ES_FLIGHT" || r.Kind != "es-upsert" || r.Key != "4711" || r.Delete {
			t.Fatalf("upsert record: %+v", r)
		}
		want := `{"event_id":` + itoa(up) + `,"msg_id":42,"type_tag":"FLOP-CHOT","target":"ES_FLIGHT","kind":"es-upsert","flight_key":"4711","created_at":"2026-03-14T08:00:00Z","payload":{"FLID":4711,"note":"<a & b>"}}`
		if string(r.Value) != want {
			t.Fatalf("envelope\n got %s\nwant %s", r.Value, want)
		}
		if d := recs[1]; d.EventID != del || !d.Delete || d.Key != "4712" {
			t.Fatalf("delete record: %+v", d)
		}

		n := h.sinks["REDIS_NOTIFY"].last(t)[0]
		var env map[string]any
		if err := json.Unmarshal(n.Value, &env); err != nil {
			t.Fatal(err)
		}
		if _, ok := env["flight_key"]; ok || n.Key != "" || env["event_id"] != float64(note) {
			t.Fatalf("event without a flight key: key %q, envelope %s", n.Key, n.Value)
		}
		var back dispatch.Envelope
		if err := json.Unmarshal(n.Value, &back); err != nil || string(back.Payload) != `[1,2]` || !back.CreatedAt.Equal(t0) {
			t.Fatalf("envelope does not decode into Envelope: %+v, %v", back, err)
		}
	})
}

// A stored payload that is not JSON can never be delivered: DEAD as MALFORMED, and the
// target moves on.
func TestPayloadNotJSONGoesDead(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		h := newHarness(t, db, dispatch.Options{Policy: policy}, "KAFKA_FLOP")
		good1 := insert(t, db, ev{target: "KAFKA_FLOP"})
		bad := insert(t, db, ev{target: "KAFKA_FLOP", payload: `{"broken":`})
		good2 := insert(t, db, ev{target: "KAFKA_FLOP"})
		if n, _ := h.deliver(t, "KAFKA_FLOP"); n != 1 {
			t.Fatalf("run before the bad event: sent %d", n)
		}
		if n, wait := h.deliver(t, "KAFKA_FLOP"); n != 0 || wait != 0 {
			t.Fatalf("bad head: sent %d, wait %v", n, wait)
		}
		if r := get(t, db, bad); r.State != "DEAD" || r.Class.String != "MALFORMED" {
			t.Fatalf("bad event: %+v", r)
		}
		h.deliver(t, "KAFKA_FLOP")
		wantState(t, db, "SENT", good1, good2)
		// Replay leaves it alone.
		if moved, skipped, err := h.d.Replay(context.Background(), "", nil); err != nil || moved != 0 || skipped != 1 {
			t.Fatalf("replay: moved %d skipped %d err %v", moved, skipped, err)
		}
	})
}

func TestDeliverOnceRefusesTheScheduleTarget(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		h := newHarness(t, db, dispatch.Options{Policy: policy, SchdTarget: "KAFKA_SCHD"}, "KAFKA_SCHD")
		insert(t, db, ev{target: "KAFKA_SCHD", kind: "schd", key: "1"})
		if _, _, err := h.d.DeliverOnce(context.Background(), "KAFKA_SCHD"); err == nil {
			t.Fatal("DeliverOnce sent the batched target")
		}
		if _, _, err := h.d.DeliverOnce(context.Background(), "NOWHERE"); err == nil {
			t.Fatal("DeliverOnce accepted a target with no sink")
		}
		if h.sinks["KAFKA_SCHD"].numCalls() != 0 {
			t.Fatal("schedule sink called")
		}
	})
}

func TestPollIntervalIsClamped(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		h := newHarness(t, db, dispatch.Options{PollInterval: time.Millisecond}, "KAFKA_FLOP")
		if _, wait := h.deliver(t, "KAFKA_FLOP"); wait != dispatch.MinPollInterval {
			t.Fatalf("idle wait %v, want the 50ms floor", wait)
		}
	})
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }
