package pump

// Phase A in batches. With an Authority and a ViewIn (serve sets both in phase A) the pump
// batches as in phase B: one SQL transaction for a run of due messages, a savepoint per
// message. What differs is each message's step, batchOneAuthoritative:
//
//  1. a duplicate identity (bound by a committed message, or by one earlier in this batch:
//     the read goes through the batch transaction) is SKIPPED before anything is decided, as
//     one by one, so a duplicate's changes never reach Redis;
//  2. the message's marker, read for the whole batch in one round trip when the batch began,
//     gives the Decision of an earlier attempt; else the handler decides on Redis as it is
//     now (every message before it in the batch already applied there), and the Decision's
//     flight writes go to Redis with the marker in the message's one script;
//  3. its SQL effects (events, FLIGHT_STATE mirror, back-fill, SUCCEEDED) go into the batch
//     under its savepoint.
//
// So each decision sees the previous ones' effects (read from Redis, or from the batch's
// flight store, Options.BatchFlights, which remembers what the batch read and its scripts
// wrote; reference data read through the batch transaction), and Redis is always ahead of
// SQL by at most the batch. A
// crash, a lost lease, a batch rolled back (deferred writes refused, the database gone) all
// leave Redis with the markers of messages whose SQL side is not committed: their retry, one
// by one or in the next batch, finds each marker, writes nothing to Redis again and commits the
// recorded Decision (the same events), exactly the repair of a crash one by one. A message
// that fails (INFRA when Redis does not answer, a decision's error) is recorded as one by one
// (class, retry or park); a FAILED one ends the batch after its record, and the messages
// before it commit. The scripts of several messages are not pipelined: the next message's
// decision must read the previous one's effects.

import (
	"context"
	"errors"
	"time"

	"msgx/internal/handler"
	"msgx/internal/pipeline"
	"msgx/internal/store"
)

// batchOneAuthoritative is batchOne in phase A (see above); its results mean what batchOne's
// do.
func (p *Pump) batchOneAuthoritative(ctx context.Context, r *batch, m *store.Due, now time.Time) (end bool, err error) {
	out := outlet{record: r.b.Record, later: func(f func()) { r.reports = append(r.reports, f) }}
	msg0 := &m.Message
	d, err := p.decodeDue(ctx, out, m, now)
	if d == nil {
		return false, err
	}
	msg, tag, identity, warnings, err := d.msg, d.tag, d.identity, d.warnings, d.err
	out = out.naming(msg)
	if err != nil {
		return p.fail(ctx, out, msg0, err, tag, identity, warnings, now)
	}
	p.working(m.ID, tag, "deciding")
	v, err := p.identify(ctx, p.boundIn(r), m.ID, d.raw, msg)
	identity = v.identity
	switch {
	case err != nil:
		return false, err
	case v.holder != 0:
		return false, p.skip(ctx, out, msg0, msg, identity, duplicateOf(v.holder), now)
	case v.applied:
		return false, p.alreadyApplied(ctx, out, msg0, tag, identity, warnings, now)
	}
	h, ok := p.reg.Lookup(tag)
	if !ok {
		return p.fail(ctx, out, msg0, pipeline.Errorf(pipeline.Unsupported, "no handler for %s", tag), tag, identity, warnings, now)
	}
	view, apply := p.opt.ViewIn(r.b.Tx()), applyFunc(nil)
	if r.flights != nil {
		view, apply = r.flights.View(view), r.flights.ApplyUnmarked
	}
	dec, err := p.decideAuthoritative(ctx, m.ID, h, msg, view, r.markers, apply, now)
	if err != nil {
		if s, ok := handler.AsSkip(err); ok {
			return false, p.skip(ctx, out, msg0, msg, identity, s.Reason, now)
		}
		return p.fail(ctx, out, msg0, err, tag, identity, warnings, now)
	}
	dec.Events = p.withCopies(dec.Events)
	p.working(m.ID, tag, "writing")
	warnings = append(warnings[:len(warnings):len(warnings)], dec.Warnings...)
	events, changed, err := r.b.Succeed(ctx, m.ID, success(msg0, msg, tag, identity, warnings, dec), p.opt.Flights, now)
	switch {
	case errors.Is(err, store.ErrIdentityTaken):
		return p.taken(ctx, out, p.freshIn(r), msg0, msg, d.raw, warnings, now)
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
