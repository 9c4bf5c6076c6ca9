package pump

// A message's outcome: written into the batch through an outlet (SUCCEEDED, SKIPPED, FAILED by
// the retry policy, parked, DEAD), and reported (log line, metrics, the recent list) once it
// is durable.

import (
	"context"
	"log/slog"
	"slices"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"msgx/internal/handler"
	"msgx/internal/metrics"
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

// subject is a message an outcome is recorded for: its row, what its decoding gave (the
// decoded message, nil when it did not decode; the type tag, identity and warnings it is
// recorded with) and when the pump took it.
type subject struct {
	m             *store.Message
	msg           *sis.Message
	tag, identity string
	warnings      []string
	now           time.Time
}

// stored is the subject of message m as its row knows it (no decoding at hand): a FAILED
// head past its deadline, a message whose raw text is missing.
func stored(m *store.Message, now time.Time) subject {
	s := subject{m: m, warnings: m.Warnings, now: now}
	if m.TypeTag != nil {
		s.tag = *m.TypeTag
	}
	if m.Identity != nil {
		s.identity = *m.Identity
	}
	return s
}

// death is why a message is DEAD: the class it dies under, the error recorded, after how many
// attempts and since when it failed.
type death struct {
	class    pipeline.ErrorClass
	last     string
	attempts int
	first    time.Time
}

// success is what the success transaction of decided message s writes: its decision, note
// and warnings, its envelope's back-fill and the flights it names.
func success(s subject, dec pipeline.Decision) store.Success {
	msg := s.msg
	return store.Success{From: store.VersionOf(s.m), TypeTag: s.tag, Identity: s.identity,
		Meta:     store.Backfill{SNDR: msg.Meta.SNDR, TYPE: msg.Meta.TYPE, STYP: msg.Meta.STYP, SEQN: msg.Meta.SEQN, DTTM: msg.Meta.DTTM},
		Decision: dec, Note: dec.Note, Warnings: s.warnings, Flights: flightsOf(msg)}
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

// outcomes records the outcomes of messages through an outlet, by the retry policy, and
// reports each once it is durable: its log line, its metrics and, when notable, the recent
// list (status).
type outcomes struct {
	policy  pipeline.RetryPolicy
	reg     *handler.Registry // a type tag no handler knows is counted as "other"
	metrics *metrics.Metrics
	parked  *prometheus.CounterVec // msgx_messages_parked_total{class}
	status  *status
	order   *order // told each message applied
	log     *slog.Logger
}

// newOutcomes returns the outcomes of a pump, with its parked counter's series for every
// class at zero from the start.
func newOutcomes(policy pipeline.RetryPolicy, reg *handler.Registry, m *metrics.Metrics, st *status, ord *order, log *slog.Logger) *outcomes {
	parked := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "msgx_messages_parked_total",
		Help: "Messages parked at once (DEAD under their own class, replayable) because retrying cannot change their outcome (pipeline.park-classes).",
	}, []string{"class"})
	for _, c := range pipeline.Classes {
		parked.WithLabelValues(string(c))
	}
	return &outcomes{policy: policy, reg: reg, metrics: m, parked: parked, status: st, order: ord, log: log}
}

// succeeded reports message s applied: its log line, and the recent list when it has
// warnings.
func (o *outcomes) succeeded(s subject, events, changed int, note string) {
	m := s.m
	args := []any{"msg_id", m.ID, "type_tag", s.tag, "identity", s.identity, "attempts", m.Attempts + 1,
		"events", events, "ref_changed", changed, "note", note}
	if len(s.warnings) > 0 {
		args = append(args, "warnings", s.warnings)
		o.status.notable(Notable{MsgID: m.ID, TypeTag: s.tag, State: string(pipeline.Succeeded), At: s.now, Note: note, Warnings: s.warnings})
	}
	o.finished(m, pipeline.Succeeded, "", s.tag, s.now)
	o.order.appliedUpTo(m.ID)
	o.log.Info("message SUCCEEDED", args...)
}

// alreadyApplied records SUCCEEDED for a message whose row holds its own identity: the
// identity is bound only by the success transaction, so this message's effects are
// committed: the commit went through although its answer was lost. Applying it again would
// double its events.
func (o *outcomes) alreadyApplied(ctx context.Context, out outlet, s subject) error {
	const note = "already applied; its commit's answer was lost"
	m := s.m
	if err := out.record(ctx, m.ID, store.Outcome{State: pipeline.Succeeded, Attempts: m.Attempts, TypeTag: s.tag, Identity: s.identity,
		From: store.VersionOf(m), Note: note, Warnings: s.warnings}, s.now); err != nil {
		return err
	}
	out.later(func() {
		o.finished(m, pipeline.Succeeded, "", s.tag, s.now)
		o.order.appliedUpTo(m.ID)
		o.log.Info("message SUCCEEDED", "msg_id", m.ID, "type_tag", s.tag, "identity", s.identity, "note", note)
	})
	return nil
}

