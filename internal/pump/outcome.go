package pump

// A message's outcome: written into the batch through an outlet (SUCCEEDED, SKIPPED, FAILED by
// the retry policy, parked, DEAD), and reported (log line, metrics, the recent list) once it
// is durable.

import (
	"context"
	"slices"
	"strconv"
	"time"

	"msgx/internal/pipeline"
	"msgx/internal/sis"
	"msgx/internal/store"
)

// outlet is where the outcome of a message goes: written in the batch and reported once the
// batch commits, or (a FAILED head past its deadline) written at once in its own transaction.
type outlet struct {
	record func(ctx context.Context, id int64, o store.Outcome, now time.Time) error
	later  func(func()) // runs a report (log line, metric, recent list) once the outcome is durable
}

// naming returns o recording every outcome with the flights msg names (store.Outcome.Flights),
// so a search by flight finds the message whatever its outcome.
func (o outlet) naming(msg *sis.Message) outlet {
	flids := flightsOf(msg)
	if len(flids) == 0 {
		return o
	}
	record := o.record
	o.record = func(ctx context.Context, id int64, oc store.Outcome, now time.Time) error {
		oc.Flights = flids
		return record(ctx, id, oc, now)
	}
	return o
}

// success is what the success transaction of decided message m writes: its decision, note
// and warnings, its envelope's back-fill and the flights it names.
func success(m *store.Message, msg *sis.Message, tag, identity string, warnings []string, dec pipeline.Decision) store.Success {
	return store.Success{From: store.VersionOf(m), TypeTag: tag, Identity: identity,
		Meta:     store.Backfill{SNDR: msg.Meta.SNDR, TYPE: msg.Meta.TYPE, STYP: msg.Meta.STYP, SEQN: msg.Meta.SEQN, DTTM: msg.Meta.DTTM},
		Decision: dec, Note: dec.Note, Warnings: warnings, Flights: flightsOf(msg)}
}

