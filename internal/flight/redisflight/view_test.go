package redisflight

import "msgx/internal/pipeline"

// The views serve the handlers' reads, the batched ones (FlightsOf, CodeSharesOf) included;
// nothing else in this package asks for a pipeline.View, so the compiler checks it here.
var (
	_ pipeline.View = batchView{}
	_ pipeline.View = view{}
)
