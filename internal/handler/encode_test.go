package handler

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"msgx/internal/event"
	"msgx/internal/sis"
)

// roundTrip is what encodeRecord used to do: encode, decode, encode again.
func roundTrip(t *testing.T, r *FlightRecord) []byte {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var c FlightRecord
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	b, err = json.Marshal(&c)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestEncodeRecordIsAFixedPoint checks that one Marshal gives the bytes the former
// encode-decode-encode gave, on every flight of the test schedules (as decoded, and as
// written in the golden decisions) and on records with times in another zone, empty lists
// and text that JSON escapes.
func TestEncodeRecordIsAFixedPoint(t *testing.T) {
	var recs []*FlightRecord
	files, _ := filepath.Glob("../../testdata/schd/*.xml")
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		msg, err := sis.Decode(raw, sis.Options{Location: shanghai})
		if err != nil {
			t.Fatal(err)
		}
		for _, fl := range msg.Body.(*sis.SchdBody).Flights {
			recs = append(recs, &FlightRecord{Flight: fl, CSFL: []string{"CA1"}})
		}
	}
	goldens, _ := filepath.Glob("../../testdata/decisions/*.golden.json")
	for _, f := range goldens {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var g struct {
			Decision struct {
				Flights []struct{ Record json.RawMessage }
			} `json:"decision"`
		}
		if err := json.Unmarshal(raw, &g); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, w := range g.Decision.Flights {
			if len(w.Record) == 0 || string(w.Record) == "null" {
				continue
			}
			r, err := decodeRecord(w.Record)
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			recs = append(recs, r)
		}
	}
	odd := &FlightRecord{Flight: sis.Flight{FLID: 9, FLNO: "<&>\u2028\xff", SODT: time.Date(2026, 3, 15, 9, 0, 0, 5, shanghai),
		PSDT: []sis.StandAlloc{}, LBWT: "12.50"}, CSFL: []string{}}
	recs = append(recs, odd)
	if len(recs) < 10 {
		t.Fatalf("only %d records to check", len(recs))
	}
	for _, r := range recs {
		got, err := encodeRecord(r)
		if err != nil {
			t.Fatal(err)
		}
		if want := roundTrip(t, r); !bytes.Equal(got, want) {
			t.Fatalf("flight %d:\n got %s\nwant %s", r.FLID, got, want)
		}
	}
}

// TestFlopPayloadFastPath checks that the KAFKA_FLOP payload rendered from the changes
// found straight in the records' fields (fastChange, and mapChange on records topFields
// splits) and from the changes json.Unmarshal finds (mapChange on indented records) is the
// one json.Marshal writes from diff, for inserts, updates and deletes between the test
// records, and that topFields refuses what it cannot copy as is.
func TestFlopPayloadFastPath(t *testing.T) {
	var encs [][]byte
	files, _ := filepath.Glob("../../testdata/schd/*.xml")
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		msg, err := sis.Decode(raw, sis.Options{Location: shanghai})
		if err != nil {
			t.Fatal(err)
		}
		for _, fl := range msg.Body.(*sis.SchdBody).Flights {
			for _, r := range []*FlightRecord{{Flight: fl}, {Flight: fl, CSFL: []string{"CA1", "<&>"}}} {
				b, err := encodeRecord(r)
				if err != nil {
					t.Fatal(err)
				}
				encs = append(encs, b)
			}
		}
	}
	encs = append(encs, nil)
	indent := func(b []byte) []byte {
		if b == nil {
			return nil
		}
		var buf bytes.Buffer
		if err := json.Indent(&buf, b, "", " "); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	for _, old := range encs {
		for _, cur := range encs {
			if old == nil && cur == nil {
				continue
			}
			changes, err := diff(old, cur)
			if err != nil {
				t.Fatal(err)
			}
			want, err := json.Marshal(struct {
				FLID    int64                  `json:"FLID"`
				Op      string                 `json:"op"`
				Changes map[string]fieldChange `json:"changes"`
			}{7, string(flightOp(old, cur)), changes})
			if err != nil {
				t.Fatal(err)
			}
			if _, okA := topFields(old); !okA {
				t.Fatalf("topFields refused a record encodeRecord wrote: %s", old)
			}
			if _, okB := topFields(cur); !okB {
				t.Fatalf("topFields refused a record encodeRecord wrote: %s", cur)
			}
			for name, find := range map[string]func() (event.FlightChange, error){
				"fast":      func() (event.FlightChange, error) { return fastChange(7, old, cur, false, nil) },
				"map":       func() (event.FlightChange, error) { return mapChange(7, old, cur, false, nil) },
				"unmarshal": func() (event.FlightChange, error) { return mapChange(7, indent(old), indent(cur), false, nil) },
			} {
				c, err := find()
				if err != nil {
					t.Fatal(err)
				}
				if got := event.Flop(&c); !bytes.Equal(got, want) {
					t.Fatalf("%s: payloads differ:\n got %s\nwant %s", name, got, want)
				}
			}
		}
	}
	for _, bad := range []string{`{"A": 1}`, `{"A\u00e9":1}`, `[1]`, `{"A":1,}`, `{"A":}`, `{"A":1`, `{"A":1}}`, `{"\u0041":1}`} {
		if _, ok := topFields([]byte(bad)); ok {
			t.Errorf("topFields accepted %s", bad)
		}
	}
	if f, ok := topFields([]byte(`{"A":{"x":[1,"}"]},"B":"a\"b","C":null}`)); !ok || len(f) != 3 || string(f["A"]) != `{"x":[1,"}"]}` || string(f["B"]) != `"a\"b"` {
		t.Errorf("topFields: %q %v", f, ok)
	}
}
