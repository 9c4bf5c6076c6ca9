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
// waits; nothing is half-applied, since the script is atomic and the message's SQL step has
// not begun. With Options.ViewIn the pump does this in batches, a script per message and one
// SQL transaction for the run; without, one message per transaction (a batch of one).
//
// The mode (phaseA) reads the run's markers before its batch transaction, leaves each message
// to be decoded at its turn, and gives each handler a view of its own. In a batch, each
// message's path (stages.go) differs from phase B only in its committer (authoritative: the
// marker before deciding, the script after, the success written at once):
//
//  1. a duplicate identity (bound by a committed message, or by one earlier in this batch:
//     the read goes through the batch transaction) is SKIPPED before anything is decided, so
//     a duplicate's changes never reach Redis;
//  2. the message's marker, read for the whole batch in one round trip before its transaction
//     began (so no database lock is held while Redis answers, or fails to within
//     redis.timeout: then the first message fails INFRA and the batch ends after its record),
//     gives the Decision of an earlier attempt; else the handler decides on Redis as it is
//     now (every message before it in the batch already applied there), and the Decision's
//     flight writes go to Redis with the marker in the message's one script;
//  3. its SQL effects (events, FLIGHT_STATE mirror, back-fill, SUCCEEDED) go into the batch
//     under its savepoint.
//
// So each decision sees the previous ones' effects (read from Redis, or from the batch's
// flight store, Options.BatchFlights, which remembers what the batch read and its scripts
// wrote; reference data read through the batch transaction), and Redis is always ahead of
// SQL by at most the batch. A crash, a lost lease, a batch rolled back (deferred writes
// refused, the database gone) all leave Redis with the markers of messages whose SQL side is
// not committed: their retry, in a batch of one or the next batch, finds each marker, writes
// nothing to Redis again and commits the recorded Decision (the same events). A message that
// fails (INFRA when Redis does not answer, a decision's error) is recorded by the retry rules
// (class, retry or park); a FAILED one ends the batch after its record, and the messages
// before it commit. The scripts of several messages are not pipelined: the next message's
// decision must read the previous one's effects.

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/gob"
	"fmt"
	"log/slog"
	"time"

	"msgx/internal/handler"
	"msgx/internal/pipeline"
	"msgx/internal/store"
)

// Authority is the authoritative flight store of phase A (redisflight.Store).
type Authority interface {
	// Marker returns the marker message msgID recorded, if any.
	Marker(ctx context.Context, msgID int64) ([]byte, bool, error)
	// Markers returns the markers of those of ids that have one (a batch's, in one round
	// trip); the map is never nil.
	Markers(ctx context.Context, ids []int64) (map[int64][]byte, error)
	// ApplyMessage applies writes and records marker atomically, unless the message's marker
	// is there, which it returns with found=true, writing nothing.
	ApplyMessage(ctx context.Context, msgID int64, writes []pipeline.FlightWrite, marker []byte, now time.Time) (stored []byte, found bool, err error)
	// ApplyUnmarked is ApplyMessage without the read of the marker before the script (the
	// script still checks it): for a message whose marker Markers found absent.
	ApplyUnmarked(ctx context.Context, msgID int64, writes []pipeline.FlightWrite, marker []byte, now time.Time) (stored []byte, found bool, err error)
}

// BatchFlights is phase A's flight store for one batch (redisflight.Batch): it remembers the
// flights it read and wrote, so a later message of the batch reads them without a round trip
// and its script's compare-and-set is against the versions its handler read. Its
// ApplyUnmarked is used only for messages whose marker the batch read as absent.
type BatchFlights interface {
	// View returns the handlers' view: flights from the batch, reference data from base.
	View(base handler.View) handler.View
	// ApplyUnmarked is Authority.ApplyUnmarked, remembering what it wrote.
	ApplyUnmarked(ctx context.Context, msgID int64, writes []pipeline.FlightWrite, marker []byte, now time.Time) (stored []byte, found bool, err error)
}

// applyFunc applies a message's flight writes with its marker (Authority.ApplyMessage's
// shape).
type applyFunc func(ctx context.Context, msgID int64, writes []pipeline.FlightWrite, marker []byte, now time.Time) ([]byte, bool, error)

// authoritative is phase A's committer: a message's Decision is the one its marker recorded,
// or a new one whose flight writes are applied to the authority (with the marker) before the
// SQL transaction; its SQL side is written at once, under its savepoint (direct). known
// holds the markers read for the batch (nil: not read, each message reads its own); a
// message's marker can only appear by its own processing (one writer), so what the batch read
// stays true until the message's turn. apply applies the writes: the batch's BatchFlights,
// or the authority's.
type authoritative struct {
	direct
	a     Authority
	known map[int64][]byte
	apply applyFunc
	after func(msgID int64) // Options.AfterAuthority
	// down is the INFRA failure of the markers' read before the batch began: Redis does not
	// answer, the message in hand fails with it (nil: it answered).
	down error
	// marks is the guard against a Redis that lost data (redismark.go); tx and w are the
	// batch transaction and the message in hand (set by prior), for the look-up of a flight
	// Redis lost (lostflight.go); lost, once it found one, ends the batch before w (halted).
	marks *markState
	log   *slog.Logger
	now   func() time.Time
	tx    *sql.Tx
	w     *work
	lost  error
}

