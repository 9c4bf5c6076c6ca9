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
	"msgx/internal/flight/flighttest"
	"msgx/internal/flight/redisflight"
	"msgx/internal/handler"
	"msgx/internal/pipeline"
	"msgx/internal/pump"
	"msgx/internal/sis"
	"msgx/internal/store"
	"msgx/internal/store/storetest"
	"msgx/internal/testkit"
)

// phaseA is the test bed of the phase A pump: Redis authoritative under a key prefix of the
// test's own, FLIGHT_STATE its mirror, handlers reading flights from Redis and reference data
// through the batch transaction, as serve wires it.
type phaseA struct {
	*env
	rs     *redisflight.Store
	mirror *flight.Store
}

// phaseAOptions adjust a phase A pump: its registry, the authority it writes (wrapping the
// Redis store), the store it commits to, and the failpoint after each script.
type phaseAOptions struct {
	reg   *handler.Registry
	auth  func(*redisflight.Store) pump.Authority
	store func(*store.DB) pump.Store
	after func(msgID int64)
	solo  bool // no ViewIn: one message per transaction
	plain bool // no BatchFlights: every read and version from Redis
	size  int  // pipeline.batch-size; 0: 50
	// identity is identity.mode; "" is content.
	identity pipeline.IdentityMode
}

func newPhaseA(t *testing.T, db *store.DB, policy pipeline.RetryPolicy, o phaseAOptions) *phaseA {
	clock := testkit.NewClock(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	rs := redisflight.New(redisflight.Options{Addr: flighttest.RedisAddr(), Prefix: flighttest.RedisPrefix(t), Clock: clock, Location: time.UTC})
	t.Cleanup(func() { rs.Close() })
	a := &phaseA{env: &env{db: db, clock: clock, t: t}, rs: rs, mirror: flight.New(storetest.Flight(db), clock, time.UTC)}
	a.pump = a.newPump(policy, o)
	return a
}

// newPump returns a pump over the same database and Redis (a restart).
func (a *phaseA) newPump(policy pipeline.RetryPolicy, o phaseAOptions) *pump.Pump {
	if o.reg == nil {
		o.reg = handler.Default(handler.Options{})
	}
	var auth pump.Authority = a.rs
	if o.auth != nil {
		auth = o.auth(a.rs)
	}
	var s pump.Store = storetest.Pump(a.db)
	if o.store != nil {
		s = o.store(a.db)
	}
	if o.size == 0 {
		o.size = 50
	}
	opt := pump.Options{
		Policy: policy, Clock: a.clock, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), SIS: sis.Options{Location: time.UTC},
		Flights: a.mirror, View: redisflight.WithRefs(a.rs, a.mirror), Authority: auth, AfterAuthority: o.after, BatchSize: o.size,
		Identity: o.identity,
	}
	if !o.solo {
		opt.ViewIn = func(tx *sql.Tx) handler.View { return redisflight.WithRefs(a.rs, a.mirror.InTx(tx)) }
		if !o.plain {
			rs := a.rs
			if fl, ok := auth.(*flaky); ok {
				opt.BatchFlights = func() pump.BatchFlights { return &flakyBatch{Batch: rs.Batch(), f: fl} }
			} else {
				opt.BatchFlights = func() pump.BatchFlights { return rs.Batch() }
			}
		}
	}
	return pump.New(s, o.reg, opt)
}

func (a *phaseA) step() {
	a.t.Helper()
	if _, err := a.pump.Step(context.Background()); err != nil {
		a.t.Fatal(err)
	}
}

// version returns flight flid's version in Redis and checks the FLIGHT_STATE mirror holds the
// same record at the same version.
func (a *phaseA) version(flid int64) int64 {
	a.t.Helper()
	ctx := context.Background()
	e, err := a.rs.Get(ctx, flid)
	if err != nil || e == nil {
		a.t.Fatalf("flight %d in Redis: %v %v", flid, e, err)
	}
	m, err := a.mirror.Get(ctx, flid)
	if err != nil || m == nil || m.Version != e.Version || string(m.Record) != string(e.Record) {
		if m == nil {
			a.t.Fatalf("flight %d: not in FLIGHT_STATE (%v), Redis at version %d", flid, err, e.Version)
		}
		a.t.Fatalf("flight %d: FLIGHT_STATE version %d %s, Redis version %d %s", flid, m.Version, m.Record, e.Version, e.Record)
	}
	return e.Version
}