// flightsOf returns the FLIDs msg names, read from its decoded body: a FLOP's record(s), each
// FLTR of a SCHD (the valid ones, and the invalid ones whose FLID was readable). The body is
// the one source every outcome has: a Decision's flight writes and events exist only for a
// message that was applied, and a FLOP for a flight the store lacks (ORPHAN) has none. A
// message that could not be decoded (nil msg, or no body) names no flight; reference data,
// SCHS (seasons carry no FLID) and other types name none.
func flightsOf(msg *sis.Message) []int64 {
	if msg == nil {
		return nil
	}
	var out []int64
	switch b := msg.Body.(type) {
	case *sis.FlopBody:
		for _, r := range b.Records {
			out = append(out, r.FLID)
		}
	case *sis.SchdBody:
		for _, f := range b.Flights {
			out = append(out, f.FLID)
		}
		for _, inv := range b.Invalid {
			if f, err := strconv.ParseInt(inv.Key, 10, 64); err == nil && f > 0 {
				out = append(out, f)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// succeeded reports a message applied: its log line, and the recent list when it has
// warnings.
func (p *Pump) succeeded(m *store.Message, tag, identity string, events, changed int, note string, warnings []string, now time.Time) {
	args := []any{"msg_id", m.ID, "type_tag", tag, "identity", identity, "attempts", m.Attempts + 1,
		"events", events, "ref_changed", changed, "note", note}
	if len(warnings) > 0 {
		args = append(args, "warnings", warnings)
		p.notable(Notable{MsgID: m.ID, TypeTag: tag, State: string(pipeline.Succeeded), At: now, Note: note, Warnings: warnings})
	}
	p.finished(m, pipeline.Succeeded, "", tag, now)
	p.appliedUpTo(m.ID)
	p.log.Info("message SUCCEEDED", args...)
}

// alreadyApplied records SUCCEEDED for a message whose row holds its own identity: the
// identity is bound only by the success transaction, so this message's effects are
// committed: the commit went through although its answer was lost. Applying it again would
// double its events.
func (p *Pump) alreadyApplied(ctx context.Context, out outlet, m *store.Message, tag, identity string, warnings []string, now time.Time) error {
	const note = "already applied; its commit's answer was lost"
	if err := out.record(ctx, m.ID, store.Outcome{State: pipeline.Succeeded, Attempts: m.Attempts, TypeTag: tag, Identity: identity,
		From: store.VersionOf(m), Note: note, Warnings: warnings}, now); err != nil {
		return err
	}
	out.later(func() {
		p.finished(m, pipeline.Succeeded, "", tag, now)
		p.appliedUpTo(m.ID)
		p.log.Info("message SUCCEEDED", "msg_id", m.ID, "type_tag", tag, "identity", identity, "note", note)
	})
	return nil
}

// withCopies returns evs with, after each event, its copies for the targets that copy its
// target.
func (p *Pump) withCopies(evs []pipeline.Event) []pipeline.Event {
	if len(p.opt.Copies) == 0 {
		return evs
	}
	out := make([]pipeline.Event, 0, len(evs))
	for _, e := range evs {
		out = append(out, e)
		for _, t := range p.opt.Copies[e.Target] {
			c := e
			c.Target = t
			out = append(out, c)
		}
	}
	return out
}

func (p *Pump) skip(ctx context.Context, out outlet, m *store.Message, msg *sis.Message, identity, reason string, now time.Time) error {
	meta := &store.Backfill{SNDR: msg.Meta.SNDR, TYPE: msg.Meta.TYPE, STYP: msg.Meta.STYP, SEQN: msg.Meta.SEQN, DTTM: msg.Meta.DTTM}
	o := store.Outcome{State: pipeline.Skipped, Attempts: m.Attempts, LastError: reason, TypeTag: msg.Tag(), Identity: identity, Meta: meta,
		From: store.VersionOf(m), Note: "not applied: " + reason, Warnings: msg.Warnings}
	if err := out.record(ctx, m.ID, o, now); err != nil {
		return err
	}
	out.later(func() {
		p.finished(m, pipeline.Skipped, "", msg.Tag(), now)
		p.log.Info("message SKIPPED", "msg_id", m.ID, "type_tag", msg.Tag(), "identity", identity, "reason", reason)
	})
	return nil
}

// fail records a failure of m under the retry policy: FAILED with its next attempt, or DEAD.
// A failure of a class in pipeline.park-classes is parked: DEAD at once under its own class,
// so the queue moves on (retrying cannot change what the same bytes give), replayable once
// msgx can handle it. It reports whether m was left FAILED (it then blocks the queue).
func (p *Pump) fail(ctx context.Context, out outlet, m *store.Message, cause error, tag, identity string, warnings []string, now time.Time) (failed bool, err error) {
	class := pipeline.ClassOf(cause)
	attempts := m.Attempts + 1
	first := timeOr(m.FirstFailedAt, now)
	v := p.opt.Policy.OnFailure(class, attempts, first, now)
	if v.Parked {
		o := store.Outcome{State: pipeline.Dead, Class: class, Attempts: attempts, FirstFailedAt: first, LastError: cause.Error(),
			TypeTag: tag, Identity: identity, From: store.VersionOf(m), Note: v.Reason, Warnings: warnings}
		if err := out.record(ctx, m.ID, o, now); err != nil {
			return false, err
		}
		out.later(func() {
			p.parked.WithLabelValues(string(class)).Inc()
			p.finished(m, pipeline.Dead, class, tag, now)
			p.notable(Notable{MsgID: m.ID, TypeTag: tag, State: "PARKED", Class: string(class), At: now, Note: cause.Error(), Warnings: warnings})
			p.log.Warn("message PARKED: DEAD at once, replayable; the queue moves on", "msg_id", m.ID, "type_tag", tag,
				"error_class", string(class), "err", cause.Error())
		})
		return false, nil
	}
	if v.Dead {
		last := cause.Error()
		if v.Reason != "" {
			last += "; " + v.Reason
		}
		return false, p.recordDeadTagged(ctx, out, m, v.Class, last, attempts, first, tag, identity, warnings, now)
	}
	o := store.Outcome{State: pipeline.Failed, Class: class, Attempts: attempts, NextAttemptAt: v.NextAttemptAt,
		FirstFailedAt: first, LastError: cause.Error(), TypeTag: tag, Identity: identity, From: store.VersionOf(m), Warnings: warnings}
	if err := out.record(ctx, m.ID, o, now); err != nil {
		return false, err
	}
	out.later(func() {
		p.log.Warn("message FAILED", "msg_id", m.ID, "type_tag", tag, "error_class", string(class), "attempts", attempts,
			"next_attempt_at", v.NextAttemptAt.Format(time.RFC3339Nano), "err", cause.Error())
	})
	return true, nil
}

func (p *Pump) recordDeadIn(ctx context.Context, out outlet, m *store.Message, class pipeline.ErrorClass, last string, attempts int, first, now time.Time) error {
	tag, ident := "", ""
	if m.TypeTag != nil {
		tag = *m.TypeTag
	}
	if m.Identity != nil {
		ident = *m.Identity
	}
	return p.recordDeadTagged(ctx, out, m, class, last, attempts, first, tag, ident, m.Warnings, now)
}

func (p *Pump) recordDeadTagged(ctx context.Context, out outlet, m *store.Message, class pipeline.ErrorClass, last string, attempts int, first time.Time, tag, identity string, warnings []string, now time.Time) error {
	o := store.Outcome{State: pipeline.Dead, Class: class, Attempts: attempts, FirstFailedAt: first, LastError: last, TypeTag: tag,
		Identity: identity, From: store.VersionOf(m), Warnings: warnings}
	if err := out.record(ctx, m.ID, o, now); err != nil {
		return err
	}
	out.later(func() {
		p.notable(Notable{MsgID: m.ID, TypeTag: tag, State: string(pipeline.Dead), Class: string(class), At: now, Note: last, Warnings: warnings})
		p.finished(m, pipeline.Dead, class, tag, now)
		p.log.Error("message DEAD", "msg_id", m.ID, "type_tag", tag, "error_class", string(class), "attempts", attempts, "err", last)
	})
	return nil
}

// finished reports a final outcome, once it is durable, to the metrics: started is when the
// pump took the message. A type tag no handler knows is counted as "other", so what a message
// claims to be cannot grow the metric's series without bound.
func (p *Pump) finished(m *store.Message, state pipeline.ProcStatus, class pipeline.ErrorClass, tag string, started time.Time) {
	if p.opt.Metrics == nil {
		return
	}
	if _, ok := p.reg.Lookup(tag); !ok {
		tag = "other"
	}
	p.opt.Metrics.Finished(state, class, tag, started, timeOr(m.ReceivedAt, time.Time{}))
}
