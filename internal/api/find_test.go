package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"msgx/client"
	"msgx/internal/api"
	"msgx/internal/flight"
	"msgx/internal/openapicheck"
	"msgx/internal/pipeline"
	"msgx/internal/store"
	"msgx/internal/store/storetest"
)

type fixedClock time.Time

func (c fixedClock) Now() time.Time { return time.Time(c) }

// airlines is reference data with one AIRL entry: Air China, CA / CCA.
type airlines struct{ store.Reference }

func (airlines) RefList(_ context.Context, typ string) ([]store.RefEntry, error) {
	if typ != "AIRL" {
		return nil, nil
	}
	return []store.RefEntry{{Type: "AIRL", Key: "CA", Fields: json.RawMessage(`{"ITOP":"CA","ICOP":"CCA","ONAM":"AIR CHINA"}`)}}, nil
}

// findFixture stores flights around 2026-12-03 (Asia/Shanghai) and three messages, and serves
// the flight and find routes.
func findFixture(t *testing.T, db *store.DB) http.Handler {
	t.Helper()
	ctx := context.Background()
	loc, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 12, 3, 9, 0, 0, 0, loc)
	fs := flight.New(storetest.Flight(db), fixedClock(now), loc)
	rec := func(day string, flid int64, fields string) pipeline.FlightWrite {
		return pipeline.FlightWrite{Day: day, FLID: flid, Record: json.RawMessage(`{"FLID":` + jsonInt(flid) + `,` + fields + `}`)}
	}
	writes := []pipeline.FlightWrite{
		rec("2026-12-03", 7001, `"ALCD":"CA","FLNO":"CA8241","MVIN":"D","SODT":"2026-12-03T02:15:00Z","RENO":"B-1234","STND":"212"`),
		rec("2026-12-03", 7002, `"ALCD":"CA","FLNO":"CA8241A","MVIN":"D","SODT":"2026-12-03T03:15:00Z","GTDT":[{"GTNO":1,"GATE":"E15"}]`),
		rec("2026-12-02", 7003, `"ALCD":"CA","FLNO":"8241","MVIN":"A","SODT":"2026-12-02T02:15:00Z","PSDT":[{"PSNO":1,"PSST":"登机口7"}]`),
		rec("2026-12-03", 7004, `"ALCD":"MU","FLNO":"MU8241","MVIN":"D","SODT":"2026-12-03T04:15:00Z"}`),
		rec("2026-11-20", 7005, `"ALCD":"CA","FLNO":"CA8241","MVIN":"D","SODT":"2026-11-20T02:15:00Z"`),
	}
	writes[3].Record = json.RawMessage(strings.TrimSuffix(string(writes[3].Record), "}"))
	if err := fs.Apply(ctx, 1, writes, now); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Intake.InsertMessages(ctx, []string{`<MSG><FLNO>CA8241</FLNO></MSG>`, `<MSG><REMC>延误 🛫 旅客</REMC></MSG>`, `<MSG/>`}, now); err != nil {
		t.Fatal(err)
	}
	finder := &api.Finder{Flights: fs, Ref: airlines{db.RefData}, Bodies: db.Operations, Clock: fixedClock(now), Loc: loc}
	mux := http.NewServeMux()
	api.FlightRoutes(fs, db.RefData, finder)(mux)
	api.FindRoutes(finder)(mux)
	return mux
}

func jsonInt(n int64) string { b, _ := json.Marshal(n); return string(b) }

func getJSON(t *testing.T, h http.Handler, path string, into any) int {
	t.Helper()
	w := httptest.NewRecorder()
	req := httptest.NewRequest("GET", path, nil)
	h.ServeHTTP(w, req)
	// Every answer as docs/openapi/openapi.json describes it.
	if err := openapicheck.Check(req, w.Code, w.Header(), w.Body.Bytes()); err != nil {
		t.Error(err)
	}
	if into != nil && w.Code == http.StatusOK {
		if err := json.Unmarshal(w.Body.Bytes(), into); err != nil {
			t.Fatalf("%s: %v: %s", path, err, w.Body)
		}
	}
	return w.Code
}

