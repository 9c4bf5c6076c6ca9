package pump

// One message's way through a batch: decode, identity, decide, outcome (the message path,
// stages.go). Each stage records the message's outcome itself when it ends there (outlet), so
// what a message gives does not depend on the batch it is in: a batch of one is the
// one-by-one pump.

import (
	"context"
	"slices"
	"time"

	"msgx/internal/handler"
	"msgx/internal/pipeline"
	"msgx/internal/store"
)

// work is a message in the batch: what its stages (stages.go) take and leave.
type work struct {
	due *store.Due
	m   *store.Message // &due.Message
	d   *decoded       // nil until the decoding stage decoded it, if the mode did not ahead
	out outlet         // records into the batch, after the successes queued before it
	now time.Time

	h    handler.Handler   // its handler, once looked up
	view handler.View      // the view its handler reads
	dec  pipeline.Decision // what its handler decided
}

// subject is w as its outcome is recorded.
func (w *work) subject() subject {
	return subject{m: w.m, msg: w.d.msg, tag: w.d.tag, identity: w.d.identity, warnings: w.d.warnings, now: w.now}
}

// batchOne takes one message into batch r along the message path (stages.go: decoded, unless
// d holds it decoded ahead, its identity bound or found a duplicate, decided, its outcome
// written). end says the batch ends after it (it was left FAILED); an error says nothing of
// it is in the batch, which ends before it.
func (p *Pump) batchOne(ctx context.Context, r *batch, m *store.Due, d *decoded, now time.Time) (end bool, err error) {
	// An outcome recorded in the batch goes after the queued successes before it.
	out := outlet{record: func(ctx context.Context, id int64, o store.Outcome, now time.Time) error {
		if err := r.commit.flush(ctx, r); err != nil {
			return err
		}
		return r.b.Record(ctx, id, o, now)
	}, later: r.later}
	return p.path(ctx, r, &work{due: m, m: &m.Message, d: d, out: out, now: now})
}

// succeed writes w's success (dec) into batch r: queued, or at once under its savepoint after
// the queue is sent (committer).
func (r *batch) succeed(ctx context.Context, w *work, dec pipeline.Decision) (end bool, err error) {
	d, flights := w.d, r.reads.flights
	r.status.working(w.m.ID, d.tag, "writing")
	d.warnings = append(slices.Clip(d.warnings), dec.Warnings...)
	s := success(w.subject(), dec)
	if r.commit.queue(r, w, s, dec, flights) {
		return false, nil // written with the messages around it; reported once it is
	}
	if err := r.commit.flush(ctx, r); err != nil {
		return false, err
	}
	events, changed, err := r.b.Succeed(ctx, w.m.ID, s, flights, w.now)
	if err != nil {
		r.reads.forget() // its flight writes, if any, were rolled back
		return r.notApplied(ctx, w, err)
	}
	r.applied(w, dec, events)
	w.out.later(func() { r.rec.succeeded(w.subject(), events, changed, dec.Note) })
	return false, nil
}

// applied notes in r what w's success changed.
func (r *batch) applied(w *work, dec pipeline.Decision, events int) {
	if len(dec.Ref) > 0 || len(dec.Flights) > 0 {
		r.changed = true
	}
	r.events += events
	if r.reads.bound != nil {
		r.reads.bound[store.IdentityKey(w.d.identity)] = w.m.ID
	}
}
