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
// runBatch → takeRun → batchOne (message.go: decode) → the message path (stages.go: a handler
// func wrapped by middlewares for classify and park, status, identity, the committer, recover)
// → the outcome (outcome.go: fail, skip, succeeded...) through an outlet into the batch, whose
// committer (commit.go) makes the successes durable; batch.go says how failures and state
// reads are handled.
package pump

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"msgx/internal/handler"
	"msgx/internal/metrics"
	"msgx/internal/pipeline"
	"msgx/internal/secret"
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
	// Copies maps a target to the extra targets that get a copy of each of its events
	// (targets.<NAME>.copy-of), such as webhooks of REDIS_NOTIFY.
	Copies map[string][]string
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
	db        Store
	reg       *handler.Registry
	opt       Options
	log       *slog.Logger
	wake      chan struct{}
	lastSweep time.Time

	// Adoption (see adopt): whether the start-up adoption ran, the highest CMINMSGS id
	// looked at, and the ids below it still missing, with when they were first missed; the
	// servers' id step (store.Adoption.IDStep) and, when it is over 1, the classes of ids
	// modulo it that present ids were in, with when one last was.
	started bool
	hw      int64
	gaps    map[int64]time.Time
	step    int64
	classes map[int64]time.Time

	// solo makes the next steps process one message at a time, after a batch that could not
	// be committed, until one message's outcome is recorded (see stepBatch).
	solo bool
	// conflicts counts the batch commits in a row the database refused for a conflict
	// (store.IsConflict); each is done again from fresh reads, up to store.ConflictPolicy.
	conflicts int
	// blocked says the head was FAILED or in Trouble at the last step: the batching pump
	// then reads only the head (no batch of raw texts each poll) until it moves on.
	blocked bool

	mu      sync.Mutex
	trouble *Trouble // the head whose outcome the pump cannot write; nil when none

	parked  *prometheus.CounterVec // msgx_messages_parked_total{class}
	digests map[int64]digests      // content digests of messages met (identity.go)
	recent  []Notable              // the last notable outcomes, newest last (under mu)
	hand    *InHand                // what the pump works on (InHand); guarded by mu
	marks   *markState             // phase A's guard against a Redis that lost data (redismark.go)

	// The highest applied message this pump knows (newer.go): a message below it is decided
	// out of its order. Read from the database at the first need after each start of Run.
	applied      int64
	appliedKnown bool
	later        map[int64]*sis.Message // later messages decoded for a message out of order

	path handle // the message path (stages.go)
}

// Notable is an outcome an operator should see without reading the log: a message parked,
// or one applied with warnings. The pump keeps the last recentKeep of them for status.
type Notable struct {
	MsgID    int64     `json:"msg_id"`
	TypeTag  string    `json:"type_tag"`
	State    string    `json:"state"`
	Class    string    `json:"error_class,omitempty"`
	At       time.Time `json:"at"`
	Note     string    `json:"note,omitempty"`
	Warnings []string  `json:"warnings,omitempty"`
}

const recentKeep = 10

// Recent returns the last notable outcomes since this process started, newest first.
func (p *Pump) Recent() []Notable {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]Notable, len(p.recent))
	for i, n := range p.recent {
		out[len(out)-1-i] = n
	}
	return out
}

func (p *Pump) notable(n Notable) {
	n.Note = secret.Redact(n.Note) // status shows it: a cause may quote a URL
	if len(n.Warnings) > 3 {
		n.Warnings = append(slices.Clip(n.Warnings[:3]), fmt.Sprintf("… %d more (see the message)", len(n.Warnings)-3))
	}
	if p.opt.OnNotable != nil {
		p.opt.OnNotable(n)
	}
	p.mu.Lock()
	p.recent = append(p.recent, n)
	if len(p.recent) > recentKeep {
		p.recent = slices.Delete(p.recent, 0, len(p.recent)-recentKeep)
	}
	p.mu.Unlock()
}

// Trouble says that the pump could not finish its head: the database refused or did not
// answer the writes of the head's outcome (even a minimal DEAD record). The pump counts each
// such attempt in memory, backs off by the retry policy and tries again; status and metrics
// show it, since the head's own row cannot.
type Trouble struct {
	MsgID       int64     `json:"msg_id"`
	Failures    int       `json:"failures"`
	LastError   string    `json:"last_error"`
	Since       time.Time `json:"since"`
	NextAttempt time.Time `json:"next_attempt_at"`
}

