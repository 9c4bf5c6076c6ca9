package handler

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"msgx/internal/pipeline"
	"msgx/internal/simulate"
	"msgx/internal/sis"
)

// refSetOld is entry.setOld as it was before the FLOP hot path was made cheaper: decode
// the stored record, encode it canonically, decode that again for the state to change.
// It is kept as the reference the differential test compares against.
func refSetOld(e *entry, b []byte) error {
	r, err := decodeRecord(b)
	if err != nil {
		return pipeline.Wrap(pipeline.Infra, fmt.Errorf("stored flight %d: %w", e.flid, err))
	}
	c, err := encodeRecord(r)
	if err != nil {
		return pipeline.Wrap(pipeline.Infra, fmt.Errorf("stored flight %d: %w", e.flid, err))
	}
	e.old, e.oldRec = c, r
	cur, _ := decodeRecord(c)
	e.cur = cur
	return nil
}

// withPaths runs f with the reference implementations when ref is set (refSetOld,
// mapFlightEvents and encodeRecord of the whole record, the code the hot path had before),
// else the fast ones.
func withPaths(ref bool, f func()) {
	saved := paths
	defer func() { paths = saved }()
	if ref {
		paths.setOld, paths.events = refSetOld, mapFlightEvents
		paths.encode = func(e *entry) ([]byte, error) { return encodeRecord(e.cur) }
	}
	f()
}

// simDay generates a simulated day of n flights with every fault mixed in, decoded (the
// messages a fault makes undecodable are left out).
func simDay(tb testing.TB, n int, seed int64) []*sis.Message {
	tb.Helper()
	var faults []simulate.Fault
	for _, name := range simulate.FaultNames() {
		faults = append(faults, simulate.Fault(name))
	}
	s, err := simulate.Generate(simulate.Options{Flights: n, Day: testNow, Loc: shanghai, Seed: seed, Faults: faults, FaultRate: 0.02})
	if err != nil {
		tb.Fatal(err)
	}
	var out []*sis.Message
	for _, m := range s.Messages {
		msg, err := sis.Decode(m.Body, sis.Options{Location: shanghai})
		if err != nil {
			continue
		}
		out = append(out, msg)
	}
	return out
}

// indentRecord rewrites a stored record in a form encodeRecord does not write (indented),
// so that the path for a stored record that is not canonical is exercised too.
func indentRecord(v *memView, flid int64) {
	b, ok := v.flights[flid]
	if !ok {
		return
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, b, "", " "); err == nil {
		v.flights[flid] = buf.Bytes()
	}
}

// TestFastPathsMatchReference plays simulated days (schedule, FLOPs of every kind, faults,
// code shares, deletions) through two views, one with the reference implementations of the
// hot path (and a new Registry, so no record cache, for every message) and one with the fast
// ones and one Registry for the day (its record cache warm, as a pump's is), and checks that
// every message gets the same Decision (flight records, events and their payload bytes,
// order, notes) or the same error. Every seventh message first finds its flight stored in a
// non-canonical form; every eleventh Decision of the fast side is dropped unapplied on both
// sides, as a rollback would (its records stay in the cache, never in the view).
func TestFastPathsMatchReference(t *testing.T) {
	flops, changed, hits, dropped := 0, 0, 0, 0
	for _, seed := range []int64{1, 2} {
		msgs := simDay(t, 60, seed)
		fast := Default(Options{})
		refV := &memView{flights: map[int64][]byte{}, refs: map[string][]string{}, now: testNow}
		newV := &memView{flights: map[int64][]byte{}, refs: map[string][]string{}, now: testNow}
		for i, msg := range msgs {
			if i%7 == 3 {
				if f, ok := msg.Body.(*sis.FlopBody); ok && len(f.Records) > 0 {
					indentRecord(refV, f.Records[0].FLID)
					indentRecord(newV, f.Records[0].FLID)
				}
			}
			var refD, newD pipeline.Decision
			var refErr, newErr error
			withPaths(true, func() { refD, refErr = decideErr(refV, msg) })
			withPaths(false, func() { newD, newErr = decideWith(fast, newV, msg) })
			if fmt.Sprint(refErr) != fmt.Sprint(newErr) || pipeline.ClassOf(refErr) != pipeline.ClassOf(newErr) {
				t.Fatalf("seed %d message %d (%s): error %v, reference %v", seed, i, msg.Tag(), newErr, refErr)
			}
			if !reflect.DeepEqual(refD, newD) {
				a, _ := json.Marshal(refD)
				b, _ := json.Marshal(newD)
				t.Fatalf("seed %d message %d (%s): Decision differs\nreference %s\nfast      %s", seed, i, msg.Tag(), a, b)
			}
			if _, ok := msg.Body.(*sis.FlopBody); ok {
				flops++
				if len(newD.Events) > 0 {
					changed++
				}
			}
			if i%11 == 5 && len(newD.Flights) > 0 {
				dropped++
				continue
			}
			if refErr == nil {
				refV.apply(refD)
				newV.apply(newD)
			}
		}
		hits += fast.records.hits
	}
	t.Logf("%d FLOP messages, %d changed a flight, %d records from the cache, %d Decisions dropped", flops, changed, hits, dropped)
	if flops < 100 || changed < 50 || hits < 100 || dropped < 10 {
		t.Fatalf("the corpus is too thin: %d FLOPs, %d changed a flight, %d cache hits, %d dropped", flops, changed, hits, dropped)
	}
}

