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
