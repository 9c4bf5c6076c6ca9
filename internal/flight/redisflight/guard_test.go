package redisflight_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"msgx/internal/flight"
	"msgx/internal/flight/flighttest"
	"msgx/internal/flight/redisflight"
	"msgx/internal/handler"
	"msgx/internal/pipeline"
	"msgx/internal/pump"
	"msgx/internal/store"
	"msgx/internal/store/storetest"
	"msgx/internal/testkit"
)

// guarded is phaseA with the guard on and, with batch, the batching of serve (ViewIn and the
// batch's flight store).
func guarded(db *store.DB, rs *redisflight.Store, clock pipeline.Clock, after func(int64), batch bool) (*pump.Pump, *redisflight.Guard) {
	mirror := flight.New(storetest.Flight(db), clock, flighttest.Shanghai)
	opt := phaseAOptions(db, rs, clock, after)
	if batch {
		opt.ViewIn = func(tx *sql.Tx) handler.View { return redisflight.WithRefs(rs, mirror.InTx(tx)) }
		opt.BatchFlights = func() pump.BatchFlights { return rs.Batch() }
	}
	p := pump.New(storetest.Pump(db), handler.Default(handler.Options{}), opt)
	g := redisflight.NewGuard(rs, mirror, clock, nil)
	p.SetMarks(g)
	return p, g
}

