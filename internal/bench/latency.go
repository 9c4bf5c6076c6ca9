package bench

import (
	"context"
	"fmt"
	"slices"
	"time"
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

// latencies are the day workload's request→SENT times: per target, and per message to the
// last of its events on any target.
type latencies struct {
	perTarget map[string][]time.Duration
	overall   []time.Duration
	noEvents  int // posted messages that emitted no event
}

func (l latencies) report(r *Result) {
	all := latencyOf(l.overall)
	r.AcceptToSentP50Ms, r.AcceptToSentP99Ms, r.AcceptToSentP999Ms = all.P50Ms, all.P99Ms, all.P999Ms
	r.Targets = map[string]TargetLatency{}
	for t, ds := range l.perTarget {
		r.Targets[t] = latencyOf(ds)
	}
	r.MessagesWithoutEvents = l.noEvents
}

// targetLatencies waits (up to 2 s: OnSent is called just after the commit the outbox's
// state showed) until every event has its SENT commit recorded, then measures, per message
// and target, from the request's start to the commit of its last event there.
func (d *Deliveries) targetLatencies(ctx context.Context, posted map[int64]postTimes, events []event) (latencies, error) {
	wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	waitFor(wctx, time.Millisecond, "the last SENT commits", func() (bool, error) {
		return d.missingCommits(events) == 0, nil
	})
	cancel()
	if n := d.missingCommits(events); n > 0 {
		return latencies{}, fmt.Errorf("%w: %d events SENT without the dispatcher's commit being seen", errFailed, n)
	}
	d.mu.Lock()
	type key struct {
		msg    int64
		target string
	}
	last := map[key]time.Time{}
	lastAny := map[int64]time.Time{}
	for _, e := range events {
		at := d.committed[e.id]
		k := key{e.msg, e.target}
		if at.After(last[k]) {
			last[k] = at
		}
		if at.After(lastAny[e.msg]) {
			lastAny[e.msg] = at
		}
	}
	d.mu.Unlock()
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
	}
	if len(l.overall) == 0 {
		return l, fmt.Errorf("%w: no message of the latency phase emitted an event", errFailed)
	}
	return l, nil
}

// missingCommits counts the events whose SENT commit has not been recorded.
func (d *Deliveries) missingCommits(events []event) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(slices.DeleteFunc(slices.Clone(events), func(e event) bool {
		_, ok := d.committed[e.id]
		return ok
	}))
}
