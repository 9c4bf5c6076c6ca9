package handler

import (
	"reflect"
	"testing"
)

// TestRecordCacheFollowsTheStore checks that the Registry's record cache never decides what
// a handler sees: a FLOP whose Decision is dropped (a rollback) leaves the store as it was,
// and the next FLOP on the flight decides from the stored record exactly as a Registry with
// no cache does; a record changed behind the Registry's back (another writer, a restart of
// the store) is decoded afresh; a committed record is served from the cache.
func TestRecordCacheFollowsTheStore(t *testing.T) {
	r := Default(Options{})
	v := baseView(t)
	stand := func(s string) []byte {
		return flopMsg("STND", `<FLOP><FLID>7004</FLID><FFID>X</FFID><STND>`+s+`</STND></FLOP>`)
	}
	check := func(step string, raw []byte) {
		t.Helper()
		msg := decodeRaw(t, raw)
		got, err := decideWith(r, v, msg)
		want, werr := decideWith(Default(Options{}), v, msg)
		if err != nil || werr != nil {
			t.Fatalf("%s: %v / %v", step, err, werr)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: with the cache %+v\nwithout %+v", step, got, want)
		}
		v.apply(got)
	}

	check("first FLOP", stand("101"))
	hits := r.records.hits
	check("second FLOP, after the first committed", stand("102"))
	if r.records.hits != hits+1 {
		t.Fatalf("the committed record was not served from the cache (%d hits, want %d)", r.records.hits, hits+1)
	}

	// A Decision that is never applied (its batch rolled back): its record is cached, not
	// stored. The next FLOP must see the stored 102, and say so in its events.
	msg := decodeRaw(t, stand("103"))
	if _, err := decideWith(r, v, msg); err != nil {
		t.Fatal(err)
	}
	check("FLOP after a rolled-back one", stand("104"))

	// The store changes behind the Registry (another writer, a restore): the cached record
	// of 104 must not be used for it.
	other := Default(Options{})
	d, err := decideWith(other, v, decodeRaw(t, stand("105")))
	if err != nil {
		t.Fatal(err)
	}
	v.apply(d)
	hits = r.records.hits
	check("FLOP after another writer", stand("106"))
	if r.records.hits != hits {
		t.Fatal("a record another writer changed was served from the cache")
	}
	if rec := v.record(t, 7004); rec.STND != "106" {
		t.Fatalf("stored STND %q, want 106", rec.STND)
	}
}

// TestRecordCacheIsBounded checks that the cache holds at most its size, keeping the entry
// just put.
func TestRecordCacheIsBounded(t *testing.T) {
	c := newRecordCache(3)
	for id := int64(1); id <= 10; id++ {
		c.put(id, []byte{byte(id)}, &FlightRecord{})
	}
	if n := c.len(); n != 3 {
		t.Fatalf("%d entries, want 3", n)
	}
	if _, ok := c.get(10, []byte{10}); !ok {
		t.Fatal("the last record put is not held")
	}
	if _, ok := c.get(10, []byte{9}); ok {
		t.Fatal("a record was served for other bytes")
	}
}
