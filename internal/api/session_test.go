package api_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"msgx/client"
	"msgx/internal/api"
	"msgx/internal/store/storetest"
)

// The log-in answers the airport's zone as GET /api/v1/me does, so that the console shows
// airport time from the first page after logging in (it showed the browser's zone until a
// reload, and "null" where the zone should have been); a loopback server's log-in too.
func TestLoginAndMeNameTheAirportZone(t *testing.T) {
	t.Parallel()
	shanghai, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		t.Fatal(err)
	}
	zoneOf := func(what string, code int, body string) string {
		t.Helper()
		var s client.Session
		if code != 200 || json.Unmarshal([]byte(body), &s) != nil {
			t.Fatalf("%s: %d %s", what, code, body)
		}
		return s.Timezone
	}

	f := newFixture(t, storetest.SQLite(t), testTokens, api.InboxRule{})
	f.srv.Loc = shanghai
	w := f.do(t, call{method: "POST", path: "/api/v1/login", body: `{"token":"` + operatorSecret + `"}`})
	if z := zoneOf("login", w.Code, w.Body.String()); z != "Asia/Shanghai" {
		t.Fatalf("the log-in answer names zone %q, want Asia/Shanghai: %s", z, w.Body)
	}
	cookie := strings.SplitN(w.Header().Get("Set-Cookie"), ";", 2)[0]
	w = f.do(t, call{method: "GET", path: "/api/v1/me", header: map[string]string{"Cookie": cookie}})
	if z := zoneOf("me", w.Code, w.Body.String()); z != "Asia/Shanghai" || !strings.Contains(w.Body.String(), `"name":"ops"`) {
		t.Fatalf("GET /api/v1/me: zone %q: %s", z, w.Body)
	}

	open := newFixture(t, storetest.SQLite(t), nil, api.InboxRule{})
	open.srv.Loc = shanghai
	w = open.do(t, call{method: "POST", path: "/api/v1/login", body: `{}`, remote: "127.0.0.1:1", host: "127.0.0.1:8080"})
	if z := zoneOf("loopback login", w.Code, w.Body.String()); z != "Asia/Shanghai" || !strings.Contains(w.Body.String(), `"via":"loopback"`) {
		t.Fatalf("a loopback log-in: zone %q: %s", z, w.Body)
	}
	// No zone configured (a server built without one): UTC, named, never empty.
	open.srv.Loc = nil
	w = open.do(t, call{method: "GET", path: "/api/v1/me", remote: "127.0.0.1:1", host: "127.0.0.1:8080"})
	if z := zoneOf("me without a zone", w.Code, w.Body.String()); z != "UTC" {
		t.Fatalf("GET /api/v1/me without a zone: %q, want UTC", z)
	}
}
