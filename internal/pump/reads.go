package pump

// Phase B's mode, and how a batch's handlers read state and its identities are looked up (see
// batch.go): through the batch transaction with the SQL flight store's memory of the batch's
// flights (Options.FlightsIn), from a watched view that cannot see the batch (watchView), or
// in phase A from Redis (Options.Authority, ViewIn, BatchFlights; phasea.go).

import (
	"context"

	"msgx/internal/handler"
	"msgx/internal/pipeline"
	"msgx/internal/sis"
	"msgx/internal/store"
)

// TxFlights is the SQL flight store through a batch's transaction (flight.Store.InTx), in
// phase B: the handlers' view of the whole batch and the writer of its flights. It remembers
// the flights it read and wrote through the transaction, so one view serves the batch, each
// message seeing the ones before it, and a flight write is guarded by the version its
// handler read; Prefetch reads the flights the batch names ahead of the decisions; the
// barrier runs before a read it cannot answer from memory (flights by day, code-shares,
// reference keys), which must see every write made before it; Forget drops what it
// remembers after a write it saw was rolled back.
type TxFlights interface {
	handler.View
	store.FlightWriter
	Prefetch(ctx context.Context, flids []int64) error
	SetBarrier(fn func(ctx context.Context) error)
	Forget()
}

// reads is what a batch reads through.
type reads struct {
	view    handler.View // the handlers' view (phase B; in phase A each message gets its own)
	watched *watchView   // the view when it cannot read through the transaction
	tx      TxFlights    // the flight store through the transaction (Options.FlightsIn), if any
	// flights is where the batch's flight writes go: tx, or Options.Flights (nil: none).
	flights store.FlightWriter
	// batchFlights is phase A's flight store of the batch (Options.BatchFlights), if any.
	batchFlights BatchFlights
	// bound maps identity keys to their holders (0: none): those of the run's messages read
	// ahead when the batch began, those looked up since and those its messages bind (phase B;
	// nil in phase A, which reads each through the transaction). See boundIn.
	bound map[string]int64
}

// forget drops what the batch's view remembers after a write was rolled back.
func (rd *reads) forget() {
	if rd.tx != nil {
		rd.tx.Forget()
	}
}

// phaseB is the mode of a pump whose flights are the SQL flight store's: the messages of a
// run are decoded ahead of its transaction, its handlers read through the transaction
// (Options.FlightsIn) or a watched view, the holders of its identities are read ahead, and
// its successes are queued where the database takes a queue.
type phaseB struct{ *kit }

func (m *phaseB) batches() bool { return m.opt.BatchSize > 1 }

// rawAhead bounds the raw text decodeRun reads for the messages whose text did not come with
// the batch read (store.DueRawLimit): a 3,000-flight schedule is about 9 MB, so the first one
// or two such messages of a run are decoded before the batch transaction, the rest at their
// turn.
const rawAhead = 16 << 20

// decodeRun decodes the messages of run before the batch transaction opens (decoding needs no
// database, and on SQLite the transaction holds the write lock from its start: a 3,000-flight
// schedule takes a few hundred milliseconds to decode). A message whose text did not come
// with the batch read has it read first, while rawAhead allows; one that is left out, or
// whose read fails or finds no text, is left nil: the decoding stage reads and decodes it at
// its turn, where a failure is handled.
func (m *phaseB) decodeRun(ctx context.Context, run []*store.Due) []*decoded {
	out := make([]*decoded, len(run))
	budget := rawAhead
	for i, d := range run {
		raw, ok := d.Raw, d.RawOK && !d.RawLater
		if d.RawLater && budget > 0 {
			var err error
			raw, ok, err = m.db.Raw(ctx, d.ID)
			ok = ok && err == nil
			budget -= len(raw)
		}
		if ok {
			out[i] = m.dec.text(d.ID, raw)
		}
	}
	return out
}

