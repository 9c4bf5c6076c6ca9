package redisflight_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"msgx/internal/flight/flighttest"
	"msgx/internal/flight/redisflight"
	"msgx/internal/pipeline"
)

// A batch remembers what it read and wrote: a flight read again, or after the batch's own
// script, is what Redis holds (record and version, a delete too), and the next script's
// compare-and-set is against the version the batch knows. Another writer's change in between is
// caught (INFRA, nothing written) and the batch forgets the flight, so it reads it afresh.
func TestBatchRemembersWhatItReadAndWrote(t *testing.T) {
	ctx := context.Background()
	s := flighttest.Redis(t, flighttest.Shanghai, nil)
	t1 := time.Date(2026, 3, 15, 9, 0, 0, 0, flighttest.Shanghai)
	up := func(flid int64, extra string) pipeline.FlightWrite {
		return pipeline.FlightWrite{Day: "2026-03-15", FLID: flid, Record: flighttest.Rec(flid, t1, extra)}
	}
	if err := s.Apply(ctx, 1, []pipeline.FlightWrite{up(1, ""), up(2, "")}, time.Now()); err != nil {
		t.Fatal(err)
	}
	b := s.Batch()
	same := func(flid int64) {
		t.Helper()
		got, ok, err := b.Flight(ctx, flid)
		e, _ := s.Get(ctx, flid)
		if err != nil || ok != (e != nil) || (e != nil && string(got) != string(e.Record)) {
			t.Fatalf("flight %d in the batch: %s %v %v; in Redis %+v", flid, got, ok, err, e)
		}
	}
	same(1)
	same(3) // absent
	if _, found, err := b.ApplyUnmarked(ctx, 2, []pipeline.FlightWrite{up(1, `"STND":"1"`), up(3, ""), up(1, `"STND":"2"`)}, []byte("m2"), time.Now()); err != nil || found {
		t.Fatalf("apply: %v %v", found, err)
	}
	same(1)
	same(3)
	if e, _ := s.Get(ctx, 1); e.Version != 3 {
		t.Fatalf("flight 1 at version %d, want 3", e.Version)
	}
	// The batch's next script is checked against the versions it knows (1 at 3, 3 at 1).
	if _, _, err := b.ApplyUnmarked(ctx, 3, []pipeline.FlightWrite{up(1, `"STND":"3"`), {FLID: 3, Delete: true}}, []byte("m3"), time.Now()); err != nil {
		t.Fatal(err)
	}
	same(1)
	same(3)
	if recs, err := b.FlightsOf(ctx, []int64{1, 2, 3, 2}); err != nil || len(recs) != 2 {
		t.Fatalf("FlightsOf: %d records, %v", len(recs), err)
	}
	// Another writer changes flight 2 after the batch read it: the batch's script fails,
	// writes nothing, and the batch reads the flight again.
	if err := s.Apply(ctx, 4, []pipeline.FlightWrite{up(2, `"STND":"other"`)}, time.Now()); err != nil {
		t.Fatal(err)
	}
	_, _, err := b.ApplyUnmarked(ctx, 5, []pipeline.FlightWrite{up(2, `"STND":"mine"`)}, []byte("m5"), time.Now())
	if !errors.Is(err, redisflight.ErrChangedUnderUs) || pipeline.ClassOf(err) != pipeline.Infra {
		t.Fatalf("apply over another writer's change: %v", err)
	}
	if _, found, _ := s.Marker(ctx, 5); found {
		t.Fatal("the failed script recorded its marker")
	}
	same(2)
	if rec, _, _ := b.Flight(ctx, 2); !strings.Contains(string(rec), "other") {
		t.Fatalf("flight 2 after the other writer: %s", rec)
	}
	if _, _, err := b.ApplyUnmarked(ctx, 5, []pipeline.FlightWrite{up(2, `"STND":"mine"`)}, []byte("m5"), time.Now()); err != nil {
		t.Fatalf("apply after reading afresh: %v", err)
	}
	same(2)
}
