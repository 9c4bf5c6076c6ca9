package pump

import (
	"context"

	"msgx/internal/handler"
	"msgx/internal/pipeline"
)

// applying looks the handler of the message in hand up in reg, has it decided (next) with the
// view its mode gives, in order (ord), unless the committer holds a Decision of an earlier
// attempt, has the committer make the Decision durable ahead where it must, and writes the
// success (write: batch.succeed). A batch whose queue failed, or whose watched view the
// message read after the batch changed state, ends before it: it is decided again in the next
// batch. A failure of the message is returned as a *failure.
func applying(reg *handler.Registry, ord *order, md mode, write func(r *batch, ctx context.Context, w *work, dec pipeline.Decision) (bool, error)) middleware {
	return func(next handle) handle {
		return func(ctx context.Context, r *batch, w *work) (bool, error) {
			h, ok := reg.Lookup(w.d.tag)
			if !ok {
				return false, &failure{pipeline.Errorf(pipeline.Unsupported, "no handler for %s", w.d.tag)}
			}
			dec, found, err := r.commit.prior(ctx, w)
			if err == nil && !found {
				w.h = h
				if w.view, err = ord.view(ctx, w.m.ID, w.d.msg, md.view(r)); err != nil {
					// what the later messages set could not be read: tried again (INFRA)
				} else if _, err = next(ctx, r, w); err == nil {
					dec, err = r.commit.ahead(ctx, w, w.dec)
				} else {
					err = r.commit.failed(ctx, w, err) // an ORPHAN may be a flight Redis lost (redismark.go)
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
			return write(r, ctx, w, dec)
		}
	}
}
