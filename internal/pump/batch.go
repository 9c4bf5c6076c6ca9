package pump

// The batching pump. One step reads the next due messages with their raw text in one query,
// decodes and decides them in order, and commits the run in one transaction with a savepoint
// per message: the durable commit (one fsync) is shared, everything else is as one by one.
//
// How a failure inside the batch is handled: every write of a message runs under its own
// savepoint (store.Batch), so a message whose effects fail is rolled back alone and its
// outcome is recorded in the batch exactly as the one-by-one pump records it (same class, same
// retry/park verdict). Parked and MALFORMED/DEAD outcomes and SKIPPED duplicates let the batch
// go on; a message left FAILED ends the batch after its record (a FAILED head blocks what is
// behind it); a message whose outcome cannot be written, or whose row changed under the pump
// (an operator's replay: ErrChanged), ends the batch before it: the ones before it commit and
// it is judged by afterHead as the one-by-one pump judges its head. A lost lease (ErrFenced)
// or a transaction the database gave up (store.ErrBatchBroken) commits nothing, and a batch
// that cannot be committed makes the pump go one by one until a message's outcome is
// recorded, so the rules for an unavailable database are exactly today's.
//
// How handlers see the batch's own effects: handlers read state through handler.View, and a
// message's decision must see the effects of the messages before it in the batch (two FLOPs of
// one flight, a snapshot then a FLOP of one of its flights, a season list then a SCHS). The
// pump gives the handlers a view that reads through the open batch transaction
// (Options.ViewIn; the SQL flight store's InTx): SQLite and MySQL/MariaDB both show a
// transaction its own uncommitted writes, so the view is exactly what the one-by-one pump
// would read after committing the messages before. This keeps the batch running through
// flight traffic, where ending it at each state-reading message would end almost every batch
// after one message. A View that cannot read through the transaction (no ViewIn) is watched
// instead: a message whose handler read it after the batch changed reference or flight state
// is not taken into the batch, and is decided again at the head of the next one.

import (
	"context"
	"errors"
	"time"

	"msgx/internal/handler"
	"msgx/internal/pipeline"
	"msgx/internal/sis"
	"msgx/internal/store"
)

// Bounds of one batch besides its size: a batch ends once it inserted this many events or
// took this long (by the injected clock), so a run of large snapshots does not hold the
// single write transaction (and, on SQLite, the inbox's inserts) for long.
const (
	batchMaxEvents = 20000
	batchMaxTime   = 2 * time.Second
)

// errDecideAgain ends a batch before a message whose handler read a view that cannot see the
// batch's writes after the batch changed state; it is decided again at the next batch's head.
var errDecideAgain = errors.New("decide again after the batch commits")

// stepBatch is a step of the batching pump: the head job, a FAILED head alone (its timing
// rules are the one-by-one pump's), or a batch of the PENDING messages from the head on.
func (p *Pump) stepBatch(ctx context.Context, now time.Time) (time.Duration, error) {
	due, job, err := p.dueRun(ctx)
	if err != nil {
		return 0, err
	}
	var head *store.Message
	if len(due) > 0 {
		head = &due[0].Message
	}
	if job != nil && (head == nil || head.ID > job.AfterMsgID) {
		return p.runJob(ctx, job, now)
	}
	if head == nil {
		p.setTrouble(nil)
		return p.opt.PollInterval, nil
	}
	if t := p.Trouble(); t != nil && t.MsgID == head.ID && t.NextAttempt.After(now) {
		p.blocked = true
		return min(t.NextAttempt.Sub(now), p.opt.PollInterval), nil
	}
	if head.State != pipeline.Pending {
		p.blocked = true
		return p.stepHead(ctx, head, now)
	}
	if p.blocked {
		p.blocked = false
		return 0, nil // the head moves on: read a whole batch
	}
	run := cut(due, job)
	if p.opt.BatchWait > 0 && len(run) > 1 && len(run) < p.opt.BatchSize {
		// A backlog that does not fill a batch may wait for more; a lone message never does.
		t := time.NewTimer(p.opt.BatchWait)
		<-t.C
		if due, job, err = p.dueRun(ctx); err != nil {
			return 0, err
		}
		if len(due) == 0 || due[0].ID != head.ID || due[0].State != pipeline.Pending ||
			(job != nil && head.ID > job.AfterMsgID) {
			return 0, nil // the head changed while waiting: look again
		}
		run = cut(due, job)
	}
	return p.runBatch(ctx, run)
}

