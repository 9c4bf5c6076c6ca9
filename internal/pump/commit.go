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
	prior(ctx context.Context, p *Pump, w *work) (dec pipeline.Decision, found bool, err error)
	// ahead makes durable what of w's new Decision must be before the batch transaction (phase
	// A: its flight writes, on the authority); it returns the Decision to commit.
	ahead(ctx context.Context, w *work, dec pipeline.Decision) (pipeline.Decision, error)
	// queue queues w's success s to be written with the messages around it; false: write it
	// at once (after flush).
	queue(r *batch, w *work, s store.Success, dec pipeline.Decision, flights store.FlightWriter) bool
	// flush writes what waits in the queue: before any other write or outcome of the batch,
	// before a read that must see it, and at the batch's end.
	flush(ctx context.Context, p *Pump, r *batch) error
	// full says the queue holds as much as one round trip should carry.
	full(r *batch) bool
	// halted is the error that ends the batch before the message in hand after the queue
	// failed to be sent (errHalted, or the lost lease or broken transaction); nil if it did not.
	halted(r *batch) error
}

// direct writes each success at once, in the batch transaction alone.
type direct struct{}

func (direct) prior(context.Context, *Pump, *work) (pipeline.Decision, bool, error) {
	return pipeline.Decision{}, false, nil
}
func (direct) ahead(_ context.Context, _ *work, dec pipeline.Decision) (pipeline.Decision, error) {
	return dec, nil
}
func (direct) queue(*batch, *work, store.Success, pipeline.Decision, store.FlightWriter) bool {
	return false
}
func (direct) flush(context.Context, *Pump, *batch) error { return nil }
func (direct) full(*batch) bool                           { return false }
func (direct) halted(*batch) error                        { return nil }

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
func (q *queued) flush(ctx context.Context, p *Pump, r *batch) error {
	if err := q.halted(r); err != nil || len(q.pending) == 0 {
		return err
	}
	pend := q.pending
	q.pending = nil
	res, err := r.b.SendQueued(ctx)
	for i, q := range pend[:len(res)] {
		ev, ch, w := res[i].Events, res[i].RefChanged, q.w
		r.later(func() { p.succeeded(w.m, w.d.tag, w.d.identity, ev, ch, q.note, w.d.warnings, w.now) })
	}
	if err == nil {
		return nil
	}
	if isFatal(err) {
		r.end(stop{kind: abandoned, err: err})
		return err
	}
	w := pend[len(res)].w
	_, oerr := p.notApplied(ctx, r, w, err)
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
func (p *Pump) notApplied(ctx context.Context, r *batch, w *work, err error) (end bool, _ error) {
	d := w.d
	switch {
	case errors.Is(err, store.ErrIdentityTaken):
		// Bound by an earlier message, committed or earlier in this batch: the reads go
		// through the batch, so they find either.
		return p.taken(ctx, w.out, p.freshIn(r), w.m, d.msg, d.raw, d.warnings, w.now)
	case r.single && errors.Is(err, store.ErrBatchBroken) && !errors.Is(err, store.ErrFenced):
		return false, &brokenWrite{w: w, err: err}
	case errors.Is(err, store.ErrChanged), isFatal(err):
		return false, err
	}
	return p.fail(ctx, w.out, w.m, err, d.tag, d.identity, d.warnings, w.now)
}

// freshIn looks identities up through batch r's transaction after its queue is sent (the
// identities it binds count), past what r remembers: the look-up after the unique index
// refused a bind.
func (p *Pump) freshIn(r *batch) holderOf {
	return func(ctx context.Context, identity string) (int64, bool, error) {
		if err := r.commit.flush(ctx, p, r); err != nil {
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
	w, d := b.w, b.w.d
	out := outlet{record: p.db.Record, later: func(f func()) { f() }}.naming(d.msg)
	_, err = p.fail(ctx, out, w.m, b.err, d.tag, d.identity, d.warnings, w.now)
	return err
}
