package pump

import (
	"context"

	"msgx/internal/pipeline"
	"msgx/internal/store"
)

// readAhead is the next batch's messages, read and decoded while the batch before them is in
// its transaction (Options.ReadAhead). The due read and the decoding were a quarter of the
// pump's time per message on SQLite, with the batch's write lock free and a core idle; now
// they overlap the transaction of the batch before.
//
// It is only a cache of decoded texts: the next step's due read still says which messages are
// due, in which state, and leaves out the text of those decoded ahead (raw text never changes
// once written). A message due then that was not read ahead (replayed, adopted, or left by a
// batch that failed) comes with its text, or is read at its turn, as any other.
type readAhead struct {
	after, upto int64 // the messages decoded are in (after, upto]
	decs        map[int64]*decoded
	done        chan struct{} // closed once read and decoded
}

// startAhead reads and decodes, in the background, the due messages after the batch that ends
// at after, when Options.ReadAhead says to. Phase A decodes each message at its turn
// (decodeRun), so it reads nothing ahead.
func (p *Pump) startAhead(ctx context.Context, after int64) {
	if !p.opt.ReadAhead || p.ahead != nil || p.opt.Authority != nil {
		return
	}
	a := &readAhead{after: after, upto: after, decs: map[int64]*decoded{}, done: make(chan struct{})}
	p.ahead = a
	go func() {
		defer close(a.done)
		due, err := p.db.Due(ctx, store.DueQuery{Limit: p.opt.BatchSize, After: after})
		if err != nil {
			return // the next step reads them as usual
		}
		for _, m := range due {
			if m.State != pipeline.Pending || !m.RawOK || m.RawLater {
				break // the batch stops before a FAILED message; a long text is read at its turn
			}
			a.decs[m.ID] = p.decodeText(m.ID, m.Raw)
			a.upto = m.ID
		}
	}()
}

// takeAhead waits for the messages read ahead, if any, and hands them to this step: the due
// read leaves their texts out and decodeRun takes them.
func (p *Pump) takeAhead(q *store.DueQuery) {
	a := p.ahead
	p.ahead, p.pre = nil, nil
	if a == nil {
		return
	}
	<-a.done
	if a.upto > a.after {
		q.KnownFrom, q.KnownTo, p.pre = a.after, a.upto, a.decs
	}
}

// waitAhead waits for a read ahead still running (the pump stops).
func (p *Pump) waitAhead() {
	if a := p.ahead; a != nil {
		<-a.done
	}
}
