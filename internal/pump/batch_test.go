package pump_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"msgx/internal/flight"
	"msgx/internal/handler"
	"msgx/internal/jobs"
	"msgx/internal/pipeline"
	"msgx/internal/pump"
	"msgx/internal/sis"
	"msgx/internal/store"
	"msgx/internal/store/storetest"
	"msgx/internal/testkit"
)

// batchEnv is an env whose pump batches (whatever DefaultBatchSize is) over the SQL flight
// store; txView says whether the handlers read through the batch transaction (ViewIn) or
// through a view that cannot see it (the pump then ends the batch before such a reader).
func batchEnv(t *testing.T, db *store.DB, policy pipeline.RetryPolicy, reg *handler.Registry, txView bool, wrap func(pump.Store) pump.Store) (*env, *flight.Store) {
	clock := testkit.NewClock(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	flights := flight.New(storetest.Flight(db), clock, time.UTC)
	if reg == nil {
		reg = handler.Default(handler.Options{})
	}
	opt := pump.Options{
		Policy: policy, Clock: clock, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Jobs: &jobs.Runner{DB: db.Archiver, Clock: clock}, Flights: flights, View: flights, BatchSize: 50,
		SIS: sis.Options{Location: time.UTC},
	}
	if txView {
		opt.FlightsIn = func(tx *sql.Tx) pump.TxFlights { return flights.InTx(tx) }
	}
	var s pump.Store = storetest.Pump(db)
	if wrap != nil {
		s = wrap(storetest.Pump(db))
	}
	return &env{db: db, clock: clock, pump: pump.New(s, reg, opt), t: t}, flights
}

// step runs one pump step (one batch) and fails the test on an error.
func (e *env) step() time.Duration {
	e.t.Helper()
	wait, err := e.pump.Step(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	return wait
}

func flop(seqn, styp, body string) string {
	return `<MSG><META><SNDR>AODB</SNDR><SEQN>` + seqn + `</SEQN><DTTM>20261201080000</DTTM><TYPE>FLOP</TYPE><STYP>` + styp +
		`</STYP></META>` + body + `</MSG>`
}

func schd(seqn, styp string, fltrs ...string) string {
	return `<MSG><META><SNDR>AODB</SNDR><SEQN>` + seqn + `</SEQN><DTTM>20261201080000</DTTM><TYPE>SCHD</TYPE><STYP>` + styp +
		`</STYP></META><SCHD><RECS>` + fmt.Sprint(len(fltrs)) + `</RECS>` + strings.Join(fltrs, "") + `</SCHD></MSG>`
}

func flightRec(flid int64, flno, sodt string) string {
	return fmt.Sprintf(`<FLTR><FLID>%d</FLID><ALCD>%s</ALCD><FLNO>%s</FLNO><MVIN>D</MVIN><SODT>%s</SODT><FLTY>J</FLTY><FLIN>D</FLIN><ACFT>320</ACFT></FLTR>`,
		flid, flno[:2], flno, sodt)
}

// record returns the stored record of flight flid as a map.
func record(t *testing.T, fs *flight.Store, flid int64) map[string]any {
	t.Helper()
	e, err := fs.Get(context.Background(), flid)
	if err != nil || e == nil {
		t.Fatalf("flight %d: %v %v", flid, e, err)
	}
	var m map[string]any
	if err := json.Unmarshal(e.Record, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// Each decision sees the effects of the messages before it in the batch: a snapshot then a
// FLOP of one of its flights (not an ORPHAN), two FLOPs of one flight (the second keeps the
// first's change), a reference ADD then a DNLD of the same TYPE (the replace sees the ADD).
// Reading through the transaction, all of it is one batch; with a view that cannot see the
// batch, the outcome is the same, only in more batches.
func TestDecisionsSeeTheBatchBeforeThem(t *testing.T) {
	t.Parallel()
	for _, txView := range []bool{true, false} {
		t.Run(fmt.Sprintf("txView=%v", txView), func(t *testing.T) {
			storetest.Each(t, func(t *testing.T, db *store.DB) {
				e, fs := batchEnv(t, db, defaultPolicy, nil, txView, nil)
				ids := e.post(
					schd("1", "DNLD", flightRec(5001, "CA1501", "01DEC261300"), flightRec(5002, "CA1502", "01DEC261400")),
					flop("2", "CTOT", `<FLOP><FLID>5001</FLID><FFID>X</FFID><CTOT>01DEC261310</CTOT></FLOP>`),
					flop("3", "STND", `<FLOP><FLID>5001</FLID><FFID>X</FFID><STND>118</STND></FLOP>`),
					refMsg("STTS", "ADD", "4", stts("A", "one"), 1),
					refMsg("STTS", "DNLD", "5", stts("B", "two"), 1),
					refMsg("STTS", "ADD", "6", stts("C", "three"), 1),
				)
				steps := 1
				if wait := e.step(); wait != 0 {
					t.Fatalf("first step waits %s", wait)
				}
				if txView {
					// One batch did it all.
					for _, id := range ids {
						e.want(id, pipeline.Succeeded, "")
					}
				}
				for ; steps < 20 && e.msg(ids[len(ids)-1]).State == pipeline.Pending; steps++ {
					e.step()
				}
				for _, id := range ids {
					e.want(id, pipeline.Succeeded, "")
				}
				if !txView && steps < 2 {
					t.Fatalf("a view that cannot see the batch: the FLOP after the snapshot was decided in the same batch")
				}
				r := record(t, fs, 5001)
				if r["CTOT"] == nil || fmt.Sprint(r["STND"]) != "118" {
					t.Fatalf("flight 5001 after CTOT then STND in one batch: CTOT %v STND %v", r["CTOT"], r["STND"])
				}
				list, err := db.RefData.RefList(context.Background(), "STTS")
				if err != nil {
					t.Fatal(err)
				}
				var keys []string
				for _, x := range list {
					keys = append(keys, x.Key)
				}
				if got := strings.Join(keys, ","); got != "B,C" {
					t.Fatalf("STTS after ADD A, DNLD B, ADD C in one batch: %s, want B,C", got)
				}
				evs, err := db.SQL.Query(`SELECT COUNT(*) FROM MSG_EVENT WHERE CMINMSGS_ID = ?`, ids[2])
				if err != nil {
					t.Fatal(err)
				}
				evs.Next()
				var n int
				evs.Scan(&n)
				evs.Close()
				if n == 0 {
					t.Fatalf("the second FLOP made no events")
				}
			})
		})
	}
}

// infraOn is a registry whose STTS-DEL fails with INFRA (a dependency down).
func infraOn() *handler.Registry {
	reg := handler.Default(handler.Options{})
	reg.Replace("STTS-DEL", handler.Func(func(context.Context, handler.View, *sis.Message) (pipeline.Decision, error) {
		return pipeline.Decision{}, pipeline.Errorf(pipeline.Infra, "dependency down")
	}))
	return reg
}

// A failing message in the middle of a batch fails alone: the ones before it commit; after
// a parked or MALFORMED one the batch goes on; after an INFRA failure (FAILED, with backoff)
// the batch ends and what is behind it waits, as one by one.
func TestAFailureInTheMiddleOfABatchFailsAlone(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		policy := defaultPolicy
		policy.Park = pipeline.DefaultPark
		e, _ := batchEnv(t, db, policy, infraOn(), true, nil)
		ids := e.post(
			refMsg("STTS", "ADD", "1", stts("A", "a"), 1),
			unknownType, // UNSUPPORTED: parked
			refMsg("STTS", "ADD", "2", stts("B", "b"), 1),
			"<MSG><META>", // MALFORMED: DEAD
			refMsg("STTS", "ADD", "3", stts("C", "c"), 1),
			withMeta("AODB", "4", "STTS", "DEL", "<RECS>1</RECS><STTS><STTC>A</STTC></STTS>"), // INFRA: FAILED
			refMsg("STTS", "ADD", "5", stts("D", "d"), 1),
		)
		e.step()
		e.want(ids[0], pipeline.Succeeded, "")
		e.want(ids[1], pipeline.Dead, pipeline.Unsupported)
		e.want(ids[2], pipeline.Succeeded, "")
		e.want(ids[3], pipeline.Dead, pipeline.Malformed)
		e.want(ids[4], pipeline.Succeeded, "")
		m := e.want(ids[5], pipeline.Failed, pipeline.Infra)
		if m.Attempts != 1 || !m.NextAttemptAt.Equal(e.clock.Now().Add(time.Second)) {
			t.Fatalf("INFRA failure in a batch: attempts %d next %v", m.Attempts, m.NextAttemptAt)
		}
		e.want(ids[6], pipeline.Pending, "")
		if wait := e.step(); wait <= 0 || wait > time.Second {
			t.Fatalf("behind a FAILED head the pump waits for its backoff, got %s", wait)
		}
		e.want(ids[6], pipeline.Pending, "")
		rec := e.pump.Recent()
		if len(rec) != 2 || rec[0].MsgID != ids[3] || rec[1].MsgID != ids[1] || rec[1].State != "PARKED" {
			t.Fatalf("recent after the batch: %+v", rec)
		}
	})
}

// A message whose effects fail half way (its second reference record refused by the database)
// is rolled back to its savepoint: none of its records, no identity bound; the messages
// before it commit, the one behind it waits behind the FAILED one, and all go through once
// the database takes them.
func TestAMessageFailingHalfWayLeavesNothing(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e, _ := batchEnv(t, db, defaultPolicy, nil, true, nil)
		if db.Dialect == store.MySQL {
			storetest.Exec(t, db, `CREATE TRIGGER REFUSE_BAD BEFORE INSERT ON REF_DATA FOR EACH ROW BEGIN
				IF NEW.REF_KEY = 'BAD' THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'refused by a test trigger'; END IF; END`)
		} else {
			storetest.Exec(t, db, `CREATE TRIGGER REFUSE_BAD BEFORE INSERT ON REF_DATA WHEN NEW.REF_KEY = 'BAD'
				BEGIN SELECT RAISE(ABORT, 'refused by a test trigger'); END`)
		}
		ids := e.post(
			refMsg("STTS", "ADD", "1", stts("A", "a"), 1),
			refMsg("STTS", "ADD", "2", stts("X", "x")+stts("BAD", "bad"), 2),
			refMsg("STTS", "ADD", "3", stts("C", "c"), 1),
		)
		e.step()
		e.want(ids[0], pipeline.Succeeded, "")
		m := e.want(ids[1], pipeline.Failed, pipeline.Infra)
		if !strings.Contains(*m.LastError, "refused by a test trigger") {
			t.Fatalf("last error %q", *m.LastError)
		}
		e.want(ids[2], pipeline.Pending, "")
		if x, _ := db.RefData.RefGet(context.Background(), "STTS", "X"); x != nil {
			t.Fatalf("the failed message's first record stayed: %+v", x)
		}
		var key sql.NullString
		if err := db.SQL.QueryRow(`SELECT IDENTITY_KEY FROM PROC_STATE WHERE CMINMSGS_ID = ?`, ids[1]).Scan(&key); err != nil || key.Valid {
			t.Fatalf("the failed message's identity stayed bound: %v %v", key, err)
		}
		storetest.Exec(t, db, `DROP TRIGGER REFUSE_BAD`)
		e.clock.Add(time.Second)
		e.drain()
		for _, id := range ids {
			e.want(id, pipeline.Succeeded, "")
		}
	})
}

