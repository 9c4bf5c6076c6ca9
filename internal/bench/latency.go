package bench

import (
	"context"
	"fmt"
	"slices"
	"time"

	"msgx/internal/handler"
)

// postTimes are one posted message's times: when its HTTP request started and when the
// inbox's answer (its id, durable) came back.
type postTimes struct{ start, answered time.Time }

// TargetLatency is one target's request→SENT percentiles over the messages with an event on
// it. The JSON keys are `msgx bench --json`'s.
type TargetLatency struct {
	Messages int     `json:"messages"`
	P50Ms    float64 `json:"p50_ms"`
	P99Ms    float64 `json:"p99_ms"`
	P999Ms   float64 `json:"p999_ms"`
}

func latencyOf(ds []time.Duration) TargetLatency {
	return TargetLatency{Messages: len(ds), P50Ms: Millis(Percentile(ds, 50)),
		P99Ms: Millis(Percentile(ds, 99)), P999Ms: Millis(Percentile(ds, 99.9))}
}

// Stages splits the day workload's request→SENT on the event-by-event targets (KAFKA_SCHD
// left out) in its parts, each with its own percentiles. The JSON keys are `msgx bench
// --json`'s.
type Stages struct {
	// Accept: the request's start to the inbox's answer (the message durable), per message.
	Accept TargetLatency `json:"accept"`
	// Process: the inbox's answer to the pump's commit of the message (queued behind the
	// batch in progress, its own batch's decisions and writes, the commit), per message.
	Process TargetLatency `json:"process"`
	// Deliver: the pump's commit to the dispatcher's SENT commit of the message's last event
	// on a target, per message and target.
	Deliver TargetLatency `json:"deliver"`
	// Send is the part of Deliver up to the sink's acknowledgement (the dispatcher's wake,
	// read, envelope and send); the rest is the wait for and the SENT commit itself.
	Send TargetLatency `json:"send"`
}

// latencies are the day workload's request→SENT times: per target, and per message to the
// last of its events on any target, and the stages of the event-by-event targets' times.
type latencies struct {
	perTarget map[string][]time.Duration
	overall   []time.Duration
	events    []time.Duration // per message, to the last of its events on the event-by-event targets
	noEvents  int             // posted messages that emitted no event

	accept, process, deliver, send []time.Duration
}

func (l latencies) report(r *Result) {
	all := latencyOf(l.overall)
	r.AcceptToSentP50Ms, r.AcceptToSentP99Ms, r.AcceptToSentP999Ms = all.P50Ms, all.P99Ms, all.P999Ms
	events := latencyOf(l.events)
	r.EventTargets = &events
	r.Targets = map[string]TargetLatency{}
	for t, ds := range l.perTarget {
		r.Targets[t] = latencyOf(ds)
	}
	r.MessagesWithoutEvents = l.noEvents
	r.Stages = &Stages{Accept: latencyOf(l.accept), Process: latencyOf(l.process),
		Deliver: latencyOf(l.deliver), Send: latencyOf(l.send)}
}

// targetLatencies waits (up to 2 s: OnSent is called just after the commit the outbox's
// state showed) until every event has its SENT commit recorded, then measures, per message
// and target, from the request's start to the commit of its last event there, and the stages
// of that time (Stages; decided holds each message's PROCESSED_AT).
func (d *Deliveries) targetLatencies(ctx context.Context, posted map[int64]postTimes, events []event, decided map[int64]time.Time) (latencies, error) {
	wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	waitFor(wctx, time.Millisecond, "the last SENT commits", func() (bool, error) {
		return d.missingCommits(events) == 0, nil
	})
	cancel()
	if n := d.missingCommits(events); n > 0 {
		return latencies{}, fmt.Errorf("%w: %d events SENT without the dispatcher's commit being seen", errFailed, n)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	last, acked := map[msgTarget]time.Time{}, map[msgTarget]time.Time{}
	lastAny, lastEvent := map[int64]time.Time{}, map[int64]time.Time{}
	for _, e := range events {
		k := msgTarget{e.msg, e.target}
		ev := sent{e.target, e.id}
		last[k] = later(last[k], d.committed[ev])
		acked[k] = later(acked[k], d.acked[ev])
		lastAny[e.msg] = later(lastAny[e.msg], d.committed[ev])
		if e.target != handler.TargetSchd {
			lastEvent[e.msg] = later(lastEvent[e.msg], d.committed[ev])
		}
	}
	l := latencies{perTarget: map[string][]time.Duration{}}
	for k, at := range last {
		l.perTarget[k.target] = append(l.perTarget[k.target], at.Sub(posted[k.msg].start))
	}
	for msg, p := range posted {
		at, ok := lastAny[msg]
		if !ok {
			l.noEvents++
			continue
		}
		l.overall = append(l.overall, at.Sub(p.start))
		if at, ok := lastEvent[msg]; ok {
			l.events = append(l.events, at.Sub(p.start))
		}
	}
	if len(l.overall) == 0 {
		return l, fmt.Errorf("%w: no message of the latency phase emitted an event", errFailed)
	}
	d.stagesLocked(&l, posted, last, acked, decided)
	return l, nil
}

// msgTarget is a message's events on one target.
type msgTarget struct {
	msg    int64
	target string
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// stagesLocked splits the event-by-event targets' times of l in Stages, with d.mu held.
func (d *Deliveries) stagesLocked(l *latencies, posted map[int64]postTimes, last, acked map[msgTarget]time.Time, decided map[int64]time.Time) {
	committed := map[int64]time.Time{}
	for k := range last {
		if _, ok := committed[k.msg]; ok || k.target == handler.TargetSchd {
			continue
		}
		p := posted[k.msg]
		at, ok := d.pumpCommitAfter(decided[k.msg])
		if !ok || decided[k.msg].IsZero() {
			continue
		}
		committed[k.msg] = at
		l.accept = append(l.accept, p.answered.Sub(p.start))
		l.process = append(l.process, at.Sub(p.answered))
	}
	for k, sent := range last {
		at, ok := committed[k.msg]
		if !ok || k.target == handler.TargetSchd {
			continue
		}
		l.deliver = append(l.deliver, sent.Sub(at))
		l.send = append(l.send, acked[k].Sub(at))
	}
}

// missingCommits counts the events whose SENT commit has not been recorded.
func (d *Deliveries) missingCommits(events []event) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(slices.DeleteFunc(slices.Clone(events), func(e event) bool {
		_, ok := d.committed[sent{e.target, e.id}]
		return ok
	}))
}
