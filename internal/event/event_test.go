package event

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

var (
	t0  = time.Date(2026, 3, 15, 16, 0, 0, 0, time.UTC)
	t1  = time.Date(2026, 3, 17, 15, 59, 59, 500_000_000, time.UTC)
	sha = time.FixedZone("CST", 8*3600)
)

// cases are fixed changes of every shape, with the payloads each renders to.
var cases = []struct {
	name                 string
	c                    FlightChange
	flop, schd, note, es string
	esKind               string
}{{
	name: "insert",
	c: FlightChange{FLID: 7, Op: Insert, Record: json.RawMessage(`{"FLID":7,"FLNO":"CA1"}`),
		Changes: []Change{{"FLID", json.RawMessage(`null`), json.RawMessage(`7`)}, {"FLNO", json.RawMessage(`null`), json.RawMessage(`"CA1"`)}}},
	flop:   `{"FLID":7,"op":"insert","changes":{"FLID":{"old":null,"new":7},"FLNO":{"old":null,"new":"CA1"}}}`,
	schd:   `{"FLID":7,"FLNO":"CA1"}`,
	note:   `{"type":"update","FLID":7,"updatedFields":{"FLID":7,"FLNO":"CA1"}}`,
	esKind: KindESUpsert, es: `{"FLID":7,"FLNO":"CA1"}`,
}, {
	name: "update, CJK and 4-byte text, nested values, a cleared field",
	c: FlightChange{FLID: 1234567, Op: Update, Record: json.RawMessage(`{"FLID":1234567,"REMC":"延误 🛫","DELY":[{"CODE":"93","DURA":15}]}`),
		Changes: []Change{
			{"DELY", json.RawMessage(`null`), json.RawMessage(`[{"CODE":"93","DURA":15}]`)},
			{"REMC", json.RawMessage(`"晚点"`), json.RawMessage(`"延误 🛫"`)},
			{"STND", json.RawMessage(`"201"`), nil},
		}},
	flop:   `{"FLID":1234567,"op":"update","changes":{"DELY":{"old":null,"new":[{"CODE":"93","DURA":15}]},"REMC":{"old":"晚点","new":"延误 🛫"},"STND":{"old":"201","new":null}}}`,
	schd:   `{"FLID":1234567,"REMC":"延误 🛫","DELY":[{"CODE":"93","DURA":15}]}`,
	note:   `{"type":"update","FLID":1234567,"updatedFields":{"DELY":[{"CODE":"93","DURA":15}],"REMC":"延误 🛫","STND":null}}`,
	esKind: KindESUpsert, es: `{"FLID":1234567,"REMC":"延误 🛫","DELY":[{"CODE":"93","DURA":15}]}`,
}, {
	name: "update with no field changed",
	c:    FlightChange{FLID: 8, Op: Update, Record: json.RawMessage(`{"FLID":8}`)},
	flop: `{"FLID":8,"op":"update","changes":{}}`, schd: `{"FLID":8}`, note: `{"type":"update","FLID":8}`,
	esKind: KindESUpsert, es: `{"FLID":8}`,
}, {
	name: "delete",
	c: FlightChange{FLID: 9, Op: Delete, Record: json.RawMessage(`{"FLID":9,"CSFL":["CA1","<&>"]}`),
		Changes: []Change{{"CSFL", json.RawMessage(`["CA1","\u003c\u0026\u003e"]`), json.RawMessage(`null`)}, {"FLID", json.RawMessage(`9`), json.RawMessage(`null`)}}},
	flop:   `{"FLID":9,"op":"delete","changes":{"CSFL":{"old":["CA1","\u003c\u0026\u003e"],"new":null},"FLID":{"old":9,"new":null}}}`,
	schd:   `{"FLID":9,"CSFL":["CA1","<&>"],"deleted":true}`,
	note:   `{"type":"delete","FLID":9}`,
	esKind: KindESDelete, es: `{"FLID":9}`,
}, {
	name: "a schedule's delete is a delete",
	c:    FlightChange{FLID: 10, Op: Delete, Schedule: true, Window: &Window{t0, t1}, Record: json.RawMessage(`{"FLID":10}`)},
	flop: `{"FLID":10,"op":"delete","changes":{}}`, schd: `{"FLID":10,"deleted":true}`, note: `{"type":"delete","FLID":10}`,
	esKind: KindESDelete, es: `{"FLID":10}`,
}, {
	name: "schedule with a window (times in UTC, the fraction they have)",
	c: FlightChange{FLID: 11, Op: Insert, Schedule: true, Window: &Window{t0.In(sha), t1}, Record: json.RawMessage(`{"FLID":11}`),
		Changes: []Change{{"FLID", json.RawMessage(`null`), json.RawMessage(`11`)}}},
	flop:   `{"FLID":11,"op":"insert","changes":{"FLID":{"old":null,"new":11}}}`,
	schd:   `{"FLID":11}`,
	note:   `{"type":"schedule","FLID":11,"scheduleStart":"2026-03-15T16:00:00Z","scheduleEnd":"2026-03-17T15:59:59.5Z"}`,
	esKind: KindESUpsert, es: `{"FLID":11}`,
}, {
	name: "schedule without a window",
	c: FlightChange{FLID: 12, Op: Update, Schedule: true, Record: json.RawMessage(`{"FLID":12,"STND":"202"}`),
		Changes: []Change{{"STND", json.RawMessage(`"201"`), json.RawMessage(`"202"`)}}},
	flop:   `{"FLID":12,"op":"update","changes":{"STND":{"old":"201","new":"202"}}}`,
	schd:   `{"FLID":12,"STND":"202"}`,
	note:   `{"type":"schedule","FLID":12}`,
	esKind: KindESUpsert, es: `{"FLID":12,"STND":"202"}`,
}, {
	name: "keys json.Marshal escapes",
	c: FlightChange{FLID: 13, Op: Update, Record: json.RawMessage(`{}`),
		Changes: []Change{{"a\"b", json.RawMessage(`1`), json.RawMessage(`2`)}, {"航<班>", json.RawMessage(`1`), json.RawMessage(`2`)}}},
	flop:   `{"FLID":13,"op":"update","changes":{"a\"b":{"old":1,"new":2},"航\u003c班\u003e":{"old":1,"new":2}}}`,
	schd:   `{}`,
	note:   `{"type":"update","FLID":13,"updatedFields":{"a\"b":2,"航\u003c班\u003e":2}}`,
	esKind: KindESUpsert, es: `{}`,
}}

