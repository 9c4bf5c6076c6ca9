package bench

import (
	"testing"
	"time"

	"msgx/internal/sis"
)

func testSchedule(t *testing.T, flights int) Schedule {
	t.Helper()
	loc, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		t.Fatal(err)
	}
	return Schedule{Day: time.Date(2026, 12, 2, 0, 0, 0, 0, loc), Flights: flights, Loc: loc}
}

// TestGeneratedMessagesDecodeCleanly: the bench's messages are valid SIS, with no warning,
// so the figures are those of clean traffic.
func TestGeneratedMessagesDecodeCleanly(t *testing.T) {
	s := testSchedule(t, 50)
	opt := sis.Options{Location: s.Loc}
	snap, err := sis.Decode([]byte(s.Snapshot()), opt)
	if err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	body, ok := snap.Body.(*sis.SchdBody)
	if !ok || len(body.Flights) != 50 || len(body.Invalid) != 0 || len(snap.Warnings) != 0 {
		t.Fatalf("snapshot decoded as %T with %d flights, %d invalid, warnings %v", snap.Body, len(body.Flights), len(body.Invalid), snap.Warnings)
	}
	for i := range 200 {
		for _, raw := range []string{RefAdd(i), s.Flop(i)} {
			m, err := sis.Decode([]byte(raw), opt)
			if err != nil {
				t.Fatalf("message %d: %v\n%s", i, err, raw)
			}
			if len(m.Warnings) > 0 {
				t.Fatalf("message %d: warnings %v\n%s", i, m.Warnings, raw)
			}
		}
	}
}

// TestFlopsAlwaysChangeTheirFlight: two FLOPs of the same kind on one flight, one round of
// flights apart, carry different values, so every FLOP emits events.
func TestFlopsAlwaysChangeTheirFlight(t *testing.T) {
	s := testSchedule(t, SnapshotFlights)
	last := map[int]map[string]string{} // flight → STYP → last payload
	for i := range 4 * SnapshotFlights {
		raw := s.Flop(i)
		m, err := sis.Decode([]byte(raw), sis.Options{Location: s.Loc})
		if err != nil {
			t.Fatal(err)
		}
		k := i % SnapshotFlights
		if last[k] == nil {
			last[k] = map[string]string{}
		}
		body := raw[len(raw)-60:]
		if prev, ok := last[k][m.Meta.STYP]; ok && prev == body {
			t.Fatalf("FLOP %d repeats the value of the one before on flight %d: %s", i, k, body)
		}
		last[k][m.Meta.STYP] = body
	}
}
