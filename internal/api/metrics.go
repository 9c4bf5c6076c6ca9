package api

import (
	"context"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"msgx/internal/dispatch"
	"msgx/internal/metrics"
	"msgx/internal/pipeline"
	"msgx/internal/store"
)

// MetricsStore is what the state sampler reads: message counts, the head, and the outbox's
// counts, each through index-bounded queries (store.Events.EventCounts never counts SENT rows).
type MetricsStore interface {
	CountByState(ctx context.Context) (map[pipeline.ProcStatus]int, error)
	Head(ctx context.Context) (*store.Message, error)
	Pauses(ctx context.Context) ([]store.Pause, error)
	DeadCountsWith(ctx context.Context, events []store.EventCount) (store.DeadCounts, error)
	store.Events
}

// MetricsRoute adds GET /metrics (Prometheus text format) serving m's registry. A scrape
// reads memory only: the counters and histograms the pump, the dispatcher and the inbox move,
// the last state sample (SampleState, taken by the instance running the pump) and the last
// database check (Health, msgx_database_up), so it answers at once whatever the database
// does; msgx_sample_age_seconds says how old the samples are.
func MetricsRoute(m *metrics.Metrics) func(*http.ServeMux) {
	h := promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{})
	return func(mux *http.ServeMux) { mux.Handle("GET /metrics", h) }
}

// DatabaseUp returns the check behind msgx_database_up: h's last check, from memory.
func DatabaseUp(h *Health) func() bool { return h.Up }

// StateCounts counts the messages per state: a store.StateCounter's Counts at the clock's now,
// or nil for the store's CountByState (which reads every PROC_STATE row).
type StateCounts func(ctx context.Context) (map[pipeline.ProcStatus]int, error)

// CounterCounts returns the StateCounts of c at clock's time.
func CounterCounts(c *store.StateCounter, clock pipeline.Clock) StateCounts {
	return func(ctx context.Context) (map[pipeline.ProcStatus]int, error) { return c.Counts(ctx, clock.Now()) }
}

// SampleState reads the queue's state for the metrics' gauges: messages per state (counts, or
// db.CountByState when nil), the head, the operators' pauses, and per target (those with
// events and the known ones, which get zeros until their first event) the PENDING and DEAD
// counts, the SENT total, the oldest pending event, since when its head fails, whether it is
// paused and whether it rejects everything (dispatch.TargetStats). With a store.StateCounter
// every query is bounded by an index range that grows with the backlog and the dead, not with
// the history (dispatch.Stats).
func SampleState(ctx context.Context, db MetricsStore, clock pipeline.Clock, counts StateCounts, known ...string) (*metrics.Snapshot, error) {
	now := clock.Now()
	if counts == nil {
		counts = db.CountByState
	}
	c, err := counts(ctx)
	if err != nil {
		return nil, err
	}
	s := &metrics.Snapshot{At: now, Messages: c}
	head, err := db.Head(ctx)
	if err != nil {
		return nil, err
	}
	if head != nil {
		h := &metrics.HeadSample{MsgID: head.ID, Attempts: head.Attempts}
		if head.ReceivedAt != nil {
			h.ReceivedAt = *head.ReceivedAt
		}
		if head.State == pipeline.Failed && head.FirstFailedAt != nil {
			h.FirstFailedAt = *head.FirstFailedAt
		}
		s.Head = h
	}
	pauses, err := db.Pauses(ctx)
	if err != nil {
		return nil, err
	}
	paused := map[string]time.Time{} // since when, by pause name
	for _, p := range pauses {
		paused[p.Name] = p.At
	}
	s.PumpPausedAt = paused[store.PumpPause]
	_, s.PumpPaused = paused[store.PumpPause]
	events, err := db.EventCounts(ctx) // once, for the dead events and the targets
	if err != nil {
		return nil, err
	}
	dead, err := db.DeadCountsWith(ctx, events)
	if err != nil {
		return nil, err
	}
	s.Dead = map[string]metrics.DeadSample{
		store.DeadMessage: {Dead: dead.Messages.Dead, Acknowledged: dead.Messages.Acknowledged},
		store.DeadEvent:   {Dead: dead.Events.Dead, Acknowledged: dead.Events.Acknowledged},
	}
	stats, err := dispatch.StatsWith(ctx, db, events, now)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, t := range stats {
		seen[t.Target] = true
	}
	for _, name := range known {
		if !seen[name] {
			seen[name] = true
			stats = append(stats, dispatch.TargetStats{Target: name})
		}
	}
	slices.SortFunc(stats, func(a, b dispatch.TargetStats) int { return strings.Compare(a.Target, b.Target) })
	for _, t := range stats {
		pausedAt, isPaused := paused[store.TargetPause(t.Target)]
		ts := metrics.TargetSample{Target: t.Target, Pending: t.Pending, Dead: t.Dead, Sent: t.Sent,
			Paused: isPaused, PausedAt: pausedAt, Rejecting: t.Rejecting}
		if t.OldestPendingAt != nil {
			ts.OldestPendingAt = *t.OldestPendingAt
		}
		if t.BlockedSince != nil {
			ts.BlockedSince = *t.BlockedSince
		}
		s.Targets = append(s.Targets, ts)
	}
	return s, nil
}

// DefaultSampleEvery is how often RunSampler reads the queue's state.
const DefaultSampleEvery = 5 * time.Second

// RunSampler takes a state sample for m at once and then every interval until ctx ends; the
// instance running the pump runs it. A sample that fails (the database does not answer)
// leaves the last one in place (its msgx_state_sample_timestamp_seconds says how old it is)
// and is logged once until a sample succeeds again. When it returns, the sample is dropped.
func RunSampler(ctx context.Context, db MetricsStore, counts StateCounts, m *metrics.Metrics, clock pipeline.Clock, log *slog.Logger, every time.Duration, known ...string) {
	if every <= 0 {
		every = DefaultSampleEvery
	}
	defer m.SetSnapshot(nil)
	failing := false
	for {
		sctx, cancel := context.WithTimeout(ctx, max(every, 5*time.Second))
		s, err := SampleState(sctx, db, clock, counts, known...)
		cancel()
		switch {
		case err == nil:
			m.SetSnapshot(s)
			failing = false
		case ctx.Err() == nil && !failing:
			log.Warn("metrics: cannot read the queue's state; the gauges keep the last sample", "err", err.Error())
			failing = true
		}
		t := time.NewTimer(every)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}
