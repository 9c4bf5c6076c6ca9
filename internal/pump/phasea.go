package pump

// Phase A: Redis holds the authoritative flight picture and is written first. For a message
// whose Decision writes flights, the pump runs one script on the authority (Options.Authority,
// package redisflight) that checks the message's marker, applies the flight writes under a
// version compare-and-set and records the marker (the Decision, gob-encoded), all atomically;
// then the SQL transaction commits the events, the FLIGHT_STATE mirror, the back-fill and
// SUCCEEDED as in phase B. A crash or a failed SQL commit between the two is repaired by the
// retry: it finds the marker before deciding, applies nothing again, and commits the very
// Decision recorded (the same events, not those a handler would derive from the flights as
// they are now). A Redis failure is INFRA for the message: it stays FAILED and the queue
// waits; nothing is half-applied, since the script is atomic and the SQL transaction has not
// begun. Phase A processes one message per transaction (no batches): the marker is what
// makes the two writes one, and a batch would hold markers of messages its rollback undoes.

import (
	"bytes"
	"context"
	"encoding/gob"
	"fmt"
	"time"

	"msgx/internal/handler"
	"msgx/internal/pipeline"
	"msgx/internal/sis"
)

// Authority is the authoritative flight store of phase A.
type Authority interface {
	// Marker returns the marker message msgID recorded, if any.
	Marker(ctx context.Context, msgID int64) ([]byte, bool, error)
	// ApplyMessage applies writes and records marker atomically, unless the message's marker
	// is there, which it returns with found=true, writing nothing.
	ApplyMessage(ctx context.Context, msgID int64, writes []pipeline.FlightWrite, marker []byte, now time.Time) (stored []byte, found bool, err error)
}

// decideAuthoritative is decide for phase A: the Decision a marker recorded, or a new one
// whose flight writes are applied to the authority before the SQL transaction.
func (p *Pump) decideAuthoritative(ctx context.Context, id int64, h handler.Handler, msg *sis.Message, now time.Time) (pipeline.Decision, error) {
	a := p.opt.Authority
	if b, found, err := a.Marker(ctx, id); err != nil {
		return pipeline.Decision{}, err
	} else if found {
		p.log.Info("flights already applied to the authoritative store by an earlier attempt; committing the decision recorded", "msg_id", id)
		return decodeMarker(id, b)
	}
	dec, err := p.decide(ctx, id, h, msg, p.opt.View)
	if err != nil || len(dec.Flights) == 0 {
		return dec, err
	}
	b, err := encodeMarker(dec)
	if err != nil {
		return pipeline.Decision{}, pipeline.Wrap(pipeline.CodecError, fmt.Errorf("marker of message %d: %w", id, err))
	}
	prev, found, err := a.ApplyMessage(ctx, id, dec.Flights, b, now)
	if err != nil {
		return pipeline.Decision{}, err
	}
	if found {
		return decodeMarker(id, prev)
	}
	if p.opt.AfterAuthority != nil {
		p.opt.AfterAuthority(id)
	}
	return dec, nil
}

func encodeMarker(dec pipeline.Decision) ([]byte, error) {
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(dec); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func decodeMarker(id int64, b []byte) (pipeline.Decision, error) {
	var dec pipeline.Decision
	if err := gob.NewDecoder(bytes.NewReader(b)).Decode(&dec); err != nil {
		return pipeline.Decision{}, pipeline.Wrap(pipeline.CodecError, fmt.Errorf("marker of message %d unreadable: %w", id, err))
	}
	return dec, nil
}
