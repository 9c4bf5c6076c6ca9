package dispatch

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"msgx/internal/pipeline"
	"msgx/internal/secret"
	"msgx/internal/store"
	"msgx/internal/target"
)

// FlushSchd sends the pending events of the schedule target (Options.SchdTarget) as one
// batch, when one is due: FlushPeriod has passed since the last successful flush (or there
// was none yet), FlushLimit events are pending, or force is set.
//
// It claims up to FlushLimit PENDING events in EVENT_ID order, unless the first of them is
// backing off (then nothing is claimed, force or not). Of the claimed events it keeps the
// newest per flight key (events without a key are all kept) and sends their payloads in
// EVENT_ID order as JSON arrays, in as few records as the sink's record size allows
// (target.ValueLimiter; one record when it sets no limit), all in one Send, each with Key ""
// (the Kafka sink gives them the target's one key, so they stay in one partition, in order)
// and EventID the newest id it carries (planBatch). A flight record that cannot fit in a
// record by itself goes DEAD as REJECTED, with the older events of its flight, before the
// send; the rest of the batch goes on.
//
// The events carried by delivered records (a superseded event is carried by its flight's
// newest) are SENT. On a failure the rest counts one more attempt and backs off together, or
// goes DEAD together, judged by the first of them; the last-flush time moves only when all
// was delivered. Every write is conditional on the row being as it was read (see fenced):
// a row another writer changed meanwhile is left as it left it, and the batch is read again.
//
// sent is the number of events marked SENT; wait and err mean what they mean for
// DeliverOnce, wait being at most the time until the period ends.
func (d *Dispatcher) FlushSchd(ctx context.Context, force bool) (sent int, wait time.Duration, err error) {
	res, err := d.flushSchd(ctx, force)
	return res.sent, res.wait, err
}

// flushSchd is FlushSchd for the loop: it also says whether the batch's head is backing off.
func (d *Dispatcher) flushSchd(ctx context.Context, force bool) (stepResult, error) {
	name := d.opt.SchdTarget
	sink := d.sinks[name]
	if name == "" || sink == nil {
		return stepResult{}, fmt.Errorf("dispatch: no schedule target with a sink (SchdTarget %q)", name)
	}
	lock := d.locks[name]
	lock.Lock()
	defer lock.Unlock()

	now := d.opt.Clock.Now()
	if !force {
		wait, due, err := d.schdDue(ctx, name, now)
		if err != nil {
			return stepResult{}, err
		}
		if !due {
			return stepResult{wait: wait}, nil
		}
	}

	evs, err := d.db.PendingEvents(ctx, name, d.opt.FlushLimit)
	if err != nil {
		return stepResult{}, err
	}
	if len(evs) == 0 {
		return stepResult{wait: d.opt.PollInterval}, nil
	}
	head := &evs[0]
	if !head.Due(now) {
		if d.opt.Policy.Overdue(head.FirstFailed(), now) {
			return stepResult{}, d.escalateBatch(ctx, evs, now)
		}
		return stepResult{wait: head.NextAttempt().Sub(now), blocked: true}, nil
	}
	batch, err := d.dropMalformed(ctx, evs, now)
	if err != nil || len(batch) == 0 {
		return stepResult{}, err
	}
	plan, err := d.planSchd(ctx, sink, batch, now)
	if err != nil || len(plan.recs) == 0 {
		return stepResult{}, err
	}
	return d.sendSchd(ctx, sink, schdSend{name: name, batch: batch, plan: plan, now: now})
}

// schdDue says whether an unforced flush is due: FlushPeriod has passed since the last
// successful flush (or there was none yet), or FlushLimit events are pending. When it is not,
// wait is the time until the period ends.
func (d *Dispatcher) schdDue(ctx context.Context, name string, now time.Time) (wait time.Duration, due bool, err error) {
	d.mu.Lock()
	last := d.lastFlush
	d.mu.Unlock()
	if last.IsZero() || now.Sub(last) >= d.opt.FlushPeriod {
		return 0, true, nil
	}
	full, err := d.db.PendingAtLeast(ctx, name, d.opt.FlushLimit)
	if err != nil || full {
		return 0, full, err
	}
	return last.Add(d.opt.FlushPeriod).Sub(now), false, nil
}

