package bench

import (
	"context"
	"math"
	evt "msgx/internal/event"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"msgx/internal/app"
	"msgx/internal/config"
	"msgx/internal/handler"
	"msgx/internal/store"
	"msgx/internal/store/storetest"
)

// TestDayWorkload runs the default workload (a simulated day of 6 flights each for the
// backlog and the steady rate) on both dialects: every FLOP succeeds, the figures come out,
// and request→SENT is given per target, KAFKA_SCHD included, its flush bounding it.
func TestDayWorkload(t *testing.T) {
	t.Parallel()
	for _, dialect := range []string{"sqlite", "mysql"} {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			var db *store.DB
			if dialect == "sqlite" {
				var err error
				db, err = store.Open(context.Background(), "sqlite", filepath.Join(t.TempDir(), "bench.db"))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { db.Close() })
			} else {
				db = storetest.MySQL(t)
			}
			r := runDay(t, db, 0, t.TempDir())
			if r.Workload != WorkloadDay || r.Flights != 6 || r.Messages < 30 {
				t.Errorf("workload %q, %d flights, %d messages; want day, 6, dozens of FLOPs", r.Workload, r.Flights, r.Messages)
			}
			for name, v := range map[string]float64{
				"accepted_per_s": r.AcceptedPerS, "processed_per_s": r.ProcessedPerS, "snapshot_s": r.SnapshotS,
				"accept_to_sent_p50_ms": r.AcceptToSentP50Ms, "processed_vs_commit_floor": r.ProcessedVsCommitFloor,
			} {
				if !(v > 0) {
					t.Errorf("%s = %v, want > 0", name, v)
				}
			}
			if !(r.AcceptToSentP50Ms <= r.AcceptToSentP99Ms && r.AcceptToSentP99Ms <= r.AcceptToSentP999Ms) {
				t.Errorf("percentiles out of order: %v %v %v", r.AcceptToSentP50Ms, r.AcceptToSentP99Ms, r.AcceptToSentP999Ms)
			}
			for _, target := range handler.Targets {
				l := r.Targets[target]
				if l.Messages == 0 || !(l.P50Ms > 0) || l.P999Ms < l.P50Ms {
					t.Errorf("%s: %+v, want messages and ordered positive percentiles", target, l)
				}
			}
			if e := r.EventTargets; e == nil || e.Messages == 0 || !(e.P50Ms > 0) || e.P999Ms < e.P50Ms {
				t.Errorf("event_targets %+v, want messages and ordered positive percentiles", e)
			}
			// KAFKA_SCHD waits for its flush: its p99 is at least the overall's share of it,
			// and the overall p99 covers every target's.
			if schd := r.Targets[handler.TargetSchd]; schd.P99Ms > r.AcceptToSentP999Ms {
				t.Errorf("KAFKA_SCHD p99 %v above the overall p999 %v: the overall misses a target", schd.P99Ms, r.AcceptToSentP999Ms)
			}
			// Every message of the backlog was inserted once into CMINMSGS and PROC_STATE,
			// counted per statement; the events went into MSG_EVENT.
			for _, table := range []string{"CMINMSGS", "PROC_STATE"} {
				if w := r.WritesPerMsg[table]; w.Inserted != 1 || w.BTree < w.Rows {
					t.Errorf("%s: %+v per message, want 1 inserted", table, w)
				}
			}
			// A FLOP changes one flight: one shared row, whatever the targets.
			if w := r.WritesPerMsg["MSG_EVENT"]; !(w.Inserted > 0.5) || w.Inserted > 1 || !(r.BTreePerMsg > r.RowsPerMsg) {
				t.Errorf("MSG_EVENT %+v, rows %v, b-tree %v per message: want one event per message at most, and indexes", w, r.RowsPerMsg, r.BTreePerMsg)
			}
			t.Logf("%+v", r)
		})
	}
}