// begin opens the batch and sets up its reads: the view, its flight read-ahead and the
// identity read-ahead, and the queue of successes where the database takes one.
func (m *phaseB) begin(ctx context.Context, run []*store.Due, decs []*decoded, t take, wr writes) (*batch, error) {
	r, err := m.open(ctx, t, wr, m.opt.Clock.Now())
	if err != nil {
		return nil, err
	}
	rd := &r.reads
	rd.flights = m.opt.Flights
	if r.b.Queues() && t == takeRun {
		r.commit = &queued{}
	}
	switch {
	case m.opt.FlightsIn != nil:
		rd.tx = m.opt.FlightsIn(r.b.Tx())
		rd.view = rd.tx
		if rd.flights != nil {
			rd.flights = rd.tx
		}
		rd.tx.SetBarrier(func(ctx context.Context) error { return r.commit.flush(ctx, r) })
		if err := rd.tx.Prefetch(ctx, flopFlights(decs)); err != nil {
			r.b.Rollback()
			return nil, err
		}
	case m.opt.View != nil:
		rd.watched = &watchView{View: m.opt.View}
		rd.view = rd.watched
	}
	if rd.bound, err = m.readBound(ctx, r.b, run, decs); err != nil {
		r.b.Rollback()
		return nil, err
	}
	return r, nil
}

// view returns the batch's view, watched afresh for the message in hand.
func (m *phaseB) view(r *batch) handler.View {
	if r.reads.watched != nil {
		r.reads.watched.read = false
	}
	return r.reads.view
}

// flopFlights returns the flights the FLOPs of decs name: what their handlers read.
func flopFlights(decs []*decoded) []int64 {
	var out []int64
	for _, d := range decs {
		if d == nil || d.msg == nil {
			continue
		}
		if _, ok := d.msg.Body.(*sis.FlopBody); ok {
			out = append(out, flightsOf(d.msg)...)
		}
	}
	return out
}

// boundIn looks identities up in batch r: what rd.bound knows, else a read through the
// batch's transaction, remembered. Every identity a queued message binds is in rd.bound, so
// no read needs the queue sent first.
func (rd *reads) boundIn(r *batch) holderOf {
	return func(ctx context.Context, identity string) (int64, bool, error) {
		k := store.IdentityKey(identity)
		if h, ok := rd.bound[k]; ok {
			return h, h != 0, nil
		}
		h, ok, err := r.b.BoundTo(ctx, identity)
		if err == nil && rd.bound != nil {
			rd.bound[k] = h
		}
		return h, ok, err
	}
}

// readBound reads ahead, in one query (two in content mode), the holders of the identities
// the run's decoded messages look up (identify), so a duplicate is SKIPPED before its decision
// without a round trip per message: their keys, and in identity.mode content the content
// identities of the messages whose key is held by another message or shared with an earlier
// one of the run. The result holds 0 for a key no message holds.
func (m *phaseB) readBound(ctx context.Context, b *store.Batch, run []*store.Due, decs []*decoded) (map[string]int64, error) {
	out := map[string]int64{}
	var ids []string
	for _, d := range decs {
		if d != nil && d.msg != nil && d.err == nil {
			ids = append(ids, d.identity)
		}
	}
	err := readHolders(ctx, b, out, ids)
	for _, d := range run {
		if d.BoundKey != "" {
			out[d.BoundKey] = d.ID // applied, its commit's answer lost (store.Due)
		}
	}
	if err != nil || !m.ids.mode.ByContent() {
		return out, err
	}
	return out, readHolders(ctx, b, out, m.contentIdentities(run, decs, out))
}

// readHolders reads the holders of ids through b into out (0 for an identity none holds).
func readHolders(ctx context.Context, b *store.Batch, out map[string]int64, ids []string) error {
	got, err := b.BoundAmong(ctx, ids)
	if err != nil {
		return err
	}
	for _, id := range ids {
		k := store.IdentityKey(id)
		out[k] = got[k]
	}
	return nil
}

// contentIdentities returns the content identities of the decoded messages of run whose key
// out says another message holds, or which share their key with an earlier one of the run:
// each under its digest and its legacy digest (identify looks both up).
func (m *phaseB) contentIdentities(run []*store.Due, decs []*decoded, out map[string]int64) []string {
	var ids []string
	first := map[string]int64{} // each key's first message in the run
	for i, d := range decs {
		if d == nil || d.msg == nil || d.err != nil {
			continue
		}
		k, id := store.IdentityKey(d.identity), run[i].ID
		f, seen := first[k]
		if !seen {
			first[k] = id
		}
		if h := out[k]; (h != 0 && h != id) || (seen && f != id) {
			if dg, err := m.ids.digest(id, d.raw); err == nil {
				ids = append(ids, pipeline.ContentIdentity(d.identity, dg.digest), pipeline.ContentIdentity(d.identity, dg.legacy))
			}
		}
	}
	return ids
}