// Two messages of one identity in one batch: the second is SKIPPED as the first's duplicate,
// found by the identity's unique index on the batch's own uncommitted bind.
func TestADuplicateInsideOneBatch(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e, _ := batchEnv(t, db, defaultPolicy, nil, true, nil)
		a := refMsg("STTS", "ADD", "7", stts("A", "a"), 1)
		ids := e.post(a, refMsg("STTS", "ADD", "8", stts("B", "b"), 1), a, refMsg("STTS", "ADD", "9", stts("C", "c"), 1))
		e.step()
		e.want(ids[0], pipeline.Succeeded, "")
		e.want(ids[1], pipeline.Succeeded, "")
		dup := e.want(ids[2], pipeline.Skipped, "")
		if *dup.LastError != fmt.Sprintf("duplicate-of:%d", ids[0]) {
			t.Fatalf("duplicate in a batch: %q", *dup.LastError)
		}
		e.want(ids[3], pipeline.Succeeded, "")
	})
}

// A job ordered after message X ends the batch after X: it runs before the messages behind it.
func TestAJobDueInTheMiddleOfABatch(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e, _ := batchEnv(t, db, defaultPolicy, nil, true, nil)
		ctx := context.Background()
		before := e.post(refMsg("STTS", "ADD", "1", stts("A", "a"), 1), refMsg("STTS", "ADD", "2", stts("B", "b"), 1))
		if _, err := db.JobQueue.EnqueueJob(ctx, jobs.Archive, "", e.clock.Now()); err != nil {
			t.Fatal(err)
		}
		after := e.post(refMsg("STTS", "ADD", "3", stts("C", "c"), 1), refMsg("STTS", "ADD", "4", stts("D", "d"), 1))
		e.step()
		e.want(before[0], pipeline.Succeeded, "")
		e.want(before[1], pipeline.Succeeded, "")
		e.want(after[0], pipeline.Pending, "")
		if jl, _ := db.JobQueue.ListJobs(ctx, 1); jl[0].State != store.JobPending {
			t.Fatalf("job ran with the batch: %+v", jl[0])
		}
		e.step()
		if jl, _ := db.JobQueue.ListJobs(ctx, 1); jl[0].State != store.JobDone {
			t.Fatalf("job state %s after its turn", jl[0].State)
		}
		e.want(after[0], pipeline.Pending, "")
		e.step()
		e.want(after[0], pipeline.Succeeded, "")
		e.want(after[1], pipeline.Succeeded, "")
	})
}

