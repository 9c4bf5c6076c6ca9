package api_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"msgx/client"
	"msgx/internal/api"
	"msgx/internal/pipeline"
	"msgx/internal/store/storetest"
)

func TestReadAPIErrors(t *testing.T) {
	t.Parallel()
	srv := api.New(api.Deps{DB: storetest.API(storetest.SQLite(t)), Clock: pipeline.SystemClock{}, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	for path, want := range map[string]int{
		"/api/v1/messages/abc":        400,
		"/api/v1/messages/99":         404,
		"/api/v1/messages?state=NOPE": 400,
		"/api/v1/messages?class=NOPE": 400,
		"/api/v1/ref/NOPE":            404,
		"/api/v1/ref/AIRL/XX":         404,
		"/api/v1/nothing":             404,
	} {
		resp, err := http.Get(ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		var e client.ErrorBody
		json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if resp.StatusCode != want || e.Code == "" || e.Error == "" {
			t.Errorf("GET %s: %d %+v, want %d with the error shape", path, resp.StatusCode, e, want)
		}
	}
}
