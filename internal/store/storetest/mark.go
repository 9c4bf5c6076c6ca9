package storetest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"msgx/internal/pipeline"
	"msgx/internal/store"
)

// markEvents inserts n events of target (and one of "OTHER") for a new message and returns
// target's events as PendingEvents reads them.
func markEvents(t *testing.T, db *store.DB, target string, n int, now time.Time) []store.Event {
	t.Helper()
	ctx := context.Background()
	ids, err := db.Intake.InsertMessages(ctx, []string{"<m/>"}, now)
	if err != nil {
		t.Fatal(err)
	}
	var evs []pipeline.Event
	for i := range n {
		evs = append(evs, pipeline.Event{Target: target, Kind: "k", Key: fmt.Sprint(i), Payload: []byte(fmt.Sprintf(`{"航":%d}`, i))})
	}
	evs = append(evs, pipeline.Event{Target: "OTHER", Kind: "k", Payload: []byte(`{}`)})
	if _, _, err := db.Processor.Succeed(ctx, ids[0], store.Success{TypeTag: "X-Y", Identity: "mark|" + target, Decision: pipeline.Decision{Events: evs}}, nil, now); err != nil {
		t.Fatal(err)
	}
	got, err := db.Outbox.PendingEvents(ctx, target, 100)
	if err != nil || len(got) != n {
		t.Fatalf("pending %s: %d %v", target, len(got), err)
	}
	return got
}

// markSent runs MarkSent for ids in a transaction of its own and returns its count.
func markSent(t *testing.T, db *store.DB, target string, at time.Time, evs ...*store.Event) int {
	t.Helper()
	var ids []int64
	for _, e := range evs {
		ids = append(ids, e.EventID)
	}
	return markIDs(t, db, target, at, ids...)
}