// Trouble returns the pump's current trouble with its head, or nil.
func (p *Pump) Trouble() *Trouble {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.trouble == nil {
		return nil
	}
	t := *p.trouble
	return &t
}

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
	p := &Pump{db: db, reg: reg, opt: opt, log: opt.Logger, wake: make(chan struct{}, 1),
		parked: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "msgx_messages_parked_total",
			Help: "Messages parked at once (DEAD under their own class, replayable) because retrying cannot change their outcome (pipeline.park-classes).",
		}, []string{"class"})}
	for _, c := range pipeline.Classes { // every class's series from the start, at zero
		p.parked.WithLabelValues(string(c))
	}
	p.path = p.messagePath()
	return p
}

// ParkedMetric is the counter msgx_messages_parked_total{class}: messages parked at once
// under pipeline.park-classes. Alert when it increases; replay them once msgx handles them.
func (p *Pump) ParkedMetric() prometheus.Collector { return p.parked }

// SetOnEvents sets the function called after each commit that inserted events (the
// dispatcher's Wake). Call it before Run.
func (p *Pump) SetOnEvents(fn func()) { p.opt.OnEvents = fn }

// SetCopies sets Options.Copies. Call it before Run.
func (p *Pump) SetCopies(c map[string][]string) { p.opt.Copies = c }

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
	p.appliedKnown = false // another instance may have applied messages while this one waited
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
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			p.log.Info("pump stopped")
			return nil
		case <-p.wake:
		case <-t.C:
		}
		t.Stop()
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
	defer p.idle()
	// Rows inserted straight into CMINMSGS (the gateway's) must join the order before the
	// head is taken, or a later inbox message would overtake them: one cheap read per step
	// tells whether there are any, and the adoption runs only then (and once at start).
	if err := p.adopt(ctx, now); err != nil {
		return 0, err
	}
	if wait, halted, err := p.guardStep(ctx, now); halted {
		return wait, err // Redis lost data: nothing is applied (redismark.go)
	}
	solo := p.solo
	wait, err := p.stepBatch(ctx, stop, now)
	if solo && err == nil && p.Trouble() == nil {
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
		p.setTrouble(nil)
		return 0, nil
	case errors.Is(err, store.ErrChanged):
		p.log.Info("message changed while the pump worked on it (replayed?); reading it again", "msg_id", head.ID)
		return 0, nil
	case errors.Is(err, store.ErrFenced):
		return 0, err
	}
	p.mu.Lock()
	t := p.trouble
	if t == nil || t.MsgID != head.ID {
		t = &Trouble{MsgID: head.ID, Since: now}
		p.trouble = t
	}
	t.Failures++
	t.LastError = secret.Redact(err.Error()) // status shows it as a value
	wait := p.opt.Policy.Delay(t.Failures)
	t.NextAttempt = now.Add(wait)
	failures := t.Failures
	p.mu.Unlock()
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
		if t := p.Trouble(); t != nil {
			return float64(t.Failures)
		}
		return 0
	})
}

func (p *Pump) setTrouble(t *Trouble) {
	p.mu.Lock()
	p.trouble = t
	p.mu.Unlock()
}

// sweepEvery is how often the adoption also looks below the newest PROC_STATE row, for a
// gateway row that the gap tracking missed (one another transaction held locked, or one that
// committed after its gap expired): it joins late, never not at all.
const sweepEvery = time.Minute

// sweepDepth bounds how many ids below the newest the sweep looks.
const sweepDepth = 100000

// gapWindow bounds how far below the newest CMINMSGS id the pump tracks missing ids; gapTTL
// is how long it re-checks one (a rolled-back insert leaves an id that never appears), and
// maxGaps how many it tracks at most.
const (
	gapWindow = 10000
	gapTTL    = 10 * time.Minute
	maxGaps   = 10000
)

// adopt gives gateway rows (inserted straight into CMINMSGS) their PENDING state before the
// head is taken, so a later message cannot overtake them, and marks them taken
// (CMINMSGS_DATE_PROCESSED). Only VALID rows the legacy has not taken, within
// inbox.adopt-from-id and inbox.adopt-since, are adopted (store.LegacyOptions).
//
// At start it logs the backlog and adopts it. Then each step: two index lookups tell whether
// CMINMSGS grew, and a count of the new ids' PROC_STATE rows, in the same statement, whether
// any lacks one (the inbox's own rows all have one); those are adopted when they are visible,
// and the ids that are not visible yet (a gateway transaction still open, with a lower id
// than rows already committed) are remembered and looked up again each step, so such a row
// joins within a poll interval. A sweep each minute catches anything else.
func (p *Pump) adopt(ctx context.Context, now time.Time) error {
	msgs, states, stated, err := p.db.Heads(ctx, p.hw)
	if err != nil {
		return err
	}
	if !p.started {
		if err := p.adoptAtStart(ctx, msgs, now); err != nil {
			return err
		}
	}
	if msgs > p.hw {
		lo := p.hw
		if msgs-lo > gapWindow {
			if err := p.adoptLegacy(ctx, lo, msgs-gapWindow, now); err != nil {
				return err
			}
			lo = msgs - gapWindow
		}
		if lo != p.hw || stated != msgs-lo { // else every new id has its state: none to look for
			missing, present, err := p.db.Unstated(ctx, lo, msgs)
			if err != nil {
				return err
			}
			for _, id := range p.givenOut(missing, present, now) {
				if len(p.gaps) < maxGaps {
					p.gaps[id] = now
				}
			}
		}
		p.hw = msgs
	}
	if len(p.gaps) > 0 {
		if err := p.adoptGaps(ctx, now); err != nil {
			return err
		}
	}
	if now.Sub(p.lastSweep) >= sweepEvery || now.Before(p.lastSweep) {
		p.lastSweep = now
		if err := p.readStep(ctx); err != nil {
			return err
		}
		if err := p.adoptLegacy(ctx, max(states-sweepDepth, 0), msgs, now, "by", "sweep"); err != nil {
			return err
		}
	}
	return nil
}

