package bench

import (
	"context"
	"path/filepath"
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
			cfg := config.Default()
			cfg.Pipeline.PollInterval = 100 * time.Millisecond
			cfg.Schd.FlushPeriod = 300 * time.Millisecond
			r, err := Run(context.Background(), Options{Config: cfg, DB: scratchDB{db, db.Operations, db.Outbox}, Build: app.On(db), WorkDir: t.TempDir(),
				Flights: 6, Rate: 200, Clients: 4, FloorTime: 200 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
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
			t.Logf("%+v", r)
		})
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