// racing is a store on which another writer changes a message's row between the pump's read
// of the due messages and its batch.
type racing struct {
	storetest.PumpStore
	race func()
}

func (r *racing) BeginBatch(ctx context.Context) (*store.Batch, error) {
	if r.race != nil {
		r.race()
		r.race = nil
	}
	return r.PumpStore.BeginBatch(ctx)
}

// A row that changed after the pump read it (an operator's action) is never overwritten: the
// batch commits the messages before it, leaves it as the operator left it, and reads again.
func TestAReplayRacingABatchIsNotOverwritten(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		var rc *racing
		e, _ := batchEnv(t, db, defaultPolicy, nil, true, func(s pump.Store) pump.Store {
			rc = &racing{PumpStore: s.(storetest.PumpStore)}
			return rc
		})
		ids := e.post(refMsg("STTS", "ADD", "1", stts("A", "a"), 1), refMsg("STTS", "ADD", "2", stts("B", "b"), 1),
			refMsg("STTS", "ADD", "3", stts("C", "c"), 1))
		rc.race = func() {
			// As a replay leaves a row: PENDING, its attempts and times reset, another version.
			storetest.Exec(t, db, fmt.Sprintf(`UPDATE PROC_STATE SET ATTEMPTS = 2, LAST_ERROR = 'operator' WHERE CMINMSGS_ID = %d`, ids[1]))
		}
		if wait := e.step(); wait != 0 {
			t.Fatalf("after a changed row the pump reads again at once, got a wait of %s", wait)
		}
		e.want(ids[0], pipeline.Succeeded, "")
		m := e.want(ids[1], pipeline.Pending, "")
		if m.Attempts != 2 || *m.LastError != "operator" {
			t.Fatalf("the operator's row was overwritten: %+v", m)
		}
		e.want(ids[2], pipeline.Pending, "")
		if b, _ := db.RefData.RefGet(context.Background(), "STTS", "B"); b != nil {
			t.Fatalf("the changed message's effects were applied")
		}
		e.drain()
		for _, id := range ids {
			e.want(id, pipeline.Succeeded, "")
		}
	})
}