// TestRenderers checks each renderer's bytes on fixed changes of every shape.
func TestRenderers(t *testing.T) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.c
			if got := string(Flop(&c)); got != tc.flop {
				t.Errorf("Flop:\n got %s\nwant %s", got, tc.flop)
			}
			if got := string(Schd(&c)); got != tc.schd {
				t.Errorf("Schd:\n got %s\nwant %s", got, tc.schd)
			}
			note, err := Notify(&c)
			if err != nil || string(note) != tc.note {
				t.Errorf("Notify:\n got %s %v\nwant %s", note, err, tc.note)
			}
			if kind, es := ES(&c); kind != tc.esKind || string(es) != tc.es {
				t.Errorf("ES: got %s %s, want %s %s", kind, es, tc.esKind, tc.es)
			}
		})
	}
}

// TestRenderersMatchMarshal checks the flop and notify payloads against json.Marshal of the
// shapes docs/payloads.md describes (the way they were written before the renderers).
func TestRenderersMatchMarshal(t *testing.T) {
	type fieldChange struct {
		Old json.RawMessage `json:"old"`
		New json.RawMessage `json:"new"`
	}
	type notify struct {
		Type          string                     `json:"type"`
		FLID          int64                      `json:"FLID"`
		UpdatedFields map[string]json.RawMessage `json:"updatedFields,omitempty"`
		ScheduleStart *time.Time                 `json:"scheduleStart,omitempty"`
		ScheduleEnd   *time.Time                 `json:"scheduleEnd,omitempty"`
	}
	orNull := func(v json.RawMessage) json.RawMessage {
		if len(v) == 0 {
			return json.RawMessage("null")
		}
		return v
	}
	for _, tc := range cases {
		c := tc.c
		changes := map[string]fieldChange{}
		n := notify{Type: "update", FLID: c.FLID}
		switch {
		case c.Op == Delete:
			n.Type = "delete"
		case c.Schedule:
			n.Type = "schedule"
			if c.Window != nil {
				f, t := c.Window.From.UTC(), c.Window.To.UTC()
				n.ScheduleStart, n.ScheduleEnd = &f, &t
			}
		default:
			n.UpdatedFields = map[string]json.RawMessage{}
		}
		for _, ch := range c.Changes {
			changes[ch.Key] = fieldChange{orNull(ch.Old), orNull(ch.New)}
			if n.UpdatedFields != nil {
				n.UpdatedFields[ch.Key] = orNull(ch.New)
			}
		}
		flop, _ := json.Marshal(struct {
			FLID    int64                  `json:"FLID"`
			Op      string                 `json:"op"`
			Changes map[string]fieldChange `json:"changes"`
		}{c.FLID, string(c.Op), changes})
		if got := Flop(&c); !bytes.Equal(got, flop) {
			t.Errorf("%s: Flop\n got %s\nwant %s", tc.name, got, flop)
		}
		note, _ := json.Marshal(n)
		if got, _ := Notify(&c); !bytes.Equal(got, note) {
			t.Errorf("%s: Notify\n got %s\nwant %s", tc.name, got, note)
		}
	}
}

