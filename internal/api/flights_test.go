package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"msgx/internal/api"
	"msgx/internal/flight"
	"msgx/internal/pipeline"
	"msgx/internal/store"
	"msgx/internal/store/storetest"
)

// The flights of a day say when each last changed and how long before the answer by the
// server's clock, so that a board opened after a change still highlights it.
func TestFlightsOfADayTellWhenEachChanged(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		loc, err := time.LoadLocation("Asia/Shanghai")
		if err != nil {
			t.Fatal(err)
		}
		t0 := time.Date(2026, 12, 3, 9, 0, 0, 0, loc)
		write := func(flid int64, at time.Time) {
			t.Helper()
			w := pipeline.FlightWrite{Day: "2026-12-03", FLID: flid, Record: json.RawMessage(`{"FLID":` + jsonInt(flid) + `,"SODT":"2026-12-03T02:15:00Z"}`)}
			if err := flight.New(storetest.Flight(db), fixedClock(at), loc).Apply(ctx, flid, []pipeline.FlightWrite{w}, at); err != nil {
				t.Fatal(err)
			}
		}
		write(8001, t0)
		write(8002, t0.Add(50*time.Second))
		fs := flight.New(storetest.Flight(db), fixedClock(t0), loc)
		mux := http.NewServeMux()
		api.FlightRoutes(fs, db.RefData, &api.Finder{Flights: fs, Clock: fixedClock(t0.Add(90 * time.Second)), Loc: loc})(mux)
		var ans struct {
			Changed map[string]struct {
				At  string `json:"changed_at"`
				Age *int64 `json:"changed_age_s"`
			} `json:"changed"`
		}
		if code := getJSON(t, mux, "/api/v1/flights?day=2026-12-03", &ans); code != 200 {
			t.Fatalf("day: %d", code)
		}
		for flid, want := range map[string]struct {
			at  string
			age int64
		}{"8001": {"2026-12-03T01:00:00Z", 90}, "8002": {"2026-12-03T01:00:50Z", 40}} {
			if got := ans.Changed[flid]; got.At != want.at || got.Age == nil || *got.Age != want.age {
				t.Errorf("flight %s changed %+v, want at %s, %d s ago", flid, got, want.at, want.age)
			}
		}
		if len(ans.Changed) != 2 {
			t.Errorf("changes of %d flights, want 2: %+v", len(ans.Changed), ans.Changed)
		}
	})
}
