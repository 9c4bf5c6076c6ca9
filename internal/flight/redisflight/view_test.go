package redisflight

import "msgx/internal/handler"

// The views serve the handlers' batched reads; this package does not import the handlers, so
// the compiler checks it here.
var (
	_ handler.FlightBatch     = batchView{}
	_ handler.CodeShareLookup = batchView{}
	_ handler.FlightBatch     = view{}
	_ handler.CodeShareLookup = view{}
)
