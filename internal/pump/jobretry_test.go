package pump_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"msgx/internal/handler"
	"msgx/internal/jobs"
	"msgx/internal/pipeline"
	"msgx/internal/pump"
	"msgx/internal/store"
	"msgx/internal/store/storetest"
	"msgx/internal/testkit"
)

// outageJobs fails every run with class until the clock reaches until, then succeeds; it
// records when it ran.
type outageJobs struct {
	clock *testkit.Clock
	class pipeline.ErrorClass
	until time.Time
	mu    sync.Mutex
	runs  []time.Time
}

func (o *outageJobs) RunJob(context.Context, *store.Job) (string, error) {
	now := o.clock.Now()
	o.mu.Lock()
	o.runs = append(o.runs, now)
	o.mu.Unlock()
	if now.Before(o.until) {
		return "", pipeline.Errorf(o.class, "redis 127.0.0.1:6379: connection refused")
	}
	return "swept", nil
}

// jobAfter enqueues a HISTORY_SWEEP, steps the pump (moving the clock by each wait it
// reports, a second at least) until the job is finished or limit has passed, and returns it
// as stored.
func jobAfter(t *testing.T, db *store.DB, clock *testkit.Clock, runner pump.JobRunner, infraDeadline, limit time.Duration) *store.Job {
	t.Helper()
	policy := defaultPolicy // 5 attempts, 1-2-4-8-16 s, head deadline 10 m
	p := pump.New(storetest.Pump(db), handler.Default(handler.Options{}), pump.Options{
		Policy: policy, Clock: clock, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Jobs: runner,
		JobInfraDeadline: infraDeadline, PollInterval: time.Minute,
	})
	ctx := context.Background()
	j, err := db.JobQueue.EnqueueJob(ctx, jobs.HistorySweep, "", clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	end := clock.Now().Add(limit)
	for clock.Now().Before(end) {
		wait, err := p.Step(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got, err := db.JobQueue.GetJob(ctx, j.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.State == store.JobDone || got.State == store.JobDead {
			return got
		}
		clock.Add(max(wait, time.Second))
	}
	got, _ := db.JobQueue.GetJob(ctx, j.ID)
	return got
}

// A job failing INFRA (Redis down for three minutes at the start, in phase A) is retried with
// the pipeline's backoff, past pipeline.max-attempts, and succeeds once Redis is back; it was
// DEAD after 5 attempts, 16 s after its first failure.
func TestJobRidesOutAnInfraOutage(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		clock := testkit.NewClock(time.Date(2026, 12, 1, 3, 30, 0, 0, time.UTC))
		start := clock.Now()
		run := &outageJobs{clock: clock, class: pipeline.Infra, until: start.Add(3 * time.Minute)}
		j := jobAfter(t, db, clock, run, 10*time.Minute, 20*time.Minute)
		if j.State != store.JobDone || j.Result == nil || !strings.HasPrefix(*j.Result, "swept") {
			t.Fatalf("job after a 3-minute outage: %s, %d attempts, last error %v", j.State, j.Attempts, deref(j.LastError))
		}
		// The waits between attempts are the backoff's steps, the last repeating: 1, 2, 4, 8,
		// 16, 16 … s.
		for i := 1; i < len(run.runs); i++ {
			want := defaultPolicy.Delay(i)
			if got := run.runs[i].Sub(run.runs[i-1]); got != want {
				t.Fatalf("attempt %d came %s after attempt %d, want %s (runs %v)", i+1, got, i, want, run.runs)
			}
		}
		if n := len(run.runs); n <= defaultPolicy.MaxAttempts || run.runs[n-1].Sub(start) > 3*time.Minute+16*time.Second {
			t.Fatalf("%d runs, the last %s after the first", n, run.runs[n-1].Sub(start))
		}
	})
}

// A job failing INFRA for longer than jobs.infra-deadline is DEAD then, measured from its
// first failure, saying so.
func TestJobInfraDeadline(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		clock := testkit.NewClock(time.Date(2026, 12, 1, 3, 30, 0, 0, time.UTC))
		run := &outageJobs{clock: clock, class: pipeline.Infra, until: clock.Now().Add(time.Hour)}
		j := jobAfter(t, db, clock, run, 4*time.Minute, time.Hour)
		if j.State != store.JobDead || j.FirstFailedAt == nil || j.FinishedAt == nil {
			t.Fatalf("job failing INFRA for an hour: %+v", j)
		}
		if d := j.FinishedAt.Sub(*j.FirstFailedAt); d <= 4*time.Minute || d > 4*time.Minute+16*time.Second {
			t.Fatalf("DEAD %s after its first failure, want just past jobs.infra-deadline 4m", d)
		}
		if !strings.Contains(deref(j.LastError), "connection refused") || !strings.Contains(deref(j.LastError), "jobs.infra-deadline 4m0s") {
			t.Fatalf("last error %q", deref(j.LastError))
		}
	})
}

// Failures of another class keep the pipeline's rule: DEAD after pipeline.max-attempts; with
// jobs.infra-deadline 0, INFRA ones too.
func TestJobOtherFailuresKeepTheAttemptLimit(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		for _, c := range []struct {
			class    pipeline.ErrorClass
			deadline time.Duration
		}{{pipeline.CodecError, 10 * time.Minute}, {pipeline.Infra, 0}} {
			clock := testkit.NewClock(time.Date(2026, 12, 1, 3, 30, 0, 0, time.UTC))
			run := &outageJobs{clock: clock, class: c.class, until: clock.Now().Add(time.Hour)}
			j := jobAfter(t, db, clock, run, c.deadline, time.Hour)
			if j.State != store.JobDead || j.Attempts != defaultPolicy.MaxAttempts || len(run.runs) != defaultPolicy.MaxAttempts ||
				!strings.Contains(deref(j.LastError), fmt.Sprintf("%d attempts used", defaultPolicy.MaxAttempts)) {
				t.Fatalf("%s with jobs.infra-deadline %s: %s after %d attempts (%d runs): %s", c.class, c.deadline, j.State, j.Attempts, len(run.runs), deref(j.LastError))
			}
		}
	})
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}
