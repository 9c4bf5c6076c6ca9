package dispatch_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"msgx/internal/dispatch"
	"msgx/internal/pipeline"
	"msgx/internal/store"
	"msgx/internal/store/storetest"
)

// kill makes event id DEAD with class and last error, as a failed delivery leaves it.
func kill(t *testing.T, db *store.DB, id int64, class pipeline.ErrorClass) {
	t.Helper()
	if _, err := db.SQL.Exec(`UPDATE MSG_EVENT SET STATE = 'DEAD', ATTEMPTS = 5, ERROR_CLASS = ?, LAST_ERROR = 'broker down',
FIRST_FAILED_AT = ? WHERE EVENT_ID = ?`, string(class), store.T(t0), id); err != nil {
		t.Fatal(err)
	}
}

func TestReplay(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		h := newHarness(t, db, dispatch.Options{Policy: policy}, "KAFKA_FLOP", "ES_FLIGHT")
		ctx := context.Background()
		deadA := insert(t, db, ev{target: "KAFKA_FLOP"})
		deadA2 := insert(t, db, ev{target: "KAFKA_FLOP"})
		malformed := insert(t, db, ev{target: "KAFKA_FLOP"})
		deadB := insert(t, db, ev{target: "ES_FLIGHT"})
		pending := insert(t, db, ev{target: "KAFKA_FLOP"})
		kill(t, db, deadA, pipeline.Exhausted)
		kill(t, db, deadA2, pipeline.Rejected)
		kill(t, db, malformed, pipeline.Malformed)
		kill(t, db, deadB, pipeline.Exhausted)

		// ids: one dead of the target, one pending, one of another target, one unknown, a repeat.
		moved, skipped, err := h.d.Replay(ctx, "KAFKA_FLOP", []int64{deadA, pending, deadB, 99999, deadA})
		if err != nil || moved != 1 || skipped != 3 {
			t.Fatalf("replay by id: moved %d, skipped %d, err %v; want 1, 3", moved, skipped, err)
		}
		r := get(t, db, deadA)
		if r.State != "PENDING" || r.Attempts != 0 || r.NextAttemptAt.Valid || r.FirstFailedAt.Valid ||
			r.Class.String != "EXHAUSTED" || r.LastError.String != "broker down" {
			t.Fatalf("replayed event: %+v", r)
		}
		wantState(t, db, "DEAD", deadA2, deadB, malformed)
		if r := get(t, db, pending); r.State != "PENDING" || r.Attempts != 0 {
			t.Fatalf("pending event touched: %+v", r)
		}

		// All dead of all targets: MALFORMED stays and counts as skipped.
		moved, skipped, err = h.d.Replay(ctx, "", nil)
		if err != nil || moved != 2 || skipped != 1 {
			t.Fatalf("replay all: moved %d, skipped %d, err %v; want 2, 1", moved, skipped, err)
		}
		wantState(t, db, "PENDING", deadA2, deadB)
		wantState(t, db, "DEAD", malformed)

		// Replayed events go out in EVENT_ID order with the rest.
		h.deliver(t, "KAFKA_FLOP")
		if got := ids(h.sinks["KAFKA_FLOP"].last(t)); !slices.Equal(got, []int64{deadA, deadA2, pending}) {
			t.Fatalf("after replay sent %v", got)
		}
		// A replayed event gets a fresh head deadline: one failure does not kill it.
		h.clock.Add(time.Hour)
		h.sinks["ES_FLIGHT"].failAll(errDown)
		h.deliver(t, "ES_FLIGHT")
		if r := get(t, db, deadB); r.State != "PENDING" || r.Attempts != 1 || !r.FirstFailedAt.Time.Equal(t0.Add(time.Hour)) {
			t.Fatalf("replayed event after one failure: %+v", r)
		}
		// Replay of a target with nothing dead.
		if moved, skipped, err := dispatch.Replay(ctx, db.Outbox, "ES_FLIGHT", nil); err != nil || moved != 0 || skipped != 0 {
			t.Fatalf("replay with nothing dead: %d, %d, %v", moved, skipped, err)
		}
	})
}