// A batch whose lease was taken over commits nothing and stops the step.
func TestABatchWithoutTheLeaseCommitsNothing(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e, _ := batchEnv(t, db, defaultPolicy, nil, true, nil)
		ctx := context.Background()
		if err := db.Leases.AcquireLease(ctx, "pump", "me", time.Minute, e.clock.Now()); err != nil {
			t.Fatal(err)
		}
		db.Leases.SetFence("pump", "me")
		ids := e.post(refMsg("STTS", "ADD", "1", stts("A", "a"), 1), refMsg("STTS", "ADD", "2", stts("B", "b"), 1))
		if err := db.Leases.TakeOverLease(ctx, store.LeaseClaim{Name: "pump", Holder: "other", TTL: time.Minute}, "me", e.clock.Now()); err != nil {
			t.Fatal(err)
		}
		if _, err := e.pump.Step(ctx); err == nil || !strings.Contains(err.Error(), "lease") {
			t.Fatalf("a fenced batch: %v", err)
		}
		e.want(ids[0], pipeline.Pending, "")
		e.want(ids[1], pipeline.Pending, "")
	})
}

// A message whose row already holds its identity (its commit went through but the answer was
// lost) is recorded SUCCEEDED in the batch, not applied again.
func TestABatchDoesNotApplyAnAppliedMessageAgain(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e, _ := batchEnv(t, db, defaultPolicy, nil, true, nil)
		ids := e.post(refMsg("STTS", "ADD", "1", stts("A", "a"), 1), refMsg("STTS", "ADD", "2", stts("Z", "once"), 1))
		identity := pipeline.Identity("AODB", "STTS", "ADD", "2", "", false)
		storetest.Exec(t, db, fmt.Sprintf(`UPDATE PROC_STATE SET IDENTITY_KEY = '%s' WHERE CMINMSGS_ID = %d`, store.IdentityKey(identity), ids[1]))
		e.step()
		e.want(ids[0], pipeline.Succeeded, "")
		if m := e.want(ids[1], pipeline.Succeeded, ""); !strings.Contains(m.Note, "already applied") {
			t.Fatalf("note %q", m.Note)
		}
		if z, _ := db.RefData.RefGet(context.Background(), "STTS", "Z"); z != nil {
			t.Fatalf("an applied message was applied again")
		}
	})
}