func insert(t *testing.T, db *store.DB, clock pipeline.Clock, raws ...string) []int64 {
	t.Helper()
	ids, err := db.Intake.InsertMessages(context.Background(), raws, clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

func testdata(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("../../../testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func state(t *testing.T, db *store.DB, id int64) *store.Message {
	t.Helper()
	m, err := db.Operations.GetMessage(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestGuardStopsOnARedisThatLostData: the marks follow each message in Redis and in SQL; a
// Redis emptied under the running pump (a restart without persistence, FLUSHDB) stops it
// before the next FLOP is applied (it stays PENDING, never ORPHAN), and so does a Redis whose
// mark is behind SQL's (a failover that lost the last writes), with the reason.
func TestGuardStopsOnARedisThatLostData(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		clock := testkit.NewClock(time.Date(2026, 3, 15, 6, 0, 0, 0, flighttest.Shanghai).UTC())
		rs := flighttest.Redis(t, flighttest.Shanghai, clock)
		mirror := flight.New(storetest.Flight(db), clock, flighttest.Shanghai)
		p, _ := guarded(db, rs, clock, nil, false)
		snap := insert(t, db, clock, testdata(t, "schd/dnld.xml"))[0]
		steps(t, p)
		if m := state(t, db, snap); m.State != pipeline.Succeeded {
			t.Fatalf("snapshot: %s", m.State)
		}
		sqlMark, ok, err := mirror.RedisMark(ctx, rs.KeyPrefix())
		rm, _ := rs.Marks(ctx)
		if err != nil || !ok || sqlMark.MsgID != snap || rm.Mark != snap || rm.Epoch != sqlMark.Epoch || rm.Epoch == "" {
			t.Fatalf("marks after the snapshot: SQL %+v %v %v, Redis %+v", sqlMark, ok, err, rm)
		}
		if p.Halted() != nil {
			t.Fatalf("halted: %+v", p.Halted())
		}

		// A mark behind SQL's: the last script lost.
		if err := rs.SetMarks(ctx, rm.Epoch, snap-1); err != nil {
			t.Fatal(err)
		}
		chot := insert(t, db, clock, testdata(t, "flop/chot.xml"))[0]
		steps(t, p)
		want := fmt.Sprintf("Redis lost data: mark %d in SQL, %d in Redis", snap, snap-1)
		if h := p.Halted(); h == nil || !strings.HasPrefix(h.Reason, want) {
			t.Fatalf("halt with the mark behind: %+v, want %q", h, want)
		}
		if m := state(t, db, chot); m.State != pipeline.Pending || m.Attempts != 0 {
			t.Fatalf("CHOT while halted: %s after %d attempts", m.State, m.Attempts)
		}

		// Redis emptied.
		if err := rs.Wipe(ctx); err != nil {
			t.Fatal(err)
		}
		steps(t, p)
		want = fmt.Sprintf("Redis lost its data: mark %d in SQL, none in Redis", snap)
		if h := p.Halted(); h == nil || h.Reason != want {
			t.Fatalf("halt with Redis empty: %+v, want %q", h, want)
		}
		if m := state(t, db, chot); m.State != pipeline.Pending {
			t.Fatalf("CHOT applied to an empty Redis: %s/%s", m.State, m.Class())
		}
		// The flights and the marks written back (as REDIS_RESTORE does): it resumes by itself.
		if _, err := rs.RestoreFrom(ctx, redisflight.RestoreParams{Source: mirror}); err != nil {
			t.Fatal(err)
		}
		if err := rs.SetMarks(ctx, rm.Epoch, snap); err != nil {
			t.Fatal(err)
		}
		steps(t, p)
		if p.Halted() != nil {
			t.Fatalf("still halted: %+v", p.Halted())
		}
		if m := state(t, db, chot); m.State != pipeline.Succeeded {
			t.Fatalf("CHOT after the marks agree: %s/%s", m.State, m.Class())
		}
		// The marks alone written back over an empty Redis: they agree, but the next FLOP
		// finds its flight in the mirror only, and the pump stops before it (lostflight.go).
		if err := rs.Wipe(ctx); err != nil {
			t.Fatal(err)
		}
		if err := rs.SetMarks(ctx, rm.Epoch, chot); err != nil {
			t.Fatal(err)
		}
		chot2 := insert(t, db, clock, strings.Replace(testdata(t, "flop/chot.xml"), "510037", "510038", 1))[0]
		steps(t, p)
		if h := p.Halted(); h == nil || !strings.HasPrefix(h.Reason, "Redis lost flight 7002: in the mirror at version 2") {
			t.Fatalf("halt with the marks alone written back: %+v", h)
		}
		if m := state(t, db, chot2); m.State != pipeline.Pending || m.Attempts != 0 {
			t.Fatalf("CHOT of a flight in the mirror only: %s/%s after %d attempts", m.State, m.Class(), m.Attempts)
		}
	})
}

// TestGuardCatchesALossWithinABatch: Redis emptied between two scripts of one batch; the
// second script refuses (the epoch is gone), its message fails INFRA instead of being applied
// to the hole, the first commits with SQL's mark, and the next step stops the pump.
func TestGuardCatchesALossWithinABatch(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		clock := testkit.NewClock(time.Date(2026, 3, 15, 6, 0, 0, 0, flighttest.Shanghai).UTC())
		rs := flighttest.Redis(t, flighttest.Shanghai, clock)
		ids := insert(t, db, clock, testdata(t, "schd/dnld.xml"), testdata(t, "flop/chot.xml"))
		wiped := false
		p, _ := guarded(db, rs, clock, func(id int64) {
			if id == ids[0] && !wiped {
				wiped = true
				if err := rs.Wipe(ctx); err != nil {
					t.Error(err)
				}
			}
		}, true)
		if _, err := p.Step(ctx); err != nil {
			t.Fatal(err)
		}
		if m := state(t, db, ids[0]); m.State != pipeline.Succeeded {
			t.Fatalf("snapshot: %s", m.State)
		}
		m := state(t, db, ids[1])
		if m.State != pipeline.Failed || m.Class() != pipeline.Infra || m.LastError == nil || !strings.Contains(*m.LastError, redisflight.ErrLostData.Error()) {
			t.Fatalf("CHOT after the loss: %s/%s %v", m.State, m.Class(), m.LastError)
		}
		if e, _ := rs.Get(ctx, 7002); e != nil {
			t.Fatalf("CHOT applied to the emptied Redis: %+v", e)
		}
		mirror := flight.New(storetest.Flight(db), clock, flighttest.Shanghai)
		if mk, _, _ := mirror.RedisMark(ctx, rs.KeyPrefix()); mk.MsgID != ids[0] {
			t.Fatalf("SQL mark %d, want %d", mk.MsgID, ids[0])
		}
		if _, err := p.Step(ctx); err != nil {
			t.Fatal(err)
		}
		if h := p.Halted(); h == nil || !strings.HasPrefix(h.Reason, "Redis lost its data") {
			t.Fatalf("not halted: %+v", h)
		}
	})
}

// TestGuardFirstStart: marks begin on a Redis and a FLIGHT_STATE kept before them (an
// upgrade), but an empty Redis beside a FLIGHT_STATE with flights is a Redis that lost its
// data and stops the pump.
func TestGuardFirstStart(t *testing.T) {
	ctx := context.Background()
	db := storetest.SQLite(t)
	clock := testkit.NewClock(time.Date(2026, 3, 15, 6, 0, 0, 0, flighttest.Shanghai).UTC())
	rs := flighttest.Redis(t, flighttest.Shanghai, clock)
	insert(t, db, clock, testdata(t, "schd/dnld.xml"))
	steps(t, phaseA(db, rs, clock, nil)) // before the marks
	p, _ := guarded(db, rs, clock, nil, false)
	chot := insert(t, db, clock, testdata(t, "flop/chot.xml"))[0]
	steps(t, p)
	if m := state(t, db, chot); m.State != pipeline.Succeeded || p.Halted() != nil {
		t.Fatalf("CHOT after the upgrade: %s, halted %+v", m.State, p.Halted())
	}

	db2 := storetest.SQLite(t)
	rs2 := flighttest.Redis(t, flighttest.Shanghai, clock)
	insert(t, db2, clock, testdata(t, "schd/dnld.xml"))
	steps(t, phaseA(db2, rs2, clock, nil))
	if err := rs2.Wipe(ctx); err != nil {
		t.Fatal(err)
	}
	p2, _ := guarded(db2, rs2, clock, nil, false)
	chot2 := insert(t, db2, clock, testdata(t, "flop/chot.xml"))[0]
	steps(t, p2)
	if h := p2.Halted(); h == nil || !strings.Contains(h.Reason, "FLIGHT_STATE holds flights, Redis none") {
		t.Fatalf("halt: %+v", h)
	}
	if m := state(t, db2, chot2); m.State != pipeline.Pending {
		t.Fatalf("CHOT: %s", m.State)
	}
}

// TestGuardScriptsNeedVerifiedMarks: with the guard on, a script before any check (Redis did
// not answer it) is refused INFRA rather than run unguarded.
func TestGuardScriptsNeedVerifiedMarks(t *testing.T) {
	clock := testkit.NewClock(time.Date(2026, 3, 15, 6, 0, 0, 0, flighttest.Shanghai).UTC())
	rs := flighttest.Redis(t, flighttest.Shanghai, clock)
	redisflight.NewGuard(rs, nil, clock, nil)
	_, _, err := rs.ApplyMessage(context.Background(), 1, nil, []byte("m"), clock.Now())
	if err == nil || pipeline.ClassOf(err) != pipeline.Infra || errors.Is(err, redisflight.ErrLostData) {
		t.Fatalf("script before the check: %v", err)
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1234: "1,234", 1234567: "1,234,567", -1234: "-1,234", 100000: "100,000"} {
		if got := redisflight.Thousands(n); got != want {
			t.Errorf("Thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

// wipeAfterCheck is the guard with Redis emptied right after a check found it whole: between
// the step's check and the decisions.
type wipeAfterCheck struct {
	*redisflight.Guard
	rs    *redisflight.Store
	armed bool
}

func (w *wipeAfterCheck) Check(ctx context.Context) (string, error) {
	halt, err := w.Guard.Check(ctx)
	if w.armed {
		w.armed = false
		if err := w.rs.Wipe(ctx); err != nil {
			return "", err
		}
	}
	return halt, err
}

// TestGuardDoesNotParkAnOrphanOfALostRedis: a FLOP decided on a Redis emptied after the
// step's check finds no flight; that is not the message's fault (ORPHAN, parked) but Redis's
// loss: it fails INFRA, to be retried once Redis is restored.
func TestGuardDoesNotParkAnOrphanOfALostRedis(t *testing.T) {
	ctx := context.Background()
	db := storetest.SQLite(t)
	clock := testkit.NewClock(time.Date(2026, 3, 15, 6, 0, 0, 0, flighttest.Shanghai).UTC())
	rs := flighttest.Redis(t, flighttest.Shanghai, clock)
	p := pump.New(storetest.Pump(db), handler.Default(handler.Options{}), phaseAOptions(db, rs, clock, nil))
	w := &wipeAfterCheck{Guard: redisflight.NewGuard(rs, flight.New(storetest.Flight(db), clock, flighttest.Shanghai), clock, nil), rs: rs}
	p.SetMarks(w)
	insert(t, db, clock, testdata(t, "schd/dnld.xml"))
	steps(t, p)
	chot := insert(t, db, clock, testdata(t, "flop/chot.xml"))[0]
	w.armed = true
	if _, err := p.Step(ctx); err != nil {
		t.Fatal(err)
	}
	m := state(t, db, chot)
	if m.State != pipeline.Failed || m.Class() != pipeline.Infra || m.LastError == nil || !strings.Contains(*m.LastError, "Redis lost its data") {
		t.Fatalf("CHOT decided on the emptied Redis: %s/%s %v", m.State, m.Class(), m.LastError)
	}
}
