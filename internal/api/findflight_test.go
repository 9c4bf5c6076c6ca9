package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"msgx/client"
	"msgx/internal/api"
	"msgx/internal/flight"
	"msgx/internal/pipeline"
	"msgx/internal/store"
	"msgx/internal/store/storetest"
)

// A search by flight number lists the flight and the messages that changed it, newest first:
// the FLOPs carry only the FLID, so their bodies never hold the number (MSG_FLIGHT finds
// them); the schedule that holds the number is listed once. tz=UTC shows the labels in UTC.
func TestFindAFlightsMessagesByItsNumber(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		loc, _ := time.LoadLocation("Asia/Shanghai")
		now := time.Date(2026, 12, 3, 9, 0, 0, 0, loc)
		fs := flight.New(storetest.Flight(db), fixedClock(now), loc)
		if err := fs.Apply(ctx, 1, []pipeline.FlightWrite{
			{Day: "2026-12-03", FLID: 7001, Record: json.RawMessage(`{"FLID":7001,"ALCD":"CA","FLNO":"CA8241","MVIN":"D","SODT":"2026-12-03T07:10:00Z"}`)},
			{Day: "2026-12-03", FLID: 7002, Record: json.RawMessage(`{"FLID":7002,"ALCD":"MU","FLNO":"MU5101","MVIN":"A","SODT":"2026-12-03T08:00:00Z"}`)},
		}, now); err != nil {
			t.Fatal(err)
		}
		ids, err := db.Intake.InsertMessages(ctx, []string{
			`<MSG><SCHD><FLTR><FLID>7001</FLID><FLNO>CA8241</FLNO></FLTR><FLTR><FLID>7002</FLID><FLNO>MU5101</FLNO></FLTR></SCHD></MSG>`,
			`<MSG><FLOP><FLID>7001</FLID><STND>212</STND></FLOP></MSG>`,
			`<MSG><FLOP><FLID>7002</FLID><STND>213</STND></FLOP></MSG>`,
			`<MSG><FLOP><FLID>7001</FLID><GTDT/></FLOP></MSG>`,
		}, now)
		if err != nil {
			t.Fatal(err)
		}
		pending := store.Version{State: pipeline.Pending}
		for i, flids := range [][]int64{{7001, 7002}, {7001}, {7002}, {7001}} {
			if _, _, err := db.Processor.Succeed(ctx, ids[i], store.Success{From: pending, TypeTag: "FLOP-STND", Identity: "x" + jsonInt(ids[i]), Flights: flids}, nil, now); err != nil {
				t.Fatal(err)
			}
		}
		finder := &api.Finder{Flights: fs, Ref: airlines{db.RefData}, Bodies: db.Operations, ByFlight: db.Flights, Clock: fixedClock(now), Loc: loc}
		mux := http.NewServeMux()
		api.FindRoutes(finder)(mux)

		var ans client.FindAnswer
		if code := getJSON(t, mux, "/api/v1/find?q=ca8241", &ans); code != 200 {
			t.Fatalf("find: %d", code)
		}
		var got []string
		for _, h := range ans.Hits {
			got = append(got, h.Kind+" "+jsonInt(h.ID)+" "+h.Match)
		}
		want := []string{"flight 7001 flno", "message " + jsonInt(ids[3]) + " flight", "message " + jsonInt(ids[1]) + " flight", "message " + jsonInt(ids[0]) + " flight"}
		if strings.Join(got, "; ") != strings.Join(want, "; ") {
			t.Fatalf("find CA8241: %v, want %v", got, want)
		}
		if l := ans.Hits[1].Label; !strings.Contains(l, "flight CA8241 (FLID 7001)") || !strings.Contains(l, "received 2026-12-03 09:00:00") {
			t.Errorf("a FLOP's label: %q", l)
		}
		if ans.Timezone != "Asia/Shanghai" || !strings.Contains(ans.Searched, "the messages that named the flights of that number") ||
			!strings.Contains(ans.Hits[0].Label, "scheduled 2026-12-03 15:10") {
			t.Errorf("zone %q, searched %q, flight %q", ans.Timezone, ans.Searched, ans.Hits[0].Label)
		}
		// The limit bounds the messages, newest kept.
		if getJSON(t, mux, "/api/v1/find?q=CA8241&limit=1", &ans); len(ans.Hits) != 2 || ans.Hits[1].ID != ids[3] || !ans.More {
			t.Errorf("limit 1: %+v", ans)
		}
		// For scripts: UTC.
		if getJSON(t, mux, "/api/v1/find?q=CA8241&tz=UTC", &ans); ans.Timezone != "UTC" || !strings.Contains(ans.Hits[0].Label, "scheduled 2026-12-03 07:10") ||
			!strings.Contains(ans.Hits[1].Label, "received 2026-12-03 01:00:00") {
			t.Errorf("tz=UTC: %+v", ans)
		}
		if code := getJSON(t, mux, "/api/v1/find?q=CA8241&tz=Mars/Olympus", nil); code != http.StatusBadRequest {
			t.Errorf("an unknown zone: %d", code)
		}
	})
}
