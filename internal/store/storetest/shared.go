package storetest

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"msgx/internal/event"
	"msgx/internal/pipeline"
	"msgx/internal/store"
)

// The outbox as a log (migration 00018): the pump writes each flight change once, a shared
// row (TARGET event.Shared) that every target in whose range it falls takes, and a target gets
// a row of its own for it only when the event leaves the happy path for that target. These
// cases hold the outbox's readers and writers to that: each target sees the shared rows as its
// own events, and what one target does with them never shows on another.

// shT0 is the time the cases of this file start at; the listings show times of day.
var shT0 = time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)

// shAt returns shT0 plus s seconds.
func shAt(s int) time.Time { return shT0.Add(time.Duration(s) * time.Second) }

// cjkPayload is the one payload of the cases in CJK and 4-byte text.
const cjkPayload = `{"登机口":"🛫 B12","航班":"东方 7301"}`

// sharedWrite is what writeShared wrote: the rows' ids in order, their payloads by id and the
// message that wrote them.
type sharedWrite struct {
	ids      []int64
	payloads map[int64]string
	msg      int64
}

// writeShared commits a new message at `at` the way the pump does, with one flight change
// per payload (a shared event of kind change, each for its own flight), and returns the
// shared rows it wrote, checking that each change is one row of TARGET event.Shared.
func writeShared(t *testing.T, db *store.DB, at time.Time, payloads ...string) sharedWrite {
	t.Helper()
	ctx := context.Background()
	msgs, err := db.Intake.InsertMessages(ctx, []string{"<shared/>"}, at)
	if err != nil {
		t.Fatal(err)
	}
	var evs []pipeline.Event
	var flids []int64
	for i, p := range payloads {
		flid := 7200 + msgs[0]*10 + int64(i)
		evs = append(evs, pipeline.Event{Target: event.Shared, Kind: event.KindChange, Key: fmt.Sprint(flid), Payload: []byte(p)})
		flids = append(flids, flid)
	}
	if _, _, err := db.Processor.Succeed(ctx, msgs[0], store.Success{TypeTag: "FLOP-STND", Identity: fmt.Sprintf("shared|%d", msgs[0]),
		Decision: pipeline.Decision{Events: evs}, Flights: flids}, nil, at); err != nil {
		t.Fatal(err)
	}
	rows, err := db.SQLDB().Query(`SELECT EVENT_ID, TARGET FROM MSG_EVENT WHERE CMINMSGS_ID = ? ORDER BY EVENT_ID`, msgs[0])
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	w := sharedWrite{payloads: map[int64]string{}, msg: msgs[0]}
	for rows.Next() {
		var id int64
		var target string
		if err := rows.Scan(&id, &target); err != nil {
			t.Fatal(err)
		}
		if target != event.Shared {
			t.Fatalf("the pump wrote event %d for target %q, want one shared row (%q) per change", id, target, event.Shared)
		}
		w.payloads[id] = payloads[len(w.ids)]
		w.ids = append(w.ids, id)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(w.ids) != len(payloads) {
		t.Fatalf("%d changes wrote %d rows", len(payloads), len(w.ids))
	}
	return w
}

// openTargets configures targets (OpenTargets), failing t on error.
func openTargets(t *testing.T, db *store.DB, targets ...string) {
	t.Helper()
	if err := db.Outbox.OpenTargets(context.Background(), targets, nil); err != nil {
		t.Fatal(err)
	}
}

// markIDs runs MarkSent of ids for target at `at` in a transaction of its own and returns
// its count.
func markIDs(t *testing.T, db *store.DB, target string, at time.Time, ids ...int64) int {
	t.Helper()
	var n int
	if err := db.Outbox.EventTx(context.Background(), func(tx store.EventTx) (err error) {
		n, err = tx.MarkSent(target, ids, at)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

// headOf returns target's PENDING events (PendingEvents) by id.
func headOf(t *testing.T, db *store.DB, target string) map[int64]store.Event {
	t.Helper()
	evs, err := db.Outbox.PendingEvents(context.Background(), target, 100)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int64]store.Event{}
	for _, e := range evs {
		out[e.EventID] = e
	}
	return out
}

// rowText is e as the listings of these cases compare it: "id:STATE", with "@hh:mm:ss" for a
// sent time and "/TARGET" when the listing has several targets.
func rowText(e store.Event, withTarget bool) string {
	s := fmt.Sprintf("%d:%s", e.EventID, e.State)
	if e.SentAt != nil {
		s += "@" + e.SentAt.UTC().Format("15:04:05")
	}
	if withTarget {
		s += "/" + e.Target
	}
	return s
}

// viewOf returns target's events as ListEvents shows them, in rowText form.
func viewOf(t *testing.T, db *store.DB, target string) string {
	t.Helper()
	evs, err := db.Outbox.ListEvents(context.Background(), store.EventFilter{Target: target})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range evs {
		if e.Target != target {
			t.Fatalf("ListEvents of %s returned event %d of %s", target, e.EventID, e.Target)
		}
		out = append(out, rowText(e, false))
	}
	return strings.Join(out, " ")
}

// wantView checks viewOf(target) against want, rows of the form "id:STATE[@hh:mm:ss]".
func wantView(t *testing.T, db *store.DB, target, when string, want ...string) {
	t.Helper()
	if got := viewOf(t, db, target); got != strings.Join(want, " ") {
		t.Fatalf("%s: %s's events %q, want %q", when, target, got, strings.Join(want, " "))
	}
}

// row is rowText's form of event id in state st, "@"+at (hh:mm:ss) when at is not "".
func row(id int64, st pipeline.EventStatus, at string) string {
	s := fmt.Sprintf("%d:%s", id, st)
	if at != "" {
		s += "@" + at
	}
	return s
}

// markOf reads target's delivery mark (MSG_EVENT_SENT.UPTO_EVENT_ID).
func markOf(t *testing.T, db *store.DB, target string) int64 {
	t.Helper()
	var m int64
	if err := db.SQLDB().QueryRow(`SELECT UPTO_EVENT_ID FROM MSG_EVENT_SENT WHERE TARGET = ?`, target).Scan(&m); err != nil {
		t.Fatalf("the delivery mark of %s: %v", target, err)
	}
	return m
}

// baseTargets are the four targets that take every shared row (migration 00018), in order.
var baseTargets = []string{event.TargetES, event.TargetFlop, event.TargetSchd, event.TargetNotify}

// Every target takes the shared rows in its range as its own PENDING events, in EVENT_ID
// order, under its own name and with the canonical payload as stored: a base target all of
// them, a target added by OpenTargets only those written after it was added (every one with
// start-at earliest). Every reader of
// the head agrees (PendingEvents, PendingAtLeast, ListEvents and SearchEvents by state,
// EventCounts with the oldest one's time).
func sharedRowsArePendingForEveryTargetThatTakesThem(t *testing.T, db *store.DB) {
	ctx := context.Background()
	early := writeShared(t, db, shAt(0), `{"n":1}`, `{"n":2}`)
	openTargets(t, db, "HOOK")
	// A target first configured with start-at: earliest takes the rows written before it too.
	if err := db.Outbox.OpenTargets(ctx, []string{"HOOK", "EARLY"}, []string{"EARLY"}); err != nil {
		t.Fatal(err)
	}
	late := writeShared(t, db, shAt(60), cjkPayload, `{"n":4}`, `{}`)
	all := append(slices.Clone(early.ids), late.ids...)
	payloads := map[int64]string{}
	for _, w := range []sharedWrite{early, late} {
		for id, p := range w.payloads {
			payloads[id] = p
		}
	}
	for _, c := range []struct {
		target string
		want   []int64
		oldest time.Time
	}{{event.TargetFlop, all, shAt(0)}, {"HOOK", late.ids, shAt(60)}, {"EARLY", all, shAt(0)}} {
		evs, err := db.Outbox.PendingEvents(ctx, c.target, 100)
		if err != nil {
			t.Fatal(err)
		}
		if got := idsOf(evs, func(e store.Event) int64 { return e.EventID }); !slices.Equal(got, c.want) {
			t.Fatalf("%s: pending %v, want %v", c.target, got, c.want)
		}
		for _, e := range evs {
			msg := early.msg
			if slices.Contains(late.ids, e.EventID) {
				msg = late.msg
			}
			if e.Target != c.target || e.State != pipeline.EventPending || e.Kind != event.KindChange || string(e.Raw) != payloads[e.EventID] ||
				e.MsgID != msg || e.TypeTag != "FLOP-STND" || e.Key() == "" || e.Attempts != 0 || e.ErrorClass != nil || e.LastError != nil ||
				e.SentAt != nil || e.NextAttemptAt != nil || e.FirstFailedAt != nil {
				t.Fatalf("%s: pending event %d: %+v (raw %s), want it PENDING for %s with payload %s", c.target, e.EventID, e, e.Raw, c.target, payloads[e.EventID])
			}
		}
		if first, err := db.Outbox.PendingEvents(ctx, c.target, 2); err != nil || len(first) != 2 || first[1].EventID != c.want[1] {
			t.Fatalf("%s: the first 2 pending: %+v %v", c.target, first, err)
		}
		for n, want := range map[int]bool{len(c.want): true, len(c.want) + 1: false} {
			if ok, err := db.Outbox.PendingAtLeast(ctx, c.target, n); err != nil || ok != want {
				t.Fatalf("%s: PendingAtLeast(%d) %v %v, want %v", c.target, n, ok, err, want)
			}
		}
		for st, want := range map[pipeline.EventStatus][]int64{pipeline.EventPending: c.want, pipeline.EventSent: nil, pipeline.EventDead: nil} {
			list, err := db.Outbox.ListEvents(ctx, store.EventFilter{Target: c.target, State: st})
			if err != nil {
				t.Fatal(err)
			}
			if got := idsOf(list, func(e store.Event) int64 { return e.EventID }); !slices.Equal(got, want) {
				t.Fatalf("%s: listed %s %v, want %v", c.target, st, got, want)
			}
			for _, e := range list {
				if e.Target != c.target || string(e.Payload) != payloads[e.EventID] {
					t.Fatalf("%s: listed event %d of %s with payload %s", c.target, e.EventID, e.Target, e.Payload)
				}
			}
			found, err := db.Operations.SearchEvents(ctx, store.EventQuery{Target: c.target, State: st})
			if err != nil {
				t.Fatal(err)
			}
			if got := idsOf(found, func(e store.EventBrief) int64 { return e.EventID }); !slices.Equal(got, want) {
				t.Fatalf("%s: found %s %v, want %v", c.target, st, got, want)
			}
		}
		counts, err := db.Outbox.EventCounts(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, n := range counts {
			if n.Target == c.target {
				got = append(got, fmt.Sprintf("%s=%d@%s", n.State, n.Count, n.Oldest.Time.UTC().Format("15:04:05")))
			}
		}
		if want := fmt.Sprintf("PENDING=%d@%s", len(c.want), c.oldest.Format("15:04:05")); strings.Join(got, " ") != want {
			t.Fatalf("%s: counts %v, want %s", c.target, got, want)
		}
	}
}

// A delivery of one target (MarkSent) makes its shared rows SENT for it alone, at the time of
// the mark's raise that covered them, counted once however often they are marked; every other
// target still has them PENDING.
func aDeliveryMarkCoversSharedRowsForItsTargetAlone(t *testing.T, db *store.DB) {
	ctx := context.Background()
	openTargets(t, db, "HOOK")
	w := writeShared(t, db, shAt(0), `{"n":1}`, cjkPayload, `{"n":3}`, `{"n":4}`)
	e := w.ids
	if n := markIDs(t, db, event.TargetFlop, shAt(1), e[0], e[1], e[2]); n != 3 {
		t.Fatalf("marked %d of 3", n)
	}
	wantView(t, db, event.TargetFlop, "after a run", row(e[0], "SENT", "08:00:01"), row(e[1], "SENT", "08:00:01"), row(e[2], "SENT", "08:00:01"),
		row(e[3], "PENDING", ""))
	wantPending(t, db, event.TargetFlop, "after a run", e[3])
	wantCounts(t, db, event.TargetFlop, "after a run", "PENDING=1 SENT=3")
	sent, err := db.Operations.SearchEvents(ctx, store.EventQuery{Target: event.TargetFlop, State: pipeline.EventSent})
	if err != nil || len(sent) != 3 {
		t.Fatalf("SENT events found: %d %v", len(sent), err)
	}
	for _, s := range sent {
		if s.SentAt == nil || !s.SentAt.Equal(shAt(1)) || s.NextAttemptAt != nil || string(s.Payload) != w.payloads[s.EventID] {
			t.Fatalf("SENT event found: %+v", s)
		}
	}
	if n := markIDs(t, db, event.TargetFlop, shAt(2), e[0], e[1], e[2]); n != 0 {
		t.Fatalf("a run marked twice counted %d more", n)
	}
	if n := markIDs(t, db, event.TargetFlop, shAt(3), e[3]); n != 1 {
		t.Fatalf("marked %d of 1", n)
	}
	wantView(t, db, event.TargetFlop, "after the last", row(e[0], "SENT", "08:00:01"), row(e[1], "SENT", "08:00:01"), row(e[2], "SENT", "08:00:01"),
		row(e[3], "SENT", "08:00:03"))
	wantCounts(t, db, event.TargetFlop, "after the last", "SENT=4")
	for _, other := range []string{"HOOK", event.TargetSchd} {
		wantView(t, db, other, "of another target", row(e[0], "PENDING", ""), row(e[1], "PENDING", ""), row(e[2], "PENDING", ""), row(e[3], "PENDING", ""))
		wantCounts(t, db, other, "of another target", "PENDING=4")
	}
	if ok, err := db.Outbox.PendingAtLeast(ctx, event.TargetFlop, 1); err != nil || ok {
		t.Fatalf("PendingAtLeast(1) of a target that sent everything: %v %v", ok, err)
	}
}

// A backoff of a shared event gives the target a row of its own (its attempt, error and next
// attempt), which the head shows once, in the shared row's place; a second decision taken on
// the same stale read changes nothing; delivered, the own row is SENT and the mark moves past
// it. Other targets see none of it.
func aBackoffGivesATargetItsOwnRowOfASharedEvent(t *testing.T, db *store.DB) {
	ctx := context.Background()
	openTargets(t, db, "HOOK")
	w := writeShared(t, db, shAt(0), cjkPayload, `{"n":2}`, `{"n":3}`)
	e := w.ids
	head, err := db.Outbox.PendingEvents(ctx, event.TargetFlop, 10)
	if err != nil || len(head) != 3 {
		t.Fatalf("head: %d %v", len(head), err)
	}
	stale := head[0]
	backoff := store.EventChange{State: pipeline.EventPending, AddAttempt: true, NextAttemptAt: shAt(30), FirstFailedAt: shAt(1),
		Class: pipeline.Infra, LastError: "sink down: 下游 🛑"}
	if n := change(t, db, backoff, &head[0]); n != 1 {
		t.Fatalf("backoff of a shared event changed %d rows, want 1", n)
	}
	wantPending(t, db, event.TargetFlop, "after the backoff", e...)
	h := headOf(t, db, event.TargetFlop)[e[0]]
	if h.Target != event.TargetFlop || h.Attempts != 1 || h.ErrorClass == nil || *h.ErrorClass != string(pipeline.Infra) ||
		h.LastErrorText() != backoff.LastError || !h.NextAttempt().Equal(shAt(30)) || !h.FirstFailed().Equal(shAt(1)) ||
		string(h.Raw) != cjkPayload || h.Kind != event.KindChange || h.MsgID != w.msg || h.Key() == "" || !h.CreatedAt.Equal(shAt(0)) {
		t.Fatalf("the head after its backoff: %+v (raw %s)", h, h.Raw)
	}
	wantView(t, db, event.TargetFlop, "after the backoff", row(e[0], "PENDING", ""), row(e[1], "PENDING", ""), row(e[2], "PENDING", ""))
	wantCounts(t, db, event.TargetFlop, "after the backoff", "PENDING=3")
	if ok, _ := db.Outbox.PendingAtLeast(ctx, event.TargetFlop, 4); ok {
		t.Fatal("4 pending after a backoff of one of 3")
	}
	// The same decision again, or another one, on the read before the backoff: fenced out.
	if n := change(t, db, backoff, &stale); n != 0 {
		t.Fatalf("a second backoff from a stale read changed %d rows", n)
	}
	if n := change(t, db, store.EventChange{State: pipeline.EventDead, Class: pipeline.Exhausted, LastError: "late"}, &stale); n != 0 {
		t.Fatalf("a DEAD from a stale read changed %d rows", n)
	}
	if h := headOf(t, db, event.TargetFlop)[e[0]]; h.Attempts != 1 || h.LastErrorText() != backoff.LastError {
		t.Fatalf("the head after stale decisions: %+v", h)
	}
	if n := markIDs(t, db, event.TargetFlop, shAt(40), e[0]); n != 1 {
		t.Fatalf("marked %d of the backed-off event", n)
	}
	if m := markOf(t, db, event.TargetFlop); m != e[0] {
		t.Fatalf("the mark after the backed-off event's delivery: %d, want %d", m, e[0])
	}
	wantView(t, db, event.TargetFlop, "after its delivery", row(e[0], "SENT", "08:00:40"), row(e[1], "PENDING", ""), row(e[2], "PENDING", ""))
	wantPending(t, db, event.TargetFlop, "after its delivery", e[1], e[2])
	wantCounts(t, db, event.TargetFlop, "after its delivery", "PENDING=2 SENT=1")
	if n := markIDs(t, db, event.TargetFlop, shAt(41), e[0]); n != 0 {
		t.Fatalf("the backed-off event counted twice: %d", n)
	}
	for _, other := range []string{"HOOK", event.TargetNotify} {
		wantPending(t, db, other, "of another target", e...)
		if h := headOf(t, db, other)[e[0]]; h.Attempts != 0 || h.ErrorClass != nil || h.NextAttemptAt != nil || h.Target != other {
			t.Fatalf("%s's head after another target's backoff: %+v", other, h)
		}
		wantCounts(t, db, other, "of another target", "PENDING=3")
	}
}

// A shared event gone DEAD for a target is that target's alone: its head moves on, the next
// deliveries raise its mark over it, it is listed and counted DEAD with its error; replayed,
// it is pending again ahead of the rest and is delivered once. Another target never sees any
// of it.
func aDeadSharedEventIsTheTargetsAloneAndReplays(t *testing.T, db *store.DB) {
	ctx := context.Background()
	openTargets(t, db, "HOOK")
	w := writeShared(t, db, shAt(0), cjkPayload, `{"n":2}`, `{"n":3}`, `{"n":4}`)
	e := w.ids
	head, _ := db.Outbox.PendingEvents(ctx, event.TargetFlop, 1)
	dead := store.EventChange{State: pipeline.EventDead, Class: pipeline.Rejected, LastError: "rejected: 拒绝 🛑"}
	if n := change(t, db, dead, &head[0]); n != 1 {
		t.Fatalf("DEAD changed %d rows, want 1", n)
	}
	wantPending(t, db, event.TargetFlop, "after DEAD", e[1], e[2], e[3])
	if n := markIDs(t, db, event.TargetFlop, shAt(1), e[1], e[2]); n != 2 {
		t.Fatalf("marked %d of 2 after the DEAD one", n)
	}
	if m := markOf(t, db, event.TargetFlop); m != e[2] {
		t.Fatalf("the mark after a run past a DEAD event: %d, want %d", m, e[2])
	}
	wantView(t, db, event.TargetFlop, "after the run", row(e[0], "DEAD", ""), row(e[1], "SENT", "08:00:01"), row(e[2], "SENT", "08:00:01"),
		row(e[3], "PENDING", ""))
	wantCounts(t, db, event.TargetFlop, "after the run", "PENDING=1 DEAD=1 SENT=2")
	listed, err := db.Outbox.ListEvents(ctx, store.EventFilter{Target: event.TargetFlop, State: pipeline.EventDead})
	if err != nil || len(listed) != 1 {
		t.Fatalf("DEAD listed: %d %v", len(listed), err)
	}
	if d := listed[0]; d.EventID != e[0] || d.Target != event.TargetFlop || d.ErrorClass == nil || *d.ErrorClass != string(pipeline.Rejected) ||
		d.LastErrorText() != dead.LastError || string(d.Payload) != cjkPayload {
		t.Fatalf("DEAD listed: %+v", d)
	}
	if found, err := db.Operations.SearchEvents(ctx, store.EventQuery{State: pipeline.EventDead}); err != nil || len(found) != 1 ||
		found[0].Target != event.TargetFlop || found[0].LastErrorText() != dead.LastError {
		t.Fatalf("DEAD found of every target: %+v %v", found, err)
	}
	if moved, skipped, err := db.Outbox.ReplayEvents(ctx, "HOOK", []int64{e[0]}); err != nil || moved != 0 || skipped != 1 {
		t.Fatalf("replay of another target's DEAD event: moved %d, skipped %d, %v", moved, skipped, err)
	}
	if moved, skipped, err := db.Outbox.ReplayEvents(ctx, event.TargetFlop, []int64{e[0]}); err != nil || moved != 1 || skipped != 0 {
		t.Fatalf("replay: moved %d, skipped %d, %v", moved, skipped, err)
	}
	wantPending(t, db, event.TargetFlop, "after the replay", e[0], e[3])
	if h := headOf(t, db, event.TargetFlop)[e[0]]; h.Attempts != 0 || h.NextAttemptAt != nil || string(h.Raw) != cjkPayload {
		t.Fatalf("the replayed head: %+v", h)
	}
	wantCounts(t, db, event.TargetFlop, "after the replay", "PENDING=2 SENT=2")
	if n := markIDs(t, db, event.TargetFlop, shAt(2), e[0]); n != 1 {
		t.Fatalf("marked %d of the replayed event", n)
	}
	if n := markIDs(t, db, event.TargetFlop, shAt(3), e[0]); n != 0 {
		t.Fatalf("the replayed event counted twice: %d", n)
	}
	wantView(t, db, event.TargetFlop, "after the replayed delivery", row(e[0], "SENT", "08:00:02"), row(e[1], "SENT", "08:00:01"),
		row(e[2], "SENT", "08:00:01"), row(e[3], "PENDING", ""))
	wantCounts(t, db, event.TargetFlop, "after the replayed delivery", "PENDING=1 SENT=3")
	wantPending(t, db, "HOOK", "of another target", e...)
	wantCounts(t, db, "HOOK", "of another target", "PENDING=4")
	if list, err := db.Outbox.ListEvents(ctx, store.EventFilter{Target: "HOOK", State: pipeline.EventDead}); err != nil || len(list) != 0 {
		t.Fatalf("DEAD events of another target: %+v %v", list, err)
	}
}

// A delivery of a shared event beyond a gap (a later one while an earlier one is pending: a
// stale read, a batch that skipped one) gives it a SENT row of its own, and the earlier one
// stays the head, also through a purge; delivering the earlier one raises the mark over both,
// and no further than the next one pending; each is counted once.
func aSharedEventSentBeyondAGapIsCountedOnce(t *testing.T, db *store.DB) {
	ctx := context.Background()
	e := writeShared(t, db, shAt(0), `{"n":1}`, cjkPayload, `{"n":3}`, `{"n":4}`).ids
	if n := markIDs(t, db, event.TargetFlop, shAt(1), e[1]); n != 1 {
		t.Fatalf("marked %d beyond the gap", n)
	}
	wantView(t, db, event.TargetFlop, "after a delivery beyond the gap", row(e[0], "PENDING", ""), row(e[1], "SENT", "08:00:01"),
		row(e[2], "PENDING", ""), row(e[3], "PENDING", ""))
	wantPending(t, db, event.TargetFlop, "after a delivery beyond the gap", e[0], e[2], e[3])
	wantCounts(t, db, event.TargetFlop, "after a delivery beyond the gap", "PENDING=3 SENT=1")
	if n := markIDs(t, db, event.TargetFlop, shAt(2), e[1]); n != 0 {
		t.Fatalf("the event beyond the gap counted twice: %d", n)
	}
	if n := markIDs(t, db, event.TargetFlop, shAt(2), e[3]); n != 1 {
		t.Fatalf("marked %d beyond a second gap", n)
	}
	wantPending(t, db, event.TargetFlop, "after a delivery beyond a second gap", e[0], e[2])
	wantCounts(t, db, event.TargetFlop, "after a delivery beyond a second gap", "PENDING=2 SENT=2")
	// Their rows outlive retention while the earlier ones are pending: never pending again.
	if _, err := db.Archiver.PurgeSentEvents(ctx, shAt(3600), nil); err != nil {
		t.Fatal(err)
	}
	wantPending(t, db, event.TargetFlop, "after a purge", e[0], e[2])
	if n := markIDs(t, db, event.TargetFlop, shAt(4), e[0]); n != 1 {
		t.Fatalf("marked %d of the event before the gap", n)
	}
	if m := markOf(t, db, event.TargetFlop); m != e[1] {
		t.Fatalf("the mark after the first gap was delivered: %d, want %d (over the one sent beyond it, below the next pending)", m, e[1])
	}
	wantView(t, db, event.TargetFlop, "after the first gap was delivered", row(e[0], "SENT", "08:00:04"), row(e[1], "SENT", "08:00:01"),
		row(e[2], "PENDING", ""), row(e[3], "SENT", "08:00:02"))
	wantCounts(t, db, event.TargetFlop, "after the first gap was delivered", "PENDING=1 SENT=3")
	if n := markIDs(t, db, event.TargetFlop, shAt(5), e[0], e[1], e[2]); n != 1 {
		t.Fatalf("marked %d of the last pending one with the two before it", n)
	}
	if m := markOf(t, db, event.TargetFlop); m != e[3] {
		t.Fatalf("the mark after the second gap was delivered: %d, want %d", m, e[3])
	}
	wantPending(t, db, event.TargetFlop, "after the last")
	wantCounts(t, db, event.TargetFlop, "after the last", "SENT=4")
	wantPending(t, db, event.TargetSchd, "of another target", e...)
}

// A listing without a target shows each shared event once per target that takes it, its own
// row in the shared one's place, in (EVENT_ID, TARGET) order, newest first the other way
// round; a page never ends inside one id's rows, so paging by the last id of each page lists
// every row once, whatever the limit (below the number of targets of an id too).
func listingsWithoutATargetShowASharedEventPerTarget(t *testing.T, db *store.DB) {
	ctx := context.Background()
	openTargets(t, db, "HOOK")
	e := writeShared(t, db, shAt(0), `{"n":1}`, cjkPayload, `{"n":3}`).ids
	head, _ := db.Outbox.PendingEvents(ctx, event.TargetSchd, 10)
	if n := change(t, db, store.EventChange{State: pipeline.EventDead, Class: pipeline.Rejected, LastError: "no"}, &head[1]); n != 1 {
		t.Fatalf("DEAD: %d", n)
	}
	targets := append(slices.Clone(baseTargets), "HOOK")
	slices.Sort(targets)
	var want, wantPend []string
	for _, id := range e {
		for _, tg := range targets {
			st := pipeline.EventPending
			if id == e[1] && tg == event.TargetSchd {
				st = pipeline.EventDead
			} else {
				wantPend = append(wantPend, fmt.Sprintf("%d:%s/%s", id, st, tg))
			}
			want = append(want, fmt.Sprintf("%d:%s/%s", id, st, tg))
		}
	}
	texts := func(evs []store.Event) []string {
		var out []string
		for _, e := range evs {
			out = append(out, rowText(e, true))
		}
		return out
	}
	list, err := db.Outbox.ListEvents(ctx, store.EventFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if got := texts(list); !slices.Equal(got, want) {
		t.Fatalf("every target's events:\n got %v\nwant %v", got, want)
	}
	if list, err = db.Outbox.ListEvents(ctx, store.EventFilter{State: pipeline.EventPending}); err != nil {
		t.Fatal(err)
	}
	if got := texts(list); !slices.Equal(got, wantPend) {
		t.Fatalf("every target's PENDING events:\n got %v\nwant %v", got, wantPend)
	}
	found, err := db.Operations.SearchEvents(ctx, store.EventQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if got := texts(briefEvents(found)); !slices.Equal(got, want) {
		t.Fatalf("every target's events found:\n got %v\nwant %v", got, want)
	}
	newest := slices.Clone(want)
	slices.Reverse(newest)
	if list, err = db.Outbox.ListEvents(ctx, store.EventFilter{Newest: true}); err != nil {
		t.Fatal(err)
	}
	if got := texts(list); !slices.Equal(got, newest) {
		t.Fatalf("every target's events newest first:\n got %v\nwant %v", got, newest)
	}
	perID := len(targets)
	for _, limit := range []int{1, perID - 1, perID, perID + 1, 2*perID - 1, 2 * perID, 3*perID + 1} {
		pages := map[string]func(after int64) ([]store.Event, error){
			"ListEvents": func(after int64) ([]store.Event, error) {
				return db.Outbox.ListEvents(ctx, store.EventFilter{AfterID: after, Limit: limit})
			},
			"SearchEvents": func(after int64) ([]store.Event, error) {
				evs, err := db.Operations.SearchEvents(ctx, store.EventQuery{AfterID: after, Limit: limit})
				return briefEvents(evs), err
			},
		}
		for name, page := range pages {
			var got []string
			var after int64
			for range len(want) + 1 {
				p, err := page(after)
				if err != nil {
					t.Fatal(err)
				}
				if len(p) == 0 {
					break
				}
				// A page ends with its last id's rows: at most the limit and the rest of
				// that id, never fewer than the limit but the last (the API reads a short
				// page as the last one).
				if len(p) > limit+perID-1 || (len(p) < limit && len(got)+len(p) < len(want)) {
					t.Fatalf("%s, limit %d: a page of %d rows", name, limit, len(p))
				}
				got = append(got, texts(p)...)
				after = p[len(p)-1].EventID
			}
			if !slices.Equal(got, want) {
				t.Fatalf("%s paged by %d:\n got %v\nwant %v", name, limit, got, want)
			}
		}
	}
	// Newest first, paged by the first id of each page (before=), as the API's listing pages.
	var got []string
	var before int64
	for range len(want) + 1 {
		evs, err := db.Operations.SearchEvents(ctx, store.EventQuery{BeforeID: before, Newest: true, Limit: perID - 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) == 0 {
			break
		}
		got = append(got, texts(briefEvents(evs))...)
		before = evs[len(evs)-1].EventID
	}
	if !slices.Equal(got, newest) {
		t.Fatalf("newest first paged by %d:\n got %v\nwant %v", perID-1, got, newest)
	}
}

// briefEvents returns the events of briefs.
func briefEvents(briefs []store.EventBrief) []store.Event {
	out := make([]store.Event, len(briefs))
	for i := range briefs {
		out[i] = briefs[i].Event
	}
	return out
}

// OpenTargets ends the range of a target no longer configured at the log's end: what it had
// to send up to there stays pending (and counted), what is written after is not its; once
// configured again it takes every shared row written since, none lost. The four base targets
// take every row, configured or not. Configuring the same targets again changes nothing.
func endedTargetsStopTakingSharedRowsUntilConfiguredAgain(t *testing.T, db *store.DB) {
	ctx := context.Background()
	openTargets(t, db, "HOOK", "QUIET")
	a := writeShared(t, db, shAt(0), `{"n":1}`, cjkPayload).ids
	openTargets(t, db, "HOOK", "QUIET")
	wantPending(t, db, "HOOK", "configured twice", a...)
	if n := markIDs(t, db, "HOOK", shAt(1), a[0]); n != 1 {
		t.Fatalf("marked %d", n)
	}
	openTargets(t, db) // neither configured any more
	b := writeShared(t, db, shAt(2), `{"n":3}`, `{"n":4}`).ids
	wantPending(t, db, "HOOK", "ended", a[1])
	wantCounts(t, db, "HOOK", "ended", "PENDING=1 SENT=1")
	wantPending(t, db, "QUIET", "ended before any delivery", a...)
	wantCounts(t, db, "QUIET", "ended before any delivery", "PENDING=2")
	if ok, err := db.Outbox.PendingAtLeast(ctx, "HOOK", 2); err != nil || ok {
		t.Fatalf("PendingAtLeast(2) of an ended target with 1 left: %v %v", ok, err)
	}
	all := append(slices.Clone(a), b...)
	for _, base := range baseTargets {
		wantPending(t, db, base, "a base target, not configured", all...)
	}
	list, err := db.Outbox.ListEvents(ctx, store.EventFilter{AfterID: a[1]})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range list {
		if e.Target == "HOOK" || e.Target == "QUIET" {
			t.Fatalf("event %d written after %s's range ended is listed for it", e.EventID, e.Target)
		}
	}
	if n := markIDs(t, db, "HOOK", shAt(3), b[0]); n != 0 {
		t.Fatalf("an ended target marked %d events beyond its range", n)
	}
	openTargets(t, db, "HOOK")
	wantPending(t, db, "HOOK", "configured again", a[1], b[0], b[1])
	wantCounts(t, db, "HOOK", "configured again", "PENDING=3 SENT=1")
	wantPending(t, db, "QUIET", "still ended", a...)
	c := writeShared(t, db, shAt(4), `{"n":5}`).ids
	wantPending(t, db, "HOOK", "after a new row", a[1], b[0], b[1], c[0])
	if n := markIDs(t, db, "HOOK", shAt(5), a[1], b[0], b[1], c[0]); n != 4 {
		t.Fatalf("marked %d of the 4 configured again", n)
	}
	wantCounts(t, db, "HOOK", "after its delivery", "SENT=5")
}

// The payload of a shared event is its canonical encoding without a target, and rendered for
// a target's family (the family families gives it) with one, whether the target has a row of
// its own for it or not; an unknown id has none. A flight's history lists a shared change
// once, also when KAFKA_FLOP has a row of its own for it, and pages whole changes.
func payloadAndFlightHistoryRenderASharedEventForItsTarget(t *testing.T, db *store.DB) {
	ctx := context.Background()
	openTargets(t, db, "T")
	families := map[string]string{"T": event.TargetFlop, event.TargetFlop: event.TargetFlop, event.TargetSchd: event.TargetSchd}
	changes := []event.FlightChange{
		{FLID: 7301, Op: event.Update, Changes: []event.Change{{Key: "STND", Old: []byte(`"A1"`), New: []byte(`"登机口 🛫"`)}},
			Record: []byte(`{"FLID":7301,"STND":"登机口 🛫"}`)},
		{FLID: 7301, Op: event.Update, Changes: []event.Change{{Key: "GATE", Old: []byte(`null`), New: []byte(`"B12"`)}},
			Record: []byte(`{"FLID":7301,"GATE":"B12","STND":"登机口 🛫"}`)},
		{FLID: 7301, Op: event.Delete, Record: []byte(`{"FLID":7301,"GATE":"B12","STND":"登机口 🛫"}`)},
	}
	var ids []int64
	var canon [][]byte
	for i := range changes {
		b, err := event.Encode(&changes[i])
		if err != nil {
			t.Fatal(err)
		}
		msgs, err := db.Intake.InsertMessages(ctx, []string{"<c/>"}, shAt(i))
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := db.Processor.Succeed(ctx, msgs[0], store.Success{TypeTag: "FLOP-STND", Identity: fmt.Sprintf("FLOP|%d", i),
			Decision: pipeline.Decision{Events: []pipeline.Event{{Target: event.Shared, Kind: event.KindChange, Key: "7301", Payload: b}}},
			Flights:  []int64{7301}}, nil, shAt(i)); err != nil {
			t.Fatal(err)
		}
		var id int64
		if err := db.SQLDB().QueryRow(`SELECT EVENT_ID FROM MSG_EVENT WHERE CMINMSGS_ID = ?`, msgs[0]).Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids, canon = append(ids, id), append(canon, b)
	}
	payload := func(id int64, target string) string {
		t.Helper()
		b, ok, err := db.Operations.EventPayload(ctx, id, target, families)
		if err != nil || !ok {
			t.Fatalf("payload of %d for %q: %v %v", id, target, ok, err)
		}
		return string(b)
	}
	check := func(when string) {
		t.Helper()
		for i, id := range ids {
			if got, want := payload(id, "T"), string(event.Flop(&changes[i])); got != want {
				t.Fatalf("%s: payload of %d for T: %s, want %s", when, id, got, want)
			}
			if got, want := payload(id, event.TargetSchd), string(event.Schd(&changes[i])); got != want {
				t.Fatalf("%s: payload of %d for KAFKA_SCHD: %s, want %s", when, id, got, want)
			}
			if got := payload(id, ""); got != string(canon[i]) {
				t.Fatalf("%s: payload of %d without a target: %s, want the canonical %s", when, id, got, canon[i])
			}
		}
	}
	check("shared rows alone")
	if _, ok, err := db.Operations.EventPayload(ctx, ids[2]+1000, "T", families); ok || err != nil {
		t.Fatalf("payload of an unknown event: %v %v", ok, err)
	}
	// T and KAFKA_FLOP back off the first change: each has a row of its own for it.
	for _, target := range []string{"T", event.TargetFlop} {
		head, _ := db.Outbox.PendingEvents(ctx, target, 1)
		if n := change(t, db, store.EventChange{State: pipeline.EventPending, AddAttempt: true, NextAttemptAt: shAt(60), Class: pipeline.Infra,
			LastError: "down"}, &head[0]); n != 1 {
			t.Fatalf("backoff of %s: %d", target, n)
		}
	}
	check("with rows of their own")
	wantHistory := func(after int64, limit int, want ...int) {
		t.Helper()
		h, err := db.Operations.FlightHistory(ctx, 7301, event.TargetFlop, after, limit)
		if err != nil {
			t.Fatal(err)
		}
		var got, wantIDs []int64
		for _, c := range h {
			got = append(got, c.EventID)
		}
		for _, i := range want {
			wantIDs = append(wantIDs, ids[i])
		}
		if !slices.Equal(got, wantIDs) {
			t.Fatalf("history after %d, limit %d: %v, want %v", after, limit, got, wantIDs)
		}
		for k, c := range h {
			i := want[k]
			if c.Op != string(changes[i].Op) || !c.At.Equal(shAt(i)) || c.TypeTag != "FLOP-STND" {
				t.Fatalf("change %d: %+v", c.EventID, c)
			}
		}
	}
	wantHistory(0, 0, 0, 1, 2)
	wantHistory(0, 1, 0)
	wantHistory(0, 2, 0, 1)
	wantHistory(ids[0], 1, 1)
	h, _ := db.Operations.FlightHistory(ctx, 7301, event.TargetFlop, 0, 1)
	if len(h) != 1 || !bytes.Contains(h[0].Changes, []byte(`"new":"登机口 🛫"`)) || !bytes.Contains(h[0].Changes, []byte(`"old":"A1"`)) {
		t.Fatalf("the first change: %+v", h)
	}
}

// Retention deletes a shared row once every target that takes it has sent it before the cut
// (by its mark's raise older than the cut), however each did (a run, past a DEAD row of its
// own); a DEAD row of a target outlives its shared row with the payload; the raises the rows
// left still need keep their sent times; a target whose range ended with nothing left to send
// holds nothing, even with an empty range.
func purgeSentEventsDeletesSharedRowsEveryTargetHasSent(t *testing.T, db *store.DB) {
	ctx := context.Background()
	pre := writeShared(t, db, shAt(0), `{"n":0}`).ids
	openTargets(t, db, "HOOK", "GONE")
	openTargets(t, db, "HOOK") // GONE ends with nothing in its range
	w := writeShared(t, db, shAt(0), `{"n":1}`, cjkPayload, `{"n":3}`, `{"n":4}`)
	e := w.ids
	for _, target := range []string{event.TargetES, event.TargetFlop, event.TargetNotify} {
		markIDs(t, db, target, shAt(1), pre[0], e[0], e[1])
		markIDs(t, db, target, shAt(2), e[2], e[3])
	}
	markIDs(t, db, "HOOK", shAt(1), e...)
	markIDs(t, db, event.TargetSchd, shAt(1), pre[0], e[0])
	head, _ := db.Outbox.PendingEvents(ctx, event.TargetSchd, 1)
	if n := change(t, db, store.EventChange{State: pipeline.EventDead, Class: pipeline.Rejected, LastError: "no"}, &head[0]); n != 1 || head[0].EventID != e[1] {
		t.Fatalf("DEAD %d: %d", head[0].EventID, n)
	}
	markIDs(t, db, event.TargetSchd, shAt(2), e[2])
	markIDs(t, db, event.TargetSchd, shAt(7200), e[3]) // young
	n, err := db.Archiver.PurgeSentEvents(ctx, shAt(3600), nil)
	if err != nil {
		t.Fatal(err)
	}
	if left := eventIDs(t, db); n != 4 || len(left) != 2 || !left[e[1]] || !left[e[3]] {
		t.Fatalf("purged %d, left %v: want the 4 shared rows every target sent an hour ago gone, KAFKA_SCHD's DEAD row and the young one kept", n, left)
	}
	wantView(t, db, event.TargetSchd, "after the purge", row(e[1], "DEAD", ""), row(e[3], "SENT", "10:00:00"))
	if b, ok, err := db.Operations.EventPayload(ctx, e[1], event.TargetSchd, nil); err != nil || !ok || string(b) != cjkPayload {
		t.Fatalf("the DEAD event's payload after its shared row went: %s %v %v", b, ok, err)
	}
	if _, ok, err := db.Operations.EventPayload(ctx, e[1], event.TargetFlop, nil); err != nil || ok {
		t.Fatalf("a purged event's payload for a target that sent it: %v %v", ok, err)
	}
	if dead, err := db.Outbox.ListEvents(ctx, store.EventFilter{Target: event.TargetSchd, State: pipeline.EventDead}); err != nil || len(dead) != 1 ||
		string(dead[0].Raw) != cjkPayload || dead[0].LastErrorText() != "no" {
		t.Fatalf("the DEAD event after the purge: %+v %v", dead, err)
	}
	for _, target := range []string{event.TargetES, event.TargetFlop, event.TargetNotify} {
		wantView(t, db, target, "after the purge", row(e[3], "SENT", "08:00:02"))
		wantCounts(t, db, target, "after the purge", "SENT=5")
	}
	wantView(t, db, "HOOK", "after the purge", row(e[3], "SENT", "08:00:01"))
	wantCounts(t, db, event.TargetSchd, "after the purge", "DEAD=1 SENT=4")
	if n, err := db.Archiver.PurgeSentEvents(ctx, shAt(3600), nil); err != nil || n != 0 {
		t.Fatalf("a second purge deleted %d: %v", n, err)
	}
	if n, err := db.Archiver.PurgeSentEvents(ctx, shAt(3*3600), nil); err != nil || n != 1 {
		t.Fatalf("the purge after the young one's age deleted %d, want 1: %v", n, err)
	}
	wantView(t, db, event.TargetSchd, "after the last purge", row(e[1], "DEAD", ""))
	wantView(t, db, event.TargetFlop, "after the last purge")
	// A target that has not sent a row holds it, and every row after it.
	f := writeShared(t, db, shAt(8000), `{"n":5}`, `{"n":6}`).ids
	for _, target := range append(slices.Clone(baseTargets), "HOOK") {
		if target != event.TargetNotify {
			markIDs(t, db, target, shAt(8001), f...)
		}
	}
	markIDs(t, db, event.TargetNotify, shAt(8001), f[1]) // beyond a gap
	if n, err := db.Archiver.PurgeSentEvents(ctx, shAt(9000), nil); err != nil {
		t.Fatal(err)
	} else if left := eventIDs(t, db); !left[f[0]] || !left[f[1]] {
		t.Fatalf("purged %d, left %v: the rows REDIS_NOTIFY has not sent all of are gone", n, left)
	}
	wantPending(t, db, event.TargetNotify, "after a purge", f[0])
}

// Event ids come from one sequence that deletes never move back: with every shared row at the
// top of the log purged, the next ones are above them, and every target takes them. A target
// added after some rows holds none of them.
func eventIDsKeepRisingAfterTheSharedRowsArePurged(t *testing.T, db *store.DB) {
	ctx := context.Background()
	e := writeShared(t, db, shAt(0), `{"n":1}`, cjkPayload).ids
	for _, target := range baseTargets {
		markIDs(t, db, target, shAt(1), e...)
	}
	openTargets(t, db, "LATE")
	if n, err := db.Archiver.PurgeSentEvents(ctx, shAt(60), nil); err != nil || n != 2 {
		t.Fatalf("purged %d of 2: %v", n, err)
	}
	if left := eventIDs(t, db); len(left) != 0 {
		t.Fatalf("left %v", left)
	}
	f := writeShared(t, db, shAt(120), `{"n":3}`, `{"n":4}`).ids
	if f[0] <= e[1] {
		t.Fatalf("ids after the purge: %v, want them above %d", f, e[1])
	}
	for _, target := range append(slices.Clone(baseTargets), "LATE") {
		wantPending(t, db, target, "after the purge", f...)
	}
	if last, err := db.Outbox.LastEventID(ctx); err != nil || last != f[1] {
		t.Fatalf("LastEventID %d %v, want %d", last, err, f[1])
	}
}

// An acknowledgement of a shared event DEAD on two targets covers both (two DEAD, both
// acknowledged) and is listed once, DEAD.
func anAckOfASharedEventDeadOnTwoTargetsIsListedOnce(t *testing.T, db *store.DB) {
	ctx := context.Background()
	openTargets(t, db, "HOOK")
	w := writeShared(t, db, shAt(0), cjkPayload)
	dead := store.EventChange{State: pipeline.EventDead, Class: pipeline.Rejected, LastError: "rejected"}
	for _, target := range []string{event.TargetFlop, "HOOK"} {
		head, err := db.Outbox.PendingEvents(ctx, target, 1)
		if err != nil || len(head) != 1 {
			t.Fatalf("head of %s: %+v %v", target, head, err)
		}
		if n := change(t, db, dead, &head[0]); n != 1 {
			t.Fatalf("DEAD on %s changed %d rows, want 1", target, n)
		}
	}
	if res, err := db.Triage.AckDead(ctx, store.DeadEvent, w.ids, "ops", "both sinks refuse it", shAt(1)); err != nil ||
		fmt.Sprint(res.Acked) != fmt.Sprint(w.ids) {
		t.Fatalf("ack: %+v %v", res, err)
	}
	acks, err := db.Triage.ListAcks(ctx, store.DeadEvent, 10)
	if err != nil || len(acks) != 1 || acks[0].ID != w.ids[0] || acks[0].State != string(pipeline.EventDead) {
		t.Fatalf("acks of a shared event DEAD on two targets: %+v %v", acks, err)
	}
	if c, err := db.Triage.DeadCounts(ctx); err != nil || c.Events != (store.DeadCount{Dead: 2, Acknowledged: 2}) {
		t.Fatalf("dead counts: %+v %v", c, err)
	}
}
