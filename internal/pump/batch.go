package pump

// The batching pump. One step reads the next due messages with their raw text in one query,
// decodes and decides them in order, and commits the run in one transaction with a savepoint
// per message: the durable commit (one fsync) is shared, everything else is as one by one.
//
// How a failure inside the batch is handled: every write of a message runs under its own
// savepoint (store.Batch), so a message whose effects fail is rolled back alone and its
// outcome is recorded in the batch exactly as the one-by-one pump records it (same class, same
// retry/park verdict). Parked and MALFORMED/DEAD outcomes and SKIPPED duplicates let the batch
// go on; a message left FAILED ends the batch after its record (a FAILED head blocks what is
// behind it); a message whose outcome cannot be written, or whose row changed under the pump
// (an operator's replay: ErrChanged), ends the batch before it: the ones before it commit and
// it is judged by afterHead as the one-by-one pump judges its head. A lost lease (ErrFenced)
// or a transaction the database gave up (store.ErrBatchBroken) commits nothing, and a batch
// that cannot be committed makes the pump go one by one until a message's outcome is
// recorded, so the rules for an unavailable database are exactly today's.
//
// How handlers see the batch's own effects: handlers read state through handler.View, and a
// message's decision must see the effects of the messages before it in the batch (two FLOPs of
// one flight, a snapshot then a FLOP of one of its flights, a season list then a SCHS). The
// pump gives the handlers a view that reads through the open batch transaction
// (Options.ViewIn; the SQL flight store's InTx): SQLite and MySQL/MariaDB both show a
// transaction its own uncommitted writes, so the view is exactly what the one-by-one pump
// would read after committing the messages before. This keeps the batch running through
// flight traffic, where ending it at each state-reading message would end almost every batch
// after one message. A View that cannot read through the transaction (no ViewIn) is watched
// instead: a message whose handler read it after the batch changed reference or flight state
// is not taken into the batch, and is decided again at the head of the next one.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"msgx/internal/handler"
	"msgx/internal/pipeline"
	"msgx/internal/sis"
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

// stepBatch is a step of the batching pump: the head job, a FAILED head alone (its timing
// rules are the one-by-one pump's), or a batch of the PENDING messages from the head on.
func (p *Pump) stepBatch(ctx context.Context, now time.Time) (time.Duration, error) {
	due, job, err := p.dueRun(ctx)
	if err != nil {
		return 0, err
	}
	var head *store.Message
	if len(due) > 0 {
		head = &due[0].Message
	}
	if job != nil && (head == nil || head.ID > job.AfterMsgID) {
		return p.runJob(ctx, job, now)
	}
	if head == nil {
		p.setTrouble(nil)
		return p.opt.PollInterval, nil
	}
	if t := p.Trouble(); t != nil && t.MsgID == head.ID && t.NextAttempt.After(now) {
		p.blocked = true
		return min(t.NextAttempt.Sub(now), p.opt.PollInterval), nil
	}
	if head.State != pipeline.Pending {
		p.blocked = true
		return p.stepHead(ctx, head, now)
	}
	if p.blocked {
		p.blocked = false
		return 0, nil // the head moves on: read a whole batch
	}
	run := cut(due, job)
	if p.opt.BatchWait > 0 && len(run) > 1 && len(run) < p.opt.BatchSize {
		// A backlog that does not fill a batch may wait for more; a lone message never does.
		t := time.NewTimer(p.opt.BatchWait)
		<-t.C
		if due, job, err = p.dueRun(ctx); err != nil {
			return 0, err
		}
		if len(due) == 0 || due[0].ID != head.ID || due[0].State != pipeline.Pending ||
			(job != nil && head.ID > job.AfterMsgID) {
			return 0, nil // the head changed while waiting: look again
		}
		run = cut(due, job)
	}
	return p.runBatch(ctx, run)
}

