package dispatch

import (
	"context"
	"time"

	"msgx/client"
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
// clock's now, as the API answers them. A head that is a stored canonical event (kind
// event.KindChange) is shown as it is delivered, rendered for its target's family (families,
// as Options.Families); one that does not render is shown as stored.
func StatusSection(db store.Events, clock pipeline.Clock, families map[string]string) func(ctx context.Context) (any, error) {
	return func(ctx context.Context) (any, error) {
		stats, err := Stats(ctx, db, clock.Now())
		if err != nil {
			return nil, err
		}
		out := make([]client.TargetStatus, len(stats))
		for i, s := range stats {
			if s.Head != nil {
				s.Head.Render(families)
			}
			out[i] = s.status()
		}
		return out, nil
	}
}

// status is s as the status's "targets" section answers it: the durations in seconds,
// rounded to the millisecond (blocked_for_s null when the target is not blocked).
func (s TargetStats) status() client.TargetStatus {
	out := client.TargetStatus{Target: s.Target, Pending: s.Pending, Dead: s.Dead, Sent: s.Sent, OldestPendingAt: s.OldestPendingAt,
		BlockedSince: s.BlockedSince, ErrorClass: s.ErrorClass, LastError: s.LastError, NextAttempt: s.NextAttemptAt,
		Rejecting: s.Rejecting, AgeSeconds: s.OldestPendingAge.Round(time.Millisecond).Seconds()}
	if s.BlockedSince != nil {
		v := s.BlockedFor.Round(time.Millisecond).Seconds()
		out.BlockedFor = &v
	}
	if h := s.Head; h != nil {
		// The head as the events listing shows an event.
		row := h.Wire()
		out.Head = &row
	}
	return out
}
