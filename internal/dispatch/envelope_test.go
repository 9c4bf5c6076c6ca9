package dispatch_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"msgx/internal/dispatch"
	"msgx/internal/store"
)

// TestEnvelopeMatchesEncodingJSON: the record value written without reflection is
// byte-identical to encoding/json's Envelope (HTML escaping off) for plain events, and events
// whose strings need escaping, with no flight key, with a payload to compact, with a creation
// time outside UTC or at a whole second go the reference way; the value decodes to the event.
func TestEnvelopeMatchesEncodingJSON(t *testing.T) {
	key := "20261201|123"
	odd := "a\"b\\c<d>&e\u2028f\x01gé\xff"
	paris := time.FixedZone("CET", 3600)
	base := store.Event{EventID: 9007199254740993, MsgID: 42, TypeTag: "FLOP-CHOT", Target: "KAFKA_FLOP", Kind: "flop",
		FlightKey: &key, CreatedAt: time.Date(2026, 12, 1, 8, 30, 1, 123456000, time.UTC), Raw: []byte(`{"FLID":1,"x":"<&>"}`)}
	cases := map[string]func(e *store.Event){
		"plain":            func(*store.Event) {},
		"no flight key":    func(e *store.Event) { e.FlightKey = nil },
		"empty flight key": func(e *store.Event) { empty := ""; e.FlightKey = &empty },
		"whole second":     func(e *store.Event) { e.CreatedAt = time.Date(2026, 12, 1, 8, 30, 1, 0, time.UTC) },
		"not UTC":          func(e *store.Event) { e.CreatedAt = e.CreatedAt.In(paris) },
		"payload spaced":   func(e *store.Event) { e.Raw = []byte("{ \"a\" : [1, 2 ,\n3],\t\"b\":\"\u2028\" }") },
		"odd type tag":     func(e *store.Event) { e.TypeTag = odd },
		"odd target":       func(e *store.Event) { e.Target = odd },
		"odd kind":         func(e *store.Event) { e.Kind = "es-delete\x7f" + odd },
		"odd flight key":   func(e *store.Event) { k := odd; e.FlightKey = &k },
		"negative ids":     func(e *store.Event) { e.EventID, e.MsgID = -1, 0 },
		"backslash only":   func(e *store.Event) { e.TypeTag = `FLOP\\X` },
		"quote only":       func(e *store.Event) { e.Target = `T"1` },
		"control only":     func(e *store.Event) { e.Kind = "k\n" },
		"non-ASCII only":   func(e *store.Event) { k := "20261201|é\u2028"; e.FlightKey = &k },
	}
	for name, change := range cases {
		e := base
		change(&e)
		fast, ref, err := dispatch.Envelopes(&e)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !bytes.Equal(fast, ref) {
			t.Errorf("%s:\n got %s\nwant %s", name, fast, ref)
		}
		var env dispatch.Envelope
		if err := json.Unmarshal(fast, &env); err != nil || env.EventID != e.EventID || env.MsgID != e.MsgID || !env.CreatedAt.Equal(e.CreatedAt) {
			t.Errorf("%s: decodes to %+v, %v", name, env, err)
		}
	}
}
