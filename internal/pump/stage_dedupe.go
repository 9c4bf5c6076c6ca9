package pump

import "context"

// deduplicated applies the identity rule (identity.go) to the message in hand, looking
// holders up in its batch: a duplicate is SKIPPED, a message holding its own identity
// (applied, its commit's answer lost) is SUCCEEDED, and neither goes on; the others go on with
// the identity they bind.
func deduplicated(ids *identities, rec *outcomes) middleware {
	return func(next handle) handle {
		return func(ctx context.Context, r *batch, w *work) (bool, error) {
			d := w.d
			v, err := ids.identify(ctx, r.reads.boundIn(r), w.m.ID, d.raw, d.msg)
			d.identity = v.identity
			switch {
			case err != nil:
				return false, err
			case v.holder != 0:
				return false, rec.skip(ctx, w.out, w.subject(), duplicateOf(v.holder))
			case v.applied:
				return false, rec.alreadyApplied(ctx, w.out, w.subject())
			}
			return next(ctx, r, w)
		}
	}
}
