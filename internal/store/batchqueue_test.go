package store_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"msgx/internal/pipeline"
	"msgx/internal/store"
	"msgx/internal/store/storetest"
)

// queueEnv is a database with n PENDING messages, and what queueing their successes takes.
type queueEnv struct {
	t   *testing.T
	db  *store.DB
	ids []int64
	now time.Time
}

func newQueueEnv(t *testing.T, db *store.DB, n int) *queueEnv {
	t.Helper()
	now := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	raws := make([]string, n)
	for i := range raws {
		raws[i] = fmt.Sprintf("<MSG><META><SEQN>%d</SEQN></META></MSG>", i+1)
	}
	ids, err := db.Intake.InsertMessages(context.Background(), raws, now)
	if err != nil {
		t.Fatal(err)
	}
	return &queueEnv{t: t, db: db, ids: ids, now: now}
}

// success is message i's success: its identity and one reference upsert of STTS key.
func (e *queueEnv) success(identity, key, fields string) store.Success {
	return store.Success{From: store.Version{State: pipeline.Pending}, TypeTag: "STTS-ADD", Identity: identity,
		Meta: store.Backfill{TYPE: "STTS", STYP: "ADD"},
		Decision: pipeline.Decision{Ref: []pipeline.RefChange{{Op: pipeline.RefUpsert, Type: "STTS",
			Record: pipeline.RefRecord{Key: key, Fields: []byte(fields)}}},
			Events: []pipeline.Event{{Target: "T", Kind: "K", Payload: []byte(`{"k":"` + key + `"}`)}}}}
}

// batch opens a batch that defers its writes, as the pump's does.
func (e *queueEnv) batch() *store.Batch {
	e.t.Helper()
	b, err := e.db.Processor.BeginBatch(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	b.DeferWrites()
	e.t.Cleanup(b.Rollback) // a test that stops half way leaves no transaction holding locks
	return b
}

func (e *queueEnv) queue(b *store.Batch, i int, s store.Success, fw store.FlightWriter) {
	e.t.Helper()
	if !b.Queue(e.ids[i], s, fw, e.now) {
		e.t.Fatalf("message %d not queued", i)
	}
}

func (e *queueEnv) commit(b *store.Batch) {
	e.t.Helper()
	if err := b.Flush(context.Background()); err != nil {
		e.t.Fatal(err)
	}
	if err := b.Commit(context.Background()); err != nil {
		e.t.Fatal(err)
	}
}

func (e *queueEnv) state(i int) pipeline.ProcStatus {
	e.t.Helper()
	m, err := e.db.Operations.GetMessage(context.Background(), e.ids[i])
	if err != nil {
		e.t.Fatal(err)
	}
	return m.State
}

func (e *queueEnv) refs() string {
	e.t.Helper()
	es, err := e.db.RefData.RefList(context.Background(), "STTS")
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for _, r := range es {
		out = append(out, fmt.Sprintf("%s@%d", r.Key, r.Version))
	}
	return strings.Join(out, " ")
}

func (e *queueEnv) events() string {
	e.t.Helper()
	rows, err := e.db.SQL.Query(`SELECT CMINMSGS_ID FROM MSG_EVENT ORDER BY EVENT_ID`)
	if err != nil {
		e.t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id int64
		rows.Scan(&id)
		for i, x := range e.ids {
			if x == id {
				out = append(out, fmt.Sprint(i))
			}
		}
	}
	return strings.Join(out, " ")
}

// Queued successes go in one round trip on MySQL; a duplicate identity in the middle of the
// queue (bound before the batch) is found by the unique index: the message before it is
// written, it fails with ErrIdentityTaken and is rolled back, the one after it is not
// written. SQLite queues nothing (its statements cost no round trip).
func TestAQueuedDuplicateInTheMiddle(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		e := newQueueEnv(t, db, 4)
		if _, _, err := db.Processor.Succeed(ctx, e.ids[0], e.success("DUP", "A", `{"d":"a"}`), nil, e.now); err != nil {
			t.Fatal(err)
		}
		b := e.batch()
		if db.Dialect != store.MySQL {
			if b.Queue(e.ids[1], e.success("X1", "B", `{"d":"b"}`), nil, e.now) {
				t.Fatal("SQLite queued a message")
			}
			b.Rollback()
			return
		}
		e.queue(b, 1, e.success("X1", "B", `{"d":"b"}`), nil)
		e.queue(b, 2, e.success("DUP", "C", `{"d":"c"}`), nil)
		e.queue(b, 3, e.success("X3", "D", `{"d":"d"}`), nil)
		res, err := b.SendQueued(ctx)
		if !errors.Is(err, store.ErrIdentityTaken) || len(res) != 1 || res[0] != (store.QueuedResult{Events: 1, RefChanged: 1}) {
			t.Fatalf("send: %+v %v", res, err)
		}
		if left, err := b.SendQueued(ctx); len(left) != 0 || err != nil {
			t.Fatalf("%d left in the queue (%v)", len(left), err)
		}
		e.commit(b)
		if got := fmt.Sprintf("%s %s %s", e.state(1), e.state(2), e.state(3)); got != "SUCCEEDED PENDING PENDING" {
			t.Fatalf("states %s", got)
		}
		if got := e.refs(); got != "A@1 B@1" {
			t.Fatalf("records %q", got)
		}
		if got := e.events(); got != "0 1" {
			t.Fatalf("events of messages %q", got)
		}
	})
}

