package storetest

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"msgx/internal/pipeline"
	"msgx/internal/store"
)

// pageCase is one page asked of a listing of the ids all (ascending) and the ids it must hold.
type pageCase struct {
	name          string
	after, before int64
	newest        bool
	limit         int
	want          []int64
}

// pageCasesOf are the pages of a listing of five ids: the first, last and middle pages in
// both orders, the edges (a cursor at the first or last id, a cursor past them, a limit of 1,
// an empty window between both cursors).
func pageCasesOf(a []int64) []pageCase {
	rev := func(s []int64) []int64 { s = slices.Clone(s); slices.Reverse(s); return s }
	return []pageCase{
		{"oldest first", 0, 0, false, 0, a},
		{"newest first", 0, 0, true, 0, rev(a)},
		{"newest first, limit 2", 0, 0, true, 2, []int64{a[4], a[3]}},
		{"newest first, older than the 4th", 0, a[3], true, 2, []int64{a[2], a[1]}},
		{"newest first, newer than the 2nd: the 2 next to it", a[1], 0, true, 2, []int64{a[3], a[2]}},
		{"newest first, newer than the newest", a[4], 0, true, 2, nil},
		{"newest first, older than the oldest", 0, a[0], true, 2, nil},
		{"newest first, between", a[0], a[4], true, 0, []int64{a[3], a[2], a[1]}},
		{"oldest first, after the 2nd", a[1], 0, false, 2, []int64{a[2], a[3]}},
		{"oldest first, before the 4th: the 2 next to it", 0, a[3], false, 2, []int64{a[1], a[2]}},
		{"oldest first, before the oldest", 0, a[0], false, 0, nil},
		{"limit 1", 0, 0, true, 1, a[4:]},
		{"empty window", a[2], a[3], true, 0, nil},
	}
}

func listingsPageBothWays(t *testing.T, db *store.DB) {
	ctx := context.Background()
	ids, err := db.Intake.InsertMessages(ctx, []string{"<a/>", "<b/>", "<c/>", "<d/>", "<e/>"}, opNow)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		succeedNaming(t, db, id, "FLOP-STND", []int64{7100}, flopEvent("7100", "STND", "null", `"A1"`))
	}
	evs, err := db.Operations.SearchEvents(ctx, store.EventQuery{})
	if err != nil || len(evs) != 5 {
		t.Fatalf("events: %d %v", len(evs), err)
	}
	var evIDs, auditIDs, reqIDs []int64
	for _, e := range evs {
		evIDs = append(evIDs, e.EventID)
	}
	for i := range 5 {
		if err := db.Operations.AddAudit(ctx, store.AuditEntry{At: opNow, Actor: "ops", Role: "operator", Action: "park", Subject: fmt.Sprint(i)}); err != nil {
			t.Fatal(err)
		}
		r, err := db.RequestTracker.CreateRequest(ctx, refRequest("AIRL"), xmlOf(refRequest("AIRL")), opNow)
		if err != nil {
			t.Fatal(err)
		}
		reqIDs = append(reqIDs, r.ID)
	}
	audit, err := db.Operations.ListAudit(ctx, store.AuditQuery{})
	if err != nil || len(audit) != 5 {
		t.Fatalf("audit: %d %v", len(audit), err)
	}
	for _, a := range audit {
		auditIDs = append(auditIDs, a.ID)
	}
	check := func(what string, all []int64, list func(c pageCase) ([]int64, error)) {
		for _, c := range pageCasesOf(all) {
			got, err := list(c)
			if err != nil {
				t.Fatalf("%s, %s: %v", what, c.name, err)
			}
			if !slices.Equal(got, c.want) && len(got)+len(c.want) > 0 {
				t.Errorf("%s, %s: %v, want %v", what, c.name, got, c.want)
			}
		}
	}
	check("messages", ids, func(c pageCase) ([]int64, error) {
		ms, err := db.Operations.SearchMessages(ctx, store.MessageQuery{AfterID: c.after, BeforeID: c.before, Newest: c.newest, Limit: c.limit})
		return idsOf(ms, func(m *store.Message) int64 { return m.ID }), err
	})
	check("messages of a flight", ids, func(c pageCase) ([]int64, error) {
		ms, err := db.Operations.SearchMessages(ctx, store.MessageQuery{FLID: 7100, State: pipeline.Succeeded, AfterID: c.after, BeforeID: c.before,
			Newest: c.newest, Limit: c.limit})
		return idsOf(ms, func(m *store.Message) int64 { return m.ID }), err
	})
	check("events", evIDs, func(c pageCase) ([]int64, error) {
		es, err := db.Operations.SearchEvents(ctx, store.EventQuery{Target: "KAFKA_FLOP", AfterID: c.after, BeforeID: c.before, Newest: c.newest, Limit: c.limit})
		return idsOf(es, func(e store.EventBrief) int64 { return e.EventID }), err
	})
	check("audit", auditIDs, func(c pageCase) ([]int64, error) {
		as, err := db.Operations.ListAudit(ctx, store.AuditQuery{AfterID: c.after, BeforeID: c.before, Newest: c.newest, Limit: c.limit})
		return idsOf(as, func(a store.AuditEntry) int64 { return a.ID }), err
	})
	check("requests", reqIDs, func(c pageCase) ([]int64, error) {
		rs, err := db.RequestTracker.ListRequests(ctx, store.RequestFilter{AfterID: c.after, BeforeID: c.before, Newest: c.newest, Limit: c.limit})
		return idsOf(rs, func(r *store.Request) int64 { return r.ID }), err
	})
}

func idsOf[T any](items []T, id func(T) int64) []int64 {
	var out []int64
	for _, it := range items {
		out = append(out, id(it))
	}
	return out
}
