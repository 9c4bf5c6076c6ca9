package pump

// The pump's one path. Each step reads the next due messages with their raw text in one
// query, decodes and decides them in order (message.go), and commits the run in one
// transaction with a savepoint per message: the durable commit (one fsync) is shared,
// everything else is per message. One by one (pipeline.batch-size 1, a FAILED head, phase A
// without Options.ViewIn, or after a batch that could not be committed) is a batch of one.
//
// What phase A and phase B do differently (the marker reads, when messages are decoded, the
// reads and the committer of a batch, whether runs are batched) is the mode's (mode.go).
//
// How a failure inside the batch is handled: every write of a message runs under its own
// savepoint (store.Batch), so a message whose effects fail is rolled back alone and its
// outcome is recorded in the batch (same class, same retry/park verdict whatever the batch
// size). Parked and MALFORMED/DEAD outcomes and SKIPPED duplicates let the batch go on; a
// message left FAILED ends the batch after its record (a FAILED head blocks what is behind
// it); a message whose outcome cannot be written, or whose row changed under the pump (an
// operator's replay: ErrChanged), ends the batch before it: the ones before it commit and it
// is judged by afterHead. A lost lease (ErrFenced) or a transaction the database gave up
// (store.ErrBatchBroken) commits nothing, and a batch of several that cannot be committed
// makes the pump go one by one until a message's outcome is recorded, where a batch of one
// that cannot be committed is the head's Trouble (afterHead): the rules for an unavailable
// database are the same at every batch size.
//
// How handlers see the batch's own effects: handlers read state through handler.View, and a
// message's decision must see the effects of the messages before it in the batch (two FLOPs of
// one flight, a snapshot then a FLOP of one of its flights, a season list then a SCHS). The
// pump gives the handlers a view that reads through the open batch transaction
// (Options.FlightsIn, the SQL flight store's InTx; in phase A, ViewIn): SQLite and MySQL/MariaDB both show a
// transaction its own uncommitted writes, so the view is exactly what a batch of one would
// read after committing the messages before. A View that cannot read through the transaction
// (no FlightsIn) is watched instead: a message whose handler read it after the batch changed
// reference or flight state is not taken into the batch, and is decided again at the head of
// the next one.

import (
	"context"
	"errors"
	"time"

	"msgx/internal/handler"
	"msgx/internal/pipeline"
	"msgx/internal/store"
)

// Bounds of one batch besides its size: a batch ends once it inserted this many events or
// took this long (by the injected clock), so a run of large snapshots does not hold the
// single write transaction (and, on SQLite, the inbox's inserts) for long.
const (
	batchMaxEvents = 20000
	batchMaxTime   = 2 * time.Second
)

// errDecideAgain ends a batch before a message whose handler read a view that cannot see the
// batch's writes after the batch changed state; it is decided again at the next batch's head.
var errDecideAgain = errors.New("decide again after the batch commits")

// errHalted ends a batch whose queue failed to be sent: the message that failed is recorded,
// and the message that was being worked on when it was sent is decided again next batch.
var errHalted = errors.New("the batch ends after a message whose queued writes failed")

// ending is why a batch takes no more messages.
type ending int

const (
	goingOn   ending = iota // it takes the next message
	endAfter                // the last message is recorded and ends it (left FAILED, or a bound reached)
	endAgain                // the last message is not in it: decided again at the next batch's head
	endBefore               // stop.at's outcome could not be written: the batch commits without it, afterHead judges stop.err
	abandoned               // a lost lease or a broken transaction: nothing of the batch commits
)

// stop is how a batch ended. A later reason replaces an earlier one of lower rank: ending
// before or again (a message's error, a failed queue) replaces ending after, and abandoning
// replaces any; between two of the same rank the first counts.
type stop struct {
	kind ending
	at   *store.Message
	err  error
}

// batch is the state of one batch transaction.
type batch struct {
	*kit
	b       *store.Batch
	reads   reads     // how its handlers read state and its identities are looked up
	commit  committer // how its successes are written
	take    take      // alone or in a run
	reports []func()  // log lines, metrics and the recent list, once the batch is durable
	changed bool      // a message of the batch changed reference or flight state
	events  int
	started time.Time
	stop    stop
}

// end records why the batch ends (see stop).
func (r *batch) end(s stop) {
	if s.kind.rank() > r.stop.kind.rank() {
		r.stop = s
	}
}

func (e ending) rank() int {
	switch e {
	case goingOn, endAfter:
		return int(e)
	case abandoned:
		return 3
	}
	return 2
}

