package storetest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"msgx/internal/pipeline"
	"msgx/internal/store"
)

// skipIDs makes the next id of table's AUTO_INCREMENT column n higher than it would be: the
// ids in between are never assigned, as on a Galera node where every node's ids step by the
// cluster's size.
func skipIDs(t *testing.T, db *store.DB, table, col string, n int64) {
	t.Helper()
	var max int64
	if err := db.SQLDB().QueryRow(fmt.Sprintf(`SELECT COALESCE(MAX(%s), 0) FROM %s`, col, table)).Scan(&max); err != nil {
		t.Fatal(err)
	}
	if db.SQLDialect() == store.SQLite {
		Exec(t, db, fmt.Sprintf(`UPDATE sqlite_sequence SET seq = %d WHERE name = '%s'`, max+n, table))
		return
	}
	Exec(t, db, fmt.Sprintf(`ALTER TABLE %s AUTO_INCREMENT = %d`, table, max+n+1))
}

// With gaps between CMINMSGS ids and between EVENT_IDs, nothing waits for an id that never comes:
// the inbox's ids grow in the order of its messages, the pump's head moves from each message to
// the next one that exists (Due), a finished message makes the next existing one the head, the
// adoption reports the ids missing in a range without holding anything (they are only looked up
// again, never waited for; with the ids present, whose classes modulo the servers' id step say
// which missing ids a server may have given out), and each target's pending events are read
// across the gaps in EVENT_ID order.
func idGapsNeverHold(t *testing.T, db *store.DB) {
	ctx := context.Background()
	now := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	var ids []int64
	for i := range 4 {
		got, err := db.Intake.InsertMessages(ctx, []string{fmt.Sprintf("<m n='%d' a='1'/>", i), fmt.Sprintf("<m n='%d' a='2'/>", i)}, now)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, got...)
		skipIDs(t, db, "CMINMSGS", "CMINMSGS_ID", 2)
	}
	if !slices.IsSorted(ids) || len(slices.Compact(slices.Clone(ids))) != len(ids) {
		t.Fatalf("inbox ids %v: not increasing in the order of the messages", ids)
	}
	if ids[len(ids)-1]-ids[0] < int64(len(ids)-1)+3*2 {
		t.Fatalf("ids %v have no gaps: the case proves nothing", ids)
	}
	due, err := db.Processor.Due(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	var dueIDs []int64
	for _, d := range due {
		dueIDs = append(dueIDs, d.ID)
	}
	if !slices.Equal(dueIDs, ids) {
		t.Fatalf("due %v, want every message across the gaps %v", dueIDs, ids)
	}
	// Finishing the head makes the next existing id the head, with events of its own.
	for k, id := range ids[:3] {
		ev := pipeline.Event{Target: "GAPS", Kind: "k", Payload: fmt.Appendf(nil, `{"n":%d}`, k)}
		if _, _, err := db.Processor.Succeed(ctx, id, store.Success{TypeTag: "X-Y", Identity: fmt.Sprintf("gap|%d", k),
			Decision: pipeline.Decision{Events: []pipeline.Event{ev, ev}}}, nil, now); err != nil {
			t.Fatal(err)
		}
		skipIDs(t, db, "MSG_EVENT", "EVENT_ID", 2)
		due, err := db.Processor.Due(ctx, 1)
		if err != nil || len(due) != 1 || due[0].ID != ids[k+1] {
			t.Fatalf("after %d finished: head %+v %v, want %d", id, due, err, ids[k+1])
		}
	}
	missing, present, err := db.Intake.Unstated(ctx, ids[0], ids[len(ids)-1])
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(present, ids[1:]) {
		t.Fatalf("Unstated after %d: present %v, want every message after it %v", ids[0], present, ids[1:])
	}
	// One server gives out ids of one class modulo its step (on a Galera node, 1, 4, 7…).
	step, err := db.Intake.IDStep(ctx)
	if err != nil || step < 1 {
		t.Fatalf("IDStep: %d %v", step, err)
	}
	for _, id := range ids {
		if id%step != ids[0]%step {
			t.Fatalf("inbox ids %v are not of one class modulo the step %d", ids, step)
		}
	}
	// Heads counts the ids with a state in (after, msgs]: all of them only where there is no
	// gap (the adoption then reads no ids).
	msgs, _, stated, err := db.Intake.Heads(ctx, ids[0])
	if err != nil || msgs != ids[len(ids)-1] || stated != int64(len(ids)-1) || stated == msgs-ids[0] {
		t.Fatalf("Heads after %d: msgs %d, %d ids with a state (%v); want %d and %d, fewer than the range's %d",
			ids[0], msgs, stated, err, ids[len(ids)-1], len(ids)-1, msgs-ids[0])
	}
	if _, _, stated, err := db.Intake.Heads(ctx, msgs-1); err != nil || stated != 1 {
		t.Fatalf("Heads after %d: %d ids with a state (%v), want the last one", msgs-1, stated, err)
	}
	for _, m := range missing {
		if slices.Contains(ids, m) {
			t.Fatalf("Unstated %v names a stored message %d", missing, m)
		}
	}
	evs, err := db.Outbox.PendingEvents(ctx, "GAPS", 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 6 {
		t.Fatalf("%d pending events across the EVENT_ID gaps, want 6", len(evs))
	}
	for i := 1; i < len(evs); i++ {
		if evs[i].EventID <= evs[i-1].EventID || evs[i].MsgID < evs[i-1].MsgID {
			t.Fatalf("pending events out of order: %+v", evs)
		}
	}
	if more, err := db.Outbox.PendingAtLeast(ctx, "GAPS", 6); err != nil || !more {
		t.Fatalf("PendingAtLeast(6) = %v %v across gaps", more, err)
	}
}