// GET /api/v1/flights?flno= finds a flight by its number however it is written: letter case,
// a space, the ICAO designator, with or without the suffix; only in the days around today.
func TestFlightsByNumber(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		h := findFixture(t, db)
		cases := []struct {
			flno string
			want []int64
		}{
			{"CA8241", []int64{7003, 7001, 7002}},
			{"ca 8241", []int64{7003, 7001, 7002}},
			{"CCA8241", []int64{7003, 7001, 7002}},
			{"CA08241", []int64{7003, 7001, 7002}},
			{"CA8241A", []int64{7002}},
			{"MU8241", []int64{7004}},
			{"CA8242", []int64{}},
		}
		for _, c := range cases {
			var ans struct {
				Days    [2]string
				Count   int
				Flights []struct{ FLID int64 }
			}
			if code := getJSON(t, h, "/api/v1/flights?flno="+url.QueryEscape(c.flno), &ans); code != 200 {
				t.Fatalf("%s: %d", c.flno, code)
			}
			got := []int64{}
			for _, f := range ans.Flights {
				got = append(got, f.FLID)
			}
			if !equalIDs(got, c.want) || ans.Count != len(c.want) || ans.Days != [2]string{"2026-11-30", "2026-12-05"} {
				t.Errorf("flno %s: %v in %v, want %v", c.flno, got, ans.Days, c.want)
			}
		}
		var one struct{ Flights []struct{ FLID int64 } }
		if getJSON(t, h, "/api/v1/flights?flno=CA8241&day=2026-11-20", &one); len(one.Flights) != 1 || one.Flights[0].FLID != 7005 {
			t.Errorf("flno with day: %+v", one)
		}
		for _, bad := range []string{"/api/v1/flights?flno=8241", "/api/v1/flights?flno=", "/api/v1/flights?flno=CA8241&day=3.12.", "/api/v1/flights?flno=CA1&x=1"} {
			if code := getJSON(t, h, bad, nil); code != http.StatusBadRequest {
				t.Errorf("%s: %d, want 400", bad, code)
			}
		}
	})
}

// GET /api/v1/find answers typed hits for a flight number, a FLID, a registration, a stand, a
// gate and message text, and says what it searched.
func TestFindAnything(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		h := findFixture(t, db)
		cases := []struct{ q, want string }{
			{"CA8241A", "flight 7002 flno"},
			{"7004", "flight 7004 flid"},
			{"b1234", "flight 7001 registration"},
			{"212", "flight 7001 stand"},
			{"登机口7", "flight 7003 stand"},
			{"e15", "flight 7002 gate"},
			{"延误 🛫", "message 2 body"},
			{"CA8241", "flight 7003 flno|flight 7001 flno|flight 7002 flno|message 1 body"},
		}
		for _, c := range cases {
			var ans client.FindAnswer
			if code := getJSON(t, h, "/api/v1/find?q="+url.QueryEscape(c.q), &ans); code != 200 {
				t.Fatalf("%s: %d", c.q, code)
			}
			var got []string
			for _, hit := range ans.Hits {
				got = append(got, hit.Kind+" "+jsonInt(hit.ID)+" "+hit.Match)
			}
			if strings.Join(got, "|") != c.want {
				t.Errorf("find %q: %v, want %s", c.q, got, c.want)
			}
			if ans.MessagesScanned != store.DefaultBodyScan || !strings.Contains(ans.Searched, "newest 50000 messages") ||
				!strings.Contains(ans.Searched, "2026-11-30 to 2026-12-05") {
				t.Errorf("find %q: searched %q, %d messages", c.q, ans.Searched, ans.MessagesScanned)
			}
		}
		var ans client.FindAnswer
		getJSON(t, h, "/api/v1/find?q=CA8241", &ans)
		if l := ans.Hits[1].Label; !strings.Contains(l, "CA8241, departure, scheduled 2026-12-03 10:15") || ans.Hits[1].Day != "2026-12-03" {
			t.Errorf("label in airport time: %+v", ans.Hits[1])
		}
		if l := ans.Hits[0].Label; !strings.HasPrefix(l, "CA8241, arrival") {
			t.Errorf("label of a number without its prefix: %+v", ans.Hits[0])
		}
		getJSON(t, h, "/api/v1/find?q=CA8241&limit=1", &ans)
		if len(ans.Hits) != 2 || !ans.More {
			t.Errorf("limit 1: %+v", ans)
		}
		for _, bad := range []string{"/api/v1/find", "/api/v1/find?q=+", "/api/v1/find?q=x&limit=0", "/api/v1/find?q=x&limit=5000", "/api/v1/find?q=x&flno=1"} {
			if code := getJSON(t, h, bad, nil); code != http.StatusBadRequest {
				t.Errorf("%s: %d, want 400", bad, code)
			}
		}
	})
}

