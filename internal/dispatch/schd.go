package dispatch

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"time"

	"msgx/internal/pipeline"
	"msgx/internal/store"
	"msgx/internal/target"
)

// FlushSchd sends the pending events of the schedule target (Options.SchdTarget) as one
// batch, when one is due: FlushPeriod has passed since the last successful flush (or there
// was none yet), FlushLimit events are pending, or force is set.
//
// It claims up to FlushLimit PENDING events in EVENT_ID order, unless the first of them is
// backing off (then nothing is claimed, force or not). Of the claimed events it keeps the
// newest per flight key (events without a key are all kept) and sends ONE record whose value
// is the JSON array of their payloads in EVENT_ID order, with Key "" and EventID the newest
// claimed id. On success every claimed event is SENT, the superseded ones too, and the
// last-flush time moves to now. On failure the whole batch counts one more attempt and backs
// off together, or goes DEAD together; the last-flush time stays.
//
// sent is the number of events marked SENT; wait and err mean what they mean for
// DeliverOnce, wait being at most the time until the period ends.
func (d *Dispatcher) FlushSchd(ctx context.Context, force bool) (sent int, wait time.Duration, err error) {
	name := d.opt.SchdTarget
	sink := d.sinks[name]
	if name == "" || sink == nil {
		return 0, 0, fmt.Errorf("dispatch: no schedule target with a sink (SchdTarget %q)", name)
	}
	lock := d.locks[name]
	lock.Lock()
	defer lock.Unlock()

	now := d.opt.Clock.Now()
	limit := d.opt.FlushLimit
	if !force {
		d.mu.Lock()
		last := d.lastFlush
		d.mu.Unlock()
		if !last.IsZero() && now.Sub(last) < d.opt.FlushPeriod {
			full, err := d.pendingAtLeast(ctx, name, limit)
			if err != nil {
				return 0, 0, err
			}
			if !full {
				return 0, last.Add(d.opt.FlushPeriod).Sub(now), nil
			}
		}
	}

	evs, err := pendingHead(ctx, d.db, name, limit)
	if err != nil {
		return 0, 0, err
	}
	if len(evs) == 0 {
		return 0, d.opt.PollInterval, nil
	}
	head := &evs[0]
	if !head.due(now) {
		if d.opt.Policy.Overdue(head.firstFailed(), now) {
			return 0, 0, d.escalateBatch(ctx, evs, now)
		}
		return 0, head.nextAttempt().Sub(now), nil
	}

	// Events whose payload is not JSON could never be delivered and would sink every batch
	// they are in: they go DEAD alone, the others are sent.
	batch := evs[:0:0]
	for i := range evs {
		e := &evs[i]
		if _, err := compactJSON(e.raw); err != nil {
			if err := d.malformed(ctx, e, fmt.Errorf("payload of event %d is not JSON: %w", e.EventID, err), now); err != nil {
				return 0, 0, err
			}
			continue
		}
		batch = append(batch, *e)
	}
	if len(batch) == 0 {
		return 0, 0, nil
	}
	rec, kept := batchRecord(name, batch)
	ids := make([]int64, len(batch))
	for i := range batch {
		ids[i] = batch[i].EventID
	}

	sctx, cancel := d.sendContext(ctx)
	n, serr := sink.Send(sctx, []target.Record{rec})
	cancel()
	if serr == nil && n < 1 {
		serr = fmt.Errorf("sink %s delivered 0 of 1 record and reported no error", name)
	}
	if serr != nil && ctx.Err() != nil {
		d.log.Info("send interrupted by shutdown", "target", name, "event_id", rec.EventID, "error", serr.Error())
		return 0, 0, nil
	}

	wctx, wcancel := writeContext(ctx)
	defer wcancel()
	if serr == nil {
		if err := d.db.Tx(wctx, func(tx *sql.Tx) error { return markSent(wctx, tx, ids, now) }); err != nil {
			return 0, 0, store.Unavailable(fmt.Errorf("dispatch: record schedule batch %d..%d sent: %w", ids[0], ids[len(ids)-1], err))
		}
		d.mu.Lock()
		d.lastFlush = now
		d.mu.Unlock()
		d.log.Info("schd batch sent", "target", name, "count", len(ids), "records", kept,
			"first_event_id", ids[0], "last_event_id", ids[len(ids)-1])
		return len(ids), 0, nil
	}

	h := &batch[0]
	attempts := h.Attempts + 1
	first := h.firstFailed()
	if first.IsZero() {
		first = now
	}
	v := d.opt.Policy.OnFailure(pipeline.ClassOf(serr), attempts, first, now)
	msg := serr.Error()
	state := pipeline.EventPending
	if v.Dead {
		state = pipeline.EventDead
		if v.Reason != "" {
			// The batch fails and dies together, judged by its head: an event that joined
			// the batch later dies with it having used fewer attempts of its own.
			msg += fmt.Sprintf(" (dead with its batch: %s on head event %d)", v.Reason, h.EventID)
		}
	}
	args := append([]any{string(state), store.T(v.NextAttemptAt), store.T(now), string(v.Class), clip(msg)}, idArgs(ids)...)
	if _, err := d.db.SQL.ExecContext(wctx, `UPDATE MSG_EVENT SET STATE = ?, ATTEMPTS = ATTEMPTS + 1,
NEXT_ATTEMPT_AT = ?, FIRST_FAILED_AT = COALESCE(FIRST_FAILED_AT, ?), ERROR_CLASS = ?, LAST_ERROR = ?
WHERE STATE = 'PENDING' AND EVENT_ID IN (`+placeholders(len(ids))+`)`, args...); err != nil {
		return 0, 0, store.Unavailable(fmt.Errorf("dispatch: record schedule batch %d..%d failure: %w", ids[0], ids[len(ids)-1], err))
	}
	if v.Dead {
		d.log.Error("schd batch dead", "target", name, "count", len(ids), "event_id", rec.EventID,
			"first_event_id", ids[0], "last_event_id", ids[len(ids)-1], "error_class", string(v.Class),
			"attempts", attempts, "error", msg)
		return 0, 0, nil
	}
	d.log.Warn("schd batch failed", "target", name, "count", len(ids), "event_id", rec.EventID,
		"first_event_id", ids[0], "last_event_id", ids[len(ids)-1], "attempts", attempts,
		"error_class", string(v.Class), "next_attempt_at", v.NextAttemptAt.UTC().Format(time.RFC3339Nano), "error", msg)
	return 0, v.NextAttemptAt.Sub(now), nil
}

