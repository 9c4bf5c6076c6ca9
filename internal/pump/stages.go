package pump

// The message path: a decoded message's way through a batch as a handler func wrapped by
// middlewares, one concern each, in Watermill's manner. The handler proper is the message's
// handler deciding (decided); around it, from the outside in:
//
//	classified    a failure of the message (its decoding, its decision, no handler) is
//	              recorded by the retry rules: FAILED with backoff, parked or DEAD; SKIPPED
//	              when the handler says so
//	traced        the pump's status says which message it is deciding (InHand)
//	deduplicated  the identity rule (identity.go): a duplicate is SKIPPED, a message whose
//	              commit's answer was lost is SUCCEEDED, neither is decided again
//	applying      the handler is looked up, the committer gives a Decision an earlier attempt
//	              made durable (phase A's marker) or makes a new one durable ahead (phase A's
//	              script), and the success is written (commit.go)
//	recovered     a panic in the handler is the message's CODEC_ERROR, never the process's end
//	              nor a stall
//
// The path is built once (New); a message that succeeds allocates nothing for it. The
// metrics, the log lines and the recent list of an outcome are not a middleware: they are
// reported once the batch that wrote the outcome is durable (outcome.go), which is after the
// path returns, and a queued success can still fail when its queue is sent (commit.go).

import (
	"context"

	"msgx/internal/handler"
	"msgx/internal/pipeline"
)

// handle takes message w of batch r along (the rest of) the message path: it records w's
// outcome through w.out and says whether the batch ends after it (w left FAILED), or returns
// the error that ends the batch before w. A failure of w itself, for classified to record, is
// returned as a *failure.
type handle func(ctx context.Context, r *batch, w *work) (end bool, err error)

// middleware wraps a handle with one concern of the message path.
type middleware func(next handle) handle

// chain returns h wrapped by mws, the first outermost.
func chain(h handle, mws ...middleware) handle {
	for i := len(mws) - 1; i >= 0; i-- {
		h = mws[i](h)
	}
	return h
}

// messagePath is the message path of p (see above).
func (p *Pump) messagePath() handle {
	return chain(decided, p.classified, p.traced, p.deduplicated, p.applying, p.recovered)
}

// failure is a failure of the message in hand, as opposed to one of the batch.
type failure struct{ err error }

func (f *failure) Error() string { return f.err.Error() }
func (f *failure) Unwrap() error { return f.err }

// decided asks w's handler for its Decision, with w's view.
func decided(ctx context.Context, _ *batch, w *work) (bool, error) {
	var err error
	w.dec, err = w.h.Decide(ctx, w.view, w.d.msg)
	return false, err
}

// classified records a failure of the message by the retry rules (fail), or SKIPPED when its
// handler said to skip it.
func (p *Pump) classified(next handle) handle {
	return func(ctx context.Context, r *batch, w *work) (bool, error) {
		d := w.d
		cause := d.err
		if cause == nil {
			end, err := next(ctx, r, w)
			f, ok := err.(*failure)
			if !ok {
				return end, err
			}
			if s, ok := handler.AsSkip(f.err); ok {
				return false, p.skip(ctx, w.out, w.m, d.msg, d.identity, s.Reason, w.now)
			}
			cause = f.err
		}
		return p.fail(ctx, w.out, w.m, cause, d.tag, d.identity, d.warnings, w.now)
	}
}

// traced shows the message as being decided in the pump's status.
func (p *Pump) traced(next handle) handle {
	return func(ctx context.Context, r *batch, w *work) (bool, error) {
		p.working(w.m.ID, w.d.tag, "deciding")
		return next(ctx, r, w)
	}
}

// deduplicated applies the identity rule (identity.go): a duplicate is SKIPPED, a message
// holding its own identity (applied, its commit's answer lost) is SUCCEEDED, and neither goes
// on; the others go on with the identity they bind.
func (p *Pump) deduplicated(next handle) handle {
	return func(ctx context.Context, r *batch, w *work) (bool, error) { return p.dedupe(ctx, r, w, next) }
}

// dedupe is deduplicated's work, a method of its own: in the closure, the look-up it hands
// identify would be allocated per message.
func (p *Pump) dedupe(ctx context.Context, r *batch, w *work, next handle) (bool, error) {
	d := w.d
	v, err := p.identify(ctx, r.reads.boundIn(r), w.m.ID, d.raw, d.msg)
	d.identity = v.identity
	switch {
	case err != nil:
		return false, err
	case v.holder != 0:
		return false, p.skip(ctx, w.out, w.m, d.msg, d.identity, duplicateOf(v.holder), w.now)
	case v.applied:
		return false, p.alreadyApplied(ctx, w.out, w.m, d.tag, d.identity, d.warnings, w.now)
	}
	return next(ctx, r, w)
}

// applying looks w's handler up, has w decided (next) unless the committer holds a Decision of
// an earlier attempt, has the committer make it durable ahead where it must, and writes w's
// success. A batch whose queue failed, or whose watched view w read after the batch changed
// state, ends before w, which is decided again in the next batch.
func (p *Pump) applying(next handle) handle {
	return func(ctx context.Context, r *batch, w *work) (bool, error) {
		h, ok := p.reg.Lookup(w.d.tag)
		if !ok {
			return false, &failure{pipeline.Errorf(pipeline.Unsupported, "no handler for %s", w.d.tag)}
		}
		dec, found, err := r.commit.prior(ctx, p, w)
		if err == nil && !found {
			w.h = h
			if w.view, err = p.viewInOrder(ctx, w, r.reads.viewOf(&p.opt, r.b.Tx())); err != nil {
				// what the later messages set could not be read: tried again (INFRA)
			} else if _, err = next(ctx, r, w); err == nil {
				dec, err = r.commit.ahead(ctx, w, w.dec)
			} else {
				err = p.failedOnRedis(ctx, err) // an ORPHAN may be a flight Redis lost (redismark.go)
			}
		}
		if herr := r.commit.halted(r); herr != nil {
			return false, herr // a read sent the queue, which failed: decided again next batch
		}
		if r.reads.watched != nil && r.reads.watched.read && r.changed {
			return false, errDecideAgain
		}
		if err != nil {
			return false, &failure{err}
		}
		return p.succeed(ctx, r, w, dec)
	}
}

// recovered makes a panic in the handler the message's CODEC_ERROR (the stack goes to the
// log), so it follows the retry and park rules and can be replayed once the handler is fixed.
func (p *Pump) recovered(next handle) handle {
	return func(ctx context.Context, r *batch, w *work) (end bool, err error) {
		defer func() {
			if rec := recover(); rec != nil {
				end, err = false, p.panicked(w.m.ID, "deciding "+w.d.tag, rec)
			}
		}()
		return next(ctx, r, w)
	}
}
