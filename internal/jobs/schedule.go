package jobs

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"msgx/internal/jobs/jobkind"
	"msgx/internal/pipeline"
	"msgx/internal/store"
)

// Entry is one daily job of the schedule: its kind and its local time of day (jobkind.Entry,
// which the configuration builds).
type Entry = jobkind.Entry

// Scheduler enqueues the daily jobs in the message order: each entry once per local day, at
// or after its time. The job's key is its kind and local day (ARCHIVE/2026-11-23), unique in
// PUMP_JOB, so a restart, a lease take-over or a second instance never enqueues a day twice;
// an instance that was down at the time enqueues the day's job when it starts. Run it only
// where the pump runs (the lease holder).
type Scheduler struct {
	DB       store.Scheduling
	Clock    pipeline.Clock
	Location *time.Location
	Entries  []Entry
	Logger   *slog.Logger
	// Wake is called after a job was enqueued (the pump's Wake).
	Wake func()
}

// Key returns the schedule key of kind on the local day of t.
func Key(kind string, t time.Time) string { return kind + "/" + t.Format(time.DateOnly) }

// Tick enqueues every entry whose time has come today and that has no job for today yet,
// and returns how long until the next entry's time.
func (s *Scheduler) Tick(ctx context.Context) (time.Duration, error) {
	loc := s.Location
	if loc == nil {
		loc = time.UTC
	}
	now := s.Clock.Now().In(loc)
	next := 24 * time.Hour
	// In the order of their times of day, so an instance catching up after a day down enqueues
	// the day's jobs in the order they would have run (ARCHIVE before HISTORY_SWEEP …).
	entries := slices.Clone(s.Entries)
	slices.SortStableFunc(entries, func(a, b Entry) int { return (a.Hour*60 + a.Minute) - (b.Hour*60 + b.Minute) })
	for _, e := range entries {
		at := time.Date(now.Year(), now.Month(), now.Day(), e.Hour, e.Minute, 0, 0, loc)
		if now.Before(at) {
			next = min(next, at.Sub(now))
			continue
		}
		next = min(next, at.AddDate(0, 0, 1).Sub(now))
		key := Key(e.Kind, now)
		j, created, err := s.DB.EnqueueScheduledJob(ctx, e.Kind, key, s.Clock.Now())
		if err != nil {
			return time.Minute, fmt.Errorf("schedule %s: %w", key, err)
		}
		if created {
			s.log().Info("scheduled job enqueued", "job_id", j.ID, "kind", e.Kind, "key", key, "after_msg_id", j.AfterMsgID)
			if s.Wake != nil {
				s.Wake()
			}
		}
	}
	return next, nil
}

func (s *Scheduler) log() *slog.Logger {
	if s.Logger == nil {
		return slog.Default()
	}
	return s.Logger
}

// Run ticks until ctx ends: at each entry's time, and at least every minute (so a clock
// change or a database outage delays a job by a minute at most).
func (s *Scheduler) Run(ctx context.Context) {
	if len(s.Entries) == 0 {
		return
	}
	for {
		wait, err := s.Tick(ctx)
		if err != nil {
			s.log().Warn("job schedule: cannot enqueue; trying again", "err", err.Error())
		}
		wait = min(max(wait, time.Second), time.Minute)
		timer, stop := pipeline.Timer(s.Clock, wait) // on the schedule's clock, which a test moves
		select {
		case <-ctx.Done():
			stop()
			return
		case <-timer:
		}
	}
}