func TestListAndStats(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		h := newHarness(t, db, dispatch.Options{Policy: policy}, "KAFKA_FLOP", "REDIS_NOTIFY")
		sent := insert(t, db, ev{target: "KAFKA_FLOP", key: "11"})
		h.deliver(t, "KAFKA_FLOP")
		h.clock.Add(time.Minute)
		head := insert(t, db, ev{target: "KAFKA_FLOP", key: "12", payload: `{"FLID":12}`})
		insert(t, db, ev{target: "KAFKA_FLOP", key: "13"})
		h.sinks["KAFKA_FLOP"].failAll(errDown)
		h.deliver(t, "KAFKA_FLOP")
		dead := insert(t, db, ev{target: "REDIS_NOTIFY", kind: "notify"})
		kill(t, db, dead, pipeline.Exhausted)

		all, err := dispatch.List(ctx, db.Outbox, dispatch.Filter{})
		if err != nil || len(all) != 4 || all[0].EventID != sent {
			t.Fatalf("list all: %d events, %v", len(all), err)
		}
		pend, err := dispatch.List(ctx, db.Outbox, dispatch.Filter{Target: "KAFKA_FLOP", State: "pending", Limit: 1})
		if err != nil || len(pend) != 1 || pend[0].EventID != head {
			t.Fatalf("list pending head: %+v, %v", pend, err)
		}
		e := pend[0]
		if e.Attempts != 1 || e.ErrorClass == nil || *e.ErrorClass != "INFRA" || e.NextAttemptAt == nil ||
			!e.NextAttemptAt.Equal(t0.Add(time.Minute+time.Second)) || e.SentAt != nil || *e.FlightKey != "12" {
			t.Fatalf("pending head: %+v", e)
		}
		// The head as the status's targets section answers it.
		b, _ := json.Marshal(targetSection(t, db, t0.Add(time.Hour), "KAFKA_FLOP").Head)
		for _, want := range []string{`"event_id":` + itoa(head), `"msg_id":7`, `"type_tag":"FLOP-CHOT"`, `"target":"KAFKA_FLOP"`,
			`"kind":"flop"`, `"flight_key":"12"`, `"state":"PENDING"`, `"attempts":1`, `"error_class":"INFRA"`,
			`"last_error":"broker down"`, `"created_at":"2026-03-14T08:00:00Z"`, `"sent_at":null`,
			`"next_attempt_at":"2026-03-14T08:01:01Z"`, `"payload":{"FLID":12}`} {
			if !strings.Contains(string(b), want) {
				t.Errorf("event JSON %s lacks %s", b, want)
			}
		}
		newest, _ := dispatch.List(ctx, db.Outbox, dispatch.Filter{Newest: true, Limit: 2})
		if len(newest) != 2 || newest[0].EventID != dead {
			t.Fatalf("newest first: %+v", newest)
		}
		page, _ := dispatch.List(ctx, db.Outbox, dispatch.Filter{AfterID: head})
		if len(page) != 2 || page[0].EventID <= head {
			t.Fatalf("after %d: %+v", head, page)
		}
		sentList, _ := dispatch.List(ctx, db.Outbox, dispatch.Filter{State: "SENT"})
		if len(sentList) != 1 || sentList[0].SentAt == nil || sentList[0].FlightKey == nil {
			t.Fatalf("sent: %+v", sentList)
		}
		if _, err := dispatch.List(ctx, db.Outbox, dispatch.Filter{State: "DONE"}); err == nil {
			t.Fatal("unknown state accepted")
		}
		if none, err := dispatch.List(ctx, db.Outbox, dispatch.Filter{Target: "NOWHERE"}); err != nil || none == nil || len(none) != 0 {
			t.Fatalf("empty list: %v, %v", none, err)
		}

		now := t0.Add(time.Hour)
		stats, err := dispatch.Stats(ctx, db.Outbox, now)
		if err != nil || len(stats) != 2 {
			t.Fatalf("stats: %+v, %v", stats, err)
		}
		f, n := stats[0], stats[1]
		if f.Target != "KAFKA_FLOP" || f.Pending != 2 || f.Sent != 1 || f.Dead != 0 || f.OldestPendingAge != time.Hour ||
			f.Head == nil || f.Head.EventID != head || f.Head.Attempts != 1 || string(f.Head.Payload) != `{"FLID":12}` {
			t.Fatalf("KAFKA_FLOP stats: %+v", f)
		}
		if n.Target != "REDIS_NOTIFY" || n.Pending != 0 || n.Dead != 1 || n.OldestPendingAt != nil || n.Head != nil || n.OldestPendingAge != 0 {
			t.Fatalf("REDIS_NOTIFY stats: %+v", n)
		}
		b, _ = json.Marshal(targetSection(t, db, now, "KAFKA_FLOP"))
		for _, want := range []string{`"target":"KAFKA_FLOP"`, `"pending":2`, `"dead":0`, `"sent":1`,
			`"oldest_pending_at":"2026-03-14T08:00:00Z"`, `"oldest_pending_age_s":3600`, `"head":{"event_id":`} {
			if !strings.Contains(string(b), want) {
				t.Errorf("stats JSON %s lacks %s", b, want)
			}
		}
	})
}