// endAt records how message m's step ended the batch: end after it, or err.
func (r *batch) endAt(m *store.Message, end bool, err error) {
	switch {
	case isFatal(err), store.IsConflict(err):
		// A conflict (deadlock, lock wait timeout, certification failure) is no fault of
		// the message: the whole batch is done again (Pump.conflicted).
		r.end(stop{kind: abandoned, at: m, err: err})
	case errors.Is(err, errDecideAgain), errors.Is(err, errHalted):
		r.end(stop{kind: endAgain})
	case err != nil:
		r.end(stop{kind: endBefore, at: m, err: err})
	case end:
		r.end(stop{kind: endAfter})
	}
}

func (r *batch) later(f func()) { r.reports = append(r.reports, f) }

// rollbackOnPanic abandons the batch when a panic goes through it (the crash tests' failpoint
// in a process that goes on), so its transaction does not keep holding its locks.
func (r *batch) rollbackOnPanic() {
	if rec := recover(); rec != nil {
		r.b.Rollback()
		panic(rec)
	}
}

// isFatal says err leaves nothing of the batch to commit.
func isFatal(err error) bool {
	return errors.Is(err, store.ErrFenced) || errors.Is(err, store.ErrBatchBroken)
}

// stepBatch is a step of the pump: the head job, or a batch from the head on (a FAILED head
// alone, by its timing rules). The wait for a batch to fill ends when stop does.
func (p *Pump) stepBatch(ctx, stop context.Context, now time.Time) (time.Duration, error) {
	t := takeRun
	if p.solo || !p.mode.batches() {
		t = takeOne
	}
	due, job, err := p.dueRun(ctx, t)
	if err != nil {
		return 0, err
	}
	var head *store.Due
	if len(due) > 0 {
		head = due[0]
	}
	switch {
	case job != nil && (head == nil || head.ID > job.AfterMsgID):
		return p.runJob(ctx, job, now)
	case head == nil:
		p.status.clearTrouble()
		return p.opt.PollInterval, nil
	}
	if tr := p.status.troubled(); tr != nil && tr.MsgID == head.ID && tr.NextAttempt.After(now) {
		p.blocked = p.blocked || t == takeRun
		return min(tr.NextAttempt.Sub(now), p.opt.PollInterval), nil
	}
	if head.State != pipeline.Pending {
		p.blocked = p.blocked || t == takeRun
		return p.stepHead(ctx, head, now)
	}
	switch {
	case t == takeOne:
		return p.runBatch(ctx, due[:1], takeOne)
	case p.blocked:
		p.blocked = false
		return 0, nil // the head moves on: read a whole batch
	}
	return p.stepRun(ctx, stop, head, due, job)
}

// stepHead works on a FAILED head alone: it dies past its deadline, waits for its next
// attempt, or is tried again in a batch of one.
func (p *Pump) stepHead(ctx context.Context, head *store.Due, now time.Time) (time.Duration, error) {
	m := &head.Message
	first := timeOr(m.FirstFailedAt, now)
	if p.opt.Policy.Overdue(first, now) {
		reason := "head deadline " + p.opt.Policy.HeadDeadline.String() + " passed: failing since " + first.Format(time.RFC3339)
		out := outlet{record: p.db.Record, later: func(f func()) { f() }}
		d := death{class: pipeline.Exhausted, last: lastErrOr(m) + "; " + reason, attempts: m.Attempts, first: first}
		return p.afterHead(m, p.rec.dead(ctx, out, stored(m, now), d), now)
	}
	if m.NextAttemptAt != nil && m.NextAttemptAt.After(now) {
		return min(m.NextAttemptAt.Sub(now), p.opt.PollInterval), nil
	}
	return p.runBatch(ctx, []*store.Due{head}, takeOne)
}

// stepRun processes the PENDING messages of due from head on, waiting for more first when
// Options.BatchWait says so, on the pump's clock, until stop ends: the step then takes nothing.
func (p *Pump) stepRun(ctx, stop context.Context, head *store.Due, due []*store.Due, job *store.Job) (time.Duration, error) {
	run := cut(due, job)
	if p.opt.BatchWait > 0 && len(run) > 1 && len(run) < p.opt.BatchSize {
		// A backlog that does not fill a batch may wait for more; a lone message never does.
		if !sleep(stop, p.opt.Clock, p.opt.BatchWait) {
			return 0, nil
		}
		var err error
		if due, job, err = p.dueRun(ctx, takeRun); err != nil {
			return 0, err
		}
		if len(due) == 0 || due[0].ID != head.ID || due[0].State != pipeline.Pending ||
			(job != nil && head.ID > job.AfterMsgID) {
			return 0, nil // the head changed while waiting: look again
		}
		run = cut(due, job)
	}
	return p.runBatch(ctx, run, takeRun)
}

