package pump_test

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"msgx/internal/flight"
	"msgx/internal/handler"
	"msgx/internal/pipeline"
	"msgx/internal/pump"
	"msgx/internal/sis"
	"msgx/internal/store"
	"msgx/internal/store/storetest"
)

// orderPaths runs fn for each way the pump processes a message (one by one, batched, phase A
// batched and one by one), on both databases, with deterministic failures parked at once;
// field returns a field of flight 5001 as stored.
func orderPaths(t *testing.T, fn func(t *testing.T, e *env, field func(name string) string)) {
	policy := defaultPolicy
	policy.Park = pipeline.DefaultPark
	phaseB := func(size int) func(t *testing.T, db *store.DB) {
		return func(t *testing.T, db *store.DB) {
			clock := &fakeClock{t: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}
			flights := flight.New(db, clock, time.UTC)
			p := pump.New(db, handler.Default(handler.Options{}), pump.Options{
				Policy: policy, Clock: clock, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
				Flights: flights, View: flights, FlightsIn: func(tx *sql.Tx) pump.TxFlights { return flights.InTx(tx) },
				BatchSize: size, SIS: sis.Options{Location: time.UTC},
			})
			fn(t, &env{db: db, clock: clock, pump: p, t: t}, func(name string) string { return fmt.Sprint(record(t, flights, 5001)[name]) })
		}
	}
	phaseA := func(solo bool) func(t *testing.T, db *store.DB) {
		return func(t *testing.T, db *store.DB) {
			a := newPhaseA(t, db, policy, phaseAOptions{solo: solo})
			fn(t, a.env, func(name string) string { a.version(5001); return fmt.Sprint(redisRecord(t, a.rs, 5001)[name]) })
		}
	}
	t.Run("one-by-one", func(t *testing.T) { storetest.Each(t, phaseB(1)) })
	t.Run("batch", func(t *testing.T) { storetest.Each(t, phaseB(50)) })
	t.Run("phase-a-batch", func(t *testing.T) { storetest.Each(t, phaseA(false)) })
	t.Run("phase-a-one-by-one", func(t *testing.T) { storetest.Each(t, phaseA(true)) })
}

// flopAt is a FLOP of flight 5001 with SEQN 3 stamped at dttm, whose record carries payload.
func flopAt(styp, payload, dttm string) string {
	return `<MSG><META><SNDR>AODB</SNDR><SEQN>3</SEQN><DTTM>` + dttm + `</DTTM><TYPE>FLOP</TYPE><STYP>` + styp + `</STYP></META>` +
		`<FLOP><FLID>5001</FLID><FFID>X</FFID>` + payload + `</FLOP></MSG>`
}

// The obvious recovery never puts older values over newer ones: a FLOP for a flight whose
// schedule has not arrived is parked ORPHAN; the schedule arrives, a later FLOP sets stand
// 305; replaying the ORPHAN class applies the parked messages' field no later message set
// (CTOT, which a schedule keeps) and leaves the stand, naming it in the note, on every path.
func TestAReplayNeverOverwritesANewerValue(t *testing.T) {
	t.Parallel()
	orderPaths(t, func(t *testing.T, e *env, field func(string) string) {
		ids := e.post(
			flopAt("STND", "<STND>201</STND>", "20261201070000"),
			flopAt("CTOT", "<CTOT>01DEC261320</CTOT>", "20261201070100"),
			schd("1", "DNLD", flightRec(5001, "CA1501", "01DEC261300")),
			flopAt("STND", "<STND>305</STND>", "20261201080000"),
		)
		e.drain()
		e.want(ids[0], pipeline.Dead, pipeline.Orphan)
		e.want(ids[1], pipeline.Dead, pipeline.Orphan)
		e.want(ids[3], pipeline.Succeeded, "")
		if s := field("STND"); s != "305" {
			t.Fatalf("stand before the replay: %s", s)
		}
		res, err := e.db.Replay(context.Background(), []pipeline.ErrorClass{pipeline.Orphan}, nil, e.clock.Now())
		if err != nil || res.Moved != 2 {
			t.Fatalf("replay: %+v %v", res, err)
		}
		e.drain()
		m := e.want(ids[0], pipeline.Succeeded, "")
		if !strings.Contains(m.Note, fmt.Sprintf("STND kept: set by message %d, newer", ids[2])) &&
			!strings.Contains(m.Note, fmt.Sprintf("STND kept: set by message %d, newer", ids[3])) {
			t.Errorf("the replayed stand's note: %q", m.Note)
		}
		e.want(ids[1], pipeline.Succeeded, "")
		if s, c := field("STND"), field("CTOT"); s != "305" || !strings.HasPrefix(c, "2026-12-01T13:20:00") {
			t.Fatalf("after the replay: stand %s (want the newer 305), CTOT %s (want the replayed 13:20)", s, c)
		}
	})
}
