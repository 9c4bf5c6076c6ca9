package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"msgx/client"
	"msgx/internal/api"
	"msgx/internal/metrics"
	"msgx/internal/store"
	"msgx/internal/store/storetest"
	"msgx/internal/testkit"
)

// messageCount is how many messages db holds.
func messageCount(t *testing.T, db *store.DB) int {
	t.Helper()
	ms, err := db.Operations.SearchMessages(context.Background(), store.MessageQuery{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return len(ms)
}

// The inbox refuses a post a web page made (an Origin, or Sec-Fetch-Site cross-site or
// same-site) unless http.inbox-origins lists its origin: 403 before anything is stored,
// counted, and logged once for a storm; the gateway, which sends neither header, posts as
// before.
func TestInboxRefusesPostsOfWebPages(t *testing.T) {
	t.Parallel()
	db := storetest.SQLite(t)
	f := newFixture(t, db, nil, api.InboxRule{})
	m := metrics.New(nil, "test", nil)
	f.inbox.Metrics = m
	f.inbox.Origins = []string{"https://ops.example"}
	post := func(header map[string]string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("POST", "/cminmsgs/send", strings.NewReader("<MSG/>"))
		r.RemoteAddr = "192.0.2.10:40000"
		r.Header.Set("Content-Type", "text/plain")
		for k, v := range header {
			r.Header.Set(k, v)
		}
		w := httptest.NewRecorder()
		f.h.ServeHTTP(w, r)
		return w
	}
	before := messageCount(t, db)
	for _, h := range []map[string]string{
		{"Origin": "https://evil.example"},
		{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"},
		{"Origin": "null"},
		{"Origin": "https://ops.example.evil.example"},
		{"Origin": "http://ops.example"}, // another scheme is another origin
		{"Sec-Fetch-Site": "cross-site"},
		{"Sec-Fetch-Site": "same-site"},
	} {
		w := post(h)
		var e client.ErrorBody
		json.Unmarshal(w.Body.Bytes(), &e)
		if w.Code != http.StatusForbidden || e.Code != "foreign_origin" {
			t.Errorf("%v: %d %s, want 403 foreign_origin", h, w.Code, w.Body)
		}
	}
	if n := messageCount(t, db); n != before {
		t.Fatalf("%d messages stored by refused posts", n-before)
	}
	if got := testkit.Counter(t, m.Registry, "msgx_inbox_refused_total"); got != 7 {
		t.Errorf("msgx_inbox_refused_total %v, want 7", got)
	}
	if n := strings.Count(f.logs.String(), "inbox post refused 403"); n != 1 {
		t.Errorf("%d log lines for 7 refusals within a minute, want 1:\n%s", n, f.logs)
	}
	for _, h := range []map[string]string{
		nil, // the gateway
		{"Sec-Fetch-Site": "same-origin"},
		{"Sec-Fetch-Site": "none"},
		{"Origin": "https://ops.example"},
		{"Origin": "HTTPS://OPS.example:443"},
	} {
		if w := post(h); w.Code != http.StatusOK {
			t.Errorf("%v: %d %s, want 200", h, w.Code, w.Body)
		}
	}
	if n := messageCount(t, db); n != before+5 {
		t.Fatalf("%d messages stored by 5 accepted posts", n-before)
	}
	// With no origins configured (the default), every page's post is refused.
	f.inbox.Origins = nil
	if w := post(map[string]string{"Origin": "https://ops.example"}); w.Code != http.StatusForbidden {
		t.Errorf("no inbox-origins: %d, want 403", w.Code)
	}
}

// The log-in refuses a page of another origin, as every state-changing route does.
func TestLoginRefusesAForeignOrigin(t *testing.T) {
	t.Parallel()
	f := newFixture(t, storetest.SQLite(t), testTokens, api.InboxRule{})
	m := metrics.New(nil, "test", nil)
	f.srv.Metrics = m
	login := `{"token":"` + viewerSecret + `"}`
	w := f.do(t, call{method: "POST", path: "/api/v1/login", body: login, host: "msgx.example:8080",
		header: map[string]string{"Origin": "https://evil.example"}})
	if w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), `"csrf"`) || w.Header().Get("Set-Cookie") != "" {
		t.Fatalf("foreign origin log-in: %d %s cookie %q", w.Code, w.Body, w.Header().Get("Set-Cookie"))
	}
	if got := testkit.Counter(t, m.Registry, "msgx_login_refused_total"); got != 1 {
		t.Errorf("msgx_login_refused_total %v, want 1", got)
	}
	w = f.do(t, call{method: "POST", path: "/api/v1/logout", body: "{}", host: "msgx.example:8080",
		header: map[string]string{"Origin": "https://evil.example"}})
	if w.Code != http.StatusForbidden {
		t.Errorf("foreign origin log-out: %d %s", w.Code, w.Body)
	}
	for _, origin := range []string{"http://msgx.example:8080", "https://msgx.example:8080", ""} {
		w = f.do(t, call{method: "POST", path: "/api/v1/login", body: login, host: "msgx.example:8080",
			header: map[string]string{"Origin": origin}})
		if w.Code != http.StatusOK || w.Header().Get("Set-Cookie") == "" {
			t.Errorf("log-in from origin %q: %d %s", origin, w.Code, w.Body)
		}
	}
}

// After 10 failed log-ins from an address within a minute, its attempts are answered 429 with
// Retry-After until the minute since its first failure has passed, a right token included;
// other addresses log in as before. The refusals are counted and logged a line a minute.
func TestFailedLoginsBackOff(t *testing.T) {
	t.Parallel()
	f := newFixture(t, storetest.SQLite(t), testTokens, api.InboxRule{})
	m := metrics.New(nil, "test", nil)
	f.srv.Metrics = m
	clock := testkit.NewClock(time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC))
	f.srv.Clock = clock
	try := func(secret, remote string) *httptest.ResponseRecorder {
		return f.do(t, call{method: "POST", path: "/api/v1/login", body: `{"token":"` + secret + `"}`, remote: remote})
	}
	for i := 1; i <= api.LoginFailures; i++ {
		if w := try("wrong-secret-0123456789", "192.0.2.7:5000"); w.Code != http.StatusUnauthorized {
			t.Fatalf("failure %d: %d %s, want 401", i, w.Code, w.Body)
		}
		clock.Add(time.Second)
	}
	for _, secret := range []string{"wrong-secret-0123456789", viewerSecret} {
		w := try(secret, "192.0.2.7:5001")
		if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "50" || w.Header().Get("Set-Cookie") != "" {
			t.Fatalf("attempt after %d failures: %d Retry-After %q %s, want 429 after 50", api.LoginFailures, w.Code, w.Header().Get("Retry-After"), w.Body)
		}
	}
	if w := try(viewerSecret, "192.0.2.8:5000"); w.Code != http.StatusOK {
		t.Fatalf("another address: %d %s", w.Code, w.Body)
	}
	clock.Add(50 * time.Second)
	if w := try(viewerSecret, "192.0.2.7:5000"); w.Code != http.StatusOK {
		t.Fatalf("after the window: %d %s", w.Code, w.Body)
	}
	if got := testkit.Counter(t, m.Registry, "msgx_login_refused_total"); got != float64(api.LoginFailures+2) {
		t.Errorf("msgx_login_refused_total %v, want %d", got, api.LoginFailures+2)
	}
	if n := strings.Count(f.logs.String(), "login refused"); n > 2 {
		t.Errorf("%d log lines for %d refusals within a minute, want one per kind:\n%s", n, api.LoginFailures+2, f.logs)
	}
}