// TestNotifyWindowOutOfRange: a window time JSON cannot carry fails, as json.Marshal does.
func TestNotifyWindowOutOfRange(t *testing.T) {
	c := FlightChange{FLID: 1, Op: Insert, Schedule: true, Window: &Window{t0, time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}, Record: json.RawMessage(`{}`)}
	if b, err := Notify(&c); err == nil {
		t.Fatalf("Notify wrote %s", b)
	}
	if b, err := Encode(&c); err == nil {
		t.Fatalf("Encode wrote %s", b)
	}
}

// render renders every payload of c into one string, for comparing two changes.
func render(t testing.TB, c *FlightChange) string {
	note, err := Notify(c)
	if err != nil {
		t.Fatal(err)
	}
	kind, es := ES(c)
	return strings.Join([]string{string(Flop(c)), string(Schd(c)), string(note), kind, string(es)}, "\n")
}

// TestEncodeDecode: every fixed change encodes, decodes to a change that renders the same
// bytes, and the encoding is canonical (the decoded change encodes to the same bytes).
func TestEncodeDecode(t *testing.T) {
	for _, tc := range cases {
		b, err := Encode(&tc.c)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		d, err := Decode(b)
		if err != nil {
			t.Fatalf("%s: Decode(%s): %v", tc.name, b, err)
		}
		if got, want := render(t, &d), render(t, &tc.c); got != want {
			t.Errorf("%s: renders\n%s\nwant\n%s", tc.name, got, want)
		}
		if again, _ := Encode(&d); !bytes.Equal(again, b) {
			t.Errorf("%s: encodes again to\n%s\nnot\n%s", tc.name, again, b)
		}
	}
	b, _ := Encode(&cases[5].c)
	want := `{"v":1,"FLID":11,"op":"insert","schedule":true,"window":["2026-03-15T16:00:00Z","2026-03-17T15:59:59.5Z"],"changes":[["FLID",null,11]],"record":{"FLID":11}}`
	if string(b) != want {
		t.Errorf("encoding\n got %s\nwant %s", b, want)
	}
}

// TestEncodeRefuses: what Encode cannot write so that Decode reads it back.
func TestEncodeRefuses(t *testing.T) {
	for name, c := range map[string]FlightChange{
		"unknown op":       {FLID: 1, Op: "upsert", Record: json.RawMessage(`{}`)},
		"no record":        {FLID: 1, Op: Update},
		"record not {…}":   {FLID: 1, Op: Update, Record: json.RawMessage(`[1]`)},
		"key not UTF-8":    {FLID: 1, Op: Update, Record: json.RawMessage(`{}`), Changes: []Change{{"\xff", nil, nil}}},
		"window past 9999": {FLID: 1, Op: Update, Record: json.RawMessage(`{}`), Window: &Window{t0, time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}},
	} {
		if b, err := Encode(&c); err == nil {
			t.Errorf("%s: Encode wrote %s", name, b)
		}
	}
}

