// Package pump is the single writer: one goroutine that takes the head of the inbound order
// (the lowest unfinished message, or a job ordered before it), decodes it, binds its identity,
// asks its handler for a Decision and commits the Decision with SUCCEEDED in one transaction,
// or records why it failed. A FAILED head blocks everything behind it until its next attempt
// is due; it goes DEAD after max attempts or once it has been failing for longer than the
// head deadline since its first failure (I1). It owns the processing-state transitions.
//
// The pump batches (pipeline.batch-size): it reads the next due messages in one query and
// commits a run of them in one transaction, a savepoint per message, with outcomes exactly
// those of batches of one. The call path of a message: Run → Step → stepBatch (batch.go) →
// runBatch → the mode's begin (mode.go: phase A or B, chosen once in New) → takeRun →
// batchOne (message.go) → the message path (stages.go: a handler func wrapped by middlewares
// for decode, classify and park, status, identity, the committer, recover) → the outcome
// (outcome.go: fail, skip, succeeded...) through an outlet into the batch, whose committer
// (commit.go) makes the successes durable; batch.go says how failures and state reads are
// handled.
package pump

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"msgx/internal/handler"
	"msgx/internal/metrics"
	"msgx/internal/pipeline"
	"msgx/internal/sis"
	"msgx/internal/store"
)

// Options configure a Pump.
type Options struct {
	Policy       pipeline.RetryPolicy
	PollInterval time.Duration         // how often to look when idle; default 1s
	Identity     pipeline.IdentityMode // identity.mode; "" is content
	SIS          sis.Options
	Clock        pipeline.Clock
	Logger       *slog.Logger
	Flights      store.FlightWriter // the flight store; nil until flights are handled
	View         handler.View       // read-only state for handlers
	// OnEvents is called after a commit that inserted events (the dispatcher's Wake).
	OnEvents func()
	// Jobs runs a PUMP_JOB; nil means jobs are left for a later version.
	Jobs JobRunner
	// JobInfraDeadline is how long a job failing INFRA is retried, with Policy's backoff and
	// no attempt limit, from its first failure before it is DEAD (jobs.infra-deadline), so a
	// job rides out what time fixes (Redis or the database down for a minute at the start);
	// 0: INFRA failures follow Policy as the other classes do.
	JobInfraDeadline time.Duration
	// BatchSize is how many due messages one transaction may commit (pipeline.batch-size);
	// 0 means DefaultBatchSize, 1 processes them one by one.
	BatchSize int
	// BatchWait is how long a batch may wait for more messages when fewer than BatchSize are
	// due (pipeline.batch-wait); 0 takes what is due now. A lone message never waits.
	BatchWait time.Duration
	// FlightsIn returns the flight store through the batch transaction (phase B: the SQL
	// flight store's InTx), the handlers' view and the writer of the batch's flights, so each
	// handler sees the effects of the messages before it in the batch. Nil: handlers read
	// View, and a message whose handler reads it after the batch changed state is decided
	// again at the head of the next batch.
	FlightsIn func(tx *sql.Tx) TxFlights
	// ViewIn, in phase A (see Authority), returns View reading reference data through the
	// batch transaction.
	ViewIn func(tx *sql.Tx) handler.View
	// Metrics receives the pump's counters and histograms (messages finished, adopted, the
	// last step's time); nil records none.
	Metrics *metrics.Metrics
	// Paused, when set, is asked at each step: while it answers true the pump does nothing
	// (an operator paused it; POST /api/v1/pump/pause) and looks again after PollInterval.
	Paused func(ctx context.Context) bool
	// OnNotable, when set, is told each notable outcome (parked, dead, applied with warnings)
	// once it is durable, on the pump's goroutine: the app keeps them in the durable list of
	// recent problems. It must return quickly.
	OnNotable func(Notable)
	// Authority is phase A's authoritative flight store (Redis), written before the SQL
	// transaction with a per-message marker (phasea.go); nil in phase B. Flights is then the
	// FLIGHT_STATE mirror, View reads flights from the authority, and ViewIn, when set, must
	// too (reading reference data through the batch transaction): the pump then batches;
	// without ViewIn it processes one message per transaction (a batch of one). FlightsIn is
	// not used.
	Authority Authority
	// BatchFlights, when set with Authority and ViewIn, returns the flight store of one phase A
	// batch (redisflight.Store.Batch): the batch's handlers read flights and its scripts write
	// them through it, sparing a round trip per flight read again and per script.
	BatchFlights func() BatchFlights
	// AfterAuthority, when set, runs right after a message's flights are applied to the
	// authority and before its SQL transaction (the crash tests' failpoint).
	AfterAuthority func(msgID int64)
}