// eventsPerMessage counts MSG_EVENT rows by message.
func eventsPerMessage(t *testing.T, db *store.DB) map[int64]int {
	t.Helper()
	rows, err := db.SQL.Query(`SELECT CMINMSGS_ID, COUNT(*) FROM MSG_EVENT GROUP BY CMINMSGS_ID`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[int64]int{}
	for rows.Next() {
		var id int64
		var n int
		if err := rows.Scan(&id, &n); err != nil {
			t.Fatal(err)
		}
		out[id] = n
	}
	return out
}

// eachBatchFlights runs fn on both databases with the batch's flight store (as serve runs)
// and without it (every read and version from Redis).
func eachBatchFlights(t *testing.T, fn func(t *testing.T, db *store.DB, plain bool)) {
	for _, plain := range []bool{false, true} {
		t.Run(map[bool]string{false: "batch-flights", true: "plain"}[plain], func(t *testing.T) {
			storetest.Each(t, func(t *testing.T, db *store.DB) { fn(t, db, plain) })
		})
	}
}

func fop(flid int64, seqn, styp, field string) string {
	return flop(seqn, styp, fmt.Sprintf(`<FLOP><FLID>%d</FLID><FFID>X</FFID>%s</FLOP>`, flid, field))
}

// In phase A one batch takes the whole run: a snapshot, FLOPs of its flights (two of one
// flight, the second keeping the first's change: each decision reads Redis after the
// previous script), a reference ADD then a DNLD of its TYPE (read through the batch
// transaction), and a FLOP whose identity an earlier message of the same batch bound: SKIPPED
// as a duplicate before it is decided, so its change never reaches Redis. The duplicate reuses
// the SEQN with other content, a duplicate under identity.mode seqn only (content mode:
// TestPhaseABatchTellsAResendFromAReusedSEQN).
func TestPhaseABatchDecisionsSeeTheBatchBeforeThem(t *testing.T) {
	t.Parallel()
	eachBatchFlights(t, func(t *testing.T, db *store.DB, plain bool) {
		a := newPhaseA(t, db, defaultPolicy, phaseAOptions{plain: plain, identity: pipeline.IdentitySeqn})
		ids := a.post(
			schd("1", "DNLD", flightRec(5001, "CA1501", "01DEC261300"), flightRec(5002, "CA1502", "01DEC261400")),
			fop(5001, "2", "CTOT", "<CTOT>01DEC261310</CTOT>"),
			fop(5001, "3", "STND", "<STND>118</STND>"),
			refMsg("STTS", "ADD", "4", stts("A", "one"), 1),
			refMsg("STTS", "DNLD", "5", stts("B", "two"), 1),
			fop(5001, "3", "STND", "<STND>119</STND>"), // the identity of the third
			fop(5002, "6", "STND", "<STND>120</STND>"),
		)
		a.step()
		for i, id := range ids {
			if i == 5 {
				if m := a.want(id, pipeline.Skipped, ""); *m.LastError != fmt.Sprintf("duplicate-of:%d", ids[2]) {
					t.Fatalf("the duplicate: %q", *m.LastError)
				}
				continue
			}
			a.want(id, pipeline.Succeeded, "") // all in the first step: one batch
		}
		r := redisRecord(t, a.rs, 5001)
		if r["CTOT"] == nil || fmt.Sprint(r["STND"]) != "118" {
			t.Fatalf("flight 5001 in Redis after CTOT, STND 118 and a duplicate STND 119: %v", r)
		}
		if v := a.version(5001); v != 3 {
			t.Fatalf("flight 5001 at version %d, want 3 (insert, CTOT, STND; not the duplicate)", v)
		}
		if v := a.version(5002); v != 2 {
			t.Fatalf("flight 5002 at version %d, want 2", v)
		}
		list, err := db.RefData.RefList(context.Background(), "STTS")
		if err != nil || len(list) != 1 || list[0].Key != "B" {
			t.Fatalf("STTS after ADD A then DNLD B in one batch: %+v %v", list, err)
		}
		if ev := eventsPerMessage(t, db); ev[ids[0]] != 2 || ev[ids[1]] != 1 || ev[ids[2]] != 1 || ev[ids[5]] != 0 || ev[ids[6]] != 1 {
			t.Fatalf("events per message: %v", ev)
		}
	})
}

func redisRecord(t *testing.T, rs *redisflight.Store, flid int64) map[string]any {
	t.Helper()
	e, err := rs.Get(context.Background(), flid)
	if err != nil || e == nil {
		t.Fatalf("flight %d: %v %v", flid, e, err)
	}
	var m map[string]any
	if err := json.Unmarshal(e.Record, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// flaky is the Redis store failing the script of the messages in down with INFRA, as a Redis
// that stops answering for a moment would.
type flaky struct {
	*redisflight.Store
	down map[int64]bool
}

func (f *flaky) refuse(msgID int64) error {
	if f.down[msgID] {
		return pipeline.Errorf(pipeline.Infra, "redis flight store: apply message %d: connection reset by peer (test)", msgID)
	}
	return nil
}

func (f *flaky) ApplyMessage(ctx context.Context, msgID int64, ws []pipeline.FlightWrite, marker []byte, now time.Time) ([]byte, bool, error) {
	if err := f.refuse(msgID); err != nil {
		return nil, false, err
	}
	return f.Store.ApplyMessage(ctx, msgID, ws, marker, now)
}

func (f *flaky) ApplyUnmarked(ctx context.Context, msgID int64, ws []pipeline.FlightWrite, marker []byte, now time.Time) ([]byte, bool, error) {
	if err := f.refuse(msgID); err != nil {
		return nil, false, err
	}
	return f.Store.ApplyUnmarked(ctx, msgID, ws, marker, now)
}

// flakyBatch is a batch of flaky's store, failing the same scripts.
type flakyBatch struct {
	*redisflight.Batch
	f *flaky
}

func (b *flakyBatch) ApplyUnmarked(ctx context.Context, msgID int64, ws []pipeline.FlightWrite, marker []byte, now time.Time) ([]byte, bool, error) {
	if err := b.f.refuse(msgID); err != nil {
		return nil, false, err
	}
	return b.Batch.ApplyUnmarked(ctx, msgID, ws, marker, now)
}

// A message that fails in the middle of a phase A batch fails as one by one: an ORPHAN FLOP
// (a decision's error) is parked and the batch goes on; a FLOP whose Redis script fails is
// FAILED INFRA with its backoff, the batch ends after it, the messages before it commit and
// the ones behind it wait; nothing of the failed one is in Redis or SQL. Once Redis answers,
// its retry applies it once.
func TestPhaseAFailureInTheMiddleOfABatch(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		policy := defaultPolicy
		policy.Park = pipeline.DefaultPark
		fl := &flaky{down: map[int64]bool{}}
		a := newPhaseA(t, db, policy, phaseAOptions{auth: func(rs *redisflight.Store) pump.Authority { fl.Store = rs; return fl }})
		ids := a.post(
			schd("1", "DNLD", flightRec(5001, "CA1501", "01DEC261300")),
			fop(5001, "2", "CTOT", "<CTOT>01DEC261310</CTOT>"),
			fop(4242, "3", "CTOT", "<CTOT>01DEC261310</CTOT>"), // ORPHAN: parked
			fop(5001, "4", "STND", "<STND>118</STND>"),
			fop(5001, "5", "STND", "<STND>119</STND>"), // Redis fails
			fop(5001, "6", "REMC", "<REMC>six</REMC>"),
		)
		fl.down[ids[4]] = true
		a.step()
		a.want(ids[0], pipeline.Succeeded, "")
		a.want(ids[1], pipeline.Succeeded, "")
		a.want(ids[2], pipeline.Dead, pipeline.Orphan)
		a.want(ids[3], pipeline.Succeeded, "")
		m := a.want(ids[4], pipeline.Failed, pipeline.Infra)
		if m.Attempts != 1 || !m.NextAttemptAt.Equal(a.clock.Now().Add(time.Second)) || !strings.Contains(*m.LastError, "connection reset") {
			t.Fatalf("the FLOP whose script failed: attempts %d next %v error %q", m.Attempts, m.NextAttemptAt, *m.LastError)
		}
		a.want(ids[5], pipeline.Pending, "")
		if v := a.version(5001); v != 3 {
			t.Fatalf("flight 5001 at version %d after the batch, want 3 (insert, CTOT, STND 118)", v)
		}
		if ev := eventsPerMessage(t, db); ev[ids[4]] != 0 || ev[ids[5]] != 0 {
			t.Fatalf("events of the failed FLOP and the one behind it: %v", ev)
		}
		a.step() // the head's backoff is not over: nothing moves
		a.want(ids[4], pipeline.Failed, pipeline.Infra)
		a.want(ids[5], pipeline.Pending, "")

		delete(fl.down, ids[4])
		a.clock.Add(time.Second)
		a.drain()
		a.want(ids[4], pipeline.Succeeded, "")
		a.want(ids[5], pipeline.Succeeded, "")
		if v := a.version(5001); v != 5 {
			t.Fatalf("flight 5001 at version %d, want 5", v)
		}
		if r := redisRecord(t, a.rs, 5001); fmt.Sprint(r["STND"]) != "119" || fmt.Sprint(r["REMC"]) != "six" {
			t.Fatalf("flight 5001: %v", r)
		}
		if ev := eventsPerMessage(t, db); ev[ids[4]] != 1 || ev[ids[5]] != 1 {
			t.Fatalf("events per message: %v", ev)
		}
	})
}

// With Redis down the phase A batch behaves as one by one: the head fails INFRA, nothing is
// committed for it, and the queue waits.
func TestPhaseABatchRedisDown(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		a := newPhaseA(t, db, defaultPolicy, phaseAOptions{})
		down := redisflight.New(redisflight.Options{Addr: "127.0.0.1:1", Clock: a.clock, Location: time.UTC})
		defer down.Close()
		a.rs = down
		a.pump = a.newPump(defaultPolicy, phaseAOptions{})
		ids := a.post(schd("1", "DNLD", flightRec(5001, "CA1501", "01DEC261300")), fop(5001, "2", "CTOT", "<CTOT>01DEC261310</CTOT>"))
		a.step()
		a.want(ids[0], pipeline.Failed, pipeline.Infra)
		a.want(ids[1], pipeline.Pending, "")
		if ev := eventsPerMessage(t, db); len(ev) != 0 {
			t.Fatalf("events with Redis down: %v", ev)
		}
	})
}

