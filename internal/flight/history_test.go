package flight_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"msgx/internal/flight"
	"msgx/internal/pipeline"
	"msgx/internal/store/storetest"
)

// The history sweep's reads and deletes, on every dialect: old days with their counts, a day's
// flights in FLID pages, and a delete that takes only the versions it is given.
func TestHistoryContract(t *testing.T) {
	for _, d := range storetest.Dialects() {
		t.Run(d.Name, func(t *testing.T) {
			db := d.Open(t)
			ctx := context.Background()
			s := flight.New(storetest.Flight(db), nil, shanghai)
			sodt := time.Date(2026, 11, 18, 9, 0, 0, 0, shanghai)
			var ws []pipeline.FlightWrite
			for i, day := range []string{"2026-11-18", "2026-11-18", "2026-11-18", "2026-11-19", "2026-11-20"} {
				ws = append(ws, pipeline.FlightWrite{Day: day, FLID: int64(9_000_000_000 + i), Record: rec(int64(9_000_000_000+i), sodt, `"REMK":"延误✈🛫"`)})
			}
			write(t, db, s, ws...)
			days, err := s.HistoryDays(ctx, "2026-11-20")
			if err != nil || fmt.Sprint(days) != "[{2026-11-18 3} {2026-11-19 1}]" {
				t.Fatalf("days: %v %v", days, err)
			}
			page, err := s.HistoryChunk(ctx, "2026-11-18", 0, 2)
			if err != nil || len(page) != 2 || page[0].FLID != 9_000_000_000 || page[0].Version != 1 || page[0].MsgID != 1 || page[0].UpdatedAt.IsZero() {
				t.Fatalf("first page: %+v %v", page, err)
			}
			rest, err := s.HistoryChunk(ctx, "2026-11-18", page[1].FLID, 2)
			if err != nil || len(rest) != 1 || rest[0].FLID != 9_000_000_002 {
				t.Fatalf("second page: %+v %v", rest, err)
			}
			// The third flight changed after it was read: its old version is not deleted.
			write(t, db, s, pipeline.FlightWrite{Day: "2026-11-18", FLID: 9_000_000_002, Record: rec(9_000_000_002, sodt, `"STND":"213"`)})
			n, err := s.DeleteHistory(ctx, append(page, rest...))
			if err != nil || n != 2 {
				t.Fatalf("deleted %d (%v), want the 2 unchanged flights", n, err)
			}
			days, _ = s.HistoryDays(ctx, "2026-11-20")
			if fmt.Sprint(days) != "[{2026-11-18 1} {2026-11-19 1}]" {
				t.Fatalf("days after the delete: %v", days)
			}
			if n, err := s.DeleteHistory(ctx, nil); err != nil || n != 0 {
				t.Fatalf("empty delete: %d %v", n, err)
			}
		})
	}
}
