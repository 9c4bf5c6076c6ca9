package bench

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"msgx/internal/app"
	"msgx/internal/config"
	"msgx/internal/store"
	"msgx/internal/store/storetest"
)

// TestRunSmall runs every phase of the classic workload with small numbers on both dialects and checks that every
// figure came out, and that SENT was seen at the dispatcher's commit.
func TestRunSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a 3,000-flight snapshot")
	}
	for _, dialect := range []string{"sqlite", "mysql"} {
		t.Run(dialect, func(t *testing.T) {
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
			r, err := Run(context.Background(), Options{Config: cfg, DB: scratchDB{db, db.Operations, db.Outbox}, Build: app.On(db), WorkDir: t.TempDir(),
				Workload: WorkloadClassic, Messages: 60, Rate: 200, Clients: 4, FloorTime: 200 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			for name, v := range map[string]float64{
				"floor_commits_per_s": r.FloorCommitsPerS, "floor_batched_rows_per_s": r.FloorBatchedRowsPerS,
				"accepted_per_s": r.AcceptedPerS, "processed_per_s": r.ProcessedPerS,
				"accept_to_sent_p50_ms": r.AcceptToSentP50Ms, "accept_to_sent_p99_ms": r.AcceptToSentP99Ms,
				"snapshot_3000_s": r.Snapshot3000S, "peak_heap_mb": r.PeakHeapMB,
				"accepted_vs_commit_floor": r.AcceptedVsCommitFloor, "processed_vs_batched_floor": r.ProcessedVsBatchedFloor,
			} {
				if !(v > 0) {
					t.Errorf("%s = %v, want > 0", name, v)
				}
			}
			if r.AcceptToSentP99Ms < r.AcceptToSentP50Ms {
				t.Errorf("p99 %v below p50 %v", r.AcceptToSentP99Ms, r.AcceptToSentP50Ms)
			}
			if r.SentObserved != "commit" {
				t.Errorf("SENT observed at %q, want the dispatcher's commit", r.SentObserved)
			}
			t.Logf("%+v", r)
		})
	}
}
