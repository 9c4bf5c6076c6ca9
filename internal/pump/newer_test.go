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
	"msgx/internal/testkit"
)

// pumpPaths runs fn for each way the pump processes a message (one by one, batched, phase A
// batched and one by one), on both databases, with policy and identity mode; field returns a
// field of flight 5001 as stored.
func pumpPaths(t *testing.T, policy pipeline.RetryPolicy, mode pipeline.IdentityMode, fn func(t *testing.T, e *env, field func(name string) string)) {
	phaseB := func(size int) func(t *testing.T, db *store.DB) {
		return func(t *testing.T, db *store.DB) {
			clock := testkit.NewClock(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
			flights := flight.New(storetest.Flight(db), clock, time.UTC)
			p := pump.New(storetest.Pump(db), handler.Default(handler.Options{}), pump.Options{
				Policy: policy, Clock: clock, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
				Flights: flights, View: flights, FlightsIn: func(tx *sql.Tx) pump.TxFlights { return flights.InTx(tx) },
				BatchSize: size, SIS: sis.Options{Location: time.UTC}, Identity: mode,
			})
			fn(t, &env{db: db, clock: clock, pump: p, t: t}, func(name string) string { return fmt.Sprint(record(t, flights, 5001)[name]) })
		}
	}
	phaseA := func(solo bool) func(t *testing.T, db *store.DB) {
		return func(t *testing.T, db *store.DB) {
			a := newPhaseA(t, db, policy, phaseAOptions{solo: solo, identity: mode})
			fn(t, a.env, func(name string) string { a.version(5001); return fmt.Sprint(redisRecord(t, a.rs, 5001)[name]) })
		}
	}
	t.Run("one-by-one", func(t *testing.T) { storetest.Each(t, phaseB(1)) })
	t.Run("batch", func(t *testing.T) { storetest.Each(t, phaseB(50)) })
	t.Run("phase-a-batch", func(t *testing.T) { storetest.Each(t, phaseA(false)) })
	t.Run("phase-a-one-by-one", func(t *testing.T) { storetest.Each(t, phaseA(true)) })
}

// parking is the default policy with deterministic failures parked at once.
func parking() pipeline.RetryPolicy {
	p := defaultPolicy
	p.Park = pipeline.DefaultPark
	return p
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
	pumpPaths(t, parking(), pipeline.IdentityContent, func(t *testing.T, e *env, field func(string) string) {
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
		res, err := e.db.Operations.Replay(context.Background(), []pipeline.ErrorClass{pipeline.Orphan}, nil, e.clock.Now())
		if err != nil || res.Moved != 2 {
			t.Fatalf("replay: %+v %v", res, err)
		}
		e.drain()
		m := e.want(ids[0], pipeline.Succeeded, "")
		if !strings.Contains(m.Note, fmt.Sprintf("STND kept: set by message %d, newer", ids[2])) &&
			!strings.Contains(m.Note, fmt.Sprintf("STND kept: set by message %d, newer", ids[3])) {
			t.Errorf("the replayed stand's note: %q", m.Note)
		}
		hist, err := e.db.Operations.MessageHistory(context.Background(), ids[0])
		if err != nil || len(hist) == 0 || !strings.Contains(hist[len(hist)-1].Detail, "applied out of order: flight 5001 STND kept: set by message") {
			t.Errorf("the replayed stand's history: %+v %v", hist, err)
		}
		e.want(ids[1], pipeline.Succeeded, "")
		if s, c := field("STND"), field("CTOT"); s != "305" || !strings.HasPrefix(c, "2026-12-01T13:20:00") {
			t.Fatalf("after the replay: stand %s (want the newer 305), CTOT %s (want the replayed 13:20)", s, c)
		}
	})
}

// A message parked for a reason a fix removes (here a handler that panicked: CODEC_ERROR),
// replayed after the fix once later FLOPs changed its flight, gives the flight a clean run
// gives that applied every message in inbox order with the fix in place: the field no later
// message set takes the replayed value, the one a later message set keeps the later value.
func TestAReplayAfterAFixEqualsACleanRun(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		clock := testkit.NewClock(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
		flights := flight.New(storetest.Flight(db), clock, time.UTC)
		pumpWith := func(reg *handler.Registry) *env {
			return &env{db: db, clock: clock, t: t, pump: pump.New(storetest.Pump(db), reg, pump.Options{
				Policy: parking(), Clock: clock, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
				Flights: flights, View: flights, FlightsIn: func(tx *sql.Tx) pump.TxFlights { return flights.InTx(tx) },
				BatchSize: 50, SIS: sis.Options{Location: time.UTC},
			})}
		}
		day := func(flid int64, seqn int) []string {
			f := func(styp, payload, dttm string) string {
				return strings.Replace(flopAt(styp, payload, dttm), "<FLID>5001</FLID>", fmt.Sprintf("<FLID>%d</FLID>", flid), 1)
			}
			return []string{
				schd(fmt.Sprint(seqn), "ADFT", flightRec(flid, "CA1501", "01DEC261300")),
				f("CTOT", "<CTOT>01DEC261320</CTOT>", "20261201070000"),
				f("EOBT", "<EOBT>01DEC261300</EOBT>", "20261201070100"),
				f("STND", "<STND>305</STND>", "20261201070200"),
				f("EOBT", "<EOBT>01DEC261310</EOBT>", "20261201070300"),
				f("REMC", "<REMC>DLA</REMC>", "20261201070400"),
			}
		}
		fixed := handler.Default(handler.Options{})
		clean := pumpWith(fixed)
		for _, id := range clean.post(day(5001, 1)...) {
			clean.drain()
			clean.want(id, pipeline.Succeeded, "")
		}

		// The bug: the CTOT and EOBT handlers panic on the messages stamped before 07:02.
		broken := handler.Default(handler.Options{})
		for _, tag := range []string{"FLOP-CTOT", "FLOP-EOBT"} {
			real, _ := fixed.Lookup(tag)
			broken.Replace(tag, handler.Func(func(ctx context.Context, v handler.View, m *sis.Message) (pipeline.Decision, error) {
				if m.Meta.DTTM.Before(time.Date(2026, 12, 1, 7, 2, 0, 0, time.UTC)) {
					panic("a handler bug")
				}
				return real.Decide(ctx, v, m)
			}))
		}
		e := pumpWith(broken)
		ids := e.post(day(5002, 2)...)
		e.drain()
		e.want(ids[1], pipeline.Dead, pipeline.CodecError)
		e.want(ids[2], pipeline.Dead, pipeline.CodecError)
		e.want(ids[4], pipeline.Succeeded, "")
		if res, err := db.Operations.Replay(context.Background(), []pipeline.ErrorClass{pipeline.CodecError}, nil, clock.Now()); err != nil || res.Moved != 2 {
			t.Fatalf("replay: %+v %v", res, err)
		}
		e = pumpWith(fixed)
		e.drain()
		for _, id := range []int64{ids[1], ids[2], ids[4]} {
			e.want(id, pipeline.Succeeded, "")
		}
		want, got := record(t, flights, 5001), record(t, flights, 5002)
		delete(want, "FLID")
		delete(got, "FLID")
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("replayed after the fix:\n%v\na clean run in order:\n%v", got, want)
		}
		if got["EOBT"] == nil || !strings.Contains(fmt.Sprint(got["EOBT"]), "13:10") {
			t.Fatalf("EOBT %v: want the later 13:10", got["EOBT"])
		}
	})
}

