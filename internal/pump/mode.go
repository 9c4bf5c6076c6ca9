package pump

// The pump's mode: what phase A (Redis holds the authoritative flights, phasea.go) and phase B
// (the SQL flight store) do differently, chosen once in New from the options. Everything else
// of the pump's one path (batch.go, the message path of stages.go, the outcomes) is the same in
// both: a mode reads what must be read before a batch's transaction (phase A's markers),
// decides when its messages are decoded (phase B ahead of the transaction, phase A at each
// message's turn), opens the batch with the reads its handlers go through and the committer
// that makes its successes durable, and says whether the pump takes runs of several messages.

import (
	"context"
	"log/slog"
	"time"

	"msgx/internal/handler"
	"msgx/internal/store"
)

// mode is phase A's or phase B's part of the pump.
type mode interface {
	// batches says whether the pump may take a run of several messages into one batch; if
	// not, it takes each alone.
	batches() bool
	// decodeRun decodes the messages of run before their batch transaction opens, or leaves
	// each (nil) to the decoding stage, at its turn.
	decodeRun(ctx context.Context, run []*store.Due) []*decoded
	// begin opens the batch of run (decs are its messages decoded ahead), taken as t and
	// writing as wr, with the reads its handlers go through and its committer.
	begin(ctx context.Context, run []*store.Due, decs []*decoded, t take, wr writes) (*batch, error)
	// view returns the view the handler of the message in hand reads in batch r.
	view(r *batch) handler.View
}

// take is how a batch's messages were taken.
type take int

const (
	// takeOne is a message taken alone: not committing its batch is the head's Trouble, and
	// its success is never queued.
	takeOne take = iota
	// takeRun is a run of messages: not committing the batch makes the pump take its
	// messages one at a time until one's outcome is recorded.
	takeRun
)

// writes is when a batch writes its messages' events and back-fills.
type writes int

const (
	writesAtEnd writes = iota // once for the whole batch, before it commits (store.Batch.DeferWrites)
	writesEach                // each message's under its own savepoint, as it goes
)

// kit is what every batch of a pump works with: the database, the options (the phase's
// stores), and how outcomes are recorded, identities looked up and status shown.
type kit struct {
	db     Store
	opt    *Options
	rec    *outcomes
	ids    *identities
	status *status
	dec    decoder
	log    *slog.Logger
}

// newMode returns the mode p's options choose: phase A with an authority, else phase B.
func newMode(k *kit, marks *markState) mode {
	if k.opt.Authority != nil {
		return &phaseA{kit: k, marks: marks}
	}
	return &phaseB{kit: k}
}

// open begins a batch transaction taken as t and writing as wr, started at start, with a
// committer that writes each success at once.
func (k *kit) open(ctx context.Context, t take, wr writes, start time.Time) (*batch, error) {
	b, err := k.db.BeginBatch(ctx)
	if err != nil {
		return nil, err
	}
	if wr == writesAtEnd {
		b.DeferWrites()
	}
	return &batch{kit: k, b: b, started: start, take: t, commit: direct{}}, nil
}
