package dispatch

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"time"

	"msgx/internal/event"
	"msgx/internal/pipeline"
	"msgx/internal/secret"
	"msgx/internal/store"
	"msgx/internal/target"
)

// KindESDelete is the payload kind of an Elasticsearch delete: its record has Delete set.
const KindESDelete = event.KindESDelete

// Envelope is the value delivered for one event (every target but the schedule batch):
// the event's identity around its payload. docs/events.md has its JSON schema.
type Envelope struct {
	EventID   int64           `json:"event_id"`
	MsgID     int64           `json:"msg_id"`
	TypeTag   string          `json:"type_tag"`
	Target    string          `json:"target"`
	Kind      string          `json:"kind"`
	FlightKey string          `json:"flight_key,omitempty"`
	CreatedAt time.Time       `json:"created_at"`
	Payload   json.RawMessage `json:"payload"`
}

// compactJSON returns p compacted, or an error when p is not valid JSON.
func compactJSON(p []byte) ([]byte, error) {
	var b bytes.Buffer
	if err := json.Compact(&b, p); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// rendered returns e as its target delivers it: e itself, or for a stored canonical event
// (kind event.KindChange) a copy with the kind and payload rendered for the family of its
// target (Options.Families; event.Render of the change, decoded once for every target: changes), so that the envelope and every sink get exactly
// what a rendered row gives. It fails on a canonical payload that does not decode and on a
// target without a family: no attempt can deliver such an event (the caller sends it DEAD as
// MALFORMED).
func (d *Dispatcher) rendered(e *Event) (*Event, error) {
	if e.Kind != event.KindChange {
		return e, nil
	}
	c, err := d.changes.decode(e.EventID, e.Raw)
	var kind string
	var p []byte
	if err == nil {
		kind, p, err = event.Render(d.opt.Families[e.Target], c)
	}
	if err != nil {
		return nil, fmt.Errorf("event %d of target %s cannot be rendered: %w", e.EventID, e.Target, err)
	}
	r := *e
	r.Kind, r.Raw = kind, p
	return &r, nil
}

// record builds the delivery record of one event (rendered first). It fails only when the
// event cannot be rendered or its payload is not valid JSON.
func (d *Dispatcher) record(e *Event) (target.Record, error) {
	e, err := d.rendered(e)
	if err != nil {
		return target.Record{}, err
	}
	return record(e)
}

// record builds the delivery record of one event as stored with a target's payload. It fails
// only when the payload is not valid JSON.
func record(e *Event) (target.Record, error) {
	payload, err := compactJSON(e.Raw)
	if err != nil {
		return target.Record{}, fmt.Errorf("payload of event %d is not JSON: %w", e.EventID, err)
	}
	value, ok := appendEnvelope(make([]byte, 0, len(payload)+160), e, payload)
	if !ok {
		if value, err = encodeEnvelope(e, payload); err != nil {
			return target.Record{}, err
		}
	}
	return target.Record{
		EventID:  e.EventID,
		MsgID:    e.MsgID,
		TypeTag:  e.TypeTag,
		Target:   e.Target,
		Kind:     e.Kind,
		Key:      e.Key(),
		Value:    value,
		Delete:   e.Kind == KindESDelete,
		Document: payload,
	}, nil
}

// encodeEnvelope returns the JSON of e's Envelope around payload (compact JSON), as
// encoding/json writes it with HTML escaping off.
func encodeEnvelope(e *Event, payload []byte) ([]byte, error) {
	env := Envelope{
		EventID:   e.EventID,
		MsgID:     e.MsgID,
		TypeTag:   e.TypeTag,
		Target:    e.Target,
		Kind:      e.Kind,
		FlightKey: e.Key(),
		CreatedAt: e.CreatedAt.UTC(),
		Payload:   payload,
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(env); err != nil {
		return nil, fmt.Errorf("encode event %d: %w", e.EventID, err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// appendEnvelope appends to b what encodeEnvelope returns, without reflection, when e's
// strings are printable ASCII without a quote or a backslash (written as they are) and its
// creation year has four digits: an event's envelope is most of the dispatcher's encoding.
// Otherwise it returns false and encodeEnvelope decides (TestEnvelopeMatchesEncodingJSON).
func appendEnvelope(b []byte, e *Event, payload []byte) ([]byte, bool) {
	created := e.CreatedAt.UTC()
	key := e.Key()
	if y := created.Year(); y < 0 || y > 9999 || !plain(e.TypeTag) || !plain(e.Target) || !plain(e.Kind) || !plain(key) {
		return b, false
	}
	b = strconv.AppendInt(append(b, `{"event_id":`...), e.EventID, 10)
	b = strconv.AppendInt(append(b, `,"msg_id":`...), e.MsgID, 10)
	b = append(append(append(b, `,"type_tag":"`...), e.TypeTag...), '"')
	b = append(append(append(b, `,"target":"`...), e.Target...), '"')
	b = append(append(append(b, `,"kind":"`...), e.Kind...), '"')
	if key != "" {
		b = append(append(append(b, `,"flight_key":"`...), key...), '"')
	}
	b = created.AppendFormat(append(b, `,"created_at":"`...), time.RFC3339Nano)
	b = append(append(append(b, `","payload":`...), payload...), '}')
	return b, true
}

// plain reports whether encoding/json writes s as it is between its quotes.
func plain(s string) bool {
	for i := range len(s) {
		if c := s[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// DeliverOnce sends what is due at the head of the per-event target name: the run of
// consecutive due PENDING events from the head, up to SendBatch×SendRuns, in Sink.Send calls
// of up to SendBatch each, in order, stopping at the first failure. The leading records the
// sink delivered are marked SENT, in one transaction (shared with the other targets' steps
// that finish at the same time); a failure is recorded on the first
// undelivered event only (backoff, or DEAD), and nothing behind it is sent while it waits.
// A head that is waiting but has failed for longer than the head deadline goes DEAD.
//
// It returns how many events it marked SENT and how long the caller may wait before the next
// call: zero when more may be due at once, the time until the head's next attempt while it
// backs off, or the poll interval when the target has nothing pending. A sink's failure is
// recorded, not returned; err reports a database failure (or an unknown target), after which
// the events are still PENDING and are sent again.
func (d *Dispatcher) DeliverOnce(ctx context.Context, name string) (sent int, wait time.Duration, err error) {
	res, err := d.deliver(ctx, name)
	return res.sent, res.wait, err
}

// deliver is DeliverOnce for the loop: it also says whether the head is backing off.
func (d *Dispatcher) deliver(ctx context.Context, name string) (stepResult, error) {
	sink, ok := d.sinks[name]
	switch {
	case name != "" && name == d.opt.SchdTarget:
		return stepResult{}, fmt.Errorf("dispatch: %s is the batched schedule target; FlushSchd sends it", name)
	case !ok || sink == nil:
		return stepResult{}, fmt.Errorf("dispatch: no sink for target %q", name)
	}
	lock := d.locks[name]
	lock.Lock()
	defer lock.Unlock()
	// From its read on, the step counts as one of the round's: a commit of another target
	// may wait for its outcome (committer), until it commits or ends without one.
	d.commits.begin()
	committing := false
	defer func() {
		if !committing {
			d.commits.end()
		}
	}()

	now := d.opt.Clock.Now()
	evs, err := d.db.PendingEvents(ctx, name, d.opt.SendBatch*d.opt.SendRuns)
	if err != nil {
		return stepResult{}, err
	}
	if len(evs) == 0 {
		return stepResult{wait: d.opt.PollInterval}, nil
	}
	head := &evs[0]
	if !head.Due(now) {
		if d.opt.Policy.Overdue(head.FirstFailed(), now) {
			return stepResult{}, d.escalate(ctx, []*Event{head}, now)
		}
		return stepResult{wait: head.NextAttempt().Sub(now), blocked: true}, nil
	}
	run, recs, err := d.dueRun(ctx, evs, now)
	if len(run) == 0 {
		return stepResult{}, err // the head's payload is not JSON: it went DEAD
	}

	s := delivery{name: name, run: run, now: now}
	s.n, s.sendErr = d.send(ctx, sink, name, recs)
	s.interrupted = s.sendErr != nil && ctx.Err() != nil // shutdown cut the send short: not the event's fault
	// The outcome shares its transaction with those of the other targets that sent at the
	// same time (committer): one durable commit per round, not one per target.
	committing = true
	if err := d.recordDelivery(ctx, &s); err != nil {
		return stepResult{}, err
	}
	return d.reportDelivery(&s), nil
}

// dueRun returns the run of consecutive due events from the head of evs (which is due) and
// their records, ending before the first event that cannot be rendered or whose payload is
// not JSON. When that is the head, it goes DEAD and the run is empty.
func (d *Dispatcher) dueRun(ctx context.Context, evs []Event, now time.Time) ([]*Event, []target.Record, error) {
	var (
		run  []*Event
		recs []target.Record
	)
	for i := range evs {
		e := &evs[i]
		if i > 0 && !e.Due(now) {
			break
		}
		rec, err := d.record(e)
		if err != nil {
			if i > 0 {
				break // the run ends here; the bad event becomes the head next time
			}
			return nil, nil, d.malformed(ctx, e, err, now)
		}
		run = append(run, e)
		recs = append(recs, rec)
	}
	return run, recs, nil
}

// delivery is one send of a target's due run and what recording it changed.
type delivery struct {
	name string
	run  []*Event
	now  time.Time

	n           int     // leading events of run delivered
	sendErr     error   // the failure of run[n]; nil when all were delivered
	interrupted bool    // shutdown cut the send short: not the event's fault
	ids         []int64 // the delivered events' ids

	marked  int              // events marked SENT
	verdict pipeline.Verdict // run[n]'s failure (fail)
	msg     string           // its error text
	stale   bool             // run[n]'s row changed under us: its failure is not recorded
}

// recordDelivery marks the delivered events of s SENT and, unless the send was interrupted,
// records the failure of the first undelivered one, in the round's transaction.
func (d *Dispatcher) recordDelivery(ctx context.Context, s *delivery) error {
	s.ids = make([]int64, s.n)
	for i := range s.n {
		s.ids[i] = s.run[i].EventID
	}
	err := d.commits.commit(ctx, func(tx store.EventTx) error {
		var err error
		if s.marked, err = tx.MarkSent(s.name, s.ids, s.now); err != nil {
			return err
		}
		if s.sendErr == nil || s.interrupted {
			return nil
		}
		var recorded bool
		s.verdict, s.msg, recorded, err = d.fail(tx, s.run[s.n], s.sendErr, s.now)
		s.stale = !recorded
		return err
	})
	if err != nil {
		return store.Unavailable(fmt.Errorf("dispatch: record delivery to %s (events %d..%d): %w",
			s.name, s.run[0].EventID, s.run[len(s.run)-1].EventID, err))
	}
	return nil
}

// reportDelivery tells OnSent, the metrics and the log what s delivered and how its failure
// ended, and returns the step's result: the head waits for its next attempt unless it went
// DEAD.
func (d *Dispatcher) reportDelivery(s *delivery) stepResult {
	n, ids := s.n, s.ids
	if n > 0 && d.opt.OnSent != nil {
		d.opt.OnSent(s.name, ids)
	}
	d.sentMetrics(s.name, s.run[:n], s.marked, s.now)
	if n > 0 {
		msgIDs := make([]int64, 0, n)
		for _, e := range s.run[:n] {
			msgIDs = appendMsgID(msgIDs, e.MsgID)
		}
		d.log.Info("events sent", "target", s.name, "count", n,
			"first_event_id", ids[0], "last_event_id", ids[n-1], "event_ids", ids, "msg_ids", msgIDs)
	}
	if s.marked < n {
		d.log.Info("delivered events were changed by another writer first; left as it left them",
			"target", s.name, "delivered", n, "marked_sent", s.marked)
	}
	switch {
	case s.sendErr == nil:
		return stepResult{sent: s.marked}
	case s.interrupted:
		d.log.Info("send interrupted by shutdown", "target", s.name, "event_id", s.run[n].EventID, "error", s.sendErr.Error())
		return stepResult{sent: s.marked}
	case s.stale:
		// Someone else (a replay, another instance) changed the head since it was read; its
		// state now is theirs. Read the head again rather than record a stale decision.
		d.log.Info("event changed by another writer during its send; reading the head again",
			"target", s.name, "event_id", s.run[n].EventID, "msg_id", s.run[n].MsgID, "error", s.sendErr.Error())
		return stepResult{sent: s.marked}
	}
	d.logFailure(s.run[n], s.run[n].Attempts+1, s.verdict, s.msg)
	if s.verdict.Dead {
		return stepResult{sent: s.marked}
	}
	return stepResult{sent: s.marked, wait: s.verdict.NextAttemptAt.Sub(s.now), blocked: true}
}

// send sends recs in order in Sink.Send calls of up to SendBatch records (up to the sink's
// window for a target.Windowed sink, which keeps them all in flight at once), stopping at the
// first failure, or before the next call once ctx ended. It returns how many leading records
// were delivered and the failure.
func (d *Dispatcher) send(ctx context.Context, sink target.Sink, name string, recs []target.Record) (int, error) {
	size := d.opt.SendBatch
	if w, ok := sink.(target.Windowed); ok {
		size = max(size, w.Window())
	}
	done := 0
	for done < len(recs) && (done == 0 || ctx.Err() == nil) {
		chunk := recs[done:min(done+size, len(recs))]
		sctx, cancel := d.sendContext(ctx)
		n, serr := sink.Send(sctx, chunk)
		cancel()
		if serr == nil && n < len(chunk) {
			serr = fmt.Errorf("sink %s delivered %d of %d records and reported no error", name, n, len(chunk))
		}
		done += delivered(n, len(chunk), serr)
		if serr != nil {
			return done, serr
		}
	}
	return done, nil
}

// fail records the failure serr of event e at now under the retry policy, if e's row is still
// as it was read (fenced). It returns the verdict, the error text recorded and whether it
// recorded anything: false means another writer changed the row first.
func (d *Dispatcher) fail(tx store.EventTx, e *Event, serr error, now time.Time) (pipeline.Verdict, string, bool, error) {
	class := deliveryClass(serr)
	attempts := e.Attempts + 1
	first := e.FirstFailed()
	if first.IsZero() {
		first = now
	}
	v := d.opt.Policy.OnFailure(class, attempts, first, now)
	msg := secret.Redact(serr.Error()) // a webhook URL's password never reaches the row or the log
	state := pipeline.EventPending
	if v.Dead {
		state = pipeline.EventDead
		if v.Reason != "" {
			msg += " (dead: " + v.Reason + ")"
		}
	}
	n, err := tx.Change([]*Event{e}, store.EventChange{State: state, AddAttempt: true, NextAttemptAt: v.NextAttemptAt,
		FirstFailedAt: first, Class: v.Class, LastError: msg})
	return v, msg, n == 1, err
}

// logFailure logs the failure of event e, recorded with verdict v: WARN while it retries,
// ERROR when it went DEAD.
func (d *Dispatcher) logFailure(e *Event, attempts int, v pipeline.Verdict, msg string) {
	if v.Dead {
		d.logDead(e, v.Class, attempts, msg)
		return
	}
	d.log.Warn("event delivery failed", "target", e.Target, "event_id", e.EventID, "msg_id", e.MsgID,
		"attempts", attempts, "error_class", string(v.Class),
		"next_attempt_at", v.NextAttemptAt.UTC().Format(time.RFC3339Nano), "error", msg)
}

// escalate sends the waiting events evs DEAD as EXHAUSTED: they have been failing for longer
// than the head deadline. Their attempts are kept; the reason is added to the last error. An
// event whose row changed since it was read (fenced) is left alone.
func (d *Dispatcher) escalate(ctx context.Context, evs []*Event, now time.Time) error {
	wctx, cancel := writeContext(ctx)
	defer cancel()
	msgs := make([]string, len(evs))
	done := make([]bool, len(evs))
	err := d.db.EventTx(wctx, func(tx store.EventTx) error {
		for i, e := range evs {
			first := e.FirstFailed()
			reason := fmt.Sprintf("failing for %s since %s (head deadline %s)",
				now.Sub(first).Round(time.Millisecond), first.UTC().Format(time.RFC3339), d.opt.Policy.HeadDeadline)
			msg := e.LastErrorText()
			if msg != "" {
				msg += " "
			}
			msg += "(dead: " + reason + ")"
			msgs[i] = msg
			n, err := tx.Change([]*Event{e}, store.EventChange{State: pipeline.EventDead, Class: pipeline.Exhausted, LastError: msg})
			if err != nil {
				return err
			}
			done[i] = n == 1
		}
		return nil
	})
	if err != nil {
		return store.Unavailable(fmt.Errorf("dispatch: escalate overdue head: %w", err))
	}
	for i, e := range evs {
		if done[i] {
			d.logDead(e, pipeline.Exhausted, e.Attempts, msgs[i])
		} else {
			d.logChanged(e, "escalate")
		}
	}
	return nil
}

// malformed sends event e DEAD as MALFORMED: its stored payload is not JSON, or it is a
// canonical event that cannot be rendered (Dispatcher.rendered), so no attempt can ever
// deliver it (and replay leaves it alone).
func (d *Dispatcher) malformed(ctx context.Context, e *Event, cause error, now time.Time) error {
	wctx, cancel := writeContext(ctx)
	defer cancel()
	msg := cause.Error()
	var n int
	err := d.db.EventTx(wctx, func(tx store.EventTx) (err error) {
		n, err = tx.Change([]*Event{e}, store.EventChange{State: pipeline.EventDead, FirstFailedAt: now, Class: pipeline.Malformed, LastError: msg})
		return err
	})
	if err != nil {
		return store.Unavailable(fmt.Errorf("dispatch: mark event %d malformed: %w", e.EventID, err))
	}
	if n == 0 {
		d.logChanged(e, "mark malformed")
		return nil
	}
	d.logDead(e, pipeline.Malformed, e.Attempts, msg)
	return nil
}

// logChanged says that a decision about event e was dropped because another writer changed
// its row first; the event is read again.
func (d *Dispatcher) logChanged(e *Event, what string) {
	d.log.Info("event changed by another writer; not recorded, reading it again", "target", e.Target,
		"event_id", e.EventID, "msg_id", e.MsgID, "decision", what)
}

// sentMetrics counts the delivered events evs, of which a commit at now marked marked SENT (the
// others another writer changed first), with their delivery latencies.
func (d *Dispatcher) sentMetrics(name string, evs []*Event, marked int, now time.Time) {
	if d.opt.Metrics == nil || marked == 0 {
		return
	}
	created := make([]time.Time, 0, len(evs))
	for _, e := range evs[:min(marked, len(evs))] {
		created = append(created, e.CreatedAt)
	}
	d.opt.Metrics.Sent(name, created, now)
}

func (d *Dispatcher) logDead(e *Event, class pipeline.ErrorClass, attempts int, msg string) {
	d.opt.Metrics.Dead(e.Target, 1)
	d.log.LogAttrs(context.Background(), slog.LevelError, "event dead",
		slog.String("target", e.Target), slog.Int64("event_id", e.EventID), slog.Int64("msg_id", e.MsgID),
		slog.String("error_class", string(class)), slog.Int("attempts", attempts), slog.String("error", msg))
}

// appendMsgID appends id to the message ids of a log line unless it is there already (the
// events of a run come in message order, so a repeat is the last one).
func appendMsgID(ids []int64, id int64) []int64 {
	if len(ids) > 0 && ids[len(ids)-1] == id || slices.Contains(ids, id) {
		return ids
	}
	return append(ids, id)
}