// A message longer than the batch read brings (store.DueRawLimit) is read alone in its turn;
// with pipeline.batch-wait a backlog smaller than a batch is taken after the wait.
func TestALongMessageAndTheBatchWait(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e, _ := batchEnv(t, db, defaultPolicy, nil, true, nil)
		e.pump = pump.New(storetest.Pump(db), handler.Default(handler.Options{}), pump.Options{Policy: defaultPolicy, Clock: e.clock,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), BatchSize: 10, BatchWait: 5 * time.Millisecond})
		long := strings.Replace(refMsg("STTS", "ADD", "2", stts("B", "b"), 1), "<RECS>", strings.Repeat(" ", store.DueRawLimit+1)+"<RECS>", 1)
		ids := e.post(refMsg("STTS", "ADD", "1", stts("A", "a"), 1), long, refMsg("STTS", "ADD", "3", stts("C", "c"), 1))
		due, err := db.Processor.Due(context.Background(), 10)
		if err != nil || len(due) != 3 || due[0].RawLater || !due[1].RawLater || due[1].Raw != "" || !due[1].RawOK {
			t.Fatalf("due with a long message: %v", err)
		}
		e.step()
		for _, id := range ids {
			e.want(id, pipeline.Succeeded, "")
		}
	})
}

// A duplicate is SKIPPED whatever its handler would say, as one by one (where the identity is
// checked before the handler runs): here its handler fails the second time it is asked.
func TestADuplicateWhoseHandlerFailsIsSkipped(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		reg := handler.Default(handler.Options{})
		add, _ := reg.Lookup("STTS-ADD")
		calls := 0
		reg.Replace("STTS-ADD", handler.Func(func(ctx context.Context, v handler.View, m *sis.Message) (pipeline.Decision, error) {
			if calls++; calls > 1 {
				return pipeline.Decision{}, pipeline.Errorf(pipeline.CodecError, "cannot read it twice")
			}
			return add.Decide(ctx, v, m)
		}))
		policy := defaultPolicy
		policy.Park = pipeline.DefaultPark
		e, _ := batchEnv(t, db, policy, reg, true, nil)
		a := refMsg("STTS", "ADD", "7", stts("A", "a"), 1)
		ids := e.post(a, a)
		e.step()
		e.want(ids[0], pipeline.Succeeded, "")
		if m := e.want(ids[1], pipeline.Skipped, ""); *m.LastError != fmt.Sprintf("duplicate-of:%d", ids[0]) {
			t.Fatalf("duplicate whose handler fails: %q", *m.LastError)
		}
	})
}

