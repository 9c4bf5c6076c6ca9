package pump

// Phase A's guard against a single flight Redis lost (docs/redis-flights.md, "A Redis that lost
// data"): a stray DEL or an eviction of one flight's hash leaves the marks agreeing, and the
// next FLOP for the flight would find it absent and be parked ORPHAN. Only on that path (a
// decision that failed ORPHAN, or a FLOP applied with records left out) does the pump ask the
// guard (FlightLoss) whether the mirror holds a flight Redis lacks; if so it stops the way a
// lost mark stops it (the same halt, status, /readyz and msgx_pump_halted), and the message
// is not recorded: the batch ends before it, and it stays PENDING at the head until
// REDIS_RESTORE brings the flight back and the guard's check lets the pump go on.

import (
	"context"
	"database/sql"
	"fmt"

	"msgx/internal/pipeline"
	"msgx/internal/sis"
)

// FlightLoss is the part of phase A's guard (redisflight.Guard) that catches a single flight
// Redis lost; a Marks that has it is asked on the ORPHAN path only.
type FlightLoss interface {
	// LostFlights is given flids, the flights of a message whose decision found one of them
	// absent, and tx, the batch transaction (whose reads see the mirror writes of the
	// messages before in the batch). halt names a flight Redis lacks and the mirror holds
	// ("" when there is none: an ORPHAN is an ORPHAN); the guard's Check goes on reporting it
	// until Redis holds the flight again.
	LostFlights(ctx context.Context, tx *sql.Tx, flids []int64) (halt string, err error)
}

// errLostFlight ends a batch before a message that names a flight Redis lost: the message is
// not recorded, and is decided again once the pump goes on.
var errLostFlight = fmt.Errorf("a flight the message names is lost from Redis: %w", errDecideAgain)

// lostFlight asks the guard whether w, the message in hand of c's phase A batch, names a
// flight Redis lost. If it does, the pump stops at once (the halt a check would record) and c ends
// the batch before w (halted); the error returned then is also w's INFRA failure, should it
// be recorded. A look-up that fails is w's INFRA failure: it is retried, never parked on a
// doubt.
func (c *authoritative) lostFlight(ctx context.Context, w *work) error {
	if c.marks.marks == nil || w == nil || w.d == nil {
		return nil
	}
	fl, ok := c.marks.marks.(FlightLoss)
	if !ok {
		return nil
	}
	flids := flightsOf(w.d.msg)
	if len(flids) == 0 {
		return nil
	}
	halt, err := fl.LostFlights(ctx, c.tx, flids)
	if err != nil {
		return pipeline.Wrap(pipeline.Infra, fmt.Errorf("message %d: look up the flights Redis lacks in the mirror: %w", w.m.ID, err))
	}
	if halt == "" {
		return nil
	}
	c.marks.note(halt, nil, w.now)
	c.lost = fmt.Errorf("message %d: %s: %w", w.m.ID, halt, errLostFlight)
	return pipeline.Wrap(pipeline.Infra, c.lost)
}

// skippedRecords says whether dec, a FLOP's decision, may have left records out for flights it
// found absent (it has warnings): only then are its flights looked up.
func skippedRecords(w *work, dec pipeline.Decision) bool {
	if len(dec.Warnings) == 0 || w.d == nil || w.d.msg == nil {
		return false
	}
	_, ok := w.d.msg.Body.(*sis.FlopBody)
	return ok
}