// Reference data out of order, through the pump on both databases: an ADD parked by a bug and
// replayed after a later DEL of its record leaves the record deleted (a clean run: ADD, DEL);
// a parked ADD no later message overrides is applied.
func TestAReplayedReferenceRecordStaysAsLaterMessagesLeftIt(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		clock := testkit.NewClock(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
		pumpWith := func(reg *handler.Registry) *env {
			return &env{db: db, clock: clock, t: t, pump: pump.New(storetest.Pump(db), reg, pump.Options{
				Policy: parking(), Clock: clock, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), SIS: sis.Options{Location: time.UTC},
			})}
		}
		airl := func(styp, itop, dttm string) string {
			return `<MSG><META><SNDR>AODB</SNDR><SEQN>7</SEQN><DTTM>` + dttm + `</DTTM><TYPE>AIRL</TYPE><STYP>` + styp + `</STYP></META>` +
				`<RECS>1</RECS><AIRL><ITOP>` + itop + `</ITOP><ICOP>` + itop + `A</ICOP><ONAM>航空 ` + itop + `</ONAM><DORI>D</DORI></AIRL></MSG>`
		}
		fixed := handler.Default(handler.Options{})
		broken := handler.Default(handler.Options{})
		real, _ := fixed.Lookup("AIRL-ADD")
		broken.Replace("AIRL-ADD", handler.Func(func(ctx context.Context, v handler.View, m *sis.Message) (pipeline.Decision, error) {
			if m.Meta.DTTM.Before(time.Date(2026, 12, 1, 7, 5, 0, 0, time.UTC)) {
				panic("a handler bug")
			}
			return real.Decide(ctx, v, m)
		}))
		e := pumpWith(broken)
		ids := e.post(airl("ADD", "3U", "20261201070000"), airl("ADD", "MU", "20261201070100"), airl("DEL", "3U", "20261201070200"))
		e.drain()
		e.want(ids[0], pipeline.Dead, pipeline.CodecError)
		e.want(ids[2], pipeline.Succeeded, "")
		if res, err := db.Operations.Replay(context.Background(), []pipeline.ErrorClass{pipeline.CodecError}, nil, clock.Now()); err != nil || res.Moved != 2 {
			t.Fatalf("replay: %+v %v", res, err)
		}
		e = pumpWith(fixed)
		e.drain()
		if m := e.want(ids[0], pipeline.Succeeded, ""); !strings.Contains(m.Note, fmt.Sprintf("AIRL 3U record kept: set by message %d, newer", ids[2])) {
			t.Errorf("the replayed ADD's note: %q", m.Note)
		}
		e.want(ids[1], pipeline.Succeeded, "")
		if r, err := db.RefData.RefGet(context.Background(), "AIRL", "3U"); err != nil || r != nil {
			t.Fatalf("AIRL 3U after a replayed ADD older than its DEL: %+v %v, want it deleted", r, err)
		}
		if r, err := db.RefData.RefGet(context.Background(), "AIRL", "MU"); err != nil || r == nil {
			t.Fatalf("AIRL MU: %+v %v, want it added", r, err)
		}
	})
}
