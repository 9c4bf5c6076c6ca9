package main_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"msgx/internal/store"
)

// The doors of issue 33, through the binary on both databases: a web page of another site
// cannot post into the inbox (403, nothing stored) while the gateway posts as before; a
// 100 KB search is a short 400, not 503 database_unavailable echoing the query; a token's
// stream beyond http.max-streams-per-token and the 11th failed log-in within a minute are 429
// with Retry-After; a log-in from a page of another origin is 403; each refusal is counted.
func TestDoorsAreBounded(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db dbEnv) {
		s := db.start(t, "MSGX_PIPELINE_AUTOSTART=false", "MSGX_HTTP_MAX_STREAMS_PER_TOKEN=3",
			"MSGX_AUTH_TOKENS=watcher:viewer:"+tokenHash(viewerSecret))
		do := func(method, path, body string, header map[string]string) (*http.Response, string) {
			t.Helper()
			req, _ := http.NewRequest(method, s.url+path, strings.NewReader(body))
			for k, v := range header {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return resp, string(b)
		}
		viewer := map[string]string{"Authorization": "Bearer " + viewerSecret}
		st := db.open(t)
		count := func() int {
			ms, err := st.Operations.SearchMessages(context.Background(), store.MessageQuery{Limit: 1000})
			if err != nil {
				t.Fatal(err)
			}
			return len(ms)
		}

		// The inbox: the gateway sends neither Origin nor Sec-Fetch-Site.
		s.post("<MSG><META><TYPE>FLOP</TYPE></META></MSG>")
		before := count()
		for _, h := range []map[string]string{
			{"Content-Type": "text/plain", "Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"},
			{"Content-Type": "text/plain", "Origin": "https://evil.example"},
			{"Content-Type": "text/plain", "Sec-Fetch-Site": "same-site"},
		} {
			resp, body := do("POST", "/cminmsgs/send", "<MSG><META><TYPE>FLOP</TYPE></META></MSG>", h)
			if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "foreign_origin") {
				t.Errorf("post of a web page %v: %d %s, want 403 foreign_origin", h, resp.StatusCode, body)
			}
		}
		if n := count(); n != before {
			t.Fatalf("%d messages stored by posts answered 403", n-before)
		}
		if resp, body := do("POST", "/cminmsgs/send", "<MSG/>", map[string]string{"Content-Type": "text/plain"}); resp.StatusCode != http.StatusOK {
			t.Fatalf("gateway post: %d %s", resp.StatusCode, body)
		}
		if n := count(); n != before+1 {
			t.Fatalf("gateway post: %d messages more, want 1", n-before)
		}

		// A 100 KB search: a short 400 naming q and its bound.
		huge := url.QueryEscape(strings.Repeat("FLOP ", 20_000))
		for _, path := range []string{"/api/v1/find?q=", "/api/v1/messages?q="} {
			resp, body := do("GET", path+huge, "", viewer)
			if resp.StatusCode != http.StatusBadRequest || len(body) >= 1024 || !strings.Contains(body, "too_long") || !strings.Contains(body, "256") {
				t.Errorf("%s100KB: %d, %d bytes: %.300s", path, resp.StatusCode, len(body), body)
			}
		}

		// Streams: 3 per token here (MSGX_HTTP_MAX_STREAMS_PER_TOKEN), the 4th is 429.
		for i := 1; i <= 4; i++ {
			ctx, cancel := context.WithCancel(context.Background())
			t.Cleanup(cancel)
			req, _ := http.NewRequestWithContext(ctx, "GET", s.url+"/api/v1/messages/stream", nil)
			req.Header.Set("Authorization", "Bearer "+viewerSecret)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { resp.Body.Close() })
			want := http.StatusOK
			if i == 4 {
				want = http.StatusTooManyRequests
			}
			if resp.StatusCode != want || (i == 4 && resp.Header.Get("Retry-After") == "") {
				t.Fatalf("stream %d: %d Retry-After %q, want %d", i, resp.StatusCode, resp.Header.Get("Retry-After"), want)
			}
		}

		// Log-ins: another origin is 403; 10 failures, then 429 with Retry-After, a right
		// token included.
		login := func(secret string, header map[string]string) (*http.Response, string) {
			h := map[string]string{"Content-Type": "application/json"}
			for k, v := range header {
				h[k] = v
			}
			return do("POST", "/api/v1/login", `{"token":"`+secret+`"}`, h)
		}
		if resp, body := login(viewerSecret, map[string]string{"Origin": "https://evil.example"}); resp.StatusCode != http.StatusForbidden ||
			resp.Header.Get("Set-Cookie") != "" {
			t.Fatalf("log-in from another origin: %d %s", resp.StatusCode, body)
		}
		for i := 1; i <= 10; i++ {
			if resp, body := login("not-the-secret-0123456789", nil); resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("failed log-in %d: %d %s", i, resp.StatusCode, body)
			}
		}
		resp, body := login(viewerSecret, nil)
		if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" || resp.Header.Get("Set-Cookie") != "" {
			t.Fatalf("log-in 11: %d Retry-After %q %s, want 429", resp.StatusCode, resp.Header.Get("Retry-After"), body)
		}

		// Counted, and logged without a line per attempt.
		_, metrics := do("GET", "/metrics", "", viewer)
		for series, want := range map[string]float64{
			`msgx_inbox_refused_total{reason="origin"}`:    3,
			`msgx_login_refused_total{reason="origin"}`:    1,
			`msgx_login_refused_total{reason="bad_token"}`: 10,
			`msgx_login_refused_total{reason="backoff"}`:   1,
			`msgx_streams_refused_total{limit="token"}`:    1,
		} {
			m := regexp.MustCompile("(?m)^" + regexp.QuoteMeta(series) + ` (\S+)$`).FindStringSubmatch(metrics)
			if m == nil {
				t.Errorf("%s not in /metrics", series)
				continue
			}
			if got, _ := strconv.ParseFloat(m[1], 64); got != want {
				t.Errorf("%s = %v, want %v", series, got, want)
			}
		}
		if n := strings.Count(s.logs.String(), "login refused"); n > 3 {
			t.Errorf("%d log lines for 12 refused log-ins within a minute:\n%s", n, s.logs)
		}
		if n := strings.Count(s.logs.String(), "inbox post refused 403"); n != 1 {
			t.Errorf("%d log lines for 3 refused posts within a minute, want 1", n)
		}
	})
}