func equalIDs(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// The messages list's text filter (q) finds a message by its body, not only by its identity,
// error or note.
func TestMessageTextFilterSearchesBodies(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := newFixture(t, db, nil, api.InboxRule{})
		w := f.do(t, call{method: "GET", path: "/api/v1/messages?q=pending", remote: "127.0.0.1:5000", host: "127.0.0.1:8080"})
		var ans struct{ Messages []struct{ ID int64 } }
		if err := json.Unmarshal(w.Body.Bytes(), &ans); err != nil || w.Code != 200 {
			t.Fatalf("%d %v: %s", w.Code, err, w.Body)
		}
		if len(ans.Messages) != 1 || ans.Messages[0].ID != 3 {
			t.Errorf("q=pending: %+v, want the message whose body is <pending/>", ans.Messages)
		}
	})
}

// BenchmarkFind measures one GET /api/v1/find over a busy window: 6 days of 1,000 flights
// each and 50,000 messages of about 1 KB, the most a body search reads.
func BenchmarkFind(b *testing.B) {
	for _, d := range []struct {
		name string
		open func(testing.TB) *store.DB
	}{{"sqlite", storetest.SQLite}, {"mysql", func(tb testing.TB) *store.DB { return storetest.MySQL(tb.(*testing.B)) }}} {
		b.Run(d.name, func(b *testing.B) { benchFind(b, d.open(b)) })
	}
}

func benchFind(b *testing.B, db *store.DB) {
	ctx := context.Background()
	loc, _ := time.LoadLocation("Asia/Shanghai")
	now := time.Date(2026, 12, 3, 9, 0, 0, 0, loc)
	fs := flight.New(storetest.Flight(db), fixedClock(now), loc)
	for day := -3; day <= 2; day++ {
		d := now.AddDate(0, 0, day)
		var ws []pipeline.FlightWrite
		for i := range 1000 {
			flid := int64((day+3)*10000 + i + 1)
			rec := fmt.Sprintf(`{"FLID":%d,"ALCD":"CA","FLNO":"CA%d","MVIN":"D","SODT":%q,"STND":"%d","RENO":"B-%04d"}`,
				flid, 1000+i, d.UTC().Format(time.RFC3339), i%200, i)
			ws = append(ws, pipeline.FlightWrite{Day: d.Format(time.DateOnly), FLID: flid, Record: json.RawMessage(rec)})
		}
		if err := fs.Apply(ctx, 1, ws, now); err != nil {
			b.Fatal(err)
		}
	}
	body := `<MSG>` + strings.Repeat("<X>filler text</X>", 55) + `<FLNO>CA%d</FLNO></MSG>`
	for chunk := 0; chunk < 50; chunk++ {
		raws := make([]string, 1000)
		for i := range raws {
			raws[i] = fmt.Sprintf(body, chunk*1000+i)
		}
		if _, err := db.Intake.InsertMessages(ctx, raws, now); err != nil {
			b.Fatal(err)
		}
	}
	for _, c := range []struct {
		name   string
		bodies store.BodySearch
	}{{"flights+bodies", db.Operations}, {"flights", nil}} {
		finder := &api.Finder{Flights: fs, Ref: db.RefData, Bodies: c.bodies, Clock: fixedClock(now), Loc: loc}
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				ans, err := finder.Find(ctx, "CA1500", 50)
				if err != nil || len(ans.Hits) == 0 {
					b.Fatal(err, ans)
				}
			}
		})
	}
}
