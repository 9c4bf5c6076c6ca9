package redisflight_test

import (
	"context"
	"io"
	"log/slog"
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
	"msgx/internal/sis"
	"msgx/internal/store"
	"msgx/internal/store/storetest"
	"msgx/internal/testkit"
)

// crash is what the failpoint panics with: the process dying between the Redis script and
// the SQL commit.
type crash struct{}

func phaseA(db *store.DB, rs *redisflight.Store, clock pipeline.Clock, after func(int64)) *pump.Pump {
	return pump.New(storetest.Pump(db), handler.Default(handler.Options{}), phaseAOptions(db, rs, clock, after))
}

func phaseAOptions(db *store.DB, rs *redisflight.Store, clock pipeline.Clock, after func(int64)) pump.Options {
	mirror := flight.New(storetest.Flight(db), clock, flighttest.Shanghai)
	return pump.Options{
		Clock: clock, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), SIS: sis.Options{Location: flighttest.Shanghai},
		Flights: mirror, View: redisflight.WithRefs(rs, mirror), Authority: rs, AfterAuthority: after,
		Policy: pipeline.RetryPolicy{MaxAttempts: 3, Steps: pipeline.DefaultBackoff, Cap: time.Minute, HeadDeadline: time.Hour, Park: pipeline.DefaultPark},
	}
}

// TestPumpPhaseA runs the real pump in phase A on both databases: a snapshot, the same
// snapshot again (no event, no version step), an orphan FLOP and a FLOP, with the expectations
// of phase B (flight's TestPumpSnapshotAndFlop); Redis holds the flights and FLIGHT_STATE
// mirrors them.
func TestPumpPhaseA(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		clock := testkit.NewClock(time.Date(2026, 3, 15, 6, 0, 0, 0, flighttest.Shanghai).UTC())
		rs := flighttest.Redis(t, flighttest.Shanghai, clock)
		mirror := flight.New(storetest.Flight(db), clock, flighttest.Shanghai)
		p := phaseA(db, rs, clock, nil)
		run := func(p *pump.Pump, raw string) *store.Message {
			t.Helper()
			ids, err := db.Intake.InsertMessages(ctx, []string{raw}, clock.Now())
			if err != nil {
				t.Fatal(err)
			}
			steps(t, p)
			m, err := db.Operations.GetMessage(ctx, ids[0])
			if err != nil {
				t.Fatal(err)
			}
			return m
		}
		raw, err := os.ReadFile("../../../testdata/schd/dnld.xml")
		if err != nil {
			t.Fatal(err)
		}
		if m := run(p, string(raw)); m.State != pipeline.Succeeded {
			t.Fatalf("snapshot: %+v", m)
		}
		board, _ := rs.Day(ctx, "2026-03-15")
		if len(board) != 3 {
			t.Fatalf("board after the snapshot: %d flights", len(board))
		}
		events := countEvents(t, db)
		if events != 3 { // one shared event per flight, which every target takes
			t.Fatalf("%d events after the snapshot, want 3", events)
		}
		again := strings.Replace(string(raw), "<SEQN>520001</SEQN>", "<SEQN>520091</SEQN>", 1)
		if m := run(p, again); m.State != pipeline.Succeeded || countEvents(t, db) != events {
			t.Fatalf("same snapshot again: %+v, %d events", m, countEvents(t, db))
		}
		for _, e := range board {
			if got, _ := rs.Get(ctx, e.FLID); got.Version != 1 {
				t.Fatalf("flight %d at version %d after the same snapshot", e.FLID, got.Version)
			}
		}
		orphan := `<MSG><META><SNDR>AODB</SNDR><SEQN>9</SEQN><DTTM>20260315080000</DTTM><TYPE>FLOP</TYPE><STYP>CTOT</STYP></META>` +
			`<FLOP><FLID>4242</FLID><FFID>X</FFID><CTOT>15MAR261300</CTOT></FLOP></MSG>`
		if m := run(p, orphan); m.State != pipeline.Dead || m.Class() != pipeline.Orphan {
			t.Fatalf("orphan: %s/%s", m.State, m.Class())
		}
		// The CHOT dies between the Redis script and the SQL commit; a new pump finds the
		// marker, applies nothing again and commits the same events.
		chot, _ := os.ReadFile("../../../testdata/flop/chot.xml")
		crashing := phaseA(db, rs, clock, func(int64) { panic(crash{}) })
		ids, err := db.Intake.InsertMessages(ctx, []string{string(chot)}, clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		func() {
			defer func() {
				if r := recover(); r != (crash{}) {
					t.Fatalf("the failpoint did not fire: %v", r)
				}
			}()
			steps(t, crashing)
		}()
		if e, _ := rs.Get(ctx, 7002); e.Version != 2 {
			t.Fatalf("Redis after the crash: %+v", e)
		}
		if n := countEvents(t, db); n != events {
			t.Fatalf("%d events after the crash, want %d", n, events)
		}
		steps(t, phaseA(db, rs, clock, nil))
		if m, _ := db.Operations.GetMessage(ctx, ids[0]); m.State != pipeline.Succeeded {
			t.Fatalf("CHOT after the restart: %+v", m)
		}
		if e, _ := rs.Get(ctx, 7002); e.Version != 2 || !strings.Contains(string(e.Record), "2026-03-15T01:21:00Z") {
			t.Fatalf("7002 after CHOT: %+v", e)
		}
		if n := countEvents(t, db); n != events+1 {
			t.Fatalf("%d events after CHOT, want %d", n, events+1)
		}
		// The mirror follows.
		for _, e := range board {
			r, _ := rs.Get(ctx, e.FLID)
			m, _ := mirror.Get(ctx, e.FLID)
			if m == nil || string(m.Record) != string(r.Record) {
				t.Fatalf("FLIGHT_STATE mirror of %d: %+v, Redis %+v", e.FLID, m, r)
			}
		}
	})
}

// TestPumpPhaseARedisDown: with Redis unreachable a flight message fails with INFRA and
// nothing of it is committed; the queue waits for it.
func TestPumpPhaseARedisDown(t *testing.T) {
	db := storetest.SQLite(t)
	ctx := context.Background()
	clock := testkit.NewClock(time.Date(2026, 3, 15, 6, 0, 0, 0, flighttest.Shanghai).UTC())
	rs := redisflight.New(redisflight.Options{Addr: "127.0.0.1:1", Location: flighttest.Shanghai, Clock: clock})
	defer rs.Close()
	raw, _ := os.ReadFile("../../../testdata/schd/dnld.xml")
	ids, err := db.Intake.InsertMessages(ctx, []string{string(raw)}, clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	steps(t, phaseA(db, rs, clock, nil))
	m, _ := db.Operations.GetMessage(ctx, ids[0])
	if m.State != pipeline.Failed || m.Class() != pipeline.Infra {
		t.Fatalf("snapshot with Redis down: %s/%s", m.State, m.Class())
	}
	if n := countEvents(t, db); n != 0 {
		t.Fatalf("%d events committed", n)
	}
}

func steps(t *testing.T, p *pump.Pump) {
	t.Helper()
	for i := 0; i < 10; i++ {
		if w, err := p.Step(context.Background()); err != nil {
			t.Fatal(err)
		} else if w > 0 {
			return
		}
	}
}

func countEvents(t *testing.T, db *store.DB) int {
	t.Helper()
	var n int
	if err := db.SQL.QueryRow(`SELECT COUNT(*) FROM MSG_EVENT`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