// failingBegin is a store whose next batch cannot begin (the database is away).
type failingBegin struct {
	storetest.PumpStore
	fail int
}

func (f *failingBegin) BeginBatch(ctx context.Context) (*store.Batch, error) {
	if f.fail > 0 {
		f.fail--
		return nil, store.Unavailable(fmt.Errorf("connection refused"))
	}
	return f.PumpStore.BeginBatch(ctx)
}

// A batch that cannot be begun or committed writes nothing, and the pump goes one by one until
// a message's outcome is recorded, so an unavailable database meets exactly today's rules;
// then it batches again.
func TestAnUncommittedBatchFallsBackToOneByOne(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		var fb *failingBegin
		e, _ := batchEnv(t, db, defaultPolicy, nil, true, func(s pump.Store) pump.Store {
			fb = &failingBegin{PumpStore: s.(storetest.PumpStore)}
			return fb
		})
		ids := e.post(refMsg("STTS", "ADD", "1", stts("A", "a"), 1), refMsg("STTS", "ADD", "2", stts("B", "b"), 1),
			refMsg("STTS", "ADD", "3", stts("C", "c"), 1))
		fb.fail = 1
		if wait := e.step(); wait != 0 {
			t.Fatalf("after a batch that could not begin: wait %s", wait)
		}
		e.want(ids[0], pipeline.Pending, "")
		e.step() // one by one: the head alone
		e.want(ids[0], pipeline.Succeeded, "")
		e.want(ids[1], pipeline.Pending, "")
		e.step() // batched again
		e.want(ids[1], pipeline.Succeeded, "")
		e.want(ids[2], pipeline.Succeeded, "")
	})
}

// eventsBy is a registry whose STTS-ADD emits one event whose kind its SEQN chooses: "3" a
// kind longer than MSG_EVENT.KIND (MariaDB refuses the value), "5" the kind a test trigger
// refuses (a failure of the database, on both), any other a plain one.
func eventsBy() *handler.Registry {
	reg := handler.Default(handler.Options{})
	reg.Replace("STTS-ADD", handler.Func(func(_ context.Context, _ handler.View, m *sis.Message) (pipeline.Decision, error) {
		kind := "plain"
		switch m.Meta.SEQN {
		case "3":
			kind = strings.Repeat("k", 40)
		case "5":
			kind = "REFUSE"
		}
		return pipeline.Decision{Events: []pipeline.Event{{Target: "KAFKA_FLOP", Kind: kind, Key: m.Meta.SEQN,
			Payload: json.RawMessage(`{"seqn":"` + m.Meta.SEQN + `"}`)}}}, nil
	}))
	return reg
}

