package flight_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"slices"
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

var shanghai, _ = time.LoadLocation("Asia/Shanghai")

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
		clock := testkit.NewClock(time.Date(2026, 3, 15, 6, 0, 0, 0, shanghai).UTC())
		fs := flight.New(storetest.Flight(db), clock, shanghai)
		p := pump.New(storetest.Pump(db), handler.Default(handler.Options{}), pump.Options{
			Clock: clock, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), SIS: sis.Options{Location: shanghai},
			Flights: fs, View: fs, Policy: pipeline.RetryPolicy{MaxAttempts: 3, Steps: pipeline.DefaultBackoff, Cap: time.Minute, HeadDeadline: time.Hour, Park: pipeline.DefaultPark},
		})
		run := func(raw string) *store.Message {
			t.Helper()
			ids, err := db.Intake.InsertMessages(ctx, []string{raw}, clock.Now())
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
			m, err := db.Operations.GetMessage(ctx, ids[0])
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
		if events != 3 { // one shared event per flight, which every target takes
			t.Fatalf("%d events after the snapshot, want 3", events)
		}
		gen, _ := db.RefData.RefGet(ctx, handler.SchdGenType, "2026-03-15")
		if gen == nil || gen.Version != 1 {
			t.Fatalf("generation after the snapshot: %+v", gen)
		}
		again := strings.Replace(string(raw), "<SEQN>520001</SEQN>", "<SEQN>520091</SEQN>", 1)
		if m := run(again); m.State != pipeline.Succeeded {
			t.Fatalf("same snapshot again: %+v", m)
		}
		gen, _ = db.RefData.RefGet(ctx, handler.SchdGenType, "2026-03-15")
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
		if n := countEvents(t, db); n != events+1 {
			t.Fatalf("%d events after CHOT, want %d", n, events+1)
		}
	})
}

// flidsOf returns the FLIDs of records, in order.
func flidsOf(t *testing.T, recs [][]byte) []int64 {
	t.Helper()
	var out []int64
	for _, b := range recs {
		var k struct{ FLID int64 }
		if err := json.Unmarshal(b, &k); err != nil {
			t.Fatal(err)
		}
		out = append(out, k.FLID)
	}
	slices.Sort(out)
	return out
}

// TestBatchedReplaceAdvancesVersions checks that a batched replace advances each row's
// version from the version it finds in the pump's transaction (a change made earlier in the
// same transaction counts), moving a row whose day changed. What every flight store does is
// in the contract suite (TestFlightStoreContract); this is the SQL store inside a transaction.
func TestBatchedReplaceAdvancesVersions(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		s := flight.New(storetest.Flight(db), nil, shanghai)
		t1 := time.Date(2026, 3, 15, 9, 0, 0, 0, shanghai)
		write(t, db, s, pipeline.FlightWrite{Day: "2026-03-15", FLID: 1, Record: rec(1, t1, "")},
			pipeline.FlightWrite{Day: "2026-03-15", FLID: 2, Record: rec(2, t1, "")})
		err := db.Tx(ctx, func(tx *sql.Tx) error {
			return s.WriteFlights(ctx, tx, 1, []pipeline.FlightWrite{
				{Day: "2026-03-15", FLID: 1, Record: rec(1, t1, `"STND":"1"`)},
				{Day: "2026-03-15", FLID: 2, Record: rec(2, t1, `"STND":"2"`)},
			}, time.Now())
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range []int64{1, 2} {
			if e, _ := s.Get(ctx, id); e == nil || e.Version != 2 {
				t.Fatalf("flight %d after a batched replace: %+v", id, e)
			}
		}
		err = db.Tx(ctx, func(tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, `UPDATE FLIGHT_STATE SET VERSION = 7 WHERE FLID = 2`); err != nil {
				return err
			}
			return s.WriteFlights(ctx, tx, 1, []pipeline.FlightWrite{
				{Day: "2026-03-15", FLID: 1, Record: rec(1, t1, `"STND":"3"`)},
				{Day: "2026-03-16", FLID: 2, Record: rec(2, t1.Add(24*time.Hour), "")},
			}, time.Now())
		})
		if err != nil {
			t.Fatalf("versions read inside the transaction: %v", err)
		}
		if e, _ := s.Get(ctx, 2); e == nil || e.Version != 8 || e.Day != "2026-03-16" {
			t.Fatalf("flight 2: %+v", e)
		}
	})
}