// dropMalformed returns the events of evs as they are delivered (Dispatcher.rendered) whose
// payload is JSON. The others could never be delivered and would sink every batch they are
// in: they go DEAD alone, as MALFORMED.
func (d *Dispatcher) dropMalformed(ctx context.Context, evs []Event, now time.Time) ([]Event, error) {
	batch := evs[:0:0]
	for i := range evs {
		e, err := d.rendered(&evs[i])
		if err == nil && !json.Valid(e.Raw) {
			_, cerr := compactJSON(e.Raw) // fails too, saying where
			err = fmt.Errorf("payload of event %d is not JSON: %w", e.EventID, cerr)
		}
		if err != nil {
			if err := d.malformed(ctx, &evs[i], err, now); err != nil {
				return nil, err
			}
			continue
		}
		batch = append(batch, *e)
	}
	return batch, nil
}

// planSchd plans the records of batch within the record size of the schedule target's sink
// (planBatch) and sends DEAD the events whose flight record cannot fit (rejectTooBig).
func (d *Dispatcher) planSchd(ctx context.Context, sink target.Sink, batch []Event, now time.Time) (batchPlan, error) {
	maxValue := 0
	if l, ok := sink.(target.ValueLimiter); ok {
		maxValue = l.MaxValueBytes()
	}
	plan := planBatch(d.opt.SchdTarget, batch, maxValue)
	if len(plan.tooBig) > 0 {
		if err := d.rejectTooBig(ctx, batch, plan, maxValue, now); err != nil {
			return plan, err
		}
	}
	return plan, nil
}

// schdSend is one send of a schedule batch: what was sent, what the sink delivered, and what
// recording that changed.
type schdSend struct {
	name  string
	batch []Event
	plan  batchPlan
	now   time.Time

	n           int      // records delivered
	sendErr     error    // why the others were not; nil when all were
	interrupted bool     // shutdown cut the send short: not the events' fault
	sentIDs     []int64  // the events the delivered records carry
	failed      []*Event // the others, failed with the first undelivered record

	marked  int              // events marked SENT
	verdict pipeline.Verdict // the failed events' (failBatch)
	msg     string           // their error text
	charged int              // failed events that counted the attempt
	stale   bool             // the failed events' head changed meanwhile: nothing was charged
}

// sendSchd sends the planned records of s in one Send and records the outcome: the events
// the delivered records carry (their own payload, or their flight's newer one) are SENT; the
// others failed with the first undelivered record.
func (d *Dispatcher) sendSchd(ctx context.Context, sink target.Sink, s schdSend) (stepResult, error) {
	sctx, cancel := d.sendContext(ctx)
	n, serr := sink.Send(sctx, s.plan.recs)
	cancel()
	if serr == nil && n < len(s.plan.recs) {
		serr = fmt.Errorf("sink %s delivered %d of %d records and reported no error", s.name, n, len(s.plan.recs))
	}
	s.n, s.sendErr = delivered(n, len(s.plan.recs), serr), serr
	s.interrupted = serr != nil && ctx.Err() != nil // shutdown cut the send short: not the events' fault

	for i := range s.batch {
		switch c := s.plan.cover[i]; {
		case c < 0: // refused by planSchd
		case c < s.n:
			s.sentIDs = append(s.sentIDs, s.batch[i].EventID)
		default:
			s.failed = append(s.failed, &s.batch[i])
		}
	}
	if err := d.recordSchd(ctx, &s); err != nil {
		return stepResult{}, err
	}
	d.reportSchdSent(&s)
	return d.schdOutcome(&s), nil
}

// recordSchd marks the delivered events of s SENT and, unless the send was interrupted,
// records the failure of the others, in one transaction.
func (d *Dispatcher) recordSchd(ctx context.Context, s *schdSend) error {
	wctx, wcancel := writeContext(ctx)
	defer wcancel()
	err := d.db.EventTx(wctx, func(tx store.EventTx) error {
		var err error
		if s.marked, err = tx.MarkSent(s.name, s.sentIDs, s.now); err != nil {
			return err
		}
		if s.sendErr == nil || s.interrupted {
			return nil
		}
		s.verdict, s.msg, s.charged, err = d.failBatch(tx, s.failed, s.sendErr, s.now)
		s.stale = s.charged == 0
		return err
	})
	if err != nil {
		return store.Unavailable(fmt.Errorf("dispatch: record schedule batch %d..%d: %w",
			s.batch[0].EventID, s.batch[len(s.batch)-1].EventID, err))
	}
	return nil
}

