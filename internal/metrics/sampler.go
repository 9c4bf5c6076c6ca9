package metrics

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"time"

	"msgx/internal/pipeline"
	"msgx/internal/store"
)

// StateStore is what the state sampler reads: message counts, the head, the operators' pauses
// and the outbox's counts, each through index-bounded queries (store.Events.EventCounts never
// counts SENT rows).
type StateStore interface {
	CountByState(ctx context.Context) (map[pipeline.ProcStatus]int, error)
	Head(ctx context.Context) (*store.Message, error)
	Pauses(ctx context.Context) ([]store.Pause, error)
	EventCounts(ctx context.Context) ([]store.EventCount, error)
	DeadCountsWith(ctx context.Context, events []store.EventCount) (store.DeadCounts, error)
}

// StateCounter counts the messages per state at now without reading every PROC_STATE row
// (*store.StateCounter).
type StateCounter interface {
	Counts(ctx context.Context, now time.Time) (map[pipeline.ProcStatus]int, error)
}

// TargetStats returns a sample of each delivery target that has events, from the outbox's
// counts already read (dispatch.TargetSamples): its PENDING and DEAD counts, its SENT total,
// its oldest pending event, since when its head fails and whether it rejects everything. The
// sampler adds the pauses and the known targets without events.
type TargetStats func(ctx context.Context, counts []store.EventCount, now time.Time) ([]TargetSample, error)

// DefaultSampleEvery is how often Sampler.Run reads the queue's state.
const DefaultSampleEvery = 5 * time.Second

// Sampler reads the queue's state for the gauges: the instance running the pump runs it
// (Run), and a scrape then reads the last sample from memory.
type Sampler struct {
	DB StateStore
	// Counts counts the messages per state; nil: DB.CountByState (which reads every row).
	Counts StateCounter
	// Targets samples the delivery targets (dispatch.TargetSamples); nil samples none.
	Targets TargetStats
	// Known are the configured targets, which get zeros until their first event.
	Known []string
	Clock pipeline.Clock
	Log   *slog.Logger
	// Every is how often Run samples (default DefaultSampleEvery).
	Every time.Duration
}

// Sample reads the queue's state: messages per state, the head, the operators' pauses, the
// dead letters and per target (those with events and the known ones) the PENDING and DEAD
// counts, the SENT total, the oldest pending event, since when its head fails, whether it is
// paused and whether it rejects everything. With a StateCounter every query is bounded by an
// index range that grows with the backlog and the dead, not with the history.
func (s *Sampler) Sample(ctx context.Context) (*Snapshot, error) {
	now := s.Clock.Now()
	var c map[pipeline.ProcStatus]int
	var err error
	if s.Counts != nil {
		c, err = s.Counts.Counts(ctx, now)
	} else {
		c, err = s.DB.CountByState(ctx)
	}
	if err != nil {
		return nil, err
	}
	snap := &Snapshot{At: now, Messages: c}
	head, err := s.DB.Head(ctx)
	if err != nil {
		return nil, err
	}
	if head != nil {
		h := &HeadSample{MsgID: head.ID, Attempts: head.Attempts}
		if head.ReceivedAt != nil {
			h.ReceivedAt = *head.ReceivedAt
		}
		if head.State == pipeline.Failed && head.FirstFailedAt != nil {
			h.FirstFailedAt = *head.FirstFailedAt
		}
		snap.Head = h
	}
	pauses, err := s.DB.Pauses(ctx)
	if err != nil {
		return nil, err
	}
	paused := map[string]time.Time{} // since when, by pause name
	for _, p := range pauses {
		paused[p.Name] = p.At
	}
	snap.PumpPausedAt = paused[store.PumpPause]
	_, snap.PumpPaused = paused[store.PumpPause]
	events, err := s.DB.EventCounts(ctx) // once, for the dead events and the targets
	if err != nil {
		return nil, err
	}
	dead, err := s.DB.DeadCountsWith(ctx, events)
	if err != nil {
		return nil, err
	}
	snap.Dead = map[string]DeadSample{
		store.DeadMessage: {Dead: dead.Messages.Dead, Acknowledged: dead.Messages.Acknowledged},
		store.DeadEvent:   {Dead: dead.Events.Dead, Acknowledged: dead.Events.Acknowledged},
	}
	var targets []TargetSample
	if s.Targets != nil {
		if targets, err = s.Targets(ctx, events, now); err != nil {
			return nil, err
		}
	}
	seen := map[string]bool{}
	for _, t := range targets {
		seen[t.Target] = true
	}
	for _, name := range s.Known {
		if !seen[name] {
			seen[name] = true
			targets = append(targets, TargetSample{Target: name})
		}
	}
	slices.SortFunc(targets, func(a, b TargetSample) int { return strings.Compare(a.Target, b.Target) })
	for i := range targets {
		targets[i].PausedAt, targets[i].Paused = paused[store.TargetPause(targets[i].Target)]
	}
	snap.Targets = targets
	return snap, nil
}

// Run takes a state sample for m at once and then every Every until ctx ends. A sample that
// fails (the database does not answer) leaves the last one in place (its
// msgx_state_sample_timestamp_seconds says how old it is) and is logged once until a sample
// succeeds again. When it returns, the sample is dropped.
func (s *Sampler) Run(ctx context.Context, m *Metrics) {
	every := pipeline.OrDefault(s.Every, DefaultSampleEvery)
	defer m.SetSnapshot(nil)
	failing := false
	for {
		sctx, cancel := context.WithTimeout(ctx, max(every, 5*time.Second))
		snap, err := s.Sample(sctx)
		cancel()
		switch {
		case err == nil:
			m.SetSnapshot(snap)
			failing = false
		case ctx.Err() == nil && !failing:
			s.Log.Warn("metrics: cannot read the queue's state; the gauges keep the last sample", "err", err.Error())
			failing = true
		}
		if !pipeline.Sleep(ctx, every) {
			return
		}
	}
}