// Every query parameter is bounded: a search's q at 256 characters, the others at 128, each
// refusal 400 naming the parameter and the bound, with an answer that quotes none of it; a
// search at the bound, of the characters that grow most in a LIKE pattern, is answered.
func TestQueryParametersAreBounded(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := newFixture(t, db, nil, api.InboxRule{})
		get := func(path string) *httptest.ResponseRecorder {
			return f.do(t, call{method: "GET", path: path, remote: "127.0.0.1:1", host: "localhost"})
		}
		huge := strings.Repeat("x", 100_000)
		for _, c := range []struct{ path, param, limit string }{
			{"/api/v1/find?q=" + huge, "q", "256"},
			{"/api/v1/messages?q=" + huge, "q", "256"},
			{"/api/v1/messages?q=" + strings.Repeat("é", 257), "q", "256"},
			{"/api/v1/messages?tag=" + strings.Repeat("F", 129), "tag", "128"},
			{"/api/v1/events?target=" + huge, "target", "128"},
			{"/api/v1/flights?day=" + huge, "day", "128"},
		} {
			w := get(c.path)
			var e client.ErrorBody
			json.Unmarshal(w.Body.Bytes(), &e)
			if w.Code != http.StatusBadRequest || e.Code != "too_long" || !strings.HasPrefix(e.Error, c.param+" is ") || !strings.Contains(e.Error, c.limit) ||
				w.Body.Len() > 300 {
				t.Errorf("%s…: %d %.400s, want a short 400 too_long naming %s and %s", c.path[:30], w.Code, w.Body, c.param, c.limit)
			}
		}
		if w := get("/api/v1/messages?" + strings.Repeat("n", 65) + "=1"); w.Code != http.StatusBadRequest || w.Body.Len() > 300 {
			t.Errorf("a long parameter name: %d %.400s", w.Code, w.Body)
		}
		for _, q := range []string{strings.Repeat("%", 256), strings.Repeat("_!", 128), strings.Repeat("😀", 256)} {
			for _, path := range []string{"/api/v1/messages?q=", "/api/v1/find?q="} {
				if w := get(path + url.QueryEscape(q)); w.Code != http.StatusOK {
					t.Errorf("%s 256 of %q: %d %.300s", path, q[:1], w.Code, w.Body)
				}
			}
		}
	})
}

