package event

import (
	"strings"
	"testing"
)

// TestStoredRendersEachFamily checks that a stored canonical event (kind change, Encode's
// bytes) is delivered as the kind and payload of its target's family, for every family and
// every shape of change: the bytes the renderers give the handler's rows.
func TestStoredRendersEachFamily(t *testing.T) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.c
			b, err := Encode(&c)
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []struct{ family, kind, payload string }{
				{TargetFlop, KindFlop, tc.flop}, {TargetSchd, KindSchd, tc.schd},
				{TargetNotify, KindNotify, tc.note}, {TargetES, tc.esKind, tc.es},
			} {
				kind, p, err := Stored(want.family, KindChange, b)
				if err != nil || kind != want.kind || string(p) != want.payload {
					t.Errorf("%s: got %s %s %v, want %s %s", want.family, kind, p, err, want.kind, want.payload)
				}
			}
		})
	}
}

// TestStoredPassesOtherKinds checks that an event of any other kind is its stored bytes, with
// or without a family: the rows written before canonical events, and every target's own.
func TestStoredPassesOtherKinds(t *testing.T) {
	for _, family := range []string{TargetFlop, "", "WEBHOOK"} {
		kind, p, err := Stored(family, KindNotify, []byte(`not even JSON`))
		if err != nil || kind != KindNotify || string(p) != `not even JSON` {
			t.Errorf("family %q: got %s %s %v", family, kind, p, err)
		}
	}
}

// TestStoredRefuses checks the canonical events no target can be given: an encoding Decode
// refuses, and a family that is none of the four (a target without one, or a misspelt one).
func TestStoredRefuses(t *testing.T) {
	c := cases[0].c
	good, err := Encode(&c)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, family, stored, want string
	}{
		{"another version", TargetFlop, strings.Replace(string(good), `{"v":1`, `{"v":2`, 1), "decode"},
		{"not canonical", TargetFlop, strings.Replace(string(good), `,"op"`, `, "op"`, 1), "decode"},
		{"a target's payload", TargetFlop, cases[0].flop, "decode"},
		{"no family", "", string(good), "no family"},
		{"unknown family", "KAFKA_FLOPS", string(good), `"KAFKA_FLOPS" is none of KAFKA_FLOP, KAFKA_SCHD, REDIS_NOTIFY, ES_FLIGHT`},
	} {
		kind, p, err := Stored(tc.family, KindChange, []byte(tc.stored))
		if err == nil || !strings.Contains(err.Error(), tc.want) || kind != "" || p != nil {
			t.Errorf("%s: got %q %s %v, want an error saying %q", tc.name, kind, p, err, tc.want)
		}
	}
}
