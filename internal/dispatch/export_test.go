package dispatch

import "time"

// SetTimer replaces the timer the loops of d sleep on, so a test decides when a wait ends
// and sees how long each loop asked to wait.
func SetTimer(d *Dispatcher, f func(name string, wait time.Duration) (<-chan time.Time, func())) {
	d.timer = f
}

// DeliveryClass exposes deliveryClass to the table test.
var DeliveryClass = deliveryClass

// CommitAlone makes every step of d commit its outcome in a transaction of its own, as before
// the steps of a round shared one (the benchmark compares the two).
func CommitAlone(d *Dispatcher) { d.commits.alone = true }

// Envelopes returns the record value of e (the fast path when it applies) and encoding/json's
// Envelope of it, for the test that they are the same bytes.
func Envelopes(e *Event) (fast, reference []byte, err error) {
	rec, err := record(e)
	if err != nil {
		return nil, nil, err
	}
	payload, _ := compactJSON(e.Raw)
	reference, err = encodeEnvelope(e, payload)
	return rec.Value, reference, err
}