// runDay runs the day workload of 6 flights on db with copies more targets, the file sinks
// under dir.
func runDay(t *testing.T, db *store.DB, copies int, dir string) Result {
	t.Helper()
	cfg := config.Default()
	cfg.Pipeline.PollInterval = 100 * time.Millisecond
	cfg.Schd.FlushPeriod = 300 * time.Millisecond
	r, err := Run(context.Background(), Options{Config: cfg, DB: scratchDB{db, db.Operations, db.Outbox}, Build: app.On(db), WorkDir: dir,
		Flights: 6, Rate: 200, Clients: 4, FloorTime: 200 * time.Millisecond, Targets: copies})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestTargets runs the day workload with 5 copy targets: each takes every event of one of
// the four emitted targets in turn (KAFKA_FLOP twice) into its own file, the report names 9
// targets, and the backlog wrote as many MSG_EVENT rows more as the copies take.
func TestTargets(t *testing.T) {
	t.Parallel()
	if got := copyNames(5); !slices.Equal(got, []string{"COPY1_KAFKA_FLOP", "COPY2_KAFKA_SCHD", "COPY3_REDIS_NOTIFY", "COPY4_ES_FLIGHT", "COPY5_KAFKA_FLOP"}) {
		t.Fatalf("copy names %v", got)
	}
	if copyTargets(0) != nil {
		t.Fatal("no copies must leave the embedded default targets")
	}
	for name, c := range copyTargets(5) {
		if want := strings.TrimPrefix(name[strings.IndexByte(name, '_')+1:], name); strings.HasPrefix(name, "COPY") && c.CopyOf != want {
			t.Errorf("%s copies %q, want %q", name, c.CopyOf, want)
		}
	}
	db, err := store.Open(context.Background(), "sqlite", filepath.Join(t.TempDir(), "bench.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	dir := t.TempDir()
	r := runDay(t, db, 5, dir)
	if r.DeliveryTargets != 9 || r.CopyTargets != 5 {
		t.Errorf("%d delivery targets, %d copies; want 9 and 5", r.DeliveryTargets, r.CopyTargets)
	}
	for _, name := range copyNames(5) {
		of := name[strings.IndexByte(name, '_')+1:]
		if c, o := r.Targets[name], r.Targets[of]; c.Messages == 0 || c.Messages != o.Messages {
			t.Errorf("%s: %d messages, %s %d: want every one", name, c.Messages, of, o.Messages)
		}
		if fi, err := os.Stat(filepath.Join(dir, "outbox", name+".jsonl")); err != nil || fi.Size() == 0 {
			t.Errorf("%s wrote no file: %v", name, err)
		}
	}
	// The backlog's events (day A's FLOPs: before day B's schedule), counted per statement,
	// are its rows in MSG_EVENT, which every target, copies included, takes.
	rows, err := db.SQL.Query(`SELECT TARGET, COUNT(*) FROM MSG_EVENT WHERE CMINMSGS_ID IN (SELECT CMINMSGS_ID FROM PROC_STATE
WHERE TYPE_TAG LIKE 'FLOP-%' AND CMINMSGS_ID < (SELECT MAX(CMINMSGS_ID) FROM PROC_STATE WHERE TYPE_TAG = 'SCHD-DNLD')) GROUP BY TARGET`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	per, all := map[string]int{}, 0
	for rows.Next() {
		var target string
		var n int
		if err := rows.Scan(&target, &n); err != nil {
			t.Fatal(err)
		}
		per[target], all = n, all+n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	// Each is one shared row every target takes (evt.Shared), none a target's own.
	if len(per) != 1 || per[evt.Shared] == 0 {
		t.Errorf("the backlog's events per target: %v, want shared rows only", per)
	}
	if counted := math.Round(r.WritesPerMsg["MSG_EVENT"].Inserted * float64(r.Messages)); int(counted) != all {
		t.Errorf("counted %v MSG_EVENT rows inserted for the backlog, it has %d (%v)", counted, all, per)
	}
}

// TestSplitDay: the simulated day splits at its first FLOP into reference data and schedule,
// then the FLOPs; the sizing gives about the FLOPs asked for.
func TestSplitDay(t *testing.T) {
	t.Parallel()
	loc := time.UTC
	n, err := dayFlights(1000, 0, loc)
	if err != nil {
		t.Fatal(err)
	}
	d, err := simulatedDay(time.Now().AddDate(0, 0, 1), n, 1, loc)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.ops) < 900 || len(d.ops) > 1100 {
		t.Errorf("%d flights give %d FLOPs, want about 1000", n, len(d.ops))
	}
	if len(d.head) < 2 || !strings.Contains(d.head[len(d.head)-1], "<TYPE>SCHD</TYPE><STYP>DNLD</STYP>") {
		t.Errorf("the head (%d messages) does not end with the schedule", len(d.head))
	}
	for i, m := range d.ops {
		if !strings.Contains(m, "<TYPE>FLOP</TYPE>") {
			t.Fatalf("message %d after the head is not a FLOP", i)
		}
	}
	if f, _ := dayFlights(1000, 42, loc); f != 42 {
		t.Errorf("--flights 42 gave %d flights", f)
	}
}
