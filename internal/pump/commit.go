package pump

// How a batch's messages are made durable (committer), one interface over the three ways:
// each success at once under its savepoint (direct: SQLite, a batch that does not defer its
// writes, a batch of one), queued and sent several messages per round trip (queued: MariaDB,
// store.Batch.Queue), or in phase A the flight writes applied to the authority first, with
// the message's marker, and the SQL side at once (authoritative, phasea.go). The batch
// transaction commits once.

import (
	"context"
	"errors"

	"msgx/internal/pipeline"
	"msgx/internal/store"
)

// committer is how a batch makes its messages' Decisions durable.
type committer interface {
	// prior returns the Decision an earlier attempt at w made durable outside the batch
	// transaction (phase A's marker); found false: w is decided now.
	prior(ctx context.Context, w *work) (dec pipeline.Decision, found bool, err error)
	// ahead makes durable what of w's new Decision must be before the batch transaction (phase
	// A: its flight writes, on the authority); it returns the Decision to commit.
	ahead(ctx context.Context, w *work, dec pipeline.Decision) (pipeline.Decision, error)
	// queue queues w's success s to be written with the messages around it; false: write it
	// at once (after flush).
	queue(r *batch, w *work, s store.Success, dec pipeline.Decision, flights store.FlightWriter) bool
	// flush writes what waits in the queue: before any other write or outcome of the batch,
	// before a read that must see it, and at the batch's end.
	flush(ctx context.Context, r *batch) error
	// full says the queue holds as much as one round trip should carry.
	full(r *batch) bool
	// halted is the error that ends the batch before the message in hand after the queue
	// failed to be sent (errHalted, or the lost lease or broken transaction); nil if it did not.
	halted(r *batch) error
	// failed judges err, the failure of w's handler: phase A asks whether Redis lost data
	// (redismark.go); it returns the failure to record.
	failed(ctx context.Context, w *work, err error) error
	// seal writes, in the batch transaction before it commits, what must commit with it
	// (phase A's mark, redismark.go).
	seal(ctx context.Context, r *batch) error
}

// direct writes each success at once, in the batch transaction alone.
type direct struct{}

func (direct) prior(context.Context, *work) (pipeline.Decision, bool, error) {
	return pipeline.Decision{}, false, nil
}
func (direct) ahead(_ context.Context, _ *work, dec pipeline.Decision) (pipeline.Decision, error) {
	return dec, nil
}
func (direct) queue(*batch, *work, store.Success, pipeline.Decision, store.FlightWriter) bool {
	return false
}
func (direct) flush(context.Context, *batch) error                { return nil }
func (direct) full(*batch) bool                                   { return false }
func (direct) halted(*batch) error                                { return nil }
func (direct) failed(_ context.Context, _ *work, err error) error { return err }
func (direct) seal(context.Context, *batch) error                 { return nil }

// queued queues the successes store.Batch.Queue can take. When one of them fails as the queue
// is sent, its outcome is recorded as notApplied records it, the ones after it are dropped
// (their decisions saw its effects: they are decided again in the next batch), and the batch
// ends (broken: every later write answers errHalted).
type queued struct {
	direct               // nothing is durable outside the batch transaction
	pending []pendingMsg // the messages whose successes wait in the queue, in order
	broken  bool
}

// pendingMsg is a message whose success waits in the queue.
type pendingMsg struct {
	w    *work
	note string // its decision's
}

func (q *queued) queue(r *batch, w *work, s store.Success, dec pipeline.Decision, flights store.FlightWriter) bool {
	if !r.b.Queue(w.m.ID, s, flights, w.now) {
		return false
	}
	// Recorded straight into the batch if it fails: the queue is sent by then.
	pw := *w
	pw.out = outlet{record: r.b.Record, later: r.later}.naming(w.d.msg)
	q.pending = append(q.pending, pendingMsg{w: &pw, note: dec.Note})
	r.applied(w, dec, len(dec.Events))
	return true
}

func (q *queued) full(r *batch) bool { return r.b.QueueFull() }

func (q *queued) halted(r *batch) error {
	switch {
	case r.stop.kind == abandoned:
		return r.stop.err
	case q.broken:
		return errHalted
	}
	return nil
}

