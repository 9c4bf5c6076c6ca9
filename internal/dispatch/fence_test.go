package dispatch_test

import (
	"context"
	"fmt"
	"testing"

	"msgx/internal/dispatch"
	"msgx/internal/store"
	"msgx/internal/store/storetest"
	"msgx/internal/target"
)

// otherWriter stands for another instance (or an operator) changing event id while this
// dispatcher's send is in flight.
type otherWriter func(t *testing.T, db *store.DB, id int64)

var otherWriters = map[string]otherWriter{
	// Another instance's dispatcher exhausted the event and an operator replayed it.
	"dead then replayed": func(t *testing.T, db *store.DB, id int64) {
		if _, err := db.SQL.Exec(`UPDATE MSG_EVENT SET STATE = 'DEAD', ATTEMPTS = 5, ERROR_CLASS = 'INFRA',
LAST_ERROR = 'broker down (dead: after 5 attempts)', NEXT_ATTEMPT_AT = NULL, FIRST_FAILED_AT = ? WHERE EVENT_ID = ?`, store.T(t0), id); err != nil {
			t.Error(err)
		}
		if moved, _, err := dispatch.Replay(context.Background(), db.Outbox, "", []int64{id}); err != nil || moved != 1 {
			t.Errorf("replay during the send: moved %d, %v", moved, err)
		}
	},
	// Another instance's dispatcher delivered it.
	"sent": func(t *testing.T, db *store.DB, id int64) {
		if _, err := db.SQL.Exec(`UPDATE MSG_EVENT SET STATE = 'SENT', SENT_AT = ? WHERE EVENT_ID = ?`, store.T(t0), id); err != nil {
			t.Error(err)
		}
	},
}

// setAttempts makes event id look as after n failed attempts, due now.
func setAttempts(t *testing.T, db *store.DB, id int64, n int) {
	t.Helper()
	if n == 0 {
		return
	}
	if _, err := db.SQL.Exec(`UPDATE MSG_EVENT SET ATTEMPTS = ?, ERROR_CLASS = 'INFRA', LAST_ERROR = 'broker down',
FIRST_FAILED_AT = ?, NEXT_ATTEMPT_AT = ? WHERE EVENT_ID = ?`, n, store.T(t0), store.T(t0), id); err != nil {
		t.Fatal(err)
	}
}

// TestFailureDoesNotOverwriteAConcurrentChange: the head changes while its send is in flight
// (replayed after another instance killed it, or sent by another instance), then the send
// fails. The failure — a backoff, or DEAD on the last attempt — must not land on the changed
// row: the replay's reset (attempts 0) or the SENT state stays, and the head is read again.
func TestFailureDoesNotOverwriteAConcurrentChange(t *testing.T) {
	t.Parallel()
	for name, other := range otherWriters {
		for _, read := range []int{0, 4} { // 4: this failure would be the fifth and last attempt
			t.Run(fmt.Sprintf("%s/attempts %d", name, read), func(t *testing.T) {
				storetest.Each(t, func(t *testing.T, db *store.DB) {
					h := newHarness(t, db, dispatch.Options{Policy: policy}, "KAFKA_FLOP")
					id := insert(t, db, ev{target: "KAFKA_FLOP", key: "101"})
					setAttempts(t, db, id, read)
					h.sinks["KAFKA_FLOP"].setFail(func([]target.Record) (int, error) {
						other(t, db, id)
						return 0, errDown
					})
					n, wait := h.deliver(t, "KAFKA_FLOP")
					if n != 0 || wait != 0 {
						t.Fatalf("DeliverOnce: sent %d, wait %v; want 0 and 0 (read again at once)", n, wait)
					}
					r := get(t, db, id)
					switch name {
					case "sent":
						if r.State != "SENT" {
							t.Fatalf("event sent by another writer is now %+v", r)
						}
					default:
						if r.State != "PENDING" || r.Attempts != 0 || r.NextAttemptAt.Valid || r.FirstFailedAt.Valid {
							t.Fatalf("replayed event was overwritten by the stale failure: %+v", r)
						}
					}
					if l := h.log.lines(t, "event changed by another writer during its send; reading the head again"); len(l) != 1 {
						t.Errorf("change log lines: %v", l)
					}
					if l := h.log.lines(t, "event dead"); len(l) != 0 {
						t.Errorf("a stale decision was logged as a death: %v", l)
					}

					// The next step reads the row as it is now, without an error loop.
					h.sinks["KAFKA_FLOP"].succeed()
					n, _ = h.deliver(t, "KAFKA_FLOP")
					if name == "sent" {
						if n != 0 {
							t.Fatalf("sent again: %d", n)
						}
						return
					}
					if n != 1 || get(t, db, id).State != "SENT" {
						t.Fatalf("replayed event after the race: sent %d, %+v", n, get(t, db, id))
					}
				})
			})
		}
	}
}

// TestSchdFailureDoesNotOverwriteAConcurrentReplay: the same race on the schedule batch.
func TestSchdFailureDoesNotOverwriteAConcurrentReplay(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		h := schdHarness(t, db, dispatch.Options{})
		head := flightRec(t, db, "1", 1)
		next := flightRec(t, db, "2", 1)
		setAttempts(t, db, head, 4)
		setAttempts(t, db, next, 4)
		h.sinks[schd].setFail(func([]target.Record) (int, error) {
			otherWriters["dead then replayed"](t, db, head)
			return 0, errDown
		})
		if n, wait := h.flush(t, true); n != 0 || wait != 0 {
			t.Fatalf("flush: sent %d, wait %v; want 0 and 0", n, wait)
		}
		if r := get(t, db, head); r.State != "PENDING" || r.Attempts != 0 || r.FirstFailedAt.Valid {
			t.Fatalf("replayed head overwritten: %+v", r)
		}
		// The batch was judged on a head that changed: nothing of it is recorded.
		if r := get(t, db, next); r.State != "PENDING" || r.Attempts != 4 {
			t.Fatalf("event behind the changed head: %+v", r)
		}
		h.sinks[schd].succeed()
		if n, _ := h.flush(t, true); n != 2 {
			t.Fatalf("after the race: sent %d, want 2", n)
		}
		wantState(t, db, "SENT", head, next)
	})
}
