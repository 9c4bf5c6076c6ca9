package client

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
)

// --server takes a URL, host:port or :port.
func TestNormalizeServer(t *testing.T) {
	for in, want := range map[string]string{
		"http://aodb:8080/":    "http://aodb:8080",
		"https://msgx.example": "https://msgx.example",
		"aodb:8080":            "http://aodb:8080",
		":9090":                "http://127.0.0.1:9090",
		" 10.0.0.5:8080 ":      "http://10.0.0.5:8080",
	} {
		if got := NormalizeServer(in); got != want {
			t.Errorf("NormalizeServer(%q) = %q, want %q", in, got, want)
		}
	}
}

// Every state-changing call sends JSON: the API refuses a POST without Content-Type
// application/json (or an X-CSRF-Token header) as a cross-site request.
func TestPostsSendJSON(t *testing.T) {
	var refused []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == "POST" && r.Header.Get("Content-Type") != "application/json" {
			refused = append(refused, r.URL.Path)
		}
		w.Write([]byte("{}"))
	}))
	defer srv.Close()
	c, ctx := New(srv.URL, ""), context.Background()
	c.CheckConsistency(ctx)
	c.StartJob(ctx, "ARCHIVE")
	c.Replay(ctx, []string{"ORPHAN"}, nil, false)
	c.ReplayEvents(ctx, "KAFKA_FLOP", nil, false)
	c.SetPaused(ctx, true, "", "maintenance")
	c.Park(ctx, 7, "by hand")
	c.AckDead(ctx, "message", []int64{7}, "")
	c.RequestReference(ctx, "AIRL")
	if len(refused) > 0 {
		t.Errorf("POSTs without a JSON content type: %v", refused)
	}
}

// An answer other than 2xx is an *Error with the status and the API's error code.
func TestErrorCarriesStatusAndCode(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusConflict)
		w.Write([]byte(`{"error":"msgx runs in shadow mode","code":"shadow_mode"}`))
	}))
	defer srv.Close()
	_, err := New(srv.URL, "").RequestReference(context.Background(), "AIRL")
	var e *Error
	if !errors.As(err, &e) || e.Status != http.StatusConflict || e.Code != "shadow_mode" || e.Message != "msgx runs in shadow mode" {
		t.Fatalf("error %#v, want a 409 shadow_mode *Error", err)
	}
}
