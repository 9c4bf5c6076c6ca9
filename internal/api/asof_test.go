package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"msgx/internal/api"
)

// GET /api/v1/flights?as_of= reads the time in the airport's zone (a time of day on the
// board's day, a local date and time) or with its offset, in UTC with tz=UTC; refuses a time
// in the future (400 bad_as_of) and one before the kept history (409 before_history, with
// history_from); counts the changed ages from as_of; and without a rebuilder refuses as_of.
func TestFlightsAsOf(t *testing.T) {
	t.Parallel()
	loc, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, loc)
	from := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	var asked []time.Time
	var days []string
	rebuild := func(_ context.Context, day string, at time.Time) (*api.AsOfBoard, error) {
		asked, days = append(asked, at), append(days, day)
		if at.Before(from) {
			return nil, &api.BeforeHistoryError{At: at, From: from}
		}
		return &api.AsOfBoard{
			Flights:     []json.RawMessage{json.RawMessage(`{"FLID":8001,"SODT":"2026-12-03T02:15:00Z"}`)},
			Changed:     map[int64]api.AsOfChange{8001: {At: at.Add(-30 * time.Second), MsgID: 42}},
			Messages:    3,
			HistoryFrom: from,
		}, nil
	}
	mux := http.NewServeMux()
	api.FlightRoutes(nil, nil, &api.Finder{Clock: fixedClock(now), Loc: loc}, rebuild)(mux)
	var ans struct {
		Day         string    `json:"day"`
		AsOf        time.Time `json:"as_of"`
		HistoryFrom time.Time `json:"history_from"`
		Messages    int       `json:"messages"`
		Count       int       `json:"count"`
		Changed     map[string]struct {
			At    time.Time `json:"changed_at"`
			Age   int64     `json:"changed_age_s"`
			MsgID int64     `json:"msg_id"`
		} `json:"changed"`
		Warnings []string `json:"warnings"`
	}
	// A slice, not a map: the check after the loop reads the third case's day.
	for _, c := range []struct {
		q    string
		want time.Time
	}{
		{"day=2026-12-03&as_of=08:15", time.Date(2026, 12, 3, 8, 15, 0, 0, loc)},
		{"day=2026-12-02&as_of=23:59:30", time.Date(2026, 12, 2, 23, 59, 30, 0, loc)},
		{"as_of=08:15", time.Date(2026, 12, 3, 8, 15, 0, 0, loc)}, // today at the airport
		{"day=2026-12-03&as_of=2026-12-02T20:00", time.Date(2026, 12, 2, 20, 0, 0, 0, loc)},
		{"day=2026-12-03&as_of=03:15&tz=UTC", time.Date(2026, 12, 3, 3, 15, 0, 0, time.UTC)},
		{"day=2026-12-03&as_of=2026-12-03T00:15:00Z", time.Date(2026, 12, 3, 0, 15, 0, 0, time.UTC)},
		{"day=2026-12-03&as_of=2026-12-03T08:15:00%2B08:00", time.Date(2026, 12, 3, 0, 15, 0, 0, time.UTC)},
	} {
		q, want := c.q, c.want
		ans.Changed = nil
		if code := getJSON(t, mux, "/api/v1/flights?"+q, &ans); code != 200 {
			t.Fatalf("%s: %d", q, code)
		}
		if !ans.AsOf.Equal(want) || !asked[len(asked)-1].Equal(want) {
			t.Errorf("%s: as_of %s (asked %s), want %s", q, ans.AsOf, asked[len(asked)-1], want)
		}
		if ans.Count != 1 || ans.Messages != 3 || !ans.HistoryFrom.Equal(from) || ans.Warnings == nil {
			t.Errorf("%s: %+v", q, ans)
		}
		if c := ans.Changed["8001"]; c.Age != 30 || c.MsgID != 42 {
			t.Errorf("%s: changed %+v, want 30 s before as_of by message 42", q, c)
		}
	}
	if days[2] != "2026-12-03" {
		t.Errorf("no day: rebuilt %s, want today at the airport", days[2])
	}
	for q, code := range map[string]int{
		"day=2026-12-03&as_of=12:01":            http.StatusBadRequest, // in the future
		"day=2026-12-03&as_of=8.15":             http.StatusBadRequest,
		"day=2026-12-03&as_of=08:15&tz=Mars/X":  http.StatusBadRequest,
		"day=3.12.2026&as_of=08:15":             http.StatusBadRequest,
		"day=2026-12-03&as_of=08:15&movement=A": http.StatusBadRequest,
		"day=2026-11-30&as_of=23:00":            http.StatusConflict,
	} {
		var e struct {
			Code        string     `json:"code"`
			Error       string     `json:"error"`
			HistoryFrom *time.Time `json:"history_from"`
		}
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, httptest.NewRequest("GET", "/api/v1/flights?"+q, nil))
		json.Unmarshal(w.Body.Bytes(), &e)
		if w.Code != code {
			t.Errorf("%s: %d %s, want %d", q, w.Code, w.Body, code)
		}
		if code == http.StatusConflict && (e.Code != "before_history" || e.HistoryFrom == nil || !e.HistoryFrom.Equal(from) || !strings.Contains(e.Error, "before the retained history")) {
			t.Errorf("%s: %+v, want before_history with history_from %s", q, e, from)
		}
	}
	// Without a rebuilder as_of is an unknown parameter.
	plain := http.NewServeMux()
	api.FlightRoutes(nil, nil, &api.Finder{Clock: fixedClock(now), Loc: loc})(plain)
	if got := getJSON(t, plain, "/api/v1/flights?day=2026-12-03&as_of=08:15", &ans); got != http.StatusBadRequest {
		t.Errorf("as_of without a rebuilder: %d, want 400", got)
	}
}
