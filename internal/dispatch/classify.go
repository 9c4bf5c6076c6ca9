package dispatch

import "msgx/internal/pipeline"

// deliveryClass is the class a failed send is judged by. A delivery fails in one of two
// ways only: the receiver or the sink refused this event for good (REJECTED: DEAD at once,
// replayable once the cause is mended), or anything else (INFRA: the head stays PENDING and
// is retried with capped backoff until the delivery head deadline, so an outage of the sink
// delays events but never kills them).
//
// A sink error carrying a class of the input side that means "these bytes cannot be
// delivered" (MALFORMED, CODEC_ERROR, UNSUPPORTED: a mapping or encoding error of the event
// itself) is REJECTED: under the delivery policy, which parks nothing, CODEC_ERROR would
// otherwise be retried for the whole head deadline. Every other class, and an error that
// carries none, is INFRA.
func deliveryClass(err error) pipeline.ErrorClass {
	switch pipeline.ClassOf(err) {
	case pipeline.Rejected, pipeline.Malformed, pipeline.CodecError, pipeline.Unsupported:
		return pipeline.Rejected
	}
	return pipeline.Infra
}