// A batch writes its messages' events at its end, many per statement. When that write fails
// on message k's event, the batch is done again with each message writing its own events
// under its savepoint, so the outcome is exactly one by one's: the messages before k commit
// with their events in order, k fails alone with its class (a value MariaDB refuses: parked
// CODEC_ERROR, and the batch goes on; a refusal by the database: FAILED INFRA, and what is
// behind it waits), and nothing of k is left.
func TestAFailingEventWriteFailsItsMessageAlone(t *testing.T) {
	t.Parallel()
	for _, size := range []int{1, 50} {
		t.Run(fmt.Sprintf("batch=%d", size), func(t *testing.T) {
			storetest.Each(t, func(t *testing.T, db *store.DB) {
				policy := defaultPolicy
				policy.Park = pipeline.DefaultPark
				e, _ := batchEnv(t, db, policy, eventsBy(), true, nil)
				e.pump = pump.New(storetest.Pump(db), eventsBy(), pump.Options{Policy: policy, Clock: e.clock, BatchSize: size,
					Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), SIS: sis.Options{Location: time.UTC}})
				if db.Dialect == store.MySQL {
					storetest.Exec(t, db, `CREATE TRIGGER REFUSE_EVENT BEFORE INSERT ON MSG_EVENT FOR EACH ROW BEGIN
						IF NEW.KIND = 'REFUSE' THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'event refused by a test trigger'; END IF; END`)
				} else {
					storetest.Exec(t, db, `CREATE TRIGGER REFUSE_EVENT BEFORE INSERT ON MSG_EVENT WHEN NEW.KIND = 'REFUSE'
						BEGIN SELECT RAISE(ABORT, 'event refused by a test trigger'); END`)
				}
				var raws []string
				for i := 1; i <= 6; i++ {
					raws = append(raws, refMsg("STTS", "ADD", fmt.Sprint(i), stts(fmt.Sprintf("K%d", i), "k"), 1))
				}
				ids := e.post(raws...)
				for i := 0; i < 10 && e.msg(ids[4]).State == pipeline.Pending; i++ {
					e.step()
				}
				applied := []int64{ids[0], ids[1], ids[3]}
				e.want(ids[0], pipeline.Succeeded, "")
				e.want(ids[1], pipeline.Succeeded, "")
				if db.Dialect == store.MySQL {
					m := e.want(ids[2], pipeline.Dead, pipeline.CodecError)
					if !strings.Contains(*m.LastError, "refused a value") {
						t.Fatalf("message 3: %q", *m.LastError)
					}
				} else {
					e.want(ids[2], pipeline.Succeeded, "") // SQLite takes the long kind
					applied = []int64{ids[0], ids[1], ids[2], ids[3]}
				}
				e.want(ids[3], pipeline.Succeeded, "")
				m := e.want(ids[4], pipeline.Failed, pipeline.Infra)
				if !strings.Contains(*m.LastError, "event refused by a test trigger") {
					t.Fatalf("message 5: %q", *m.LastError)
				}
				e.want(ids[5], pipeline.Pending, "")
				rows, err := db.SQL.Query(`SELECT CMINMSGS_ID FROM MSG_EVENT ORDER BY EVENT_ID`)
				if err != nil {
					t.Fatal(err)
				}
				var got []int64
				for rows.Next() {
					var id int64
					rows.Scan(&id)
					got = append(got, id)
				}
				rows.Close()
				if fmt.Sprint(got) != fmt.Sprint(applied) {
					t.Fatalf("events of messages %v, want one each of %v in order", got, applied)
				}
				for _, id := range []int64{ids[4]} {
					var key sql.NullString
					if err := db.SQL.QueryRow(`SELECT IDENTITY_KEY FROM PROC_STATE WHERE CMINMSGS_ID = ?`, id).Scan(&key); err != nil || key.Valid {
						t.Fatalf("the failed message's identity stayed bound: %v %v", key, err)
					}
				}
				storetest.Exec(t, db, `DROP TRIGGER REFUSE_EVENT`)
				e.clock.Add(time.Second)
				e.drain()
				e.want(ids[4], pipeline.Succeeded, "")
				e.want(ids[5], pipeline.Succeeded, "")
			})
		})
	}
}