// flush writes the queue (store.Batch.SendQueued) and reports its messages once the batch
// commits. A lost lease or a broken transaction ends the batch abandoned and is returned.
func (q *queued) flush(ctx context.Context, r *batch) error {
	if err := q.halted(r); err != nil || len(q.pending) == 0 {
		return err
	}
	pend := q.pending
	q.pending = nil
	res, err := r.b.SendQueued(ctx)
	for i, q := range pend[:len(res)] {
		ev, ch, w := res[i].Events, res[i].RefChanged, q.w
		s := w.subject()
		r.later(func() { r.rec.succeeded(s, ev, ch, q.note) })
	}
	if err == nil {
		return nil
	}
	if isFatal(err) {
		r.end(stop{kind: abandoned, err: err})
		return err
	}
	w := pend[len(res)].w
	_, oerr := r.notApplied(ctx, w, err)
	q.broken = true // after notApplied, whose read of a duplicate's holder goes through here
	if isFatal(oerr) {
		r.end(stop{kind: abandoned, err: oerr})
		return oerr
	}
	if oerr != nil {
		r.end(stop{kind: endBefore, at: w.m, err: oerr})
	} else {
		r.end(stop{kind: endAgain})
	}
	return errHalted
}

// notApplied records the outcome of w, whose success could not be written (err, as
// store.Batch.Succeed returns it): a duplicate is SKIPPED, a changed row or a lost
// transaction ends the batch before it, any other failure is recorded by the retry rules.
func (r *batch) notApplied(ctx context.Context, w *work, err error) (end bool, _ error) {
	switch {
	case errors.Is(err, store.ErrIdentityTaken):
		// Bound by an earlier message, committed or earlier in this batch: the reads go
		// through the batch, so they find either.
		return r.taken(ctx, w)
	case r.take == takeOne && errors.Is(err, store.ErrBatchBroken) && !errors.Is(err, store.ErrFenced):
		return false, &brokenWrite{w: w, err: err}
	case errors.Is(err, store.ErrChanged), isFatal(err):
		return false, err
	}
	return r.rec.fail(ctx, w.out, w.subject(), err)
}

// taken records w after binding its identity was refused by the unique index
// (ErrIdentityTaken): the rule is applied again, reading what is committed and bound now
// through the batch (fresh). A duplicate is SKIPPED; anything else (another message bound the
// identity between the look-up and the write, which the single writer should make
// impossible) fails with INFRA and is tried again, so a message is never skipped as the
// duplicate of a message with other content.
func (r *batch) taken(ctx context.Context, w *work) (end bool, err error) {
	s := w.subject()
	v, err := r.ids.identify(ctx, r.fresh(), w.m.ID, w.d.raw, s.msg)
	if err != nil {
		return false, err
	}
	s.identity = v.identity
	if v.holder != 0 {
		return false, r.rec.skip(ctx, w.out, s, duplicateOf(v.holder))
	}
	s.tag = s.msg.Tag()
	return r.rec.fail(ctx, w.out, s, pipeline.Errorf(pipeline.Infra, "identity %s was bound by another message while message %d was applied", v.identity, w.m.ID))
}

// fresh looks identities up through r's transaction after its queue is sent (the identities
// it binds count), past what r remembers: the look-up after the unique index refused a bind.
func (r *batch) fresh() holderOf {
	return func(ctx context.Context, identity string) (int64, bool, error) {
		if err := r.commit.flush(ctx, r); err != nil {
			return 0, false, err
		}
		return r.b.BoundTo(ctx, identity)
	}
}

// brokenWrite is the success write of w that broke a batch of one's transaction (err wraps
// store.ErrBatchBroken): after the rollback its failure is recorded in a transaction of its
// own (failOutside), so a message whose write breaks the transaction each time (a statement
// the server drops the connection for) fails, retries and goes DEAD by the retry rules
// instead of holding the queue as the head's Trouble.
type brokenWrite struct {
	w   *work
	err error
}

func (b *brokenWrite) Error() string { return b.err.Error() }
func (b *brokenWrite) Unwrap() error { return b.err }

// failOutside records the failure of a batch of one whose transaction err broke, when its
// success write broke it (brokenWrite); else it returns err.
func (p *Pump) failOutside(ctx context.Context, err error) error {
	var b *brokenWrite
	if !errors.As(err, &b) {
		return err
	}
	w := b.w
	out := outlet{record: p.db.Record, later: func(f func()) { f() }}.naming(w.d.msg)
	_, err = p.rec.fail(ctx, out, w.subject(), b.err)
	return err
}