// reportSchdSent tells OnSent, the metrics and the log of the events s marked SENT.
func (d *Dispatcher) reportSchdSent(s *schdSend) {
	if len(s.sentIDs) > 0 && d.opt.OnSent != nil {
		d.opt.OnSent(s.name, s.sentIDs)
	}
	if s.marked > 0 && d.opt.Metrics != nil {
		var sent []*Event
		for i := range s.batch {
			if c := s.plan.cover[i]; c >= 0 && c < s.n {
				sent = append(sent, &s.batch[i])
			}
		}
		d.sentMetrics(s.name, sent, s.marked, s.now)
	}
	if len(s.sentIDs) > 0 {
		var msgIDs []int64
		for i := range s.batch {
			if c := s.plan.cover[i]; c >= 0 && c < s.n {
				msgIDs = appendMsgID(msgIDs, s.batch[i].MsgID)
			}
		}
		d.log.Info("schd batch sent", "target", s.name, "count", len(s.sentIDs), "records", s.plan.kept(s.n),
			"parts", s.n, "first_event_id", s.sentIDs[0], "last_event_id", s.sentIDs[len(s.sentIDs)-1], "msg_ids", msgIDs)
	}
	if s.marked < len(s.sentIDs) {
		d.log.Info("delivered events were changed by another writer first; left as it left them",
			"target", s.name, "delivered", len(s.sentIDs), "marked_sent", s.marked)
	}
}

// schdOutcome ends the flush of s: the last-flush time moves when all was delivered; a
// failure is logged, and the batch waits for its next attempt unless it went DEAD.
func (d *Dispatcher) schdOutcome(s *schdSend) stepResult {
	switch {
	case s.sendErr == nil:
		d.mu.Lock()
		d.lastFlush = s.now
		d.mu.Unlock()
		return stepResult{sent: s.marked}
	case s.interrupted:
		d.log.Info("send interrupted by shutdown", "target", s.name, "event_id", s.plan.recs[s.n].EventID, "error", s.sendErr.Error())
		return stepResult{sent: s.marked}
	case s.stale:
		d.logChanged(s.failed[0], "record schedule batch failure")
		return stepResult{sent: s.marked}
	}
	ids := make([]int64, len(s.failed))
	var failedMsgs []int64
	for i, e := range s.failed {
		ids[i] = e.EventID
		failedMsgs = appendMsgID(failedMsgs, e.MsgID)
	}
	attempts := s.failed[0].Attempts + 1
	v := s.verdict
	if v.Dead {
		d.opt.Metrics.Dead(s.name, s.charged)
		d.log.Error("schd batch dead", "target", s.name, "count", s.charged, "event_id", s.plan.recs[s.n].EventID,
			"first_event_id", ids[0], "last_event_id", ids[len(ids)-1], "error_class", string(v.Class),
			"attempts", attempts, "error", s.msg, "msg_ids", failedMsgs)
		return stepResult{sent: s.marked}
	}
	d.log.Warn("schd batch failed", "target", s.name, "count", s.charged, "event_id", s.plan.recs[s.n].EventID,
		"first_event_id", ids[0], "last_event_id", ids[len(ids)-1], "attempts", attempts,
		"error_class", string(v.Class), "next_attempt_at", v.NextAttemptAt.UTC().Format(time.RFC3339Nano), "error", s.msg, "msg_ids", failedMsgs)
	return stepResult{sent: s.marked, wait: v.NextAttemptAt.Sub(s.now), blocked: true}
}

// failBatch records the failure serr of the schedule events evs (EVENT_ID order), the ones
// the failed send left undelivered: they count one more attempt and back off together, or go
// DEAD together, judged by the first of them. It writes only rows still as they were read
// (fenced), and nothing when the first one has changed (then the batch is read again). It
// returns the verdict, the error text and how many rows it changed.
func (d *Dispatcher) failBatch(tx store.EventTx, evs []*Event, serr error, now time.Time) (pipeline.Verdict, string, int, error) {
	h := evs[0]
	attempts := h.Attempts + 1
	first := h.FirstFailed()
	if first.IsZero() {
		first = now
	}
	v := d.opt.Policy.OnFailure(deliveryClass(serr), attempts, first, now)
	msg := secret.Redact(serr.Error())
	state := pipeline.EventPending
	if v.Dead {
		state = pipeline.EventDead
		if v.Reason != "" {
			// The batch fails and dies together, judged by its head: an event that joined
			// the batch later dies with it having used fewer attempts of its own.
			msg += fmt.Sprintf(" (dead with its batch: %s on head event %d)", v.Reason, h.EventID)
		}
	}
	change := store.EventChange{State: state, AddAttempt: true, NextAttemptAt: v.NextAttemptAt, FirstFailedAt: now, Class: v.Class, LastError: msg}
	n, err := tx.Change(evs[:1], change)
	if err != nil || n == 0 {
		return v, msg, 0, err
	}
	rest, err := tx.Change(evs[1:], change)
	return v, msg, n + rest, err
}

