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

	"msgx/internal/api"
	"msgx/internal/pipeline"
	"msgx/internal/requests"
	"msgx/internal/store/storetest"
)

// The data-request listing pages as every listing does (docs/api.md): limit clamped to
// 1..1000, after a cursor, a bad value answered 400 naming the parameter.
func TestRequestListingPagesAsEveryListing(t *testing.T) {
	t.Parallel()
	db := storetest.SQLite(t)
	svc := requests.New(db, requests.Options{Clock: pipeline.SystemClock{}, Location: time.UTC, Timeout: time.Minute, MaxResends: 1})
	var ids []int64
	for _, ref := range []string{"AIRL", "CITY", "AIRL"} {
		r, err := svc.Create(context.Background(), requests.Spec{Type: "RQRD", RefType: ref})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ID)
	}
	mux := http.NewServeMux()
	api.RequestRoutes(svc, db)(mux)
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	get := func(query string) (int, []int64, api.ErrorBody) {
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
			api.ErrorBody
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
	if code, got, _ := get("limit=0"); code != 200 || len(got) != 1 || got[0] != ids[0] {
		t.Errorf("limit=0: %d %v, want the first request alone", code, got)
	}
	if code, got, _ := get(fmt.Sprintf("after=%d&limit=1", ids[0])); code != 200 || len(got) != 1 || got[0] != ids[1] {
		t.Errorf("after the first, limit 1: %d %v, want %d", code, got, ids[1])
	}
	for query, want := range map[string]string{"limit=x": "bad_limit", "limit=-1": "bad_limit", "after=-1": "bad_after", "after=1.5": "bad_after"} {
		param, _, _ := strings.Cut(query, "=")
		if code, _, e := get(query); code != 400 || e.Code != want || !strings.HasPrefix(e.Error, param+":") {
			t.Errorf("%s: %d %+v, want 400 %s naming %s", query, code, e, want, param)
		}
	}
}
