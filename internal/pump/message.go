package pump

// One message's way through a batch: decode, identity, decide, outcome. Each stage records
// the message's outcome itself when it ends there (outlet), so what a message gives does not
// depend on the batch it is in: a batch of one is the one-by-one pump.

import (
	"context"
	"fmt"
	"runtime/debug"
	"slices"
	"time"

	"msgx/internal/handler"
	"msgx/internal/pipeline"
	"msgx/internal/sis"
	"msgx/internal/store"
)

// decoded is a message of the run decoded ahead of the decisions (to learn which flights the
// batch reads); nil for one whose raw text is read when its turn comes.
type decoded struct {
	raw           string // the text decoded (the identity's content digest reads it)
	msg           *sis.Message
	tag, identity string
	warnings      []string
	err           error
}

// work is a message in the batch: what its stages (stages.go) take and leave.
type work struct {
	m   *store.Message
	d   *decoded
	out outlet // records into the batch, after the successes queued before it
	now time.Time

	h    handler.Handler   // its handler, once looked up
	view handler.View      // the view its handler reads
	dec  pipeline.Decision // what its handler decided
}

// rawAhead bounds the raw text decodeRun reads for the messages whose text did not come with
// the batch read (store.DueRawLimit): a 3,000-flight schedule is about 9 MB, so the first one
// or two such messages of a run are decoded before the batch transaction, the rest at their
// turn.
const rawAhead = 16 << 20

// decodeRun decodes the messages of run before the batch transaction opens (decoding needs no
// database, and on SQLite the transaction holds the write lock from its start: a 3,000-flight
// schedule takes a few hundred milliseconds to decode). A message whose text did not come
// with the batch read has it read first, while rawAhead allows; one that is left out, or
// whose read fails or finds no text, is left nil: decodeDue reads and decodes it at its turn,
// where a failure is handled.
func (p *Pump) decodeRun(ctx context.Context, run []*store.Due) []*decoded {
	out := make([]*decoded, len(run))
	if p.opt.Authority != nil {
		return out // phase A decodes each message at its turn
	}
	budget := rawAhead
	for i, m := range run {
		raw, ok := m.Raw, m.RawOK && !m.RawLater
		if m.RawLater && budget > 0 {
			var err error
			raw, ok, err = p.db.Raw(ctx, m.ID)
			ok = ok && err == nil
			budget -= len(raw)
		}
		if ok {
			out[i] = p.decodeText(m.ID, raw)
		}
	}
	return out
}

// decodeDue decodes m at its turn in the batch, reading its raw text first when it did not
// come with the batch read (too long: it cannot have changed, only the gateway and the inbox
// write raw text, once). A nil result says m is done with: err is the raw read's failure (the
// batch ends before m), or what recording m DEAD MALFORMED through out returned when its raw
// text is missing.
func (p *Pump) decodeDue(ctx context.Context, out outlet, m *store.Due, now time.Time) (*decoded, error) {
	raw, ok := m.Raw, m.RawOK
	if m.RawLater {
		var err error
		if raw, ok, err = p.db.Raw(ctx, m.ID); err != nil {
			return nil, err
		}
	}
	if !ok {
		return nil, p.recordDeadIn(ctx, out, &m.Message, pipeline.Malformed, "raw message missing from CMINMSGS and CMINMSGS_HST", m.Attempts, time.Time{}, now)
	}
	p.working(m.ID, "", "decoding")
	return p.decodeText(m.ID, raw), nil
}

// decodeText decodes raw, the text of message id, with, when the envelope was usable, its
// type tag, identity and the decoder's warnings, which a failure is recorded with too.
func (p *Pump) decodeText(id int64, raw string) *decoded {
	d := &decoded{raw: raw}
	d.msg, d.err = p.decode(id, raw)
	if msg := d.msg; msg != nil {
		d.tag, d.warnings = msg.Tag(), msg.Warnings
		d.identity = p.opt.Identity.Key(msg.Meta.SNDR, msg.Meta.TYPE, msg.Meta.STYP, msg.Meta.SEQN, msg.Meta.Day)
	}
	return d
}

// batchOne takes one message into batch r: decoded (d, or now when d is nil), then along the
// message path (stages.go: its identity bound or found a duplicate, decided, its outcome
// written). end says the batch ends after it (it was left FAILED); an error says nothing of
// it is in the batch, which ends before it.
func (p *Pump) batchOne(ctx context.Context, r *batch, m *store.Due, d *decoded, now time.Time) (end bool, err error) {
	// An outcome recorded in the batch goes after the queued successes before it.
	out := outlet{record: func(ctx context.Context, id int64, o store.Outcome, now time.Time) error {
		if err := r.commit.flush(ctx, p, r); err != nil {
			return err
		}
		return r.b.Record(ctx, id, o, now)
	}, later: r.later}
	if d == nil {
		if d, err = p.decodeDue(ctx, out, m, now); d == nil {
			return false, err
		}
	}
	return p.path(ctx, r, &work{m: &m.Message, d: d, out: out.naming(d.msg), now: now})
}

// succeed writes w's success (dec) into the batch: queued, or at once under its savepoint
// after the queue is sent (committer).
func (p *Pump) succeed(ctx context.Context, r *batch, w *work, dec pipeline.Decision) (end bool, err error) {
	d, flights := w.d, r.reads.flights
	dec.Events = p.withCopies(dec.Events)
	p.working(w.m.ID, d.tag, "writing")
	d.warnings = append(slices.Clip(d.warnings), dec.Warnings...)
	s := success(w.m, d.msg, d.tag, d.identity, d.warnings, dec)
	if r.commit.queue(r, w, s, dec, flights) {
		return false, nil // written with the messages around it; reported once it is
	}
	if err := r.commit.flush(ctx, p, r); err != nil {
		return false, err
	}
	events, changed, err := r.b.Succeed(ctx, w.m.ID, s, flights, w.now)
	if err != nil {
		r.reads.forget() // its flight writes, if any, were rolled back
		return p.notApplied(ctx, r, w, err)
	}
	r.applied(w, dec, events)
	w.out.later(func() { p.succeeded(w.m, d.tag, d.identity, events, changed, dec.Note, d.warnings, w.now) })
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

// decode decodes raw; a panic in the decoder is the message's CODEC_ERROR, not the process's
// end (the stack goes to the log), so it follows the retry and poison path and can be
// replayed once the decoder is fixed.
func (p *Pump) decode(id int64, raw string) (msg *sis.Message, err error) {
	defer func() {
		if r := recover(); r != nil {
			msg, err = nil, p.panicked(id, "decoding", r)
		}
	}()
	return sis.Decode([]byte(raw), p.opt.SIS)
}

func (p *Pump) panicked(id int64, what string, r any) error {
	p.log.Error("panic while "+what+"; the message fails with CODEC_ERROR", "msg_id", id, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
	return pipeline.Errorf(pipeline.CodecError, "panic while %s: %v", what, r)
}