// pendingAtLeast reports whether target has at least n PENDING events, reading no more than n
// index entries.
func (d *Dispatcher) pendingAtLeast(ctx context.Context, name string, n int) (bool, error) {
	var id int64
	err := d.db.SQL.QueryRowContext(ctx, `SELECT EVENT_ID FROM MSG_EVENT WHERE TARGET = ? AND STATE = 'PENDING'
ORDER BY EVENT_ID LIMIT 1 OFFSET ?`, name, n-1).Scan(&id)
	switch {
	case err == sql.ErrNoRows:
		return false, nil
	case err != nil:
		return false, store.Unavailable(fmt.Errorf("dispatch: count pending of %s: %w", name, err))
	}
	return true, nil
}

// batchRecord builds the one record of a schedule batch: the payloads of the newest event per
// flight key (and of every event without one), in EVENT_ID order, as a JSON array. evs are in
// EVENT_ID order with valid payloads. It returns the record and how many payloads it holds.
func batchRecord(name string, evs []Event) (target.Record, int) {
	newest := make(map[string]int64, len(evs))
	for i := range evs {
		if k := evs[i].key(); k != "" {
			newest[k] = evs[i].EventID
		}
	}
	var b bytes.Buffer
	b.WriteByte('[')
	kept := 0
	for i := range evs {
		e := &evs[i]
		if k := e.key(); k != "" && newest[k] != e.EventID {
			continue // superseded by a newer event of the same flight
		}
		p, _ := compactJSON(e.raw)
		if kept > 0 {
			b.WriteByte(',')
		}
		b.Write(p)
		kept++
	}
	b.WriteByte(']')
	last := &evs[len(evs)-1]
	return target.Record{
		EventID: last.EventID,
		MsgID:   last.MsgID,
		TypeTag: last.TypeTag,
		Target:  name,
		Kind:    last.Kind,
		Value:   b.Bytes(),
	}, kept
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
	first := evs[0].firstFailed()
	msg := evs[0].lastError()
	if msg != "" {
		msg += " "
	}
	msg += fmt.Sprintf("(dead: failing for %s since %s (head deadline %s))",
		now.Sub(first).Round(time.Millisecond), first.UTC().Format(time.RFC3339), d.opt.Policy.HeadDeadline)
	wctx, cancel := writeContext(ctx)
	defer cancel()
	args := append([]any{string(pipeline.Exhausted), clip(msg)}, idArgs(ids)...)
	if _, err := d.db.SQL.ExecContext(wctx, `UPDATE MSG_EVENT SET STATE = 'DEAD', NEXT_ATTEMPT_AT = NULL,
ERROR_CLASS = ?, LAST_ERROR = ? WHERE STATE = 'PENDING' AND EVENT_ID IN (`+placeholders(len(ids))+`)`, args...); err != nil {
		return store.Unavailable(fmt.Errorf("dispatch: escalate schedule batch %d..%d: %w", ids[0], ids[len(ids)-1], err))
	}
	d.log.Error("schd batch dead", "target", d.opt.SchdTarget, "count", len(ids),
		"first_event_id", ids[0], "last_event_id", ids[len(ids)-1], "error_class", string(pipeline.Exhausted),
		"attempts", evs[0].Attempts, "error", msg)
	return nil
}