// TestCloneRecordIsDeepAndExact checks that cloneRecord copies every field (a record and its
// copy encode alike) and shares no pointer, slice or map with the original.
func TestCloneRecordIsDeepAndExact(t *testing.T) {
	v := baseView(t)
	var seen int
	for _, id := range v.ids() {
		r := v.record(t, id)
		c, ok := cloneRecord(r)
		if !ok {
			t.Fatal("cloneRecord refused a FlightRecord")
		}
		if !reflect.DeepEqual(r, c) {
			t.Fatalf("flight %d: the copy differs", id)
		}
		a, _ := encodeRecord(r)
		walkRefs(reflect.ValueOf(r).Elem(), reflect.ValueOf(c).Elem(), func(x, y reflect.Value) {
			seen++
			if x.Pointer() == y.Pointer() {
				t.Fatalf("flight %d: the copy shares a %s with the original", id, x.Type())
			}
		})
		b, _ := encodeRecord(c)
		if !bytes.Equal(a, b) {
			t.Fatalf("flight %d: the copy encodes differently", id)
		}
	}
	if seen < 5 {
		t.Fatalf("only %d reference fields checked", seen)
	}
}

// walkRefs calls f on every non-nil pointer, non-empty slice and map of two values of the
// same type, side by side.
func walkRefs(x, y reflect.Value, f func(x, y reflect.Value)) {
	switch x.Kind() {
	case reflect.Pointer:
		if !x.IsNil() {
			f(x, y)
			walkRefs(x.Elem(), y.Elem(), f)
		}
	case reflect.Slice:
		if x.Len() > 0 {
			f(x, y)
			for i := range x.Len() {
				walkRefs(x.Index(i), y.Index(i), f)
			}
		}
	case reflect.Map:
		if x.Len() > 0 {
			f(x, y)
		}
	case reflect.Struct:
		for i := range x.NumField() {
			if x.Type().Field(i).IsExported() {
				walkRefs(x.Field(i), y.Field(i), f)
			}
		}
	}
}

// flopCase is one FLOP message with the stored records of the flights it names, as they
// were when it arrived in a simulated day.
type flopCase struct {
	msg  *sis.Message
	view *memView
}

// flopCorpus plays a simulated day and keeps each FLOP message with its flights' records.
func flopCorpus(tb testing.TB, n int) []flopCase {
	tb.Helper()
	v := &memView{flights: map[int64][]byte{}, refs: map[string][]string{}, now: testNow}
	var out []flopCase
	for _, msg := range simDay(tb, n, 1) {
		if f, ok := msg.Body.(*sis.FlopBody); ok {
			c := flopCase{msg: msg, view: &memView{flights: map[int64][]byte{}, now: testNow}}
			for _, r := range f.Records {
				if b, ok := v.flights[r.FLID]; ok {
					c.view.flights[r.FLID] = b
				}
			}
			out = append(out, c)
		}
		if d, err := decideErr(v, msg); err == nil {
			v.apply(d)
		}
	}
	return out
}

