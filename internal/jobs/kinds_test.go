package jobs_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"msgx/internal/jobs"
	"msgx/internal/pipeline"
	"msgx/internal/store"
	"msgx/internal/testkit"
)

// A kind the runner is not set up for is not runnable, with the reason; running one anyway
// fails UNSUPPORTED with the same reason.
func TestRunnableSaysWhyAKindCannotRun(t *testing.T) {
	t.Parallel()
	clock := testkit.NewClock(time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC))
	r := &jobs.Runner{Clock: clock}
	if ok, why := r.Runnable(jobs.ProjectionRebuild); ok || why != "phase B without a REDIS_FLIGHT target: nothing to rebuild" {
		t.Errorf("PROJECTION_REBUILD without Rebuild: %v %q", ok, why)
	}
	_, err := r.RunJob(context.Background(), &store.Job{ID: 1, Kind: jobs.ProjectionRebuild})
	var pe *pipeline.Error
	if !errors.As(err, &pe) || pe.Class != pipeline.Unsupported || !strings.Contains(err.Error(), "nothing to rebuild") {
		t.Errorf("running it: %v", err)
	}
	r.Rebuild = func(context.Context, string, func(string, ...any)) (string, map[string]int, error) {
		return "", nil, nil
	}
	if ok, why := r.Runnable(jobs.ProjectionRebuild); !ok || why != "" {
		t.Errorf("PROJECTION_REBUILD with Rebuild: %v %q", ok, why)
	}
	if ok, why := r.Runnable("NOPE"); ok || why == "" {
		t.Errorf("an unknown kind: %v %q", ok, why)
	}
	kinds := r.Kinds()
	if len(kinds) != len(jobs.Kinds) {
		t.Fatalf("Kinds: %+v", kinds)
	}
	for i, k := range kinds {
		if k.Kind != jobs.Kinds[i] || k.Runnable != (k.Reason == "") {
			t.Errorf("kind %d: %+v", i, k)
		}
	}
}
