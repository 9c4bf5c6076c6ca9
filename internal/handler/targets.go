package handler

import "msgx/internal/event"

// Targets lists every delivery target the handlers emit events to; `msgx serve` refuses to
// start when config defines targets but not all of these.
var Targets = event.Families
