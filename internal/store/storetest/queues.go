package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"msgx/internal/store"
)

// queueCases are the contract of the stores the operators work through as queues: a job read
// by its id.
var queueCases = []struct {
	name string
	fn   func(t *testing.T, db Store)
}{
	{"GetJobReadsOneJobAndItsOutcome", getJobReadsOneJob},
}

func getJobReadsOneJob(t *testing.T, db Store) {
	ctx := context.Background()
	now := time.Date(2026, 12, 3, 4, 5, 6, 789000, time.UTC)
	j, err := db.EnqueueJob(ctx, "ARCHIVE", "day=2026-12-01", now)
	if err != nil {
		t.Fatal(err)
	}
	got, err := db.GetJob(ctx, j.ID)
	if err != nil || got.ID != j.ID || got.Kind != "ARCHIVE" || got.State != store.JobPending || got.Params != "day=2026-12-01" ||
		!got.CreatedAt.Equal(now) || got.FinishedAt != nil || got.Result != nil {
		t.Fatalf("GetJob of a new job: %+v %v", got, err)
	}
	// The longest result the column keeps, in 4-byte and CJK text, comes back as written.
	result := "归档 🛫 done"
	if err := db.FinishJob(ctx, j.ID, store.JobOutcome{State: store.JobDone, Attempts: 1, Result: result}, now.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	got, err = db.GetJob(ctx, j.ID)
	if err != nil || got.State != store.JobDone || got.Result == nil || *got.Result != result || got.FinishedAt == nil ||
		!got.FinishedAt.Equal(now.Add(time.Second)) {
		t.Fatalf("GetJob of a finished job: %+v %v", got, err)
	}
	for _, id := range []int64{0, -1, j.ID + 1, 1<<63 - 1} {
		if _, err := db.GetJob(ctx, id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("GetJob(%d): %v, want ErrNotFound", id, err)
		}
	}
}
