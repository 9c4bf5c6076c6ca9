package pump

import (
	"context"
	"log/slog"
)

// recovered makes a panic in the rest of the path (the handler) the message's CODEC_ERROR,
// its stack logged, so it follows the retry and park rules and can be replayed once the
// handler is fixed.
func recovered(log *slog.Logger) middleware {
	return func(next handle) handle {
		return func(ctx context.Context, r *batch, w *work) (end bool, err error) {
			defer func() {
				if rec := recover(); rec != nil {
					end, err = false, panicked(log, w.m.ID, "deciding "+w.d.tag, rec)
				}
			}()
			return next(ctx, r, w)
		}
	}
}