// BenchmarkFlop decides the FLOP messages of a simulated day, each against the records its
// flights had when it arrived, with the reference and the fast hot path side by side
// (run with -count to interleave them).
func BenchmarkFlop(b *testing.B) {
	cases := flopCorpus(b, 150)
	saved := render
	render = renderEvents // not TestMain's checkedRender: the production path is measured
	defer func() { render = saved }()
	for _, name := range []string{"reference", "fast", "cached"} {
		ref := name == "reference"
		// cached: the Registry's record cache, as a pump has it, holding each flight's record
		// as the previous message on it wrote it (the cases run in their order of the day).
		var cache *recordCache
		if name == "cached" {
			cache = newRecordCache(recordCacheSize)
		}
		h := withRecords(cache, decideFlop)
		b.Run(name, func(b *testing.B) {
			withPaths(ref, func() {
				ctx := context.Background()
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					c := cases[i%len(cases)]
					_, _ = h.Decide(ctx, c.view, c.msg)
				}
			})
		})
	}
}

// TestOrderedChanges checks the in-step comparison of two field lists: fields only on one
// side, changed values, sorting by key, and the refusal when shared fields are out of step.
func TestOrderedChanges(t *testing.T) {
	split := func(s string) []field {
		fs, ok := splitFields([]byte(s), nil)
		if !ok {
			t.Fatalf("splitFields refused %s", s)
		}
		return fs
	}
	got, ok := orderedChanges(split(`{"Z":1,"B":2,"C":[3],"D":4}`), split(`{"A":0,"Z":1,"C":[4],"E":5}`))
	want := `A:null>0 B:2>null C:[3]>[4] D:4>null E:null>5 `
	var s string
	for _, c := range got {
		s += fmt.Sprintf("%s:%s>%s ", c.Key, c.Old, c.New)
	}
	if !ok || s != want {
		t.Errorf("orderedChanges = %q %v, want %q", s, ok, want)
	}
	if _, ok := orderedChanges(split(`{"A":1,"B":2}`), split(`{"B":2,"A":1}`)); ok {
		t.Error("orderedChanges accepted fields out of step")
	}
}

// TestFlightEventsMatchReference compares flightEvents with mapFlightEvents on pairs of
// records far apart (many fields changed, fields only on one side), inserts and deletes,
// with and without a schedule window: records of two simulated days and of the test view.
func TestFlightEventsMatchReference(t *testing.T) {
	var recs [][]byte
	for _, seed := range []int64{1, 3} {
		v := &memView{flights: map[int64][]byte{}, refs: map[string][]string{}, now: testNow}
		for _, msg := range simDay(t, 40, seed) {
			if d, err := decideErr(v, msg); err == nil {
				v.apply(d)
			}
		}
		for _, id := range v.ids() {
			recs = append(recs, v.flights[id])
		}
	}
	base := baseView(t)
	for _, id := range base.ids() {
		recs = append(recs, base.flights[id])
	}
	win := &window{From: testNow, To: testNow.Add(48 * time.Hour)}
	pairs := 0
	for i, cur := range recs {
		for _, old := range [][]byte{nil, recs[(i+1)%len(recs)], recs[(i+7)%len(recs)]} {
			for _, c := range [][]byte{cur, nil} {
				if old == nil && c == nil {
					continue
				}
				for _, sched := range []bool{false, true} {
					for _, w := range []*window{nil, win} {
						want, err1 := mapFlightEvents(42, old, c, sched, w)
						got, err2 := flightEvents(42, old, c, sched, w)
						if err1 != nil || err2 != nil || !reflect.DeepEqual(want, got) {
							t.Fatalf("old %s\ncur %s\nschedule %v: events differ (%v, %v)\nreference %s\nfast      %s", old, c, sched, err1, err2, want, got)
						}
						pairs++
					}
				}
			}
		}
	}
	if pairs < 500 {
		t.Fatalf("only %d pairs", pairs)
	}
}