// change runs Change for evs in a transaction of its own and returns its count.
func change(t *testing.T, db *store.DB, c store.EventChange, evs ...*store.Event) int {
	t.Helper()
	var n int
	if err := db.Outbox.EventTx(context.Background(), func(tx store.EventTx) (err error) {
		n, err = tx.Change(evs, c)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

// shown returns target's events as ListEvents shows them, each as "state@sent-time"
// ("state" when it has none), in EVENT_ID order.
func shown(t *testing.T, db *store.DB, target string) []string {
	t.Helper()
	list, err := db.Outbox.ListEvents(context.Background(), store.EventFilter{Target: target})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range list {
		s := string(e.State)
		if e.SentAt != nil {
			s += "@" + e.SentAt.UTC().Format("15:04:05")
		}
		if e.NextAttemptAt != nil && e.State == pipeline.EventSent {
			s += "+next"
		}
		out = append(out, s)
	}
	return out
}

// pendingIDs returns the ids PendingEvents returns for target.
func pendingIDs(t *testing.T, db *store.DB, target string) []int64 {
	t.Helper()
	evs, err := db.Outbox.PendingEvents(context.Background(), target, 100)
	if err != nil {
		t.Fatal(err)
	}
	out := []int64{}
	for _, e := range evs {
		if e.State != pipeline.EventPending {
			t.Errorf("PendingEvents returned event %d in state %s", e.EventID, e.State)
		}
		out = append(out, e.EventID)
	}
	return out
}

func wantShown(t *testing.T, db *store.DB, target, when string, want ...string) {
	t.Helper()
	if got := shown(t, db, target); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("%s: events shown %v, want %v", when, got, want)
	}
}

func wantPending(t *testing.T, db *store.DB, target, when string, want ...int64) {
	t.Helper()
	if got := pendingIDs(t, db, target); fmt.Sprint(got) != fmt.Sprint(append([]int64{}, want...)) {
		t.Fatalf("%s: pending %v, want %v", when, got, want)
	}
}

// wantCounts checks EventCounts of target as "STATE=n" in PENDING, DEAD, SENT order.
func wantCounts(t *testing.T, db *store.DB, target, when, want string) {
	t.Helper()
	counts, err := db.Outbox.EventCounts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, st := range []pipeline.EventStatus{pipeline.EventPending, pipeline.EventDead, pipeline.EventSent} {
		for _, c := range counts {
			if c.Target == target && c.State == st {
				got = append(got, fmt.Sprintf("%s=%d", st, c.Count))
			}
		}
	}
	if strings.Join(got, " ") != want {
		t.Fatalf("%s: counts of %s %v, want %s", when, target, got, want)
	}
}

// A run marked sent shows SENT at its round's time in every listing and leaves the head; a
// DEAD event the mark passes stays DEAD; replayed, it is pending again whatever the mark (and
// backs off as pending), is delivered once and then SENT; a run marked twice counts once; a
// stale decision on a row the mark passed changes nothing.
func deliveryMarkShowsRunsSent(t *testing.T, db *store.DB) {
	ctx := context.Background()
	t0 := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	t1, t2, t3 := t0.Add(time.Second), t0.Add(2*time.Second), t0.Add(3*time.Second)
	e := markEvents(t, db, "M", 6, t0)
	// e[1] backs off, then goes DEAD: the head moves past it.
	if n := change(t, db, store.EventChange{State: pipeline.EventPending, AddAttempt: true, NextAttemptAt: t1, FirstFailedAt: t0,
		Class: pipeline.Infra, LastError: "down"}, &e[1]); n != 1 {
		t.Fatalf("backoff: %d", n)
	}
	e[1].Attempts, e[1].ErrorClass, e[1].LastError = 1, ptr(string(pipeline.Infra)), ptr("down")
	if n := change(t, db, store.EventChange{State: pipeline.EventDead, Class: pipeline.Rejected, LastError: "no"}, &e[1]); n != 1 {
		t.Fatalf("dead: %d", n)
	}
	if n := markSent(t, db, "M", t1, &e[0], &e[2], &e[3]); n != 3 {
		t.Fatalf("marked %d of 3", n)
	}
	wantShown(t, db, "M", "after a run", "SENT@08:00:01", "DEAD", "SENT@08:00:01", "SENT@08:00:01", "PENDING", "PENDING")
	wantPending(t, db, "M", "after a run", e[4].EventID, e[5].EventID)
	// The same run delivered again (another instance, a retried commit) counts nothing.
	if n := markSent(t, db, "M", t2, &e[0], &e[2], &e[3]); n != 0 {
		t.Fatalf("a run marked twice counted %d more", n)
	}
	if n := markSent(t, db, "M", t2, &e[4]); n != 1 {
		t.Fatalf("marked %d of 1", n)
	}
	wantShown(t, db, "M", "after a second run", "SENT@08:00:01", "DEAD", "SENT@08:00:01", "SENT@08:00:01", "SENT@08:00:02", "PENDING")
	wantCounts(t, db, "M", "after the runs", "PENDING=1 DEAD=1 SENT=4")
	if ok, _ := db.Outbox.PendingAtLeast(ctx, "M", 2); ok {
		t.Fatal("at least 2 pending of 1")
	}
	// A decision taken on a read before the delivery changes nothing (the fence sees the mark).
	if n := change(t, db, store.EventChange{State: pipeline.EventDead, Class: pipeline.Exhausted, LastError: "late"}, &e[4]); n != 0 {
		t.Fatalf("a stale DEAD overwrote a delivery: %d", n)
	}
	for st, want := range map[pipeline.EventStatus]int{pipeline.EventSent: 4, pipeline.EventDead: 1, pipeline.EventPending: 1} {
		list, err := db.Outbox.ListEvents(ctx, store.EventFilter{Target: "M", State: st})
		found, err2 := db.Operations.SearchEvents(ctx, store.EventQuery{Target: "M", State: st})
		if err != nil || err2 != nil || len(list) != want || len(found) != want {
			t.Fatalf("%s: listed %d, found %d, want %d (%v %v)", st, len(list), len(found), want, err, err2)
		}
		for i := range list {
			if list[i].State != st || found[i].State != st {
				t.Fatalf("%s: listed %s, found %s", st, list[i].State, found[i].State)
			}
		}
	}
	// Replayed, the DEAD event below the mark is pending again, ahead of the rest.
	if moved, _, err := db.Outbox.ReplayEvents(ctx, "M", []int64{e[1].EventID}); err != nil || moved != 1 {
		t.Fatalf("replay: %d %v", moved, err)
	}
	wantShown(t, db, "M", "after the replay", "SENT@08:00:01", "PENDING", "SENT@08:00:01", "SENT@08:00:01", "SENT@08:00:02", "PENDING")
	wantPending(t, db, "M", "after the replay", e[1].EventID, e[5].EventID)
	wantCounts(t, db, "M", "after the replay", "PENDING=2 SENT=4")
	if ok, _ := db.Outbox.PendingAtLeast(ctx, "M", 2); !ok {
		t.Fatal("not 2 pending after the replay")
	}
	// It backs off as any pending event does, and stays pending.
	head, _ := db.Outbox.PendingEvents(ctx, "M", 1)
	if n := change(t, db, store.EventChange{State: pipeline.EventPending, AddAttempt: true, NextAttemptAt: t3, FirstFailedAt: t2,
		Class: pipeline.Infra, LastError: "down again"}, &head[0]); n != 1 {
		t.Fatalf("backoff of the replayed event: %d", n)
	}
	head, _ = db.Outbox.PendingEvents(ctx, "M", 1)
	if head[0].EventID != e[1].EventID || head[0].Attempts != 1 || head[0].NextAttemptAt == nil {
		t.Fatalf("replayed event after its backoff: %+v", head[0])
	}
	// Delivered with the rest: SENT once.
	if n := markSent(t, db, "M", t3, &head[0], &e[5]); n != 2 {
		t.Fatalf("marked %d of the replayed event and the last", n)
	}
	if n := markSent(t, db, "M", t3, &head[0]); n != 0 {
		t.Fatalf("the replayed event counted twice: %d", n)
	}
	wantShown(t, db, "M", "after the replayed event's delivery",
		"SENT@08:00:01", "SENT@08:00:03", "SENT@08:00:01", "SENT@08:00:01", "SENT@08:00:02", "SENT@08:00:03")
	wantPending(t, db, "M", "after the replayed event's delivery")
	wantCounts(t, db, "M", "after the replayed event's delivery", "SENT=6")
	wantCounts(t, db, "OTHER", "of another target", "PENDING=1")
}

func ptr(s string) *string { return &s }

// The mark passes only rows delivered in the run: a run beyond an undelivered row (another
// instance's stale read, a batch that skips one) is SENT row by row, the undelivered row stays
// the head, and once it is delivered everything is SENT, each counted once. An id of another
// target or unknown is left alone.
func deliveryMarkPassesOnlyDeliveredRows(t *testing.T, db *store.DB) {
	t0 := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	e := markEvents(t, db, "G", 4, t0)
	other, _ := db.Outbox.PendingEvents(context.Background(), "OTHER", 1)
	if n := markSent(t, db, "G", t0.Add(time.Second), &e[1], &e[3], &other[0], &store.Event{EventID: 1 << 62}); n != 2 {
		t.Fatalf("marked %d of 2 beyond the head", n)
	}
	wantShown(t, db, "G", "after a run beyond the head", "PENDING", "SENT@08:00:01", "PENDING", "SENT@08:00:01")
	wantPending(t, db, "G", "after a run beyond the head", e[0].EventID, e[2].EventID)
	if n := markSent(t, db, "G", t0.Add(2*time.Second), &e[0], &e[1], &e[2], &e[3]); n != 2 {
		t.Fatalf("marked %d of the 2 left", n)
	}
	wantShown(t, db, "G", "after the rest", "SENT@08:00:02", "SENT@08:00:01", "SENT@08:00:02", "SENT@08:00:01")
	wantPending(t, db, "G", "after the rest")
	wantCounts(t, db, "G", "after the rest", "SENT=4")
	wantCounts(t, db, "OTHER", "of another target", "PENDING=1")
}

// Retention deletes the events the mark made SENT by the age of the round that delivered
// them, in EVENT_ID order up to the first that is not old enough, with the SENT rows, and
// never a pending or DEAD one below the mark; a listing shows what is left as before, and
// the SENT totals keep counting the deleted ones.
func purgeSentEventsDeletesMarkedEvents(t *testing.T, db *store.DB) {
	ctx := context.Background()
	t0 := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	e := markEvents(t, db, "R", 6, t0)
	markSent(t, db, "R", t0.Add(time.Second), &e[0])
	change(t, db, store.EventChange{State: pipeline.EventDead, Class: pipeline.Rejected, LastError: "no"}, &e[1])
	markSent(t, db, "R", t0.Add(2*time.Second), &e[2])
	if moved, _, err := db.Outbox.ReplayEvents(ctx, "R", []int64{e[1].EventID}); err != nil || moved != 1 {
		t.Fatalf("replay: %d %v", moved, err)
	}
	markSent(t, db, "R", t0.Add(time.Hour), &e[3])
	markSent(t, db, "R", t0.Add(2*time.Second), &e[4]) // a clock behind: waits for e[3]'s age
	wantShown(t, db, "R", "before the purge", "SENT@08:00:01", "PENDING", "SENT@08:00:02", "SENT@09:00:00", "SENT@08:00:02", "PENDING")
	n, err := db.Archiver.PurgeSentEvents(ctx, t0.Add(time.Minute), nil)
	if err != nil || n != 2 {
		t.Fatalf("purged %d, want 2: %v", n, err)
	}
	wantShown(t, db, "R", "after the purge", "PENDING", "SENT@09:00:00", "SENT@08:00:02", "PENDING")
	wantPending(t, db, "R", "after the purge", e[1].EventID, e[5].EventID)
	if n, err := db.Archiver.PurgeSentEvents(ctx, t0.Add(2*time.Hour), nil); err != nil || n != 2 {
		t.Fatalf("purged %d, want 2: %v", n, err)
	}
	wantShown(t, db, "R", "after the second purge", "PENDING", "PENDING")
	// Delivered after the purges: the mark goes on from where it was.
	head, _ := db.Outbox.PendingEvents(ctx, "R", 10)
	if n := markSent(t, db, "R", t0.Add(3*time.Hour), &head[0], &head[1]); n != 2 {
		t.Fatalf("marked %d of 2 after the purges", n)
	}
	wantShown(t, db, "R", "after the last run", "SENT@11:00:00", "SENT@11:00:00")
	wantCounts(t, db, "R", "after the purges", "SENT=6")
	if n, err := db.Archiver.PurgeSentEvents(ctx, t0.Add(2*time.Hour), nil); err != nil || n != 0 {
		t.Fatalf("purged %d young events: %v", n, err)
	}
	if n, err := db.Archiver.PurgeSentEvents(ctx, t0.Add(4*time.Hour), nil); err != nil || n != 2 {
		t.Fatalf("purged %d, want 2: %v", n, err)
	}
	wantShown(t, db, "R", "after the last purge")
}

// RETENTION reads a target's delivery marks in one snapshot: a delivery committed between its
// read of the first young raise (none yet) and its read of the highest old one is not taken
// for an old raise, and the events it delivered a moment ago keep their history.
func purgeKeepsADeliveryBetweenItsReads(t *testing.T, db *store.DB) {
	ctx := context.Background()
	now := time.Date(2026, 12, 6, 8, 0, 0, 0, time.UTC)
	evs := markEvents(t, db, "K", 3, now.Add(-10*24*time.Hour))
	markSent(t, db, "K", now.Add(-9*24*time.Hour), &evs[0], &evs[1])
	db.Archiver.SetBetweenRaiseReads(func() {
		db.Archiver.SetBetweenRaiseReads(nil)
		markSent(t, db, "K", now, &evs[2])
	})
	defer db.Archiver.SetBetweenRaiseReads(nil)
	n, err := db.Archiver.PurgeSentEvents(ctx, now.Add(-7*24*time.Hour), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(shown(t, db, "K"), " "); n != 2 || got != "SENT@08:00:00" {
		t.Fatalf("purged %d, left %q: want the 2 old deliveries purged and the one delivered between the reads kept (SENT@08:00:00)", n, got)
	}
}