// TestDecodeRefuses: Decode reads only the canonical encoding of a valid change.
func TestDecodeRefuses(t *testing.T) {
	good := `{"v":1,"FLID":5,"op":"update","changes":[["STND","201","202"]],"record":{"FLID":5}}`
	if _, err := Decode([]byte(good)); err != nil {
		t.Fatalf("Decode(%s): %v", good, err)
	}
	for _, bad := range []string{
		``, `{}`, `null`,
		`{"v":2,"FLID":5,"op":"update","changes":[],"record":{"FLID":5}}`,
		`{"v":1,"FLID":05,"op":"update","changes":[],"record":{"FLID":5}}`,
		`{"v":1,"FLID":5,"op":"upsert","changes":[],"record":{"FLID":5}}`,
		`{"v":1, "FLID":5,"op":"update","changes":[],"record":{"FLID":5}}`,
		`{"v":1,"op":"update","FLID":5,"changes":[],"record":{"FLID":5}}`,
		`{"v":1,"FLID":5,"op":"update","changes":[["STND","201",tru]],"record":{"FLID":5}}`,
		`{"v":1,"FLID":5,"op":"update","changes":[["STND","201"]],"record":{"FLID":5}}`,
		`{"v":1,"FLID":5,"op":"update","changes":[["STND","201","202"],],"record":{"FLID":5}}`,
		`{"v":1,"FLID":5,"op":"update","changes":[["S\u0054ND","201","202"]],"record":{"FLID":5}}`,
		`{"v":1,"FLID":5,"op":"update","changes":[],"record":[5]}`,
		`{"v":1,"FLID":5,"op":"update","changes":[],"record":{"FLID":5}} `,
		`{"v":1,"FLID":5,"op":"update","changes":[],"record":{"FLID":5}`,
		`{"v":1,"FLID":5,"op":"update","changes":[],"record":{"FLID":5]}`,
		`{"v":1,"FLID":5,"op":"update","window":["2026-03-15T16:00:00+08:00","2026-03-17T16:00:00Z"],"changes":[],"record":{"FLID":5}}`,
		`{"v":1,"FLID":5,"op":"update","window":["2026-03-15","2026-03-17T16:00:00Z"],"changes":[],"record":{"FLID":5}}`,
		`{"v":1,"FLID":5,"op":"update","schedule":false,"changes":[],"record":{"FLID":5}}`,
	} {
		if c, err := Decode([]byte(bad)); err == nil {
			t.Errorf("Decode accepted %s: %+v", bad, c)
		}
	}
}

// FuzzDecode: Decode never panics, and whatever it accepts encodes back to the same bytes
// and renders without failing.
func FuzzDecode(f *testing.F) {
	for _, tc := range cases {
		b, err := Encode(&tc.c)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"v":1,"FLID":-1,"op":"delete","changes":[["\u2028",{"a":[1,{"b":"]"}]},"\\\""]],"record":{"x":"}"}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := Decode(b)
		if err != nil {
			return
		}
		again, err := Encode(&c)
		if err != nil || !bytes.Equal(again, b) {
			t.Fatalf("Decode accepted %q, which encodes to %q (%v)", b, again, err)
		}
		_ = Flop(&c)
		_ = Schd(&c)
		if _, err := Notify(&c); err != nil {
			t.Fatalf("Decode accepted %q, whose notification fails: %v", b, err)
		}
		_, _ = ES(&c)
	})
}

// BenchmarkEncodeDecode encodes and decodes a change of a typical FLOP (two fields of a
// record of about 1.5 KB), and renders the four payloads, each on its own.
func BenchmarkEncodeDecode(b *testing.B) {
	rec := []byte(`{"FLID":1234567,"ALCD":"CA","FLNO":"CA1234","MVIN":"D","SODT":"2026-03-15T01:21:00Z","FLTY":"J","FLIN":"D","ACFT":"A320","RENO":"B-1234","STND":"202","ESTT":"2026-03-15T01:40:00Z","PSDT":[` + strings.Repeat(`{"PSNO":1,"PSST":"202","STST":"2026-03-15T00:00:00Z","STET":"2026-03-15T02:00:00Z"},`, 15) + `{"PSNO":2}]}`)
	c := FlightChange{FLID: 1234567, Op: Update, Record: rec, Changes: []Change{
		{"ESTT", json.RawMessage(`"2026-03-15T01:30:00Z"`), json.RawMessage(`"2026-03-15T01:40:00Z"`)},
		{"STND", json.RawMessage(`"201"`), json.RawMessage(`"202"`)},
	}}
	enc, err := Encode(&c)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("record %d bytes, encoding %d bytes", len(rec), len(enc))
	b.Run("encode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = Encode(&c)
		}
	})
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = Decode(enc)
		}
	})
	b.Run("render", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = Flop(&c)
			_ = Schd(&c)
			_, _ = Notify(&c)
			_, _ = ES(&c)
		}
	})
}