// adoptAtStart logs the backlog and adopts it, once, when the pump starts.
func (p *Pump) adoptAtStart(ctx context.Context, msgs int64, now time.Time) error {
	n, oldest, err := p.db.Backlog(ctx)
	if err != nil {
		return err
	}
	args := []any{"count", n}
	if oldest != nil {
		args = append(args, "oldest_received_at", oldest.Format(time.RFC3339))
	}
	p.log.Info("CMINMSGS rows to adopt at start (VALID, not taken by the legacy, within inbox.adopt-from-id/-since)", args...)
	if err := p.adoptLegacy(ctx, 0, msgs, now); err != nil {
		return err
	}
	p.started, p.lastSweep, p.hw = true, now, max(msgs-gapWindow, 0)
	p.gaps = map[int64]time.Time{}
	return p.readStep(ctx)
}

// readStep reads the servers' id step; a new one forgets the classes seen under the old.
func (p *Pump) readStep(ctx context.Context) error {
	step, err := p.db.IDStep(ctx)
	if err != nil {
		return err
	}
	if step != p.step {
		p.step, p.classes = step, map[int64]time.Time{}
	}
	return nil
}

// givenOut returns the ids of missing that a server may have given out, to be looked for
// again (the gaps): all of them when ids step by 1; on a Galera cluster, where each node's ids
// step by the cluster's size (1, 4, 7… on one node), only those in a class modulo the step
// that a present id was in within gapTTL. The others are ids of nodes nothing was written
// through, two in three of all ids when one node takes every write: looked for each step,
// they filled the gaps and cost a read of thousands of ids per step. A row of a node first
// written through in an open transaction is not tracked; the sweep adopts it.
func (p *Pump) givenOut(missing, present []int64, now time.Time) []int64 {
	if p.step <= 1 {
		return missing
	}
	for _, id := range present {
		p.classes[id%p.step] = now
	}
	out := missing[:0]
	for _, id := range missing {
		if seen, ok := p.classes[id%p.step]; ok && now.Sub(seen) <= gapTTL {
			out = append(out, id)
		}
	}
	return out
}

// adoptLegacy adopts the adoptable rows with ids in (from, to] (store.Adoption.AdoptLegacy) and
// logs how many, with args.
func (p *Pump) adoptLegacy(ctx context.Context, from, to int64, now time.Time, args ...any) error {
	n, err := p.db.AdoptLegacy(ctx, from, to, now)
	if err != nil || n == 0 {
		return err
	}
	p.opt.Metrics.Received("gateway", n)
	p.log.Info("adopted rows inserted directly into CMINMSGS", append([]any{"count", n}, args...)...)
	return nil
}

// adoptGaps looks up the ids the pump waits for: those now visible are adopted if adoptable
// and forgotten either way; those still missing after gapTTL are left to the sweep.
func (p *Pump) adoptGaps(ctx context.Context, now time.Time) error {
	ids := make([]int64, 0, len(p.gaps))
	for id, since := range p.gaps {
		if now.Sub(since) > gapTTL {
			delete(p.gaps, id)
			continue
		}
		ids = append(ids, id)
	}
	slices.Sort(ids)
	visible, adoptable, err := p.db.Visible(ctx, ids)
	if err != nil {
		return err
	}
	if len(adoptable) > 0 {
		stated, err := p.db.AdoptIDs(ctx, adoptable, now)
		if err != nil {
			return err
		}
		p.opt.Metrics.Received("gateway", len(stated))
		p.log.Info("adopted CMINMSGS rows committed after higher ids", "ids", fmt.Sprint(stated))
	}
	for _, id := range visible {
		delete(p.gaps, id)
	}
	return nil
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