// dueRun reads the due messages, then the head job: in this order, so a job enqueued between
// the two reads is ordered after every message read (its AfterMsgID is at least theirs).
func (p *Pump) dueRun(ctx context.Context) ([]*store.Due, *store.Job, error) {
	limit := p.opt.BatchSize
	if p.blocked {
		limit = 1 // the head was waiting: look at it alone until it moves
	}
	due, err := p.db.Due(ctx, limit)
	if err != nil {
		return nil, nil, err
	}
	job, err := p.db.HeadJob(ctx)
	if err != nil {
		return nil, nil, err
	}
	return due, job, nil
}

// cut returns the leading PENDING messages of due that are ordered before job: a batch stops
// before a FAILED message (it has timing rules of its own) and before the job's turn.
func cut(due []*store.Due, job *store.Job) []*store.Due {
	n := 0
	for _, m := range due {
		if m.State != pipeline.Pending || (job != nil && m.ID > job.AfterMsgID) {
			break
		}
		n++
	}
	return due[:n]
}

// batch is the state of one batch transaction.
type batch struct {
	b       *store.Batch
	view    handler.View
	watched *watchView // the view when it cannot read through the transaction
	// cache is the view's memory of the flights it read and wrote through the transaction,
	// when it has one: the view then serves the whole batch (see flightCache).
	cache   flightCache
	changed bool // a message of the batch changed reference or flight state
	events  int
	reports []func() // log lines, metrics and the recent list, once the batch is durable
	started time.Time
	markers map[int64][]byte // phase A: the markers of the run's messages, read at its start
	flights BatchFlights     // phase A: the batch's flight store (Options.BatchFlights)
	// pending are the messages whose successes wait in the batch's queue (store.Batch.Queue),
	// in order; sendQueued writes them.
	pending []*pendingMsg
	// halt says a queued message failed when the queue was sent: its outcome is recorded
	// (or stopAt and stop say why it could not be) and the batch ends after it. fatal is a
	// lost lease or a broken transaction met while sending.
	halt   bool
	fatal  error
	stopAt *store.Message
	stop   error
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

// pendingMsg is a message whose success waits in the batch's queue: what reporting it, or
// recording its failure, takes.
type pendingMsg struct {
	m             *store.Message
	msg           *sis.Message
	raw           string
	out           outlet // records straight into the batch (the queue is sent by then)
	tag, identity string
	note          string
	warnings      []string
	now           time.Time
}

// errHalted ends a batch whose queue failed to be sent: the message that failed is recorded,
// and the message that was being worked on when it was sent is decided again next batch.
var errHalted = errors.New("the batch ends after a message whose queued writes failed")

// decoded is a message of the run decoded ahead of the decisions (to learn which flights the
// batch reads); nil for one whose raw text is read when its turn comes.
type decoded struct {
	raw           string // the text decoded (the identity's content digest reads it)
	msg           *sis.Message
	tag, identity string
	warnings      []string
	err           error
}

// decodeRun decodes the messages of run whose raw text came with the batch read.
func (p *Pump) decodeRun(run []*store.Due) []*decoded {
	out := make([]*decoded, len(run))
	if p.opt.Authority != nil {
		return out // phase A decodes each message at its turn (phasea_batch.go)
	}
	for i, m := range run {
		if m.RawLater || !m.RawOK {
			continue
		}
		d := &decoded{raw: m.Raw}
		d.msg, d.tag, d.identity, d.warnings, d.err = p.decodeOne(m.ID, m.Raw)
		out[i] = d
	}
	return out
}

// decodeDue decodes m at its turn in the batch, reading its raw text first when it did not
// come with the batch read (too long: it cannot have changed, only the gateway and the inbox
// write raw text, once). A nil result says m is done with: err is the raw read's failure (the
// batch ends before m), or what recording m DEAD MALFORMED through out returned when its raw
// text is missing.
func (p *Pump) decodeDue(ctx context.Context, out outlet, m *store.Due, now time.Time) (*decoded, error) {
	raw, ok := m.Raw, m.RawOK
	if m.RawLater {
		var err error
		if raw, ok, err = p.db.Raw(ctx, m.ID); err != nil {
			return nil, err
		}
	}
	if !ok {
		return nil, p.recordDeadIn(ctx, out, &m.Message, pipeline.Malformed, "raw message missing from CMINMSGS and CMINMSGS_HST", m.Attempts, time.Time{}, now)
	}
	p.working(m.ID, "", "decoding")
	d := &decoded{raw: raw}
	d.msg, d.tag, d.identity, d.warnings, d.err = p.decodeOne(m.ID, raw)
	return d, nil
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

// runBatch processes run (PENDING messages in order, the head first) in one transaction.
// The messages' events and back-fills are written at the end, for the whole batch (Batch.
// DeferWrites); when that fails, the batch is rolled back and done again with each message
// writing its own under its savepoint, so a message whose value the database refuses fails
// alone, exactly as one by one.
func (p *Pump) runBatch(ctx context.Context, run []*store.Due) (time.Duration, error) {
	decs := p.decodeRun(run)
	wait, again, err := p.runBatchOnce(ctx, run, decs, true)
	if again {
		// Decoded again: the first try's handlers had the decoded messages in hand.
		wait, _, err = p.runBatchOnce(ctx, run, p.decodeRun(run), false)
	}
	return wait, err
}

// runBatchOnce is runBatch's one try; again says the deferred writes failed and nothing was
// committed: try again without deferring.
func (p *Pump) runBatchOnce(ctx context.Context, run []*store.Due, decs []*decoded, deferWrites bool) (wait time.Duration, again bool, err error) {
	head := &run[0].Message
	start := p.opt.Clock.Now()
	b, err := p.db.BeginBatch(ctx)
	if err != nil {
		wait, err = p.abandon(head, err, start)
		return wait, false, err
	}
	if deferWrites {
		b.DeferWrites()
	}
	r := &batch{b: b, started: start}
	r.view, r.watched = p.batchView(b)
	if p.opt.Authority != nil {
		r.markers, r.flights = p.beginAuthoritative(ctx, run)
	} else {
		if c, ok := r.view.(flightCache); ok {
			r.cache = c
			c.SetBarrier(func(ctx context.Context) error { return p.sendQueued(ctx, r) })
			if err := c.Prefetch(ctx, flopFlights(decs)); err != nil {
				b.Rollback()
				wait, err = p.abandon(head, err, start)
				return wait, false, err
			}
		}
		if r.bound, err = p.readBound(ctx, b, run, decs); err != nil {
			b.Rollback()
			wait, err = p.abandon(head, err, start)
			return wait, false, err
		}
	}
	var stopAt *store.Message // the message the batch ended before, with its error
	var stop error
	taken := 0 // messages the batch went through (the last may have stopped it)
	fatal := func(err error) bool { return errors.Is(err, store.ErrFenced) || errors.Is(err, store.ErrBatchBroken) }
	for i, m := range run {
		now := p.opt.Clock.Now()
		taken++
		end, err := p.batchOne(ctx, r, m, decs[i], now)
		if r.fatal != nil {
			err = r.fatal
		}
		if err == nil && !end && r.b.QueueFull() {
			err = p.sendQueued(ctx, r)
		}
		if fatal(err) {
			b.Rollback()
			wait, err = p.abandon(head, err, now)
			return wait, false, err
		}
		if r.halt || errors.Is(err, errHalted) {
			break
		}
		if err != nil {
			stopAt, stop = &m.Message, err
			break
		}
		if end || r.events >= batchMaxEvents || now.Sub(r.started) >= batchMaxTime {
			break
		}
	}
	if err := p.sendQueued(ctx, r); fatal(err) {
		b.Rollback()
		wait, err = p.abandon(head, err, p.opt.Clock.Now())
		return wait, false, err
	}
	if r.halt && stopAt == nil {
		stopAt, stop = r.stopAt, r.stop
	}
	now := p.opt.Clock.Now()
	p.committing(head.ID, taken)
	if err := b.Flush(ctx); err != nil {
		b.Rollback()
		p.log.Warn("batch's events and back-fills not written; doing the batch again with each message's under its savepoint",
			"head_msg_id", head.ID, "err", err.Error())
		return 0, true, nil
	}
	if err := b.Commit(); err != nil {
		wait, err = p.abandon(head, err, now)
		return wait, false, err
	}
	for _, f := range r.reports {
		f()
	}
	if r.events > 0 && p.opt.OnEvents != nil {
		p.opt.OnEvents()
	}
	switch {
	case stopAt == nil:
		p.setTrouble(nil)
		return 0, false, nil
	case errors.Is(stop, errDecideAgain):
		p.setTrouble(nil)
		return 0, false, nil
	}
	wait, err = p.afterHead(stopAt, stop, now)
	return wait, false, err
}

// abandon ends a batch of which nothing was committed. A lost lease stops the step; any other
// failure (the database gave the transaction up, or its commit failed) makes the pump go one
// by one at once, so the head meets exactly the one-by-one rules of an unavailable database
// (FAILED with backoff, or Trouble), and a commit whose answer was lost is found applied.
func (p *Pump) abandon(head *store.Message, err error, now time.Time) (time.Duration, error) {
	if errors.Is(err, store.ErrFenced) {
		return p.afterHead(head, err, now)
	}
	p.solo = true
	p.log.Warn("batch not committed; processing one message at a time until the head is recorded", "head_msg_id", head.ID, "err", err.Error())
	return 0, nil
}

// batchView returns the view the batch's handlers read, and the watch on it when it cannot
// read through the batch transaction.
func (p *Pump) batchView(b *store.Batch) (handler.View, *watchView) {
	switch {
	case p.opt.ViewIn != nil:
		return p.opt.ViewIn(b.Tx()), nil
	case p.opt.View != nil:
		w := &watchView{View: p.opt.View}
		return w, w
	}
	return nil, nil
}

// batchOne processes one message inside the batch. end says the batch ends after it (it was
// left FAILED); an error says nothing of it is in the batch, which ends before it.
func (p *Pump) batchOne(ctx context.Context, r *batch, m *store.Due, d *decoded, now time.Time) (end bool, err error) {
	if p.opt.Authority != nil {
		return p.batchOneAuthoritative(ctx, r, m, now) // phase A: phasea_batch.go
	}
	later := func(f func()) { r.reports = append(r.reports, f) }
	// An outcome recorded in the batch goes after the queued successes before it.
	out := outlet{record: func(ctx context.Context, id int64, o store.Outcome, now time.Time) error {
		if err := p.sendQueued(ctx, r); err != nil {
			return err
		}
		return r.b.Record(ctx, id, o, now)
	}, later: later}
	msg0 := &m.Message
	var msg *sis.Message
	var tag, identity string
	var warnings []string
	if d == nil {
		if d, err = p.decodeDue(ctx, out, m, now); d == nil {
			return false, err
		}
	}
	msg, tag, identity, warnings, err = d.msg, d.tag, d.identity, d.warnings, d.err
	out = out.naming(msg)
	direct := outlet{record: r.b.Record, later: later}.naming(msg)
	if err != nil {
		return p.fail(ctx, out, msg0, err, tag, identity, warnings, now)
	}
	p.working(m.ID, tag, "deciding")
	v, err := p.identify(ctx, p.boundIn(r), m.ID, d.raw, msg)
	identity = v.identity
	switch {
	case err != nil:
		return false, err
	case v.holder != 0:
		return false, p.skip(ctx, out, msg0, msg, identity, duplicateOf(v.holder), now)
	case v.applied:
		return false, p.alreadyApplied(ctx, out, msg0, tag, identity, warnings, now)
	}
	h, ok := p.reg.Lookup(tag)
	if !ok {
		return p.fail(ctx, out, msg0, pipeline.Errorf(pipeline.Unsupported, "no handler for %s", tag), tag, identity, warnings, now)
	}
	if r.watched != nil {
		r.watched.read = false
	}
	view, flights := r.view, p.opt.Flights
	switch {
	case r.cache != nil:
		// One view for the batch: it remembers the flights the batch read and wrote.
		if fw, ok := view.(store.FlightWriter); ok && flights != nil {
			flights = fw
		}
	case p.opt.ViewIn != nil:
		// A view of its own per message: what it remembers of its reads (the versions of the
		// flights it read, which the flight writes then use) ends with the message's step.
		view = p.opt.ViewIn(r.b.Tx())
		if fw, ok := view.(store.FlightWriter); ok && flights != nil {
			flights = fw
		}
	}
	dec, err := p.decide(ctx, m.ID, h, msg, view)
	if r.fatal != nil {
		return false, r.fatal
	}
	if r.halt {
		return false, errHalted // a read sent the queue, which failed: decided again next batch
	}
	if r.watched != nil && r.watched.read && r.changed {
		return false, errDecideAgain
	}
	if err != nil {
		if s, ok := handler.AsSkip(err); ok {
			return false, p.skip(ctx, out, msg0, msg, identity, s.Reason, now)
		}
		return p.fail(ctx, out, msg0, err, tag, identity, warnings, now)
	}
	dec.Events = p.withCopies(dec.Events)
	p.working(m.ID, tag, "writing")
	warnings = append(warnings[:len(warnings):len(warnings)], dec.Warnings...)
	s := success(msg0, msg, tag, identity, warnings, dec)
	if r.b.Queue(m.ID, s, flights, now) {
		// Written with the messages around it (sendQueued); reported once it is.
		r.pending = append(r.pending, &pendingMsg{m: msg0, msg: msg, raw: d.raw, out: direct, tag: tag, identity: identity,
			note: dec.Note, warnings: warnings, now: now})
		if len(dec.Ref) > 0 || len(dec.Flights) > 0 {
			r.changed = true
		}
		r.events += len(dec.Events)
		if r.bound != nil {
			r.bound[store.IdentityKey(identity)] = m.ID
		}
		return false, nil
	}
	if err := p.sendQueued(ctx, r); err != nil {
		return false, err
	}
	events, changed, err := r.b.Succeed(ctx, m.ID, s, flights, now)
	if err != nil {
		if r.cache != nil {
			r.cache.Forget() // its flight writes, if any, were rolled back
		}
		return p.notApplied(ctx, r, out, msg0, msg, d.raw, tag, identity, warnings, err, now)
	}
	if len(dec.Ref) > 0 || len(dec.Flights) > 0 {
		r.changed = true
	}
	r.events += events
	if r.bound != nil {
		r.bound[store.IdentityKey(identity)] = m.ID
	}
	out.later(func() { p.succeeded(msg0, tag, identity, events, changed, dec.Note, warnings, now) })
	return false, nil
}

// notApplied records the outcome of a message whose success could not be written (err, as
// store.Batch.Succeed returns it): a duplicate is SKIPPED, a changed row or a lost
// transaction ends the batch before it, any other failure is recorded by the retry rules.
func (p *Pump) notApplied(ctx context.Context, r *batch, out outlet, msg0 *store.Message, msg *sis.Message, raw, tag, identity string, warnings []string, err error, now time.Time) (end bool, _ error) {
	switch {
	case errors.Is(err, store.ErrIdentityTaken):
		// Bound by an earlier message, committed or earlier in this batch: the reads go
		// through the batch, so they find either.
		return p.taken(ctx, out, p.freshIn(r), msg0, msg, raw, warnings, now)
	case errors.Is(err, store.ErrChanged), errors.Is(err, store.ErrFenced), errors.Is(err, store.ErrBatchBroken):
		return false, err
	}
	return p.fail(ctx, out, msg0, err, tag, identity, warnings, now)
}

// freshIn looks identities up through batch r's transaction after its queue is sent (the
// identities it binds count), past what r remembers: the look-up after the unique index
// refused a bind.
func (p *Pump) freshIn(r *batch) holderOf {
	return func(ctx context.Context, identity string) (int64, bool, error) {
		if err := p.sendQueued(ctx, r); err != nil {
			return 0, false, err
		}
		return r.b.BoundTo(ctx, identity)
	}
}

// boundIn looks identities up in batch r: what r.bound knows, else a read through the batch's
// transaction, remembered. Every identity a queued message binds is in r.bound, so no read
// needs the queue sent first.
func (p *Pump) boundIn(r *batch) holderOf {
	return func(ctx context.Context, identity string) (int64, bool, error) {
		k := store.IdentityKey(identity)
		if h, ok := r.bound[k]; ok {
			return h, h != 0, nil
		}
		h, ok, err := r.b.BoundTo(ctx, identity)
		if err == nil && r.bound != nil {
			r.bound[k] = h
		}
		return h, ok, err
	}
}

// readBound reads ahead, in one query (two in content mode), the holders of the identities
// the run's decoded messages look up (identify), so a duplicate is SKIPPED before its decision,
// as one by one, without a round trip per message: their keys, and in identity.mode content
// the content identities of the messages whose key is held by another message or shared
// with an earlier one of the run. The result holds 0 for a key no message holds.
func (p *Pump) readBound(ctx context.Context, b *store.Batch, run []*store.Due, decs []*decoded) (map[string]int64, error) {
	read := func(out map[string]int64, ids []string) error {
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
	out := map[string]int64{}
	var ids []string
	for _, d := range decs {
		if d != nil && d.msg != nil && d.err == nil {
			ids = append(ids, d.identity)
		}
	}
	err := read(out, ids)
	for _, m := range run {
		if m.BoundKey != "" {
			out[m.BoundKey] = m.ID // applied, its commit's answer lost (store.Due)
		}
	}
	if err != nil || !p.opt.Identity.ByContent() {
		return out, err
	}
	first := map[string]int64{} // each key's first message in the run
	ids = ids[:0]
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
	return out, read(out, ids)
}

// sendQueued writes the successes waiting in the batch's queue (store.Batch.SendQueued) and
// reports them once the batch commits. When one of them fails, its outcome is recorded as
// notApplied records it (or stopAt and stop say why it could not be), the ones after it are
// dropped (their decisions saw its effects: they are decided again in the next batch), and
// the batch halts: errHalted, and every later call answers errHalted too. A lost lease or a
// broken transaction is returned (and kept in fatal).
func (p *Pump) sendQueued(ctx context.Context, r *batch) error {
	switch {
	case r.fatal != nil:
		return r.fatal
	case r.halt:
		return errHalted
	case len(r.pending) == 0:
		return nil
	}
	pend := r.pending
	r.pending = nil
	res, err := r.b.SendQueued(ctx)
	for i, q := range pend[:len(res)] {
		ev, ch := res[i].Events, res[i].RefChanged
		r.reports = append(r.reports, func() { p.succeeded(q.m, q.tag, q.identity, ev, ch, q.note, q.warnings, q.now) })
	}
	if err == nil {
		return nil
	}
	if errors.Is(err, store.ErrFenced) || errors.Is(err, store.ErrBatchBroken) {
		r.fatal = err
		return err
	}
	q := pend[len(res)]
	_, oerr := p.notApplied(ctx, r, q.out, q.m, q.msg, q.raw, q.tag, q.identity, q.warnings, err, q.now)
	r.halt = true // after notApplied, whose read of a duplicate's holder goes through here
	if oerr != nil {
		if errors.Is(oerr, store.ErrFenced) || errors.Is(oerr, store.ErrBatchBroken) {
			r.fatal = oerr
			return oerr
		}
		r.stopAt, r.stop = q.m, oerr
	}
	return errHalted
}

// watchView is a View that notes whether a handler read stored state through it.
type watchView struct {
	handler.View
	read bool
}

func (w *watchView) Flight(ctx context.Context, flid int64) ([]byte, bool, error) {
	w.read = true
	return w.View.Flight(ctx, flid)
}

func (w *watchView) FlightsBetween(ctx context.Context, from, to time.Time) ([][]byte, error) {
	w.read = true
	return w.View.FlightsBetween(ctx, from, to)
}

func (w *watchView) CodeShareFlights(ctx context.Context) ([][]byte, error) {
	w.read = true
	return w.View.CodeShareFlights(ctx)
}

func (w *watchView) RefKeys(ctx context.Context, typ string) ([]string, error) {
	w.read = true
	return w.View.RefKeys(ctx, typ)
}
