package pump

import (
	"fmt"
	"time"
)

// InHand is the message the pump is working on, for status and the console: a 3,000-flight
// snapshot or a large batch takes long enough for an operator to ask what the pump is doing.
type InHand struct {
	MsgID int64  `json:"msg_id"`
	Tag   string `json:"tag,omitempty"` // the type tag, once the message is decoded
	// Doing is the stage: "decoding", "deciding" (the handler), "writing" (its effects),
	// or "committing a batch of N messages".
	Doing string    `json:"doing"`
	Since time.Time `json:"since"` // when the pump took the message (or the batch its commit)
	// RunningFor is how long it has been in hand, rounded; RunningSeconds the same in seconds.
	RunningFor     string  `json:"running_for"`
	RunningSeconds float64 `json:"running_seconds"`
}

// InHand returns what the pump is working on, or nil between steps.
func (p *Pump) InHand() *InHand {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.hand == nil {
		return nil
	}
	h := *p.hand
	d := p.opt.Clock.Now().Sub(h.Since)
	h.RunningFor, h.RunningSeconds = d.Round(time.Millisecond).String(), d.Seconds()
	return &h
}

// working records that the pump works on message id at stage doing; a new id restarts the
// clock, a later stage of the same message keeps it.
func (p *Pump) working(id int64, tag, doing string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.hand == nil || p.hand.MsgID != id {
		p.hand = &InHand{MsgID: id, Since: p.opt.Clock.Now()}
	}
	if tag != "" {
		p.hand.Tag = tag
	}
	p.hand.Doing = doing
}

// committing records that a batch of n messages headed by id is being committed.
func (p *Pump) committing(id int64, n int) {
	p.working(id, "", fmt.Sprintf("committing a batch of %d messages", n))
}

// idle records that the pump finished its step.
func (p *Pump) idle() {
	p.mu.Lock()
	p.hand = nil
	p.mu.Unlock()
}
