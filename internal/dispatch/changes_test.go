package dispatch

import (
	"encoding/json"
	"testing"

	"msgx/internal/event"
)

// TestChangesDecodeAStoredEventOnceForEveryTarget: the targets that take a shared event get
// one decoded change between them; other bytes under the same id are decoded anew, bytes that
// do not decode fail as Decode does, and the cache holds no more than its bound.
func TestChangesDecodeAStoredEventOnceForEveryTarget(t *testing.T) {
	enc := func(flid int64, v string) []byte {
		b, err := event.Encode(&event.FlightChange{FLID: flid, Op: event.Update, Record: json.RawMessage(`{"FLID":1,"STND":"` + v + `"}`),
			Changes: []event.Change{{Key: "STND", Old: json.RawMessage(`"1"`), New: json.RawMessage(`"` + v + `"`)}}})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	cs := newChanges()
	a := enc(1, "101")
	first, err := cs.decode(7, a)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := cs.decode(7, append([]byte(nil), a...)); again != first {
		t.Error("the same bytes of event 7 were decoded twice")
	}
	b := enc(1, "102")
	if other, err := cs.decode(7, b); err != nil || other == first || string(other.Changes[0].New) != `"102"` {
		t.Errorf("other bytes under id 7: %+v %v, want them decoded", other, err)
	}
	if _, err := cs.decode(8, []byte(`{"v":1,"FLID":`)); err == nil {
		t.Error("bytes that do not decode were accepted")
	}
	for id := int64(100); id < 100+3*changeCacheSize; id++ {
		if _, err := cs.decode(id, a); err != nil {
			t.Fatal(err)
		}
	}
	if len(cs.byID) != changeCacheSize || len(cs.ring) != changeCacheSize {
		t.Errorf("holds %d changes (ring %d), want at most %d", len(cs.byID), len(cs.ring), changeCacheSize)
	}
}
