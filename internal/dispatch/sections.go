package dispatch

import (
	"context"
	"time"

	"msgx/internal/metrics"
	"msgx/internal/pipeline"
	"msgx/internal/store"
)

// TargetSamples returns the metrics sampler's view of the delivery targets
// (metrics.Sampler.Targets): StatsWith's state of each target with events, as gauges read it.
func TargetSamples(db store.Events) metrics.TargetStats {
	return func(ctx context.Context, counts []store.EventCount, now time.Time) ([]metrics.TargetSample, error) {
		stats, err := StatsWith(ctx, db, counts, now)
		if err != nil {
			return nil, err
		}
		out := make([]metrics.TargetSample, len(stats))
		for i, t := range stats {
			out[i] = metrics.TargetSample{Target: t.Target, Pending: t.Pending, Dead: t.Dead, Sent: t.Sent, Rejecting: t.Rejecting}
			if t.OldestPendingAt != nil {
				out[i].OldestPendingAt = *t.OldestPendingAt
			}
			if t.BlockedSince != nil {
				out[i].BlockedSince = *t.BlockedSince
			}
		}
		return out, nil
	}
}

// StatusSection is the "targets" section of GET /api/v1/status: every target's Stats at the
// clock's now.
func StatusSection(db store.Events, clock pipeline.Clock) func(ctx context.Context) (any, error) {
	return func(ctx context.Context) (any, error) {
		return Stats(ctx, db, clock.Now())
	}
}