// No error answer quotes more than 200 characters of the caller's input: a long path segment,
// a long unknown route, a long state are cut with "…".
func TestErrorsEchoAtMost200Characters(t *testing.T) {
	t.Parallel()
	f := newFixture(t, storetest.SQLite(t), nil, api.InboxRule{})
	long := strings.Repeat("7", 120) + strings.Repeat("a", 330)
	for _, path := range []string{"/api/v1/messages/" + long, "/nowhere/" + long, "/api/v1/messages?state=" + long[:128],
		"/api/v1/ref/AIRL/" + long} {
		w := f.do(t, call{method: "GET", path: path, remote: "127.0.0.1:1", host: "localhost"})
		var e client.ErrorBody
		if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || w.Code < 400 {
			t.Fatalf("%.40s…: %d %s", path, w.Code, w.Body)
		}
		if strings.Contains(e.Error, strings.Repeat("a", 200)) || (len(path) > 300 && !strings.Contains(e.Error, "…")) {
			t.Errorf("%.40s…: the error quotes too much: %s", path, e.Error)
		}
	}
	if w := f.do(t, call{method: "GET", path: "/api/v1/messages/" + strings.Repeat("1", 600), remote: "127.0.0.1:1", host: "localhost"}); w.Code != http.StatusRequestURITooLong {
		t.Errorf("a 617-byte path: %d, want 414", w.Code)
	}
}

// streamClient opens a stream of ts with secret and returns its status and a close.
func streamClient(t *testing.T, ts *httptest.Server, path, secret string) (*http.Response, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	closed := func() { cancel(); resp.Body.Close() }
	t.Cleanup(closed)
	return resp, closed
}

// A token holds at most http.max-streams-per-token streams (16 by default) and the server
// http.max-streams; beyond them 429 with Retry-After, counted; a stream closed frees its slot.
func TestStreamsAreBounded(t *testing.T) {
	t.Parallel()
	db := storetest.SQLite(t)
	f := newFixture(t, db, testTokens, api.InboxRule{})
	m := metrics.New(nil, "test", nil)
	f.srv.Metrics = m
	f.srv.StreamPoll = time.Hour // the streams read the store once, at their start
	ts := httptest.NewUnstartedServer(f.h)
	ts.Config.RegisterOnShutdown(f.srv.StopStreams)
	ts.Start()
	t.Cleanup(ts.Close)
	var first func()
	for i := 1; i <= api.DefaultMaxStreamsPerToken; i++ {
		resp, closeIt := streamClient(t, ts, "/api/v1/messages/stream", viewerSecret)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("stream %d: %d", i, resp.StatusCode)
		}
		if first == nil {
			first = closeIt
		}
	}
	resp, _ := streamClient(t, ts, "/api/v1/events/stream", viewerSecret)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("stream %d of a token: %d Retry-After %q, want 429 with Retry-After", api.DefaultMaxStreamsPerToken+1, resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if resp, _ := streamClient(t, ts, "/api/v1/messages/stream", operatorSecret); resp.StatusCode != http.StatusOK {
		t.Fatalf("another token's stream: %d", resp.StatusCode)
	}
	first()
	deadline := time.Now().Add(5 * time.Second)
	for {
		resp, _ := streamClient(t, ts, "/api/v1/messages/stream", viewerSecret)
		if resp.StatusCode == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a closed stream's slot not freed within 5 s: %d", resp.StatusCode)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The server's bound: 17 open now (16 of the viewer, 1 of the operator), at most 17.
	f.srv.MaxStreams = 17
	if resp, _ := streamClient(t, ts, "/api/v1/messages/stream", adminSecret); resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("stream over http.max-streams: %d, want 429", resp.StatusCode)
	}
	if got := testkit.Counter(t, m.Registry, "msgx_streams_refused_total"); got < 2 {
		t.Errorf("msgx_streams_refused_total %v, want at least 2", got)
	}
}