// DefaultBatchSize is the batch size of a pump whose Options leave it 0 (pipeline.batch-size's
// default).
const DefaultBatchSize = 200

// Store is what the pump needs of the database: adoption of gateway rows, the processing
// state of messages and the job queue.
type Store interface {
	store.Adoption
	store.Processing
	store.Batching
	store.Jobs
}

// JobRunner executes one job and returns its result text.
type JobRunner interface {
	RunJob(ctx context.Context, j *store.Job) (string, error)
}

// Pump is the single-writer loop.
type Pump struct {
	db   Store
	reg  *handler.Registry
	opt  Options
	log  *slog.Logger
	wake chan struct{}

	mode     mode        // phase A or phase B, chosen once (mode.go)
	path     handle      // the message path (stages.go)
	adoption *adopter    // gateway rows' place in the order (adopt.go)
	status   *status     // what status shows: in hand, Trouble, the recent list (status.go)
	rec      *outcomes   // how outcomes are recorded and reported (outcome.go)
	ids      *identities // the identity rule (identity.go)
	order    *order      // what goes backwards never does (newer.go)
	dec      decoder     // the codec's call (decode.go)
	marks    *markState  // phase A's guard against a Redis that lost data (redismark.go)

	// solo makes the next steps process one message at a time, after a batch that could not
	// be committed, until one message's outcome is recorded (see stepBatch).
	solo bool
	// conflicts counts the batch commits in a row the database refused for a conflict
	// (store.IsConflict); each is done again from fresh reads, up to store.ConflictPolicy.
	conflicts int
	// blocked says the head was FAILED or in Trouble at the last step: the batching pump
	// then reads only the head (no batch of raw texts each poll) until it moves on.
	blocked bool
}

// Recent returns the last notable outcomes since this process started, newest first.
func (p *Pump) Recent() []Notable { return p.status.recentFirst() }

// Trouble returns the pump's current trouble with its head, or nil.
func (p *Pump) Trouble() *Trouble { return p.status.troubled() }

// New returns a pump over db with the handlers of reg.
func New(db Store, reg *handler.Registry, opt Options) *Pump {
	if opt.PollInterval <= 0 {
		opt.PollInterval = time.Second
	}
	if opt.Clock == nil {
		opt.Clock = pipeline.SystemClock{}
	}
	if opt.Logger == nil {
		opt.Logger = slog.Default()
	}
	if opt.BatchSize <= 0 {
		opt.BatchSize = DefaultBatchSize
	}
	log := opt.Logger
	p := &Pump{db: db, reg: reg, opt: opt, log: log, wake: make(chan struct{}, 1),
		adoption: &adopter{db: db, log: log, metrics: opt.Metrics},
		status:   &status{clock: opt.Clock, onNotable: opt.OnNotable},
		dec:      decoder{sis: opt.SIS, identity: opt.Identity, log: log},
		marks:    &markState{log: log},
	}
	p.ids = &identities{mode: opt.Identity, raw: db, log: log}
	p.order = &order{db: db, dec: p.dec, log: log}
	p.rec = newOutcomes(opt.Policy, reg, opt.Metrics, p.status, p.order, log)
	p.mode = newMode(&kit{db: db, opt: &p.opt, rec: p.rec, ids: p.ids, status: p.status, dec: p.dec, log: log}, p.marks)
	p.path = chain(decided,
		decoding(p.dec, db, p.rec, p.status),
		classified(p.rec),
		traced(p.status),
		deduplicated(p.ids, p.rec),
		applying(reg, p.order, p.mode, (*batch).succeed),
		recovered(log))
	return p
}