// rejectTooBig sends DEAD, as REJECTED, the events of the batch whose flight record alone is
// longer than limit (the most one record of the sink can carry), and the older events of
// those flights (superseded by a record that cannot be sent). No retry can make them fit;
// they can be replayed once the target's max-record-bytes (and the topic's limit) is raised.
func (d *Dispatcher) rejectTooBig(ctx context.Context, batch []Event, plan batchPlan, limit int, now time.Time) error {
	wctx, cancel := writeContext(ctx)
	defer cancel()
	type dead struct {
		e   *Event
		msg string
		ok  bool
	}
	var deads []dead
	err := d.db.EventTx(wctx, func(tx store.EventTx) error {
		deads = deads[:0]
		for _, tb := range plan.tooBig {
			e := &batch[tb.index]
			var msg string
			if tb.newest < 0 {
				what := fmt.Sprintf("event %d", e.EventID)
				if k := e.Key(); k != "" {
					what = fmt.Sprintf("flight %q (event %d)", k, e.EventID)
				}
				msg = fmt.Sprintf("schedule record of %s is %d bytes, over the %d bytes one record of target %s can carry "+
					"(max-record-bytes less key and headers); raise targets.%s.max-record-bytes and the topic's max.message.bytes, then replay",
					what, tb.size, limit, e.Target, e.Target)
			} else {
				n := &batch[tb.newest]
				msg = fmt.Sprintf("superseded by event %d of flight %q, whose schedule record (%d bytes) is over the %d bytes one record of target %s can carry",
					n.EventID, e.Key(), tb.size, limit, e.Target)
			}
			n, err := tx.Change([]*Event{e}, store.EventChange{State: pipeline.EventDead, AddAttempt: true, FirstFailedAt: now,
				Class: pipeline.Rejected, LastError: msg})
			if err != nil {
				return err
			}
			deads = append(deads, dead{e, msg, n == 1})
		}
		return nil
	})
	if err != nil {
		return store.Unavailable(fmt.Errorf("dispatch: refuse oversized schedule records: %w", err))
	}
	for _, x := range deads {
		if x.ok {
			d.logDead(x.e, pipeline.Rejected, x.e.Attempts+1, x.msg)
		} else {
			d.logChanged(x.e, "refuse oversized schedule record")
		}
	}
	return nil
}

// batchPlan is how the events of a schedule batch are sent.
type batchPlan struct {
	// recs are the records to send, in order. Each value is a JSON array of payloads.
	recs []target.Record
	// cover gives, per event of the batch, the index in recs of the record that carries it:
	// its own payload, or the newer payload of its flight that supersedes it. -1 for an
	// event refused as too big (tooBig).
	cover []int
	// flights is how many payloads each record holds.
	flights []int
	// tooBig lists the events refused: a newest flight record longer than the limit, and
	// the events it supersedes.
	tooBig []tooBig
}

// tooBig is an event that cannot be sent because its flight's record does not fit.
type tooBig struct {
	index  int // in the batch
	newest int // the index of the oversized event that supersedes it; -1 when it is that event
	size   int // the oversized payload's length
}

// kept returns how many payloads the first n records hold.
func (p batchPlan) kept(n int) int {
	k := 0
	for _, f := range p.flights[:n] {
		k += f
	}
	return k
}

