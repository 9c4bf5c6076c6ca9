package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"msgx/client"
	"msgx/internal/api"
	"msgx/internal/pipeline"
	"msgx/internal/requests"
	"msgx/internal/store"
	"msgx/internal/store/storetest"
)

// The data-request listing pages as every listing does (docs/api.md): limit clamped to
// 1..1000, after a cursor, a bad value answered 400 naming the parameter.
func TestRequestListingPagesAsEveryListing(t *testing.T) {
	t.Parallel()
	db := storetest.SQLite(t)
	svc := requests.New(db.RequestTracker, requests.Options{Clock: pipeline.SystemClock{}, Location: time.UTC, Timeout: time.Minute, MaxResends: 1})
	var ids []int64
	for _, ref := range []string{"AIRL", "CITY", "AIRL"} {
		r, err := svc.Create(context.Background(), requests.Spec{Type: "RQRD", RefType: ref})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ID)
	}
	mux := http.NewServeMux()
	new(api.Server).RequestRoutes(svc, db.RequestTracker)(mux)
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	get := func(query string) (int, []int64, client.ErrorBody) {
		t.Helper()
		resp, err := http.Get(ts.URL + "/api/v1/requests?" + query)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body struct {
			Requests []struct {
				ID int64 `json:"id"`
			} `json:"requests"`
			client.ErrorBody
		}
		json.NewDecoder(resp.Body).Decode(&body)
		var got []int64
		for _, r := range body.Requests {
			got = append(got, r.ID)
		}
		return resp.StatusCode, got, body.ErrorBody
	}
	if code, got, _ := get(""); code != 200 || len(got) != 3 {
		t.Fatalf("no paging: %d %v, want the 3 requests", code, got)
	}
	if code, got, _ := get("limit=0&order=asc"); code != 200 || len(got) != 1 || got[0] != ids[0] {
		t.Errorf("limit=0, oldest first: %d %v, want the first request alone", code, got)
	}
	if code, got, _ := get(fmt.Sprintf("after=%d&limit=1&order=asc", ids[0])); code != 200 || len(got) != 1 || got[0] != ids[1] {
		t.Errorf("after the first, limit 1, oldest first: %d %v, want %d", code, got, ids[1])
	}
	// Newest first by default, paging back with before= and forward with after=.
	if code, got, _ := get("limit=0"); code != 200 || len(got) != 1 || got[0] != ids[2] {
		t.Errorf("limit=0: %d %v, want the newest request alone", code, got)
	}
	if code, got, _ := get(fmt.Sprintf("before=%d&limit=1", ids[2])); code != 200 || len(got) != 1 || got[0] != ids[1] {
		t.Errorf("before the newest, limit 1: %d %v, want %d", code, got, ids[1])
	}
	if code, got, _ := get(fmt.Sprintf("after=%d&limit=1", ids[0])); code != 200 || len(got) != 1 || got[0] != ids[1] {
		t.Errorf("newer than the first, limit 1: %d %v, want the one next to it, %d", code, got, ids[1])
	}
	for query, want := range map[string]string{"limit=x": "bad_limit", "limit=-1": "bad_limit", "after=-1": "bad_after", "after=1.5": "bad_after",
		"before=-1": "bad_before", "before=x": "bad_before", "order=newest": "bad_order"} {
		param, _, _ := strings.Cut(query, "=")
		if code, _, e := get(query); code != 400 || e.Code != want || !strings.HasPrefix(e.Error, param+":") {
			t.Errorf("%s: %d %+v, want 400 %s naming %s", query, code, e, want, param)
		}
	}
}

// The messages list is newest first by default: next pages back to older messages, prev
// forward to newer ones, and asking prev again finds a message that arrived meanwhile;
// order=asc keeps the oldest-first order with next_after.
func TestMessageListingNewestFirstPagesBothWays(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := newFixture(t, db, nil, api.InboxRule{})
		type page struct {
			Messages []struct {
				ID int64 `json:"id"`
			} `json:"messages"`
			Order     string  `json:"order"`
			Next      *string `json:"next"`
			Prev      *string `json:"prev"`
			NextAfter *int64  `json:"next_after"`
		}
		get := func(query string) (page, []int64) {
			t.Helper()
			w := f.do(t, call{method: "GET", path: "/api/v1/messages?" + query, remote: "127.0.0.1:5000", host: "127.0.0.1:8080"})
			var p page
			if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil || w.Code != 200 {
				t.Fatalf("%s: %d %v %s", query, w.Code, err, w.Body)
			}
			var ids []int64
			for _, m := range p.Messages {
				ids = append(ids, m.ID)
			}
			return p, ids
		}
		str := func(s *string) string {
			if s == nil {
				return "<nil>"
			}
			return *s
		}
		p, ids := get("limit=2")
		if p.Order != "desc" || len(ids) != 2 || ids[0] != 3 || ids[1] != 2 || str(p.Next) != "before=2" || str(p.Prev) != "after=3" || p.NextAfter != nil {
			t.Fatalf("first page: %v order %s next %s prev %s, want [3 2] desc before=2 after=3", ids, p.Order, str(p.Next), str(p.Prev))
		}
		if p, ids = get("limit=2&" + *p.Next); len(ids) != 1 || ids[0] != 1 || p.Next != nil || str(p.Prev) != "after=1" {
			t.Errorf("older page: %v next %s prev %s, want [1], no next, after=1", ids, str(p.Next), str(p.Prev))
		}
		if p, ids = get("limit=2&after=3"); len(ids) != 0 || str(p.Prev) != "after=3" {
			t.Errorf("nothing newer yet: %v prev %s, want none and the same cursor", ids, str(p.Prev))
		}
		if _, err := db.Intake.InsertMessages(context.Background(), []string{"<new/>"}, time.Now()); err != nil {
			t.Fatal(err)
		}
		if p, ids = get("limit=2&after=3"); len(ids) != 1 || ids[0] != 4 || str(p.Prev) != "after=4" || str(p.Next) != "before=4" {
			t.Errorf("newer than 3 after an arrival: %v next %s prev %s, want [4] before=4 after=4", ids, str(p.Next), str(p.Prev))
		}
		if p, ids = get("limit=2&order=asc"); p.Order != "asc" || len(ids) != 2 || ids[0] != 1 || ids[1] != 2 || p.NextAfter == nil || *p.NextAfter != 2 ||
			str(p.Next) != "after=2" || p.Prev != nil {
			t.Errorf("oldest first: %v next %s prev %s next_after %v, want [1 2] after=2 no prev", ids, str(p.Next), str(p.Prev), p.NextAfter)
		}
	})
}
