package pump

import (
	"context"

	"msgx/internal/handler"
)

// classified records a failure of the message in hand by the retry rules (outcomes.fail): its
// decoding's, or one the rest of the path returns as a *failure; or SKIPPED when its handler
// said to skip it. Any other error of the rest of the path is the batch's and passes through.
func classified(rec *outcomes) middleware {
	return func(next handle) handle {
		return func(ctx context.Context, r *batch, w *work) (bool, error) {
			cause := w.d.err
			if cause == nil {
				end, err := next(ctx, r, w)
				f, ok := err.(*failure)
				if !ok {
					return end, err
				}
				if s, ok := handler.AsSkip(f.err); ok {
					return false, rec.skip(ctx, w.out, w.subject(), s.Reason)
				}
				cause = f.err
			}
			return rec.fail(ctx, w.out, w.subject(), cause)
		}
	}
}
