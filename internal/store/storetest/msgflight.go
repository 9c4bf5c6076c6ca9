package storetest

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"msgx/internal/pipeline"
	"msgx/internal/store"
)

// The contract of MSG_FLIGHT (store/msgflight.go): the flights a message names are recorded
// with its outcome, whatever it is, once however often it is recorded, and a search by
// flight finds them all.

// flightIDs returns the ids of the messages SearchMessages finds for q.
func flightIDs(t *testing.T, db *store.DB, q store.MessageQuery) []int64 {
	t.Helper()
	ms, err := db.Operations.SearchMessages(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	out := []int64{}
	for _, m := range ms {
		out = append(out, m.ID)
	}
	return out
}

func wantIDs(t *testing.T, what string, got, want []int64) {
	t.Helper()
	if want == nil {
		want = []int64{}
	}
	if !slices.Equal(got, want) {
		t.Errorf("%s: %v, want %v", what, got, want)
	}
}

// messageFlights returns the FLIDs stored for id, failing the test on an error.
func messageFlights(t *testing.T, db *store.DB, id int64) []int64 {
	t.Helper()
	fs, err := db.Flights.MessageFlights(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

func searchByFlightFindsEveryOutcome(t *testing.T, db *store.DB) {
	ctx := context.Background()
	const flid = 61001
	big := int64(math.MaxInt64)
	ids, err := db.Intake.InsertMessages(ctx, []string{"<ok/>", "<failed/>", "<orphan/>", "<skipped/>", "<malformed/>", "<other/>", "<same/>"}, opNow)
	if err != nil {
		t.Fatal(err)
	}
	pending := store.Version{State: pipeline.Pending}
	record := func(id int64, o store.Outcome) {
		t.Helper()
		if err := db.Processor.Record(ctx, id, o, opNow); err != nil {
			t.Fatal(err)
		}
	}
	// Applied, changing nothing (no event): found only through MSG_FLIGHT.
	if _, _, err := db.Processor.Succeed(ctx, ids[0], store.Success{From: pending, TypeTag: "FLOP-CHOT", Identity: "AODB|FLOP|CHOT|61001",
		Flights: []int64{flid}}, nil, opNow); err != nil {
		t.Fatal(err)
	}
	failed := store.Outcome{State: pipeline.Failed, Class: pipeline.Infra, Attempts: 1, LastError: "down", TypeTag: "FLOP-STND",
		NextAttemptAt: opNow.Add(time.Minute), FirstFailedAt: opNow, From: pending, Flights: []int64{flid}}
	record(ids[1], failed)
	// Retried and failed again: the same rows, not twice.
	again := failed
	again.Attempts, again.From = 2, store.Version{State: pipeline.Failed, Attempts: 1}
	record(ids[1], again)
	record(ids[2], store.Outcome{State: pipeline.Dead, Class: pipeline.Orphan, Attempts: 1, LastError: "flight 61001 not stored; parked",
		TypeTag: "FLOP-CHOT", From: pending, Flights: []int64{flid}})
	record(ids[3], store.Outcome{State: pipeline.Skipped, LastError: "duplicate-of:1", TypeTag: "FLOP-CHOT", From: pending,
		Flights: []int64{flid, big}})
	// Could not be decoded: names no flight, although its error mentions one.
	record(ids[4], store.Outcome{State: pipeline.Dead, Class: pipeline.Malformed, LastError: "FLID 61001: not well-formed", From: pending})
	record(ids[5], store.Outcome{State: pipeline.Dead, Class: pipeline.Orphan, LastError: "x", From: pending, Flights: []int64{flid + 1}})
	// The same FLID twice in one outcome (a caller's slip) is one row.
	record(ids[6], store.Outcome{State: pipeline.Skipped, LastError: "y", From: pending, Flights: []int64{big, big}})

	wantIDs(t, "every outcome of the flight", flightIDs(t, db, store.MessageQuery{FLID: flid}), ids[:4])
	wantIDs(t, "the FAILED one", flightIDs(t, db, store.MessageQuery{FLID: flid, State: pipeline.Failed}), ids[1:2])
	wantIDs(t, "the parked ORPHAN", flightIDs(t, db, store.MessageQuery{FLID: flid, Class: pipeline.Orphan}), ids[2:3])
	wantIDs(t, "paged", flightIDs(t, db, store.MessageQuery{FLID: flid, AfterID: ids[1], Limit: 1}), ids[2:3])
	wantIDs(t, "the largest FLID", flightIDs(t, db, store.MessageQuery{FLID: big}), []int64{ids[3], ids[6]})
	wantIDs(t, "a flight nobody named", flightIDs(t, db, store.MessageQuery{FLID: 1}), nil)
	// FLID 0 is no filter (no flight has it): every message.
	wantIDs(t, "flid 0", flightIDs(t, db, store.MessageQuery{FLID: 0}), ids)
	if fs := messageFlights(t, db, ids[1]); !slices.Equal(fs, []int64{flid}) {
		t.Errorf("flights of the retried message: %v, want one row", fs)
	}
	if fs := messageFlights(t, db, ids[6]); !slices.Equal(fs, []int64{big}) {
		t.Errorf("flights of a message naming the largest FLID twice: %v", fs)
	}
	if fs := messageFlights(t, db, ids[4]); len(fs) != 0 {
		t.Errorf("a message that was not decoded names flights: %v", fs)
	}
	// The FAILED message finally applied: SUCCEEDED, its flight still once; then replayed and
	// applied again (a replay starts it over), still once.
	if _, _, err := db.Processor.Succeed(ctx, ids[1], store.Success{From: store.Version{State: pipeline.Failed, Attempts: 2}, TypeTag: "FLOP-STND", Identity: "AODB|FLOP|STND|61001",
		Flights: []int64{flid}}, nil, opNow); err != nil {
		t.Fatal(err)
	}
	if fs := messageFlights(t, db, ids[1]); !slices.Equal(fs, []int64{flid}) {
		t.Errorf("flights of the message applied after failing: %v, want one row", fs)
	}
	wantIDs(t, "after the retry", flightIDs(t, db, store.MessageQuery{FLID: flid}), ids[:4])
	// Payloads stay elided in the list as in any other search.
	ms, err := db.Operations.SearchMessages(ctx, store.MessageQuery{FLID: flid, Limit: 1})
	if err != nil || len(ms) != 1 || ms[0].ID != ids[0] || ms[0].State != pipeline.Succeeded {
		t.Fatalf("first message of the flight: %+v %v", ms, err)
	}
}

// searchByFlightThroughBatches: the batch path records the flights as one by one does, with
// its writes deferred to Flush or not, and a batch rolled back leaves none.
func searchByFlightThroughBatches(t *testing.T, db *store.DB) {
	ctx := context.Background()
	const flid = 62001
	ids, err := db.Intake.InsertMessages(ctx, []string{"<a/>", "<b/>", "<c/>", "<d/>", "<e/>", "<f/>"}, opNow)
	if err != nil {
		t.Fatal(err)
	}
	pending := store.Version{State: pipeline.Pending}
	for _, deferWrites := range []bool{true, false} {
		i := 0
		if !deferWrites {
			i = 3
		}
		// A batch rolled back: nothing of it, flights neither.
		b, err := db.Processor.BeginBatch(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if deferWrites {
			b.DeferWrites()
		}
		if _, _, err := b.Succeed(ctx, ids[i], store.Success{From: pending, TypeTag: "FLOP-CHOT", Identity: fmt.Sprintf("B|FLOP|CHOT|%d", i),
			Flights: []int64{flid}}, nil, opNow); err != nil {
			t.Fatal(err)
		}
		if err := b.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		b.Rollback()
		if fs := messageFlights(t, db, ids[i]); len(fs) != 0 {
			t.Fatalf("a rolled-back batch left flights %v", fs)
		}
		// Done again: committed.
		b, err = db.Processor.BeginBatch(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if deferWrites {
			b.DeferWrites()
		}
		if _, _, err := b.Succeed(ctx, ids[i], store.Success{From: pending, TypeTag: "FLOP-CHOT", Identity: fmt.Sprintf("B|FLOP|CHOT|%d", i),
			Flights: []int64{flid}}, nil, opNow); err != nil {
			t.Fatal(err)
		}
		if err := b.Record(ctx, ids[i+1], store.Outcome{State: pipeline.Dead, Class: pipeline.Orphan, Attempts: 1, LastError: "parked",
			From: pending, Flights: []int64{flid}}, opNow); err != nil {
			t.Fatal(err)
		}
		if err := b.Record(ctx, ids[i+2], store.Outcome{State: pipeline.Failed, Class: pipeline.Infra, Attempts: 1, LastError: "down",
			NextAttemptAt: opNow.Add(time.Minute), FirstFailedAt: opNow, From: pending, Flights: []int64{flid, flid + 1}}, opNow); err != nil {
			t.Fatal(err)
		}
		if err := b.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if err := b.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	wantIDs(t, "both batches", flightIDs(t, db, store.MessageQuery{FLID: flid}), ids)
	wantIDs(t, "the FAILED ones", flightIDs(t, db, store.MessageQuery{FLID: flid + 1}), []int64{ids[2], ids[5]})
}

// searchByFlightLargeSchedule: a 3,000-flight schedule names each flight, one by one and in
// a batch with deferred writes (several multi-row statements).
func searchByFlightLargeSchedule(t *testing.T, db *store.DB) {
	ctx := context.Background()
	ids, err := db.Intake.InsertMessages(ctx, []string{"<schd1/>", "<schd2/>"}, opNow)
	if err != nil {
		t.Fatal(err)
	}
	flights := func(base int64) []int64 {
		out := make([]int64, 3000)
		for i := range out {
			out[i] = base + int64(i)
		}
		return out
	}
	pending := store.Version{State: pipeline.Pending}
	if _, _, err := db.Processor.Succeed(ctx, ids[0], store.Success{From: pending, TypeTag: "SCHD-DNLD", Identity: "L|SCHD|DNLD|1",
		Flights: flights(1_000_000)}, nil, opNow); err != nil {
		t.Fatal(err)
	}
	b, err := db.Processor.BeginBatch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b.DeferWrites()
	if _, _, err := b.Succeed(ctx, ids[1], store.Success{From: pending, TypeTag: "SCHD-DNLD", Identity: "L|SCHD|DNLD|2",
		Flights: flights(1_001_500)}, nil, opNow); err != nil {
		t.Fatal(err)
	}
	if err := b.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	for i, id := range ids {
		if fs := messageFlights(t, db, id); len(fs) != 3000 {
			t.Fatalf("schedule %d names %d flights, want 3000", i, len(fs))
		}
	}
	wantIDs(t, "the first flight", flightIDs(t, db, store.MessageQuery{FLID: 1_000_000}), ids[:1])
	wantIDs(t, "a flight in both", flightIDs(t, db, store.MessageQuery{FLID: 1_002_000}), ids)
	wantIDs(t, "the last flight", flightIDs(t, db, store.MessageQuery{FLID: 1_004_499}), ids[1:])
}

func processedBetweenReadsTheRange(t *testing.T, db *store.DB) {
	ctx := context.Background()
	ids, err := db.Intake.InsertMessages(ctx, []string{"<a/>", "<b/>", "<c/>", "<d/>", "<e/>"}, opNow)
	if err != nil {
		t.Fatal(err)
	}
	at := func(id int64, state pipeline.ProcStatus, when time.Time) {
		t.Helper()
		if err := db.Processor.Record(ctx, id, store.Outcome{State: state, Class: pipeline.Infra, LastError: "x", NextAttemptAt: when}, when); err != nil {
			t.Fatal(err)
		}
	}
	from, to := opNow.Add(-time.Hour), opNow
	at(ids[0], pipeline.Succeeded, from.Add(-time.Microsecond)) // before
	at(ids[1], pipeline.Dead, from)                             // first instant
	at(ids[2], pipeline.Skipped, to)                            // last instant
	at(ids[3], pipeline.Failed, to.Add(-time.Minute))           // not finished: no processing time
	at(ids[4], pipeline.Succeeded, to.Add(time.Microsecond))    // after
	got, err := db.Flights.ProcessedBetween(ctx, from, to)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !got[0].Equal(from) || !got[1].Equal(to) {
		t.Fatalf("processed in [%s, %s]: %v, want its two ends", from, to, got)
	}
}

// AppliedAfter finds the SUCCEEDED messages after one that may have set a flight it names
// (MSG_FLIGHT, and every window-replacing schedule) or a record of a reference TYPE (every
// type tag of the TYPE, a fallback STYP included, not another TYPE's); nothing parked, failed
// or before it. LastApplied is the highest SUCCEEDED id.
func appliedAfterFindsWhatMaySet(t *testing.T, db *store.DB) {
	ctx := context.Background()
	big := int64(math.MaxInt64)
	ids, err := db.Intake.InsertMessages(ctx, []string{"<before/>", "<stnd/>", "<orphan/>", "<dnld/>", "<airl/>", "<airl-other/>", "<airc/>", "<big/>", "<adft/>", "<pending/>"}, opNow)
	if err != nil {
		t.Fatal(err)
	}
	pending := store.Version{State: pipeline.Pending}
	succeed := func(i int, tag string, flids ...int64) {
		t.Helper()
		if _, _, err := db.Processor.Succeed(ctx, ids[i], store.Success{From: pending, TypeTag: tag, Identity: fmt.Sprintf("after|%d", i), Flights: flids}, nil, opNow); err != nil {
			t.Fatal(err)
		}
	}
	succeed(0, "AIRL-ADD")
	succeed(1, "FLOP-STND", 61101)
	if err := db.Processor.Record(ctx, ids[2], store.Outcome{State: pipeline.Dead, Class: pipeline.Orphan, Attempts: 1, LastError: "not stored",
		TypeTag: "FLOP-STND", FirstFailedAt: opNow, From: pending, Flights: []int64{61101}}, opNow); err != nil {
		t.Fatal(err)
	}
	succeed(3, "SCHD-DNLD", 61201)
	succeed(4, "AIRL-DEL")
	succeed(5, "AIRL-ZZZZ")
	succeed(6, "AIRC-ADD")
	succeed(7, "FLOP-FDEL", big)
	succeed(8, "SCHD-ADFT", 61301)
	got, err := db.Processor.AppliedAfter(ctx, ids[0], []int64{61101, big}, []string{"AIRL"})
	if err != nil {
		t.Fatal(err)
	}
	wantIDs(t, "applied after the first, for 61101, the largest FLID and AIRL", got, []int64{ids[1], ids[3], ids[4], ids[5], ids[7]})
	got, err = db.Processor.AppliedAfter(ctx, ids[3], []int64{61301}, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantIDs(t, "applied after the DNLD, for 61301", got, []int64{ids[8]})
	got, err = db.Processor.AppliedAfter(ctx, ids[0], nil, []string{"AIRC"})
	if err != nil {
		t.Fatal(err)
	}
	wantIDs(t, "applied after the first, for AIRC", got, []int64{ids[6]})
	if got, err = db.Processor.AppliedAfter(ctx, ids[0], nil, nil); err != nil || len(got) != 0 {
		t.Fatalf("applied after, naming nothing: %v %v", got, err)
	}
	if last, err := db.Processor.LastApplied(ctx); err != nil || last != ids[8] {
		t.Fatalf("last applied %d %v, want %d (the pending one after it does not count)", last, err, ids[8])
	}
}
