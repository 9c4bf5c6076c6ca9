package pump

import "context"

// traced shows the message in hand as being decided in the pump's status (InHand).
func traced(st *status) middleware {
	return func(next handle) handle {
		return func(ctx context.Context, r *batch, w *work) (bool, error) {
			st.working(w.m.ID, w.d.tag, "deciding")
			return next(ctx, r, w)
		}
	}
}
