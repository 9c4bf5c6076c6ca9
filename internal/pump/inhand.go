package pump

import "time"

// InHand is the message the pump is working on, for status and the console: a 3,000-flight
// snapshot or a large batch takes long enough for an operator to ask what the pump is doing.
type InHand struct {
	MsgID int64
	Tag   string // the type tag, once the message is decoded
	// Doing is the stage: "decoding", "deciding" (the handler), "writing" (its effects),
	// or "committing a batch of N messages".
	Doing string
	Since time.Time // when the pump took the message (or the batch its commit)
	// RunningFor is how long it has been in hand, rounded; RunningSeconds the same in seconds.
	RunningFor     string
	RunningSeconds float64
}

// InHand returns what the pump is working on, or nil between steps.
func (p *Pump) InHand() *InHand { return p.status.inHand() }
