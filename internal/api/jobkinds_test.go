package api_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"msgx/client"
	"msgx/internal/api"
	"msgx/internal/jobs"
	"msgx/internal/pipeline"
	"msgx/internal/store"
	"msgx/internal/store/storetest"
)

// A job that cannot run in this configuration is listed with the reason and refused with 409
// job_cannot_run, and nothing is queued; one that can run is queued as before.
func TestJobKindsAndAJobThatCannotRun(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		// Phase B without REDIS_FLIGHT: no Rebuild, Restore or Consistency.
		runner := &jobs.Runner{DB: db.Archiver, Purge: db.Archiver, Clock: pipeline.SystemClock{}}
		srv := api.New(api.Deps{DB: storetest.API(db), Clock: pipeline.SystemClock{}, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Jobs: runner})
		ts := httptest.NewServer(srv.Handler())
		defer ts.Close()

		resp, err := http.Get(ts.URL + "/api/v1/jobs/kinds")
		if err != nil {
			t.Fatal(err)
		}
		var ans client.JobKinds
		err = json.NewDecoder(resp.Body).Decode(&ans)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 || len(ans.Kinds) != len(jobs.Kinds) {
			t.Fatalf("GET /api/v1/jobs/kinds: %d %+v %v", resp.StatusCode, ans, err)
		}
		got := map[string]jobs.KindInfo{}
		for _, k := range ans.Kinds {
			got[k.Kind] = k
		}
		if k := got["PROJECTION_REBUILD"]; k.Runnable || k.Reason != "phase B without a REDIS_FLIGHT target: nothing to rebuild" {
			t.Errorf("PROJECTION_REBUILD: %+v", k)
		}
		if k := got["ARCHIVE"]; !k.Runnable || k.Reason != "" {
			t.Errorf("ARCHIVE: %+v", k)
		}
		if k := got["REDIS_RESTORE"]; k.Runnable || k.Reason == "" {
			t.Errorf("REDIS_RESTORE: %+v", k)
		}

		post := func(kind string) (int, client.ErrorBody) {
			resp, err := http.Post(ts.URL+"/api/v1/jobs", "application/json", strings.NewReader(`{"kind":"`+kind+`"}`))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var e client.ErrorBody
			json.NewDecoder(resp.Body).Decode(&e)
			return resp.StatusCode, e
		}
		if code, e := post("PROJECTION_REBUILD"); code != http.StatusConflict || e.Code != "job_cannot_run" ||
			!strings.Contains(e.Error, "phase B without a REDIS_FLIGHT target: nothing to rebuild") {
			t.Errorf("POST PROJECTION_REBUILD: %d %+v", code, e)
		}
		if list, err := db.JobQueue.ListJobs(t.Context(), 10); err != nil || len(list) != 0 {
			t.Fatalf("a job that cannot run was queued: %v %v", list, err)
		}
		if code, e := post("ARCHIVE"); code != http.StatusOK {
			t.Errorf("POST ARCHIVE: %d %+v", code, e)
		}
		if list, err := db.JobQueue.ListJobs(t.Context(), 10); err != nil || len(list) != 1 {
			t.Fatalf("ARCHIVE not queued: %v %v", list, err)
		}
	})
}
