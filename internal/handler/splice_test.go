package handler

import (
	"bytes"
	"testing"
	"time"

	"msgx/internal/sis"
)

// TestEncodeFromMatchesEncodeRecord checks that encoding a changed record from the stored
// encoding gives encodeRecord's bytes exactly, for changes of every kind: a field set,
// cleared, emptied (nil against empty lists), a pointer to an equal value, a time at the same
// instant in another zone, HTML characters, lists changed in place; and that it declines
// rather than differ for a string that is not valid UTF-8.
func TestEncodeFromMatchesEncodeRecord(t *testing.T) {
	if !recSpliceable {
		t.Fatal("FlightRecord's layout is not modelled: encodeFrom would always decline")
	}
	v := baseView(t)
	ten := int64(10)
	at := time.Date(2026, 3, 15, 10, 0, 0, 0, time.UTC)
	changes := map[string]func(r *FlightRecord){
		"nothing":       func(r *FlightRecord) {},
		"stand":         func(r *FlightRecord) { r.STND = "B12" },
		"clear FFID":    func(r *FlightRecord) { r.FFID = "" },
		"FLID":          func(r *FlightRecord) { r.FLID++ },
		"MAID":          func(r *FlightRecord) { r.MAID = &ten },
		"ESTT":          func(r *FlightRecord) { r.ESTT = &at },
		"ESTT nil":      func(r *FlightRecord) { r.ESTT = nil },
		"SODT zone":     func(r *FlightRecord) { r.SODT = r.SODT.In(shanghai) },
		"PSDT empty":    func(r *FlightRecord) { r.PSDT = []sis.StandAlloc{} },
		"PSDT nil":      func(r *FlightRecord) { r.PSDT = nil },
		"PSDT in place": func(r *FlightRecord) { r.PSDT = append(r.PSDT, sis.StandAlloc{PSNO: 9, PSST: "<&>"}) },
		"CSFL empty":    func(r *FlightRecord) { r.CSFL = []string{} },
		"CSFL":          func(r *FlightRecord) { r.CSFL = []string{"CA1", "MU2"} },
		"HTML":          func(r *FlightRecord) { r.RENO = "<B-1234&>" },
		"CJK":           func(r *FlightRecord) { r.TRML = "航站楼𝄞" },
	}
	n := 0
	for _, id := range v.ids() {
		r := v.record(t, id)
		old, err := encodeRecord(r)
		if err != nil {
			t.Fatal(err)
		}
		for name, change := range changes {
			c, _ := cloneRecord(r)
			change(c)
			want, err := encodeRecord(c)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := encodeFrom(old, r, c)
			if !ok {
				t.Fatalf("flight %d, %s: encodeFrom declined", id, name)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("flight %d, %s:\n got %s\nwant %s", id, name, got, want)
			}
			n++
		}
		c, _ := cloneRecord(r)
		c.RENO = "bad \xff"
		if got, ok := encodeFrom(old, r, c); ok {
			want, _ := encodeRecord(c)
			if !bytes.Equal(got, want) {
				t.Fatalf("flight %d, invalid UTF-8:\n got %s\nwant %s", id, got, want)
			}
		}
	}
	if n < 50 {
		t.Fatalf("only %d cases", n)
	}
}