// sleeper is a clock that also waits on its own time (testkit.Clock): a test that moves the
// clock by hand drives the batch wait with it.
type sleeper interface {
	Sleep(ctx context.Context, d time.Duration) error
}

// sleep waits d on clock, or in real time when clock cannot wait, until ctx ends: it reports
// whether the whole of d passed.
func sleep(ctx context.Context, clock pipeline.Clock, d time.Duration) bool {
	if s, ok := clock.(sleeper); ok {
		return s.Sleep(ctx, d) == nil && ctx.Err() == nil
	}
	return pipeline.Sleep(ctx, d)
}

// dueRun reads the due messages, then the head job: in this order, so a job enqueued between
// the two reads is ordered after every message read (its AfterMsgID is at least theirs).
func (p *Pump) dueRun(ctx context.Context, t take) ([]*store.Due, *store.Job, error) {
	limit := p.opt.BatchSize
	if p.blocked || t == takeOne {
		limit = 1 // the head was waiting: look at it alone until it moves
	}
	due, err := p.db.Due(ctx, limit)
	if err != nil {
		return nil, nil, err
	}
	job, err := p.db.HeadJob(ctx)
	if err != nil {
		return nil, nil, err
	}
	return due, job, nil
}

// cut returns the leading PENDING messages of due that are ordered before job: a batch stops
// before a FAILED message (it has timing rules of its own) and before the job's turn.
func cut(due []*store.Due, job *store.Job) []*store.Due {
	n := 0
	for _, m := range due {
		if m.State != pipeline.Pending || (job != nil && m.ID > job.AfterMsgID) {
			break
		}
		n++
	}
	return due[:n]
}

// runBatch processes run (due messages in order, the head first) in one transaction. The
// messages' events and back-fills are written at the end, for the whole batch (Batch.
// DeferWrites); when that fails, the batch is rolled back and done again with each message
// writing its own under its savepoint, so a message whose value the database refuses fails
// alone.
func (p *Pump) runBatch(ctx context.Context, run []*store.Due, t take) (time.Duration, error) {
	decs := p.mode.decodeRun(ctx, run)
	wait, again, err := p.runBatchOnce(ctx, run, decs, t, writesAtEnd)
	if again {
		// Decoded again: the first try's handlers had the decoded messages in hand.
		wait, _, err = p.runBatchOnce(ctx, run, p.mode.decodeRun(ctx, run), t, writesEach)
	}
	return wait, err
}

// runBatchOnce is runBatch's one try; again says the deferred writes failed and nothing was
// committed: try again with each message writing its own.
func (p *Pump) runBatchOnce(ctx context.Context, run []*store.Due, decs []*decoded, t take, wr writes) (wait time.Duration, again bool, err error) {
	head := &run[0].Message
	r, err := p.mode.begin(ctx, run, decs, t, wr)
	if err != nil {
		wait, err = p.abandon(ctx, head, err, p.opt.Clock.Now(), t)
		return wait, false, err
	}
	defer r.rollbackOnPanic()
	taken := p.takeRun(ctx, r, run, decs)
	if err := r.commit.flush(ctx, r); isFatal(err) {
		r.end(stop{kind: abandoned, err: err})
	}
	if err := r.commit.seal(ctx, r); err != nil {
		r.end(stop{kind: abandoned, err: err}) // phase A's mark (redismark.go)
	}
	if r.stop.kind == abandoned {
		r.b.Rollback()
		if wait, ok := p.conflicted(head, r.stop.err); ok {
			return wait, false, nil
		}
		wait, err = p.abandon(ctx, head, r.stop.err, p.opt.Clock.Now(), t)
		return wait, false, err
	}
	now := p.opt.Clock.Now()
	p.status.committing(head.ID, taken)
	if err := r.b.Flush(ctx); err != nil {
		r.b.Rollback()
		p.log.Warn("batch's events and back-fills not written; doing the batch again with each message's under its savepoint",
			"head_msg_id", head.ID, "err", err.Error())
		return 0, true, nil
	}
	if err := r.b.Commit(ctx); err != nil {
		if wait, ok := p.conflicted(head, err); ok {
			return wait, false, nil
		}
		wait, err = p.abandon(ctx, head, err, now, t)
		return wait, false, err
	}
	p.conflicts = 0
	return p.committed(r, now)
}

