package bench

import (
	"context"
	"testing"
	"time"

	"msgx/internal/pipeline"
	"msgx/internal/store"
	"msgx/internal/store/storetest"
)

// The history is finished messages below the ones the bench then posts: the next inbox id
// follows it, nothing of it is due, and its identities do not collide with the bench's.
func TestFillHistory(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		now := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
		if err := FillHistory(ctx, db, 1234, now); err != nil {
			t.Fatal(err)
		}
		ids, err := db.Intake.InsertMessages(ctx, []string{RefAdd(1)}, now)
		if err != nil || ids[0] != 1235 {
			t.Fatalf("first id after the history: %v %v", ids, err)
		}
		if m, _ := db.Operations.GetMessage(ctx, 1234); m == nil || m.State != pipeline.Succeeded {
			t.Fatalf("history row: %+v", m)
		}
		if head, err := db.Processor.Head(ctx); err != nil || head == nil || head.ID != 1235 {
			t.Fatalf("head after the history: %+v %v", head, err)
		}
	})
}