// crashed is what the failpoint panics with: the process dying after a script.
type crashed struct{}

// holding is a store that remembers the batch it opened, so a test that "kills" the pump
// mid-batch can roll it back as the database does when a process dies.
type holding struct {
	storetest.PumpStore
	open *store.Batch
}

func (h *holding) BeginBatch(ctx context.Context) (*store.Batch, error) {
	b, err := h.PumpStore.BeginBatch(ctx)
	h.open = b
	return b, err
}

// A crash in the middle of a phase A batch (after some messages' scripts, before the SQL
// commit), again and again at a different script each time, loses nothing and doubles
// nothing: every message ends SUCCEEDED (or SKIPPED, the duplicate), with exactly its events,
// and every flight's version in Redis and FLIGHT_STATE equals its number of effective changes.
// The duplicate reuses a SEQN with other content (identity.mode seqn).
func TestPhaseACrashInTheMiddleOfABatch(t *testing.T) {
	t.Parallel()
	eachBatchFlights(t, func(t *testing.T, db *store.DB, plain bool) {
		a := newPhaseA(t, db, defaultPolicy, phaseAOptions{plain: plain, identity: pipeline.IdentitySeqn})
		const flights = 4
		var fltrs []string
		for i := range flights {
			fltrs = append(fltrs, flightRec(int64(6001+i), fmt.Sprintf("CA16%02d", i), fmt.Sprintf("01DEC26%02d00", 10+i)))
		}
		raws := []string{schd("100", "DNLD", fltrs...)}
		changes := map[int64]int{}
		for i := range 40 {
			flid := int64(6001 + i%flights)
			raws = append(raws, fop(flid, fmt.Sprint(200+i), "REMC", fmt.Sprintf("<REMC>remark %d</REMC>", i)))
			changes[flid]++
		}
		raws = append(raws, fop(6001, "210", "REMC", "<REMC>a duplicate</REMC>")) // the identity of the 11th FLOP
		ids := a.post(raws...)
		crashes := 0
		for round := 0; round < 60 && a.msg(ids[len(ids)-1]).State == pipeline.Pending; round++ {
			h := &holding{}
			scripts := 0
			crashAt := 1 + round%7
			a.pump = a.newPump(defaultPolicy, phaseAOptions{
				plain:    plain,
				size:     16,
				identity: pipeline.IdentitySeqn,
				store:    func(db *store.DB) pump.Store { h.PumpStore = storetest.Pump(db); return h },
				after: func(int64) {
					if scripts++; scripts == crashAt {
						panic(crashed{})
					}
				},
			})
			func() {
				defer func() {
					if r := recover(); r != nil {
						if r != (crashed{}) {
							panic(r)
						}
						crashes++
						h.open.Rollback() // what the database does when the process dies
					}
				}()
				a.drain()
			}()
		}
		if crashes < 5 {
			t.Fatalf("only %d crashes", crashes)
		}
		ev := eventsPerMessage(t, db)
		for i, id := range ids {
			switch {
			case i == 0:
				a.want(id, pipeline.Succeeded, "")
				if ev[id] != flights { // one shared event per flight
					t.Fatalf("the snapshot has %d events, want %d", ev[id], flights)
				}
			case i == len(ids)-1:
				a.want(id, pipeline.Skipped, "")
				if ev[id] != 0 {
					t.Fatalf("the duplicate has %d events", ev[id])
				}
			default:
				a.want(id, pipeline.Succeeded, "")
				if ev[id] != 1 {
					t.Fatalf("FLOP %d has %d events, want 1 (after %d crashes)", id, ev[id], crashes)
				}
			}
		}
		for flid, n := range changes {
			if v := a.version(flid); v != int64(1+n) {
				t.Fatalf("flight %d at version %d, want %d (after %d crashes)", flid, v, 1+n, crashes)
			}
		}
		t.Logf("%d crashes in the middle of batches", crashes)
	})
}

