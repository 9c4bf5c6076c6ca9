package pump

// How a batch's handlers read state and its identities are looked up (see batch.go): through
// the batch transaction (Options.ViewIn), from a view that remembers the batch's flights
// (flightCache), from a watched view that cannot see the batch (watchView), or in phase A
// from Redis (Options.Authority, BatchFlights).

import (
	"context"

	"msgx/internal/handler"
	"msgx/internal/pipeline"
	"msgx/internal/sis"
	"msgx/internal/store"
)

// reads is what a batch reads through.
type reads struct {
	view    handler.View
	watched *watchView // the view when it cannot read through the transaction
	// cache is the view's memory of the flights it read and wrote through the transaction,
	// when it has one: the view then serves the whole batch (see flightCache).
	cache   flightCache
	markers map[int64][]byte // phase A: the markers of the run's messages, read at its start
	flights BatchFlights     // phase A: the batch's flight store (Options.BatchFlights)
	// bound maps identity keys to their holders (0: none): those of the run's messages read
	// ahead when the batch began, those looked up since and those its messages bind (phase B;
	// nil in phase A, which reads each through the transaction). See boundIn.
	bound map[string]int64
}

// flightCache is what a batch view may offer besides handler.View (the SQL flight store's
// InTx does): it remembers the flights it read and wrote through the batch transaction, so
// one view serves the whole batch, each message seeing the ones before it; Prefetch reads
// the flights the batch names ahead of the decisions; the barrier runs before a read it
// cannot answer from memory (flights by day, code-shares, reference keys), which must see
// every write made before it; Forget drops what it remembers after a write it saw was rolled
// back.
type flightCache interface {
	Prefetch(ctx context.Context, flids []int64) error
	SetBarrier(fn func(ctx context.Context) error)
	Forget()
}

// forget drops what the batch's view remembers after a write was rolled back.
func (rd *reads) forget() {
	if rd.cache != nil {
		rd.cache.Forget()
	}
}

// prepareReads sets up batch r's reads for run: phase A's markers and flight store, or the
// view, its flight read-ahead, the identity read-ahead and the queue of successes (phase B).
func (p *Pump) prepareReads(ctx context.Context, r *batch, run []*store.Due, decs []*decoded) error {
	rd := &r.reads
	if p.opt.Authority != nil {
		rd.markers, rd.flights = p.beginAuthoritative(ctx, run)
		return nil
	}
	if r.b.Queues() && !r.single {
		r.commit = &queued{}
	}
	switch {
	case p.opt.ViewIn != nil:
		rd.view = p.opt.ViewIn(r.b.Tx())
	case p.opt.View != nil:
		rd.watched = &watchView{View: p.opt.View}
		rd.view = rd.watched
	}
	if c, ok := rd.view.(flightCache); ok {
		rd.cache = c
		c.SetBarrier(func(ctx context.Context) error { return r.commit.flush(ctx, p, r) })
		if err := c.Prefetch(ctx, flopFlights(decs)); err != nil {
			return err
		}
	}
	var err error
	rd.bound, err = p.readBound(ctx, r.b, run, decs)
	return err
}

// decideIn asks h for w's Decision with the batch's view, and returns the flight store its
// writes go through. In phase A the Decision is a marker's, or its flight writes are applied
// to the authority first (decideAuthoritative).
func (p *Pump) decideIn(ctx context.Context, r *batch, w *work, h handler.Handler) (pipeline.Decision, store.FlightWriter, error) {
	rd, flights := &r.reads, p.opt.Flights
	if p.opt.Authority != nil {
		view, apply := p.opt.View, applyFunc(nil)
		if p.opt.ViewIn != nil {
			view = p.opt.ViewIn(r.b.Tx())
		}
		if rd.flights != nil {
			view, apply = rd.flights.View(view), rd.flights.ApplyUnmarked
		}
		dec, err := p.decideAuthoritative(ctx, w.m.ID, h, w.d.msg, view, rd.markers, apply, w.now)
		return dec, flights, err
	}
	if rd.watched != nil {
		rd.watched.read = false
	}
	view := rd.view
	switch {
	case rd.cache != nil:
		// One view for the batch: it remembers the flights the batch read and wrote.
	case p.opt.ViewIn != nil:
		// A view of its own per message: what it remembers of its reads (the versions of the
		// flights it read, which the flight writes then use) ends with the message's step.
		view = p.opt.ViewIn(r.b.Tx())
	}
	if fw, ok := view.(store.FlightWriter); ok && flights != nil && p.opt.ViewIn != nil {
		flights = fw
	}
	dec, err := p.decide(ctx, w.m.ID, h, w.d.msg, view)
	return dec, flights, err
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
func (p *Pump) readBound(ctx context.Context, b *store.Batch, run []*store.Due, decs []*decoded) (map[string]int64, error) {
	out := map[string]int64{}
	var ids []string
	for _, d := range decs {
		if d != nil && d.msg != nil && d.err == nil {
			ids = append(ids, d.identity)
		}
	}
	err := readHolders(ctx, b, out, ids)
	for _, m := range run {
		if m.BoundKey != "" {
			out[m.BoundKey] = m.ID // applied, its commit's answer lost (store.Due)
		}
	}
	if err != nil || !p.opt.Identity.ByContent() {
		return out, err
	}
	return out, readHolders(ctx, b, out, p.contentIdentities(run, decs, out))
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
// out says another message holds, or which share their key with an earlier one of the run.
func (p *Pump) contentIdentities(run []*store.Due, decs []*decoded, out map[string]int64) []string {
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
			if dg, err := p.digest(id, d.raw); err == nil {
				ids = append(ids, pipeline.ContentIdentity(d.identity, dg))
			}
		}
	}
	return ids
}
