package api

import (
	"context"
	"log/slog"
	"net/http"
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
	CountStates(ctx context.Context, states ...pipeline.ProcStatus) (map[pipeline.ProcStatus]int, error)
	Head(ctx context.Context) (*store.Message, error)
	store.Events
}

// MetricsRoute adds GET /metrics (Prometheus text format) serving m's registry. A scrape
// reads memory only: the counters and histograms the pump, the dispatcher and the inbox move,
// and the last state sample (SampleState, taken by the instance running the pump); only
// msgx_database_up pings the database, when m was made with a ping.
func MetricsRoute(m *metrics.Metrics) func(*http.ServeMux) {
	h := promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{})
	return func(mux *http.ServeMux) { mux.Handle("GET /metrics", h) }
}

// DatabaseUp returns the check behind msgx_database_up: a ping of at most a second.
func DatabaseUp(db store.Health) func() bool {
	return func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		return db.Ping(ctx) == nil
	}
}

// SampleState reads the queue's state for the metrics' gauges: messages per state, the head,
// and per target the PENDING and DEAD counts, the SENT total, the oldest pending event and
// since when its head fails. Every query but the count of finished messages is bounded by an
// index range that grows with the backlog and the dead, not with the history (dispatch.Stats,
// store.DB.CountStates). The SUCCEEDED and SKIPPED counts, which read every PROC_STATE row,
// are taken from prev when it has them (RunSampler counts them again every fullCountEvery).
func SampleState(ctx context.Context, db MetricsStore, clock pipeline.Clock, prev *metrics.Snapshot) (*metrics.Snapshot, error) {
	now := clock.Now()
	var counts map[pipeline.ProcStatus]int
	var err error
	if prev == nil || prev.Messages == nil {
		counts, err = db.CountByState(ctx)
	} else {
		counts, err = db.CountStates(ctx, pipeline.Pending, pipeline.Failed, pipeline.Dead)
		if err == nil {
			counts[pipeline.Succeeded], counts[pipeline.Skipped] = prev.Messages[pipeline.Succeeded], prev.Messages[pipeline.Skipped]
		}
	}
	if err != nil {
		return nil, err
	}
	s := &metrics.Snapshot{At: now, Messages: counts}
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
	stats, err := dispatch.Stats(ctx, db, now)
	if err != nil {
		return nil, err
	}
	for _, t := range stats {
		ts := metrics.TargetSample{Target: t.Target, Pending: t.Pending, Dead: t.Dead, Sent: t.Sent}
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

// fullCountEvery is how often RunSampler counts the finished messages (SUCCEEDED, SKIPPED),
// which reads every PROC_STATE row; in between they keep their last count and the counters
// msgx_messages_finished_total show what finishes meanwhile.
const fullCountEvery = time.Minute

// RunSampler takes a state sample for m at once and then every interval until ctx ends; the
// instance running the pump runs it. A sample that fails (the database does not answer)
// leaves the last one in place (its msgx_state_sample_timestamp_seconds says how old it is)
// and is logged once until a sample succeeds again. When it returns, the sample is dropped.
func RunSampler(ctx context.Context, db MetricsStore, m *metrics.Metrics, clock pipeline.Clock, log *slog.Logger, every time.Duration) {
	if every <= 0 {
		every = DefaultSampleEvery
	}
	defer m.SetSnapshot(nil)
	failing := false
	var last *metrics.Snapshot
	var counted time.Time // when the finished messages were last counted
	for {
		prev := last
		if now := clock.Now(); prev == nil || now.Sub(counted) >= fullCountEvery || now.Before(counted) {
			prev = nil
		}
		sctx, cancel := context.WithTimeout(ctx, max(every, 5*time.Second))
		s, err := SampleState(sctx, db, clock, prev)
		cancel()
		switch {
		case err == nil:
			if prev == nil {
				counted = s.At
			}
			last = s
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