// When a batch's deferred event writes fail, the batch is rolled back and done again with
// each message writing its own: in phase A the messages' scripts already ran, so the second
// pass finds their markers and commits the recorded decisions. A message whose event the
// database refuses fails alone (FAILED INFRA, its flights applied in Redis with its marker);
// its retry commits it once the database takes it, and no flight is changed twice.
func TestPhaseABatchRolledBackReusesTheMarkers(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		reg := handler.Default(handler.Options{})
		real, _ := reg.Lookup("FLOP-REMC")
		reg.Replace("FLOP-REMC", handler.Func(func(ctx context.Context, v handler.View, m *sis.Message) (pipeline.Decision, error) {
			dec, err := real.Decide(ctx, v, m)
			if m.Meta.SEQN == "5" {
				for i := range dec.Events {
					dec.Events[i].Kind = "REFUSE"
				}
			}
			return dec, err
		}))
		if db.Dialect == store.MySQL {
			storetest.Exec(t, db, `CREATE TRIGGER REFUSE_EVENT BEFORE INSERT ON MSG_EVENT FOR EACH ROW BEGIN
				IF NEW.KIND = 'REFUSE' THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'event refused by a test trigger'; END IF; END`)
		} else {
			storetest.Exec(t, db, `CREATE TRIGGER REFUSE_EVENT BEFORE INSERT ON MSG_EVENT WHEN NEW.KIND = 'REFUSE'
				BEGIN SELECT RAISE(ABORT, 'event refused by a test trigger'); END`)
		}
		scripts := 0
		a := newPhaseA(t, db, defaultPolicy, phaseAOptions{reg: reg, after: func(int64) { scripts++ }})
		ids := a.post(
			schd("1", "DNLD", flightRec(5001, "CA1501", "01DEC261300")),
			fop(5001, "2", "REMC", "<REMC>two</REMC>"),
			fop(5001, "3", "REMC", "<REMC>three</REMC>"),
			fop(5001, "5", "REMC", "<REMC>five</REMC>"),
			fop(5001, "6", "REMC", "<REMC>six</REMC>"),
		)
		a.step()
		if scripts != 5 {
			t.Fatalf("%d scripts ran in the first pass, want 5 (one per message)", scripts)
		}
		a.want(ids[0], pipeline.Succeeded, "")
		a.want(ids[1], pipeline.Succeeded, "")
		a.want(ids[2], pipeline.Succeeded, "")
		if m := a.want(ids[3], pipeline.Failed, pipeline.Infra); !strings.Contains(*m.LastError, "event refused by a test trigger") {
			t.Fatalf("the refused one: %q", *m.LastError)
		}
		a.want(ids[4], pipeline.Pending, "")
		if e, _ := a.rs.Get(context.Background(), 5001); e.Version != 5 {
			t.Fatalf("flight 5001 in Redis at version %d, want 5 (every script ran once)", e.Version)
		}
		storetest.Exec(t, db, `DROP TRIGGER REFUSE_EVENT`)
		a.clock.Add(time.Second)
		a.drain()
		if scripts != 5 {
			t.Fatalf("%d scripts ran in all, want 5: the retries must reuse the markers", scripts)
		}
		a.want(ids[3], pipeline.Succeeded, "")
		a.want(ids[4], pipeline.Succeeded, "")
		if v := a.version(5001); v != 5 {
			t.Fatalf("flight 5001 at version %d, want 5", v)
		}
		if r := redisRecord(t, a.rs, 5001); fmt.Sprint(r["REMC"]) != "six" {
			t.Fatalf("flight 5001: %v", r)
		}
		ev := eventsPerMessage(t, db)
		for _, id := range ids[1:] {
			if ev[id] != 1 {
				t.Fatalf("events per message: %v", ev)
			}
		}
	})
}