// dueRun reads the due messages, then the head job: in this order, so a job enqueued between
// the two reads is ordered after every message read (its AfterMsgID is at least theirs).
func (p *Pump) dueRun(ctx context.Context) ([]*store.Due, *store.Job, error) {
	limit := p.opt.BatchSize
	if p.blocked {
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

// batch is the state of one batch transaction.
type batch struct {
	b       *store.Batch
	view    handler.View
	watched *watchView // the view when it cannot read through the transaction
	changed bool       // a message of the batch changed reference or flight state
	events  int
	reports []func() // log lines, metrics and the recent list, once the batch is durable
	started time.Time
	markers map[int64][]byte // phase A: the markers of the run's messages, read at its start
	flights BatchFlights     // phase A: the batch's flight store (Options.BatchFlights)
}

// runBatch processes run (PENDING messages in order, the head first) in one transaction.
// The messages' events and back-fills are written at the end, for the whole batch (Batch.
// DeferWrites); when that fails, the batch is rolled back and done again with each message
// writing its own under its savepoint, so a message whose value the database refuses fails
// alone, exactly as one by one.
func (p *Pump) runBatch(ctx context.Context, run []*store.Due) (time.Duration, error) {
	wait, again, err := p.runBatchOnce(ctx, run, true)
	if again {
		wait, _, err = p.runBatchOnce(ctx, run, false)
	}
	return wait, err
}

// runBatchOnce is runBatch's one try; again says the deferred writes failed and nothing was
// committed: try again without deferring.
func (p *Pump) runBatchOnce(ctx context.Context, run []*store.Due, deferWrites bool) (wait time.Duration, again bool, err error) {
	head := &run[0].Message
	start := p.opt.Clock.Now()
	b, err := p.db.BeginBatch(ctx)
	if err != nil {
		wait, err = p.abandon(head, err, start)
		return wait, false, err
	}
	if deferWrites {
		b.DeferWrites()
	}
	r := &batch{b: b, started: start}
	r.view, r.watched = p.batchView(b)
	if p.opt.Authority != nil {
		r.markers, r.flights = p.beginAuthoritative(ctx, run)
	}
	var stopAt *store.Message // the message the batch ended before, with its error
	var stop error
	taken := 0 // messages the batch went through (the last may have stopped it)
	for _, m := range run {
		now := p.opt.Clock.Now()
		taken++
		end, err := p.batchOne(ctx, r, m, now)
		if errors.Is(err, store.ErrFenced) || errors.Is(err, store.ErrBatchBroken) {
			b.Rollback()
			wait, err = p.abandon(head, err, now)
			return wait, false, err
		}
		if err != nil {
			stopAt, stop = &m.Message, err
			break
		}
		if end || r.events >= batchMaxEvents || now.Sub(r.started) >= batchMaxTime {
			break
		}
	}
	now := p.opt.Clock.Now()
	p.committing(head.ID, taken)
	if err := b.Flush(ctx); err != nil {
		b.Rollback()
		p.log.Warn("batch's events and back-fills not written; doing the batch again with each message's under its savepoint",
			"head_msg_id", head.ID, "err", err.Error())
		return 0, true, nil
	}
	if err := b.Commit(); err != nil {
		wait, err = p.abandon(head, err, now)
		return wait, false, err
	}
	for _, f := range r.reports {
		f()
	}
	if r.events > 0 && p.opt.OnEvents != nil {
		p.opt.OnEvents()
	}
	switch {
	case stopAt == nil:
		p.setTrouble(nil)
		return 0, false, nil
	case errors.Is(stop, errDecideAgain):
		p.setTrouble(nil)
		return 0, false, nil
	}
	wait, err = p.afterHead(stopAt, stop, now)
	return wait, false, err
}

// abandon ends a batch of which nothing was committed. A lost lease stops the step; any other
// failure (the database gave the transaction up, or its commit failed) makes the pump go one
// by one at once, so the head meets exactly the one-by-one rules of an unavailable database
// (FAILED with backoff, or Trouble), and a commit whose answer was lost is found applied.
func (p *Pump) abandon(head *store.Message, err error, now time.Time) (time.Duration, error) {
	if errors.Is(err, store.ErrFenced) {
		return p.afterHead(head, err, now)
	}
	p.solo = true
	p.log.Warn("batch not committed; processing one message at a time until the head is recorded", "head_msg_id", head.ID, "err", err.Error())
	return 0, nil
}

// batchView returns the view the batch's handlers read, and the watch on it when it cannot
// read through the batch transaction.
func (p *Pump) batchView(b *store.Batch) (handler.View, *watchView) {
	switch {
	case p.opt.ViewIn != nil:
		return p.opt.ViewIn(b.Tx()), nil
	case p.opt.View != nil:
		w := &watchView{View: p.opt.View}
		return w, w
	}
	return nil, nil
}

// batchOne processes one message inside the batch. end says the batch ends after it (it was
// left FAILED); an error says nothing of it is in the batch, which ends before it.
func (p *Pump) batchOne(ctx context.Context, r *batch, m *store.Due, now time.Time) (end bool, err error) {
	if p.opt.Authority != nil {
		return p.batchOneAuthoritative(ctx, r, m, now) // phase A: phasea_batch.go
	}
	out := outlet{record: r.b.Record, later: func(f func()) { r.reports = append(r.reports, f) }}
	msg0 := &m.Message
	raw, ok := m.Raw, m.RawOK
	if m.RawLater {
		// Too long for the batch read: read alone (it cannot have changed: only the gateway
		// and the inbox write raw text, once).
		if raw, ok, err = p.db.Raw(ctx, m.ID); err != nil {
			return false, err
		}
	}
	if !ok {
		return false, p.recordDeadIn(ctx, out, msg0, pipeline.Malformed, "raw message missing from CMINMSGS and CMINMSGS_HST", m.Attempts, time.Time{}, now)
	}
	p.working(m.ID, "", "decoding")
	msg, tag, identity, warnings, err := p.decodeOne(m.ID, raw)
	out = out.naming(msg)
	if err != nil {
		return p.fail(ctx, out, msg0, err, tag, identity, warnings, now)
	}
	p.working(m.ID, tag, "deciding")
	// The identity's unique index finds a duplicate (below); only a row that holds its own
	// identity already needs telling apart: it was applied and its commit's answer was lost.
	if m.BoundKey != "" && m.BoundKey == store.IdentityKey(identity) {
		return false, p.alreadyApplied(ctx, out, msg0, tag, identity, warnings, now)
	}
	h, ok := p.reg.Lookup(tag)
	if !ok {
		if holder, dup, err := r.b.BoundTo(ctx, identity); err != nil || dup {
			return false, p.duplicate(ctx, out, msg0, msg, identity, holder, err, now)
		}
		return p.fail(ctx, out, msg0, pipeline.Errorf(pipeline.Unsupported, "no handler for %s", tag), tag, identity, warnings, now)
	}
	if r.watched != nil {
		r.watched.read = false
	}
	view, flights := r.view, p.opt.Flights
	if p.opt.ViewIn != nil {
		// A view of its own per message: what it remembers of its reads (the versions of the
		// flights it read, which the flight writes then use) ends with the message's step.
		view = p.opt.ViewIn(r.b.Tx())
		if fw, ok := view.(store.FlightWriter); ok && flights != nil {
			flights = fw
		}
	}
	dec, err := p.decide(ctx, m.ID, h, msg, view)
	if r.watched != nil && r.watched.read && r.changed {
		return false, errDecideAgain
	}
	if err != nil {
		// One by one, a duplicate is SKIPPED before its handler runs; here the unique index
		// finds it when the decision is applied, so a decision that is not applied asks.
		if holder, dup, berr := r.b.BoundTo(ctx, identity); berr != nil || dup {
			return false, p.duplicate(ctx, out, msg0, msg, identity, holder, berr, now)
		}
		if s, ok := handler.AsSkip(err); ok {
			return false, p.skip(ctx, out, msg0, msg, identity, s.Reason, now)
		}
		return p.fail(ctx, out, msg0, err, tag, identity, warnings, now)
	}
	dec.Events = p.withCopies(dec.Events)
	p.working(m.ID, tag, "writing")
	warnings = append(warnings[:len(warnings):len(warnings)], dec.Warnings...)
	meta := store.Backfill{SNDR: msg.Meta.SNDR, TYPE: msg.Meta.TYPE, STYP: msg.Meta.STYP, SEQN: msg.Meta.SEQN, DTTM: msg.Meta.DTTM}
	events, changed, err := r.b.Succeed(ctx, m.ID, store.Success{From: store.VersionOf(msg0), TypeTag: tag, Identity: identity, Meta: meta,
		Decision: dec, Note: dec.Note, Warnings: warnings, Flights: flightsOf(msg)}, flights, now)
	switch {
	case errors.Is(err, store.ErrIdentityTaken):
		// Bound by an earlier message, committed or earlier in this batch: the read goes
		// through the batch, so it finds either.
		holder, _, berr := r.b.BoundTo(ctx, identity)
		return false, p.duplicate(ctx, out, msg0, msg, identity, holder, berr, now)
	case errors.Is(err, store.ErrChanged), errors.Is(err, store.ErrFenced), errors.Is(err, store.ErrBatchBroken):
		return false, err
	case err != nil:
		return p.fail(ctx, out, msg0, err, tag, identity, warnings, now)
	}
	if len(dec.Ref) > 0 || len(dec.Flights) > 0 {
		r.changed = true
	}
	r.events += events
	out.later(func() { p.succeeded(msg0, tag, identity, events, changed, dec.Note, warnings, now) })
	return false, nil
}

// duplicate records m SKIPPED as a duplicate of holder, unless reading the holder failed.
func (p *Pump) duplicate(ctx context.Context, out outlet, m *store.Message, msg *sis.Message, identity string, holder int64, readErr error, now time.Time) error {
	if readErr != nil {
		return readErr
	}
	return p.skip(ctx, out, m, msg, identity, fmt.Sprintf("duplicate-of:%d", holder), now)
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

func (w *watchView) CodeShareFlights(ctx context.Context) ([][]byte, error) {
	w.read = true
	return w.View.CodeShareFlights(ctx)
}

func (w *watchView) RefKeys(ctx context.Context, typ string) ([]string, error) {
	w.read = true
	return w.View.RefKeys(ctx, typ)
}
