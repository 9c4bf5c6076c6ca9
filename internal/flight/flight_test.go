package flight_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
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

var shanghai, _ = time.LoadLocation("Asia/Shanghai")

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func rec(flid int64, sodt time.Time, extra string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"FLID": flid, "FLNO": "CA1", "SODT": sodt.UTC()})
	if extra != "" {
		b = append(b[:len(b)-1], []byte(","+extra+"}")...)
	}
	return b
}

func write(t *testing.T, db *store.DB, s *flight.Store, ws ...pipeline.FlightWrite) {
	t.Helper()
	err := db.Tx(context.Background(), func(tx *sql.Tx) error {
		return s.WriteFlights(context.Background(), tx, 1, ws, time.Now())
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestStoreContract(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		s := flight.New(db, nil, shanghai)
		t1 := time.Date(2026, 3, 15, 9, 0, 0, 0, shanghai)
		t2 := time.Date(2026, 3, 16, 1, 0, 0, 0, shanghai)
		write(t, db, s,
			pipeline.FlightWrite{Day: "2026-03-15", FLID: 1, Record: rec(1, t1, "")},
			pipeline.FlightWrite{Day: "2026-03-15", FLID: 2, Record: rec(2, t1.Add(time.Hour), `"MAID":1`)},
		)
		if b, ok, err := s.Flight(ctx, 2); err != nil || !ok || !strings.Contains(string(b), `"MAID":1`) {
			t.Fatalf("Flight(2): %s %v %v", b, ok, err)
		}
		if _, ok, err := s.Flight(ctx, 3); err != nil || ok {
			t.Fatalf("Flight(3) absent: %v %v", ok, err)
		}
		// Update on the same day: VERSION 2. Move to another day: the old row goes, VERSION 3.
		write(t, db, s, pipeline.FlightWrite{Day: "2026-03-15", FLID: 1, Record: rec(1, t1, `"STND":"213"`)})
		write(t, db, s, pipeline.FlightWrite{Day: "2026-03-16", FLID: 1, Record: rec(1, t2, "")})
		e, err := s.Get(ctx, 1)
		if err != nil || e == nil || e.Version != 3 || e.Day != "2026-03-16" {
			t.Fatalf("after a day move: %+v %v", e, err)
		}
		day15, _ := s.Day(ctx, "2026-03-15")
		day16, _ := s.Day(ctx, "2026-03-16")
		if len(day15) != 1 || day15[0].FLID != 2 || len(day16) != 1 || day16[0].FLID != 1 {
			t.Fatalf("days: 15 %+v, 16 %+v", day15, day16)
		}
		in, err := s.FlightsBetween(ctx, t1, t2)
		if err != nil || len(in) != 2 {
			t.Fatalf("FlightsBetween both: %d %v", len(in), err)
		}
		in, _ = s.FlightsBetween(ctx, t1.Add(30*time.Minute), t2.Add(-time.Minute))
		if len(in) != 1 || !strings.Contains(string(in[0]), `"FLID":2`) {
			t.Fatalf("FlightsBetween narrow: %s", in)
		}
		cs, _ := s.CodeShareFlights(ctx)
		if len(cs) != 1 {
			t.Fatalf("CodeShareFlights: %s", cs)
		}
		write(t, db, s, pipeline.FlightWrite{FLID: 2, Delete: true}, pipeline.FlightWrite{FLID: 99, Delete: true})
		if e, _ := s.Get(ctx, 2); e != nil {
			t.Fatalf("deleted flight still there: %+v", e)
		}
		err = db.Tx(ctx, func(tx *sql.Tx) error {
			return s.WriteFlights(ctx, tx, 1, []pipeline.FlightWrite{{Day: "15/03/2026", FLID: 5, Record: rec(5, t1, "")}}, time.Now())
		})
		if err == nil {
			t.Fatal("a bad day was accepted")
		}
	})
}

func countEvents(t *testing.T, db *store.DB) int {
	t.Helper()
	var n int
	if err := db.SQL.QueryRow(`SELECT COUNT(*) FROM MSG_EVENT`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestPumpSnapshotAndFlop runs the real pump with the flight store: a snapshot, the same
// snapshot again (no event, no version step), an orphan FLOP (DEAD/ORPHAN) and a FLOP.
func TestPumpSnapshotAndFlop(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		clock := &fakeClock{t: time.Date(2026, 3, 15, 6, 0, 0, 0, shanghai).UTC()}
		fs := flight.New(db, clock, shanghai)
		p := pump.New(db, handler.Default(handler.Options{}), pump.Options{
			Clock: clock, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), SIS: sis.Options{Location: shanghai},
			Flights: fs, View: fs, Policy: pipeline.RetryPolicy{MaxAttempts: 3, Steps: pipeline.DefaultBackoff, Cap: time.Minute, HeadDeadline: time.Hour, Park: pipeline.DefaultPark},
		})
		run := func(raw string) *store.Message {
			t.Helper()
			ids, err := db.InsertMessages(ctx, []string{raw}, clock.Now())
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 10; i++ {
				if w, err := p.Step(ctx); err != nil {
					t.Fatal(err)
				} else if w > 0 {
					break
				}
			}
			m, err := db.GetMessage(ctx, ids[0])
			if err != nil {
				t.Fatal(err)
			}
			return m
		}
		raw, err := os.ReadFile("../../testdata/schd/dnld.xml")
		if err != nil {
			t.Fatal(err)
		}
		if m := run(string(raw)); m.State != pipeline.Succeeded {
			t.Fatalf("snapshot: %+v %v", m, *m.LastError)
		}
		board, _ := fs.Day(ctx, "2026-03-15")
		if len(board) != 3 {
			t.Fatalf("board after the snapshot: %d flights", len(board))
		}
		events := countEvents(t, db)
		if events != 4*3 {
			t.Fatalf("%d events after the snapshot, want 12", events)
		}
		gen, _ := db.RefGet(ctx, handler.SchdGenType, "2026-03-15")
		if gen == nil || gen.Version != 1 {
			t.Fatalf("generation after the snapshot: %+v", gen)
		}
		again := strings.Replace(string(raw), "<SEQN>520001</SEQN>", "<SEQN>520091</SEQN>", 1)
		if m := run(again); m.State != pipeline.Succeeded {
			t.Fatalf("same snapshot again: %+v", m)
		}
		gen, _ = db.RefGet(ctx, handler.SchdGenType, "2026-03-15")
		if n := countEvents(t, db); n != events || gen.Version != 1 {
			t.Fatalf("same snapshot again: %d events (was %d), generation version %d", n, events, gen.Version)
		}
		for _, e := range board {
			if got, _ := fs.Get(ctx, e.FLID); got.Version != 1 {
				t.Fatalf("flight %d at version %d after the same snapshot", e.FLID, got.Version)
			}
		}
		orphan := `<MSG><META><SNDR>AODB</SNDR><SEQN>9</SEQN><DTTM>20260315080000</DTTM><TYPE>FLOP</TYPE><STYP>CTOT</STYP></META>` +
			`<FLOP><FLID>4242</FLID><FFID>X</FFID><CTOT>15MAR261300</CTOT></FLOP></MSG>`
		if m := run(orphan); m.State != pipeline.Dead || m.Class() != pipeline.Orphan {
			t.Fatalf("orphan: %s/%s", m.State, m.Class())
		}
		chot, _ := os.ReadFile("../../testdata/flop/chot.xml")
		if m := run(string(chot)); m.State != pipeline.Succeeded {
			t.Fatalf("CHOT: %+v", m)
		}
		if e, _ := fs.Get(ctx, 7002); e.Version != 2 || !strings.Contains(string(e.Record), "2026-03-15T01:21:00Z") {
			t.Fatalf("7002 after CHOT: %+v", e)
		}
		if n := countEvents(t, db); n != events+4 {
			t.Fatalf("%d events after CHOT, want %d", n, events+4)
		}
	})
}