// A batch ends exactly as one by one, message by message: state, class, note and events, and
// the reference and flight rows with their versions. On MySQL most of these messages take the
// batch's one-round-trip path (bind and effect in one multi-statement): a record added, one
// changed, one sent again unchanged, one deleted, one deleted that is not there, a flight
// changed in place twice, a duplicate, a FLOP of an unknown flight.
func TestABatchEndsAsOneByOne(t *testing.T) {
	t.Parallel()
	msgs := []string{
		schd("1", "DNLD", flightRec(5001, "CA1501", "01DEC261300"), flightRec(5002, "CA1502", "01DEC261400")),
		refMsg("STTS", "ADD", "2", stts("A", "one"), 1),
		refMsg("STTS", "ADD", "3", stts("B", "two"), 1),
		refMsg("STTS", "UPD", "4", stts("A", "one, changed"), 1),
		refMsg("STTS", "UPD", "5", stts("B", "two"), 1),
		refMsg("STTS", "DEL", "6", `<STTS><STTC>B</STTC></STTS>`, 1),
		refMsg("STTS", "DEL", "7", `<STTS><STTC>Z</STTC></STTS>`, 1),
		flop("8", "CTOT", `<FLOP><FLID>5001</FLID><FFID>X</FFID><CTOT>01DEC261310</CTOT></FLOP>`),
		flop("9", "STND", `<FLOP><FLID>5001</FLID><FFID>X</FFID><STND>118</STND></FLOP>`),
		flop("10", "STND", `<FLOP><FLID>5001</FLID><FFID>X</FFID><STND>118</STND></FLOP>`),
		refMsg("STTS", "ADD", "2", stts("A", "one"), 1),
		flop("11", "STND", `<FLOP><FLID>5999</FLID><FFID>X</FFID><STND>7</STND></FLOP>`),
		refMsg("STTS", "ADD", "12", stts("C", "three"), 1),
	}
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		var runs [2]string
		for i, size := range []int{1, 50} {
			var tdb *store.DB
			if db.Dialect == store.MySQL {
				tdb = storetest.MySQL(t)
			} else {
				tdb = storetest.SQLite(t)
			}
			policy := defaultPolicy
			policy.Park = pipeline.DefaultPark
			e, fs := batchEnv(t, tdb, policy, nil, true, nil)
			e.pump = pump.New(storetest.Pump(tdb), handler.Default(handler.Options{}), pump.Options{Policy: policy, Clock: e.clock, BatchSize: size,
				Flights: fs, View: fs, FlightsIn: func(tx *sql.Tx) pump.TxFlights { return fs.InTx(tx) },
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), SIS: sis.Options{Location: time.UTC}})
			ids := e.post(msgs...)
			e.drain()
			var b strings.Builder
			for _, id := range ids {
				m := e.msg(id)
				var n int
				if err := tdb.SQL.QueryRow(`SELECT COUNT(*) FROM MSG_EVENT WHERE CMINMSGS_ID = ?`, id).Scan(&n); err != nil {
					t.Fatal(err)
				}
				last := ""
				if m.LastError != nil {
					last = *m.LastError
				}
				fmt.Fprintf(&b, "%d %s %s note=%q last=%q events=%d\n", id, m.State, m.Class(), m.Note, last, n)
			}
			list, _ := tdb.RefData.RefList(context.Background(), "STTS")
			for _, r := range list {
				fmt.Fprintf(&b, "ref %s v%d %s\n", r.Key, r.Version, r.Fields)
			}
			for _, flid := range []int64{5001, 5002} {
				f, err := fs.Get(context.Background(), flid)
				if err != nil || f == nil {
					t.Fatalf("flight %d: %v", flid, err)
				}
				fmt.Fprintf(&b, "flight %d v%d %s\n", flid, f.Version, f.Record)
			}
			runs[i] = b.String()
		}
		if runs[0] != runs[1] {
			t.Fatalf("one by one:\n%s\nbatched:\n%s", runs[0], runs[1])
		}
	})
}

// rawHook is a store that runs hook when the pump reads a long message's text.
type rawHook struct {
	storetest.PumpStore
	hook func()
}

func (r *rawHook) Raw(ctx context.Context, id int64) (string, bool, error) {
	if r.hook != nil {
		r.hook()
	}
	return r.PumpStore.Raw(ctx, id)
}

// A long message (a schedule of thousands of flights takes a few hundred milliseconds to
// decode) is read and decoded before the batch transaction opens: on SQLite that transaction
// holds the write lock, and the inbox must go on accepting messages meanwhile.
func TestTheInboxAcceptsWhileALongMessageIsRead(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		var rh *rawHook
		e, _ := batchEnv(t, db, defaultPolicy, nil, true, func(s pump.Store) pump.Store {
			rh = &rawHook{PumpStore: s.(storetest.PumpStore)}
			return rh
		})
		long := strings.Replace(refMsg("STTS", "ADD", "2", stts("B", "b"), 1), "<RECS>", strings.Repeat(" ", store.DueRawLimit+1)+"<RECS>", 1)
		ids := e.post(refMsg("STTS", "ADD", "1", stts("A", "a"), 1), long)
		var accepted []int64
		rh.hook = func() {
			rh.hook = nil
			var err error
			if accepted, err = db.Intake.InsertMessages(context.Background(), []string{refMsg("STTS", "ADD", "3", stts("C", "c"), 1)}, e.clock.Now()); err != nil {
				t.Errorf("the inbox could not insert while the pump read a long message: %v", err)
			}
		}
		e.drain()
		if len(accepted) != 1 {
			t.Fatalf("no message accepted while the pump read the long message (accepted %v)", accepted)
		}
		for _, id := range append(ids, accepted...) {
			e.want(id, pipeline.Succeeded, "")
		}
	})
}