// guarded is a FlightStatementer giving a guarded UPDATE of flight 7001 at a fixed version.
type guarded struct{ version int64 }

func (g guarded) WriteFlights(context.Context, *sql.Tx, int64, []pipeline.FlightWrite, time.Time) error {
	return errors.New("not used")
}

func (g guarded) FlightStatement(_ *sql.Tx, msgID int64, w pipeline.FlightWrite, _ time.Time) (string, []any, bool) {
	return `UPDATE FLIGHT_STATE SET RECORD = ?, VERSION = ?, CMINMSGS_ID = ? WHERE FLID = ? AND VERSION = ?`,
		[]any{string(w.Record), g.version + 1, msgID, w.FLID, g.version}, true
}

// A flight statement whose guard finds the row at another version fails its message alone
// (INFRA: changed under us): the ones before it in the round trip stay, with their reference
// records and events, the one after it is not written.
func TestAQueuedFlightChangedUnderUs(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		if db.Dialect != store.MySQL {
			t.Skip("only MySQL queues")
		}
		ctx := context.Background()
		e := newQueueEnv(t, db, 5)
		if _, _, err := db.Processor.Succeed(ctx, e.ids[0], e.success("I0", "ABC", `{"d":"x"}`), nil, e.now); err != nil {
			t.Fatal(err)
		}
		storetest.Exec(t, db, `INSERT INTO FLIGHT_STATE (FDAY, FLID, RECORD, VERSION, CMINMSGS_ID, UPDATED_AT) VALUES ('2026-12-01', 7001, '{}', 3, NULL, '2026-12-01 00:00:00')`)
		fl := func(identity string) store.Success {
			return store.Success{From: store.Version{State: pipeline.Pending}, TypeTag: "FLOP-STND", Identity: identity,
				Decision: pipeline.Decision{Flights: []pipeline.FlightWrite{{FLID: 7001, Day: "2026-12-01", Record: []byte(`{"FLID":7001}`)}},
					Events: []pipeline.Event{{Target: "T", Kind: "F", Payload: []byte(`{}`)}}}}
		}
		b := e.batch()
		e.queue(b, 1, e.success("I1", "B", `{"d":"y"}`), nil)
		e.queue(b, 2, fl("I2"), guarded{3})
		e.queue(b, 3, fl("I3"), guarded{3}) // read before message 2 wrote it: version 3, now 4
		e.queue(b, 4, e.success("I4", "E", `{"d":"e"}`), nil)
		res, err := b.SendQueued(ctx)
		if err == nil || pipeline.ClassOf(err) != pipeline.Infra || !strings.Contains(err.Error(), "changed under us") || len(res) != 2 {
			t.Fatalf("send: %+v %v", res, err)
		}
		e.commit(b)
		if got := fmt.Sprintf("%s %s %s %s", e.state(1), e.state(2), e.state(3), e.state(4)); got != "SUCCEEDED SUCCEEDED PENDING PENDING" {
			t.Fatalf("states %s", got)
		}
		if got := e.refs(); got != "ABC@1 B@1" {
			t.Fatalf("records %q", got)
		}
		var v int64
		if err := db.SQL.QueryRow(`SELECT VERSION FROM FLIGHT_STATE WHERE FLID = 7001`).Scan(&v); err != nil || v != 4 {
			t.Fatalf("flight version %d %v", v, err)
		}
		if got := e.events(); got != "0 1 2" {
			t.Fatalf("events of messages %q", got)
		}
	})
}

// A reference upsert of a key stored under another case (equal by MySQL's collation, not by
// the batch's read of the records it upserts) is written as one by one writes it: an update
// of the stored record, not a second record; and a record the batch's read found is updated
// at the version read.
func TestAQueuedUpsertOfAKeyEqualByCollation(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		if db.Dialect != store.MySQL {
			t.Skip("only MySQL queues")
		}
		ctx := context.Background()
		e := newQueueEnv(t, db, 4)
		if _, _, err := db.Processor.Succeed(ctx, e.ids[0], e.success("I0", "ABC", `{"d":"x"}`), nil, e.now); err != nil {
			t.Fatal(err)
		}
		b := e.batch()
		e.queue(b, 1, e.success("I1", "ABC", `{"d":"y"}`), nil)
		e.queue(b, 2, e.success("I2", "abc", `{"d":"z"}`), nil)
		e.queue(b, 3, e.success("I3", "ABC", `{"d":"z"}`), nil) // as the one before left it
		res, err := b.SendQueued(ctx)
		if err != nil || len(res) != 3 {
			t.Fatalf("send: %+v %v", res, err)
		}
		if res[1] != (store.QueuedResult{Events: 1, RefChanged: 1}) || res[2].RefChanged != 0 {
			t.Fatalf("results %+v", res)
		}
		e.commit(b)
		if got := e.refs(); got != "ABC@3" {
			t.Fatalf("records %q", got)
		}
		if got := e.events(); got != "0 1 2 3" {
			t.Fatalf("events of messages %q", got)
		}
	})
}
