package pump

// Phase A's guard against a Redis that lost data (docs/redis-flights.md, "A Redis that lost
// data"). Redis and SQL each keep an epoch and a high-water mark (redisflight.Guard): before
// each step the pump asks the guard whether they agree, and raises SQL's mark in each batch
// transaction. While they disagree (Redis empty, another picture, or behind SQL) the pump
// applies nothing and runs no job but the repair, REDIS_RESTORE, which it runs at once,
// ahead of the message order; status, the gauge msgx_pump_halted, /readyz and the console
// name the reason. Once the marks agree again it goes on by itself. A single flight Redis
// lost (the mirror holds it, Redis does not) stops it the same way (lostflight.go).

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"msgx/internal/handler"
	"msgx/internal/jobs/jobkind"
	"msgx/internal/pipeline"
	"msgx/internal/store"
)

// Marks is the guard of phase A (redisflight.Guard).
type Marks interface {
	// Check compares Redis's marks with SQL's: halt says why the pump must not apply ("" when
	// they agree); err that they could not be read (a running pump goes on, its Redis calls
	// failing INFRA as usual; a stopped one stays stopped).
	Check(ctx context.Context) (halt string, err error)
	// Commit raises SQL's mark inside tx, the batch transaction, before it commits; done is
	// called once it has.
	Commit(ctx context.Context, tx *sql.Tx, now time.Time) (done func(), err error)
}

// Halt is why the pump applies nothing: Redis lost data.
type Halt struct {
	Reason string
	Since  time.Time
}

// markState is the pump's side of the guard; marks nil: the guard is off (phase B, or phase A
// before SetMarks).
type markState struct {
	marks Marks
	log   *slog.Logger
	mu    sync.Mutex
	halt  *Halt
	// checkErr is the last failed check's error text, logged once.
	checkErr string
}

// SetMarks turns phase A's guard on. Call it before Run.
func (p *Pump) SetMarks(m Marks) { p.marks.marks = m }

// Halted returns why the pump stops applying, or nil.
func (p *Pump) Halted() *Halt {
	p.marks.mu.Lock()
	defer p.marks.mu.Unlock()
	if p.marks.halt == nil {
		return nil
	}
	h := *p.marks.halt
	return &h
}

// HaltMetric is the gauge msgx_pump_halted: 1 while the pump stops applying because Redis
// lost data, its marks or a flight (status and /readyz say why), 0 otherwise.
func (p *Pump) HaltMetric() prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "msgx_pump_halted",
		Help: "1 while the pump applies nothing because Redis lost data (phase A: its epoch or high-water mark disagrees with SQL's, or it lacks a flight the mirror holds); REDIS_RESTORE repairs it.",
	}, func() float64 {
		if p.Halted() != nil {
			return 1
		}
		return 0
	})
}

// guardStep checks the marks before a step. halted says the step is over: the pump is
// stopped (wait before looking again), or it ran the waiting REDIS_RESTORE.
func (p *Pump) guardStep(ctx context.Context, now time.Time) (wait time.Duration, halted bool, err error) {
	if p.marks.marks == nil {
		return 0, false, nil
	}
	reason, err := p.marks.marks.Check(ctx)
	if !p.marks.note(reason, err, now) {
		return 0, false, nil
	}
	j, err := restoreJob(ctx, p.db)
	if err != nil || j == nil {
		return p.opt.PollInterval, true, err
	}
	wait, err = p.runJob(ctx, j, now)
	return wait, true, err
}

// note records what a check found and says whether the pump is stopped.
func (ms *markState) note(reason string, err error, now time.Time) (halted bool) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	switch {
	case err != nil:
		if e := err.Error(); e != ms.checkErr {
			ms.checkErr = e
			ms.log.Warn("phase A: cannot compare the Redis and SQL marks", "err", e, "stopped", ms.halt != nil)
		}
		return ms.halt != nil // stopped, it stays so until a check finds the marks agreeing
	case reason == "":
		ms.checkErr = ""
		if ms.halt != nil {
			ms.log.Info("phase A: Redis and SQL agree again; the pump resumes", "was", ms.halt.Reason)
			ms.halt = nil
		}
		return false
	}
	ms.checkErr = ""
	if ms.halt == nil || ms.halt.Reason != reason {
		ms.log.Error("phase A: the pump stops applying: "+reason+"; run REDIS_RESTORE (msgx job run REDIS_RESTORE)", "reason", reason)
		ms.halt = &Halt{Reason: reason, Since: now}
	}
	return true
}

// restoreJob returns the oldest unfinished REDIS_RESTORE job, or nil.
func restoreJob(ctx context.Context, db store.Jobs) (*store.Job, error) {
	list, err := db.ListJobs(ctx, 100)
	if err != nil {
		return nil, err
	}
	var out *store.Job
	for _, j := range list { // newest first
		if j.Kind == jobkind.RedisRestore && (j.State == store.JobPending || j.State == store.JobFailed) {
			out = j
		}
	}
	return out, nil
}

// seal raises SQL's mark in batch r's transaction, before it commits.
func (c *authoritative) seal(ctx context.Context, r *batch) error {
	if c.marks.marks == nil {
		return nil
	}
	done, err := c.marks.marks.Commit(ctx, r.b.Tx(), c.now())
	if err != nil {
		return err
	}
	r.later(done)
	return nil
}

// failed judges a handler's failure in phase A: a decision made on flights read from a Redis
// that lost data (a FLOP finding its flight gone: ORPHAN) is not the message's fault. The
// marks are compared again; when they disagree (Redis lost data since the step began) the
// failure is INFRA ("Redis lost data"), so the message is retried once Redis is restored,
// never parked. When they agree, an ORPHAN whose flight the mirror holds is a flight Redis
// lost: the pump stops and the batch ends before the message, which is not recorded
// (lostflight.go).
func (c *authoritative) failed(ctx context.Context, w *work, err error) error {
	if c.marks.marks == nil {
		return err
	}
	if _, skip := handler.AsSkip(err); skip || pipeline.ClassOf(err) == pipeline.Infra {
		return err
	}
	reason, cerr := c.marks.marks.Check(ctx)
	if cerr == nil && reason != "" {
		return pipeline.Wrap(pipeline.Infra, fmt.Errorf("%s; the decision (%v) was made on it and is not kept", reason, err))
	}
	if pipeline.ClassOf(err) == pipeline.Orphan {
		if lerr := c.lostFlight(ctx, w); lerr != nil {
			return lerr
		}
	}
	return err
}