// ParkedMetric is the counter msgx_messages_parked_total{class}: messages parked at once
// under pipeline.park-classes. Alert when it increases; replay them once msgx handles them.
func (p *Pump) ParkedMetric() prometheus.Collector { return p.rec.parked }

// SetOnEvents sets the function called after each commit that inserted events (the
// dispatcher's Wake). Call it before Run.
func (p *Pump) SetOnEvents(fn func()) { p.opt.OnEvents = fn }

// Wake makes the pump look at the queue at once (the inbox calls it after each commit).
func (p *Pump) Wake() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// Run processes messages until ctx ends. The message in hand when ctx ends is finished first.
func (p *Pump) Run(ctx context.Context) error {
	p.log.Info("pump started", "poll_interval", p.opt.PollInterval.String())
	p.order.known = false // another instance may have applied messages while this one waited
	for {
		wait, err := p.Step(ctx)
		p.opt.Metrics.PumpStepped()
		if err != nil {
			p.log.Error("pump step failed", "err", err.Error())
			wait = p.opt.PollInterval
		}
		if ctx.Err() != nil {
			p.log.Info("pump stopped")
			return nil
		}
		if wait <= 0 {
			continue
		}
		// The idle wait runs on the pump's clock: a test that moves the clock ends it.
		timer, stop := pipeline.Timer(p.opt.Clock, wait)
		select {
		case <-ctx.Done():
			stop()
			p.log.Info("pump stopped")
			return nil
		case <-p.wake:
		case <-timer:
		}
		stop()
	}
}

// Step does one unit of work: adopt legacy rows, then run the head job or process the head
// message. It returns how long to wait before the next step (0: go on at once). Once it has
// taken a message, it finishes it even when ctx ends; only the wait for a batch to fill
// (Options.BatchWait) ends with ctx, and the step with it.
func (p *Pump) Step(ctx context.Context) (time.Duration, error) {
	stop := ctx
	ctx = context.WithoutCancel(ctx)
	if p.opt.Paused != nil && p.opt.Paused(ctx) {
		return p.opt.PollInterval, nil
	}
	now := p.opt.Clock.Now()
	defer p.status.idle()
	// Rows inserted straight into CMINMSGS (the gateway's) must join the order before the
	// head is taken, or a later inbox message would overtake them: one cheap read per step
	// tells whether there are any, and the adoption runs only then (and once at start).
	if err := p.adoption.adopt(ctx, now); err != nil {
		return 0, err
	}
	if wait, halted, err := p.guardStep(ctx, now); halted {
		return wait, err // Redis lost data: nothing is applied (redismark.go)
	}
	solo := p.solo
	wait, err := p.stepBatch(ctx, stop, now)
	if solo && err == nil && p.status.troubled() == nil {
		p.solo = false
	}
	return wait, err
}

// afterHead judges the outcome of working on head. A row that changed under the pump (an
// operator replayed it) is read again at once; a lost lease stops the step; any other error
// (the outcome could not be written) counts as a failed attempt held in memory, with backoff,
// so the pump never spins on a head it cannot record.
func (p *Pump) afterHead(head *store.Message, err error, now time.Time) (time.Duration, error) {
	switch {
	case err == nil:
		p.status.clearTrouble()
		return 0, nil
	case errors.Is(err, store.ErrChanged):
		p.log.Info("message changed while the pump worked on it (replayed?); reading it again", "msg_id", head.ID)
		return 0, nil
	case errors.Is(err, store.ErrFenced):
		return 0, err
	}
	wait, failures := p.status.headFailed(head.ID, err, p.opt.Policy, now)
	p.log.Error("cannot record the outcome of the head message; backing off", "msg_id", head.ID, "failures", failures,
		"retry_in", wait.String(), "err", err.Error())
	return wait, nil
}