// phaseA is the mode of a pump with an authoritative flight store (Options.Authority).
type phaseA struct {
	*kit
	marks *markState
}

// batches says whether phase A batches: only when the handlers read reference data through
// the batch transaction (Options.ViewIn); else each message is a batch of one.
func (m *phaseA) batches() bool { return m.opt.BatchSize > 1 && m.opt.ViewIn != nil }

// decodeRun leaves each message to be decoded at its turn.
func (m *phaseA) decodeRun(_ context.Context, run []*store.Due) []*decoded {
	return make([]*decoded, len(run))
}

// begin reads the markers of run's messages in one round trip, before the transaction (no
// database lock is held while Redis answers), then opens the batch with the authoritative
// committer and, when the markers were read, the batch's flight store. When Redis did not
// answer the read, the first message fails INFRA with that error, without asking Redis again
// inside the transaction: the batch records it and ends.
func (m *phaseA) begin(ctx context.Context, run []*store.Due, _ []*decoded, t take, wr writes) (*batch, error) {
	start := m.opt.Clock.Now()
	ids := make([]int64, len(run))
	for i, d := range run {
		ids[i] = d.ID
	}
	a := m.opt.Authority
	known, kerr := a.Markers(ctx, ids)
	r, err := m.open(ctx, t, wr, start)
	if err != nil {
		return nil, err
	}
	r.reads.flights = m.opt.Flights
	c := &authoritative{a: a, apply: a.ApplyMessage, after: m.opt.AfterAuthority, marks: m.marks, log: m.log,
		now: m.opt.Clock.Now, tx: r.b.Tx()}
	r.commit = c
	if kerr != nil {
		if pipeline.ClassOf(kerr) == pipeline.Infra {
			c.down = kerr
		}
		return r, nil
	}
	c.known, c.apply = known, a.ApplyUnmarked
	if m.opt.BatchFlights != nil && m.opt.ViewIn != nil {
		bf := m.opt.BatchFlights()
		r.reads.batchFlights, c.apply = bf, bf.ApplyUnmarked
	}
	return r, nil
}

// view returns the view of the message in hand: flights from the authority (or the batch's
// flight store), reference data through the batch transaction (Options.ViewIn) or not.
func (m *phaseA) view(r *batch) handler.View {
	view := m.opt.View
	if m.opt.ViewIn != nil {
		view = m.opt.ViewIn(r.b.Tx())
	}
	if r.reads.batchFlights != nil {
		view = r.reads.batchFlights.View(view)
	}
	return view
}

func (c *authoritative) prior(ctx context.Context, w *work) (pipeline.Decision, bool, error) {
	c.w = w
	if c.down != nil {
		return pipeline.Decision{}, false, c.down
	}
	id := w.m.ID
	b, found := c.known[id]
	if c.known == nil {
		var err error
		if b, found, err = c.a.Marker(ctx, id); err != nil {
			return pipeline.Decision{}, false, err
		}
	}
	if !found {
		return pipeline.Decision{}, false, nil
	}
	c.log.Info("flights already applied to the authoritative store by an earlier attempt; committing the decision recorded", "msg_id", id)
	dec, err := decodeMarker(id, b)
	return dec, true, err
}

func (c *authoritative) ahead(ctx context.Context, w *work, dec pipeline.Decision) (pipeline.Decision, error) {
	if skippedRecords(w, dec) {
		// A FLOP that left records out for flights it found absent: one of them may be a
		// flight Redis lost, whose record would be dropped (lostflight.go).
		if err := c.lostFlight(ctx, w); err != nil {
			return pipeline.Decision{}, err
		}
	}
	if len(dec.Flights) == 0 {
		return dec, nil
	}
	id := w.m.ID
	b, err := encodeMarker(dec)
	if err != nil {
		return pipeline.Decision{}, pipeline.Wrap(pipeline.CodecError, fmt.Errorf("marker of message %d: %w", id, err))
	}
	prev, found, err := c.apply(ctx, id, dec.Flights, b, w.now)
	if err != nil {
		return pipeline.Decision{}, err
	}
	if found {
		return decodeMarker(id, prev)
	}
	if c.after != nil {
		c.after(id)
	}
	return dec, nil
}

// halted ends the batch before the message in hand once it named a flight Redis lost.
func (c *authoritative) halted(*batch) error { return c.lost }

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
