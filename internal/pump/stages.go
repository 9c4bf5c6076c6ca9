package pump

// The message path: a message's way through a batch as a handler func wrapped by middlewares,
// one concern each, in Watermill's manner, each in its own file (stage_*.go) with its own test.
// The handler proper is the message's handler deciding (decided); around it, from the outside
// in:
//
//	decoding      the message is decoded at its turn, unless its mode decoded it ahead; a
//	              message whose raw text is missing is DEAD MALFORMED (stage_decode.go)
//	classified    a failure of the message (its decoding, its decision, no handler) is
//	              recorded by the retry rules: FAILED with backoff, parked or DEAD; SKIPPED
//	              when the handler says so (stage_classify.go)
//	traced        the pump's status says which message it is deciding (InHand;
//	              stage_trace.go)
//	deduplicated  the identity rule (identity.go): a duplicate is SKIPPED, a message whose
//	              commit's answer was lost is SUCCEEDED, neither is decided again
//	              (stage_dedupe.go)
//	applying      the handler is looked up, the committer gives a Decision an earlier attempt
//	              made durable (phase A's marker) or makes a new one durable ahead (phase A's
//	              script), and the success is written (commit.go; stage_apply.go)
//	recovered     a panic in the handler is the message's CODEC_ERROR, never the process's end
//	              nor a stall (stage_recover.go)
//
// The path is built once (New). The metrics, the log lines and the recent list of an outcome
// are not a middleware: they are reported once the batch that wrote the outcome is durable
// (outcome.go), which is after the path returns, and a queued success can still fail when its
// queue is sent (commit.go).

import "context"

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