// TroubleMetric is the gauge msgx_pump_outcome_write_failures: how many times in a row the
// pump could not record the outcome of its head (0 when it can). Alert when it stays above 0.
func (p *Pump) TroubleMetric() prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "msgx_pump_outcome_write_failures",
		Help: "Consecutive failed attempts to record the outcome of the head message (0 when none); the head's own row cannot show them.",
	}, func() float64 {
		if t := p.status.troubled(); t != nil {
			return float64(t.Failures)
		}
		return 0
	})
}

func (p *Pump) runJob(ctx context.Context, j *store.Job, now time.Time) (time.Duration, error) {
	first := timeOr(j.FirstFailedAt, now)
	// The class of the failures so far is not kept: the longer deadline holds here, the
	// failure's own class decides below.
	if deadline := max(p.opt.Policy.HeadDeadline, p.opt.JobInfraDeadline); j.FirstFailedAt != nil && deadline > 0 && now.Sub(first) > deadline {
		last := "failing"
		if j.LastError != nil {
			last = *j.LastError
		}
		p.log.Error("job DEAD", "job_id", j.ID, "kind", j.Kind, "attempts", j.Attempts, "err", last+"; deadline passed")
		return 0, p.db.FinishJob(ctx, j.ID, store.JobOutcome{State: store.JobDead, Attempts: j.Attempts, FirstFailed: first, LastErr: last + "; head deadline " + deadline.String() + " passed"}, now)
	}
	if j.NextAttemptAt != nil && j.NextAttemptAt.After(now) {
		return min(j.NextAttemptAt.Sub(now), p.opt.PollInterval), nil
	}
	if p.opt.Jobs == nil {
		return 0, p.db.FinishJob(ctx, j.ID, store.JobOutcome{State: store.JobDead, Attempts: j.Attempts, LastErr: "no job runner configured"}, now)
	}
	result, err := p.opt.Jobs.RunJob(ctx, j)
	if err == nil {
		p.log.Info("job DONE", "job_id", j.ID, "kind", j.Kind, "after_msg_id", j.AfterMsgID, "result", result)
		return 0, p.db.FinishJob(ctx, j.ID, store.JobOutcome{State: store.JobDone, Attempts: j.Attempts + 1, Result: result}, now)
	}
	attempts := j.Attempts + 1
	class := pipeline.ClassOf(err)
	policy := p.opt.Policy
	if class == pipeline.Infra && p.opt.JobInfraDeadline > 0 {
		// INFRA: what time fixes. Retried with the backoff until its own deadline.
		policy.MaxAttempts, policy.HeadDeadline = 0, p.opt.JobInfraDeadline
	}
	v := policy.OnFailure(class, attempts, first, now)
	state, last := store.JobFailed, err.Error()
	if v.Dead {
		state = store.JobDead
		if class == pipeline.Infra && p.opt.JobInfraDeadline > 0 {
			last += fmt.Sprintf("; failing INFRA for %s since %s (jobs.infra-deadline %s)", now.Sub(first).Round(time.Millisecond), first.UTC().Format(time.RFC3339), p.opt.JobInfraDeadline)
		} else if v.Reason != "" {
			last += "; " + v.Reason
		}
	}
	p.log.Warn("job "+state, "job_id", j.ID, "kind", j.Kind, "attempts", attempts, "class", string(class), "err", last)
	return 0, p.db.FinishJob(ctx, j.ID, store.JobOutcome{State: state, Attempts: attempts, Next: v.NextAttemptAt, FirstFailed: first, LastErr: last}, now)
}

func timeOr(t *time.Time, def time.Time) time.Time {
	if t == nil || t.IsZero() {
		return def
	}
	return *t
}

func lastErrOr(m *store.Message) string {
	if m.LastError != nil {
		return *m.LastError
	}
	return "failing"
}
