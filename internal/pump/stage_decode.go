package pump

import (
	"context"
	"time"

	"msgx/internal/pipeline"
)

// rawReader reads the raw text of a message (store.Processing.Raw): ok is false when it is
// missing from CMINMSGS and CMINMSGS_HST.
type rawReader interface {
	Raw(ctx context.Context, id int64) (raw string, ok bool, err error)
}

// decoding decodes the message in hand at its turn, unless its mode decoded it ahead (w.d),
// reading its raw text first when it did not come with the batch read (too long: it cannot
// have changed, only the gateway and the inbox write raw text, once). A message whose raw text
// is missing is recorded DEAD MALFORMED through rec and goes no further; a failed read of it
// ends the batch before it. A message's outcomes from here on name the flights it names.
func decoding(dec decoder, raw rawReader, rec *outcomes, st *status) middleware {
	return func(next handle) handle {
		return func(ctx context.Context, r *batch, w *work) (bool, error) {
			if w.d == nil {
				m := w.due
				text, ok := m.Raw, m.RawOK
				if m.RawLater {
					var err error
					if text, ok, err = raw.Raw(ctx, m.ID); err != nil {
						return false, err
					}
				}
				if !ok {
					return false, rec.dead(ctx, w.out, stored(w.m, w.now), death{class: pipeline.Malformed,
						last: "raw message missing from CMINMSGS and CMINMSGS_HST", attempts: m.Attempts, first: time.Time{}})
				}
				st.working(m.ID, "", "decoding")
				w.d = dec.text(m.ID, text)
			}
			w.out = w.out.naming(w.d.msg)
			return next(ctx, r, w)
		}
	}
}