// skip records s SKIPPED for reason, with its envelope's back-fill and its decoder's
// warnings.
func (o *outcomes) skip(ctx context.Context, out outlet, s subject, reason string) error {
	m, msg := s.m, s.msg
	meta := &store.Backfill{SNDR: msg.Meta.SNDR, TYPE: msg.Meta.TYPE, STYP: msg.Meta.STYP, SEQN: msg.Meta.SEQN, DTTM: msg.Meta.DTTM}
	oc := store.Outcome{State: pipeline.Skipped, Attempts: m.Attempts, LastError: reason, TypeTag: msg.Tag(), Identity: s.identity, Meta: meta,
		From: store.VersionOf(m), Note: "not applied: " + reason, Warnings: msg.Warnings}
	if err := out.record(ctx, m.ID, oc, s.now); err != nil {
		return err
	}
	out.later(func() {
		o.finished(m, pipeline.Skipped, "", msg.Tag(), s.now)
		o.log.Info("message SKIPPED", "msg_id", m.ID, "type_tag", msg.Tag(), "identity", s.identity, "reason", reason)
	})
	return nil
}

// fail records a failure of s under the retry policy: FAILED with its next attempt, or DEAD.
// A failure of a class in pipeline.park-classes is parked: DEAD at once under its own class,
// so the queue moves on (retrying cannot change what the same bytes give), replayable once
// msgx can handle it. It reports whether s was left FAILED (it then blocks the queue).
func (o *outcomes) fail(ctx context.Context, out outlet, s subject, cause error) (failed bool, err error) {
	m, now := s.m, s.now
	class := pipeline.ClassOf(cause)
	attempts := m.Attempts + 1
	first := timeOr(m.FirstFailedAt, now)
	v := o.policy.OnFailure(class, attempts, first, now)
	if v.Parked {
		oc := store.Outcome{State: pipeline.Dead, Class: class, Attempts: attempts, FirstFailedAt: first, LastError: cause.Error(),
			TypeTag: s.tag, Identity: s.identity, From: store.VersionOf(m), Note: v.Reason, Warnings: s.warnings}
		if err := out.record(ctx, m.ID, oc, now); err != nil {
			return false, err
		}
		out.later(func() {
			o.parked.WithLabelValues(string(class)).Inc()
			o.finished(m, pipeline.Dead, class, s.tag, now)
			o.status.notable(Notable{MsgID: m.ID, TypeTag: s.tag, State: "PARKED", Class: string(class), At: now, Note: cause.Error(), Warnings: s.warnings})
			o.log.Warn("message PARKED: DEAD at once, replayable; the queue moves on", "msg_id", m.ID, "type_tag", s.tag,
				"error_class", string(class), "err", cause.Error())
		})
		return false, nil
	}
	if v.Dead {
		last := cause.Error()
		if v.Reason != "" {
			last += "; " + v.Reason
		}
		return false, o.dead(ctx, out, s, death{class: v.Class, last: last, attempts: attempts, first: first})
	}
	oc := store.Outcome{State: pipeline.Failed, Class: class, Attempts: attempts, NextAttemptAt: v.NextAttemptAt,
		FirstFailedAt: first, LastError: cause.Error(), TypeTag: s.tag, Identity: s.identity, From: store.VersionOf(m), Warnings: s.warnings}
	if err := out.record(ctx, m.ID, oc, now); err != nil {
		return false, err
	}
	out.later(func() {
		o.log.Warn("message FAILED", "msg_id", m.ID, "type_tag", s.tag, "error_class", string(class), "attempts", attempts,
			"next_attempt_at", v.NextAttemptAt.Format(time.RFC3339Nano), "err", cause.Error())
	})
	return true, nil
}

// dead records s DEAD for d.
func (o *outcomes) dead(ctx context.Context, out outlet, s subject, d death) error {
	m, now := s.m, s.now
	oc := store.Outcome{State: pipeline.Dead, Class: d.class, Attempts: d.attempts, FirstFailedAt: d.first, LastError: d.last, TypeTag: s.tag,
		Identity: s.identity, From: store.VersionOf(m), Warnings: s.warnings}
	if err := out.record(ctx, m.ID, oc, now); err != nil {
		return err
	}
	out.later(func() {
		o.status.notable(Notable{MsgID: m.ID, TypeTag: s.tag, State: string(pipeline.Dead), Class: string(d.class), At: now, Note: d.last, Warnings: s.warnings})
		o.finished(m, pipeline.Dead, d.class, s.tag, now)
		o.log.Error("message DEAD", "msg_id", m.ID, "type_tag", s.tag, "error_class", string(d.class), "attempts", d.attempts, "err", d.last)
	})
	return nil
}

// finished reports a final outcome, once it is durable, to the metrics: started is when the
// pump took the message. A type tag no handler knows is counted as "other", so what a message
// claims to be cannot grow the metric's series without bound.
func (o *outcomes) finished(m *store.Message, state pipeline.ProcStatus, class pipeline.ErrorClass, tag string, started time.Time) {
	if o.metrics == nil {
		return
	}
	if _, ok := o.reg.Lookup(tag); !ok {
		tag = "other"
	}
	o.metrics.Finished(state, class, tag, started, timeOr(m.ReceivedAt, time.Time{}))
}