// planBatch splits the schedule events evs (EVENT_ID order, valid payloads) into records for
// target name. Of each flight key only the newest event's payload is sent (every event
// without a key is sent); the payloads go in EVENT_ID order into JSON arrays of at most limit
// bytes each (0: no limit, one record), a new record starting where the next payload would
// not fit, so reading the records in order gives the payloads in order. A payload that
// cannot fit in a record by itself is not sent: it and the older events of its flight are
// listed in tooBig.
//
// Each record's EventID, MsgID, TypeTag and Kind are those of its newest event; its Key is
// empty (the sink gives every such record the target's one key, so the records of the target
// stay in one partition, in order).
func planBatch(name string, evs []Event, limit int) batchPlan {
	newest := make(map[string]int, len(evs))
	for i := range evs {
		if k := evs[i].Key(); k != "" {
			newest[k] = i
		}
	}
	plan := batchPlan{cover: make([]int, len(evs))}
	var (
		b    bytes.Buffer
		last int // index of the newest event in b
		n    int // payloads in b
	)
	flush := func() {
		if n == 0 {
			return
		}
		b.WriteByte(']')
		e := &evs[last]
		plan.recs = append(plan.recs, target.Record{
			EventID: e.EventID,
			MsgID:   e.MsgID,
			TypeTag: e.TypeTag,
			Target:  name,
			Kind:    e.Kind,
			Value:   bytes.Clone(b.Bytes()),
		})
		plan.flights = append(plan.flights, n)
		b.Reset()
		n = 0
	}
	sizes := make(map[int]int)
	for i := range evs {
		e := &evs[i]
		if k := e.Key(); k != "" && newest[k] != i {
			continue // superseded by a newer event of the same flight; covered below
		}
		p, _ := compactJSON(e.Raw)
		if limit > 0 && len(p)+2 > limit {
			plan.cover[i] = -1
			sizes[i] = len(p)
			plan.tooBig = append(plan.tooBig, tooBig{index: i, newest: -1, size: len(p)})
			continue
		}
		if limit > 0 && n > 0 && b.Len()+1+len(p)+1 > limit {
			flush()
		}
		if n == 0 {
			b.WriteByte('[')
		} else {
			b.WriteByte(',')
		}
		b.Write(p)
		n++
		last = i
		plan.cover[i] = len(plan.recs) // the record being built
	}
	flush()
	for i := range evs {
		k := evs[i].Key()
		if k == "" || newest[k] == i {
			continue
		}
		j := newest[k]
		plan.cover[i] = plan.cover[j]
		if plan.cover[j] < 0 {
			plan.tooBig = append(plan.tooBig, tooBig{index: i, newest: j, size: sizes[j]})
		}
	}
	slices.SortFunc(plan.tooBig, func(a, b tooBig) int { return a.index - b.index })
	return plan
}

// escalateBatch sends the failed events of a waiting schedule batch DEAD as EXHAUSTED: its
// head has been failing for longer than the head deadline. Events that joined after the last
// failed send (never attempted) stay PENDING.
func (d *Dispatcher) escalateBatch(ctx context.Context, evs []Event, now time.Time) error {
	var ids []int64
	for i := range evs {
		if evs[i].FirstFailedAt != nil {
			ids = append(ids, evs[i].EventID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	first := evs[0].FirstFailed()
	msg := evs[0].LastErrorText()
	if msg != "" {
		msg += " "
	}
	msg += fmt.Sprintf("(dead: failing for %s since %s (head deadline %s))",
		now.Sub(first).Round(time.Millisecond), first.UTC().Format(time.RFC3339), d.opt.Policy.HeadDeadline)
	var failed []*Event
	for i := range evs {
		if evs[i].FirstFailedAt != nil {
			failed = append(failed, &evs[i])
		}
	}
	wctx, cancel := writeContext(ctx)
	defer cancel()
	var n int
	err := d.db.EventTx(wctx, func(tx store.EventTx) (err error) {
		n, err = tx.Change(failed, store.EventChange{State: pipeline.EventDead, Class: pipeline.Exhausted, LastError: msg})
		return err
	})
	if err != nil {
		return store.Unavailable(fmt.Errorf("dispatch: escalate schedule batch %d..%d: %w", ids[0], ids[len(ids)-1], err))
	}
	if n < len(failed) {
		d.log.Info("events of the overdue schedule batch were changed by another writer first; left as it left them",
			"target", d.opt.SchdTarget, "overdue", len(failed), "dead", n)
	}
	d.opt.Metrics.Dead(d.opt.SchdTarget, n)
	d.log.Error("schd batch dead", "target", d.opt.SchdTarget, "count", n,
		"first_event_id", ids[0], "last_event_id", ids[len(ids)-1], "error_class", string(pipeline.Exhausted),
		"attempts", evs[0].Attempts, "error", msg)
	return nil
}