// conflicted judges a batch that failed with err, at its commit or in a statement: a conflict
// (a deadlock, a Galera certification failure: nothing was written) within store.ConflictPolicy's tries makes the
// next step do the whole batch again from fresh reads after a short pause (ok), counted in
// msgx_db_conflict_retries_total{op="pump"}; anything else, or one conflict too many, is not
// (the caller abandons the batch).
func (p *Pump) conflicted(head *store.Message, err error) (time.Duration, bool) {
	if !store.IsConflict(err) || p.conflicts+1 >= store.ConflictPolicy.MaxAttempts {
		p.conflicts = 0
		return 0, false
	}
	p.conflicts++
	p.opt.Metrics.ConflictRetried("pump")
	wait := store.ConflictPolicy.Delay(p.conflicts)
	p.log.Warn("batch refused by a conflict (deadlock, lock wait timeout or certification failure); doing it again",
		"head_msg_id", head.ID, "try", p.conflicts+1, "retry_in", wait.String(), "err", err.Error())
	return wait, true
}

// takeRun takes run's messages into batch r in order until the batch ends; it returns how
// many it went through (the last may have ended it).
func (p *Pump) takeRun(ctx context.Context, r *batch, run []*store.Due, decs []*decoded) (taken int) {
	for i, m := range run {
		now := p.opt.Clock.Now()
		taken++
		end, err := p.batchOne(ctx, r, m, decs[i], now)
		if err == nil && !end && r.commit.full(r) {
			err = r.commit.flush(ctx, r)
		}
		if !end && err == nil && (r.events >= batchMaxEvents || now.Sub(r.started) >= batchMaxTime) {
			end = true
		}
		r.endAt(&m.Message, end, err)
		if r.stop.kind != goingOn {
			return taken
		}
	}
	return taken
}

// committed reports the outcomes of committed batch r and judges how it ended.
func (p *Pump) committed(r *batch, now time.Time) (time.Duration, bool, error) {
	// The dispatcher first: the reports (a log line and metrics per message) need not delay
	// the delivery of what was just committed.
	if r.events > 0 && p.opt.OnEvents != nil {
		p.opt.OnEvents()
	}
	for _, f := range r.reports {
		f()
	}
	if r.stop.kind != endBefore {
		p.status.clearTrouble()
		return 0, false, nil
	}
	wait, err := p.afterHead(r.stop.at, r.stop.err, now)
	return wait, false, err
}

// abandon ends a batch of which nothing was committed. A lost lease stops the step. Any
// other failure (the database gave the transaction up, or its commit failed) is the head's
// Trouble in a batch of one (afterHead; a success write that broke it is the head's failure,
// failOutside), and makes the pump go one by one at once after a batch of several, so a
// commit whose answer was lost is found applied.
func (p *Pump) abandon(ctx context.Context, head *store.Message, err error, now time.Time, t take) (time.Duration, error) {
	if t == takeOne || errors.Is(err, store.ErrFenced) {
		return p.afterHead(head, p.failOutside(ctx, err), now)
	}
	p.solo = true
	p.log.Warn("batch not committed; processing one message at a time until the head is recorded", "head_msg_id", head.ID, "err", err.Error())
	return 0, nil
}

// watchView is a View that notes whether a handler read stored state through it.
type watchView struct {
	handler.View
	read bool
}

func (w *watchView) Flight(ctx context.Context, flid int64) ([]byte, bool, error) {
	w.read = true
	return w.View.Flight(ctx, flid)
}

func (w *watchView) FlightsBetween(ctx context.Context, from, to time.Time) ([][]byte, error) {
	w.read = true
	return w.View.FlightsBetween(ctx, from, to)
}

func (w *watchView) FlightsOf(ctx context.Context, flids []int64) ([][]byte, error) {
	w.read = true
	return w.View.FlightsOf(ctx, flids)
}

func (w *watchView) CodeShareFlights(ctx context.Context) ([][]byte, error) {
	w.read = true
	return w.View.CodeShareFlights(ctx)
}

func (w *watchView) CodeSharesOf(ctx context.Context, masters []int64) ([][]byte, error) {
	w.read = true
	return w.View.CodeSharesOf(ctx, masters)
}

func (w *watchView) RefKeys(ctx context.Context, typ string) ([]string, error) {
	w.read = true
	return w.View.RefKeys(ctx, typ)
}
