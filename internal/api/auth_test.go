package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"msgx/client"
	"msgx/internal/api"
	"msgx/internal/config"
	"msgx/internal/dispatch"
	"msgx/internal/flight"
	"msgx/internal/inbox"
	"msgx/internal/pipeline"
	"msgx/internal/store"
	"msgx/internal/store/storetest"
	"msgx/internal/testkit"
)

const (
	viewerSecret   = "viewer-secret-0123456789abcdef"
	operatorSecret = "operator-secret-0123456789abcdef"
	adminSecret    = "admin-secret-0123456789abcdef"
)

var testTokens = []api.Token{
	{Name: "watcher", Role: "viewer", Hash: api.HashToken(viewerSecret)},
	{Name: "ops", Role: "operator", Hash: api.HashToken(operatorSecret)},
	{Name: "root", Role: "admin", Hash: api.HashToken(adminSecret)},
}

// fixture is a server on db with tokens (none: loopback only) and a few messages and events:
// message 1 DEAD (ORPHAN), 2 SUCCEEDED with events of flight 7001, 3 PENDING.
type fixture struct {
	db    *store.DB
	srv   *api.Server
	inbox *inbox.Inbox
	h     http.Handler
	logs  *bytes.Buffer
	ev    int64 // an event id
}

func newFixture(t *testing.T, db *store.DB, tokens []api.Token, rule api.InboxRule) *fixture {
	t.Helper()
	logs := &bytes.Buffer{}
	log := slog.New(slog.NewJSONHandler(logs, nil))
	clock := pipeline.SystemClock{}
	in := inbox.New(db.Intake, clock, log, 1<<20, func() {})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go in.Run(ctx)
	srv := api.New(api.Deps{DB: storetest.API(db), Inbox: in, Clock: clock, Log: log, PumpRunning: true, Auth: api.NewAuth(tokens, rule, clock),
		ConfigView: config.Default().Redacted})
	finder := &api.Finder{Flights: flight.New(storetest.Flight(db), clock, nil), Ref: db.RefData, Bodies: db.Operations, Clock: clock}
	srv.Extra = append(srv.Extra, api.FindRoutes(finder), api.FlightRoutes(finder.Flights, db.RefData, finder))
	f := &fixture{db: db, srv: srv, inbox: in, h: srv.Handler(), logs: logs}
	now := time.Now()
	ids, err := db.Intake.InsertMessages(ctx, []string{"<dead/>", "<ok/>", "<pending/>"}, now)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Processor.Record(ctx, ids[0], store.Outcome{State: pipeline.Dead, Class: pipeline.Orphan, Attempts: 1, LastError: "no flight"}, now); err != nil {
		t.Fatal(err)
	}
	if _, _, err := db.Processor.Succeed(ctx, ids[1], store.Success{TypeTag: "FLOP-STND", Identity: "X|FLOP|STND|1", Decision: pipeline.Decision{Events: []pipeline.Event{
		{Target: "KAFKA_FLOP", Kind: "flop", Key: "7001", Payload: json.RawMessage(`{"FLID":7001,"op":"update","changes":{"STND":{"old":"A1","new":"B2"}}}`)},
	}}}, nil, now); err != nil {
		t.Fatal(err)
	}
	evs, _ := db.Operations.SearchEvents(ctx, store.EventQuery{})
	f.ev = evs[0].EventID
	return f
}

type call struct {
	method, path, body string
	remote             string // RemoteAddr; default a non-loopback address
	host               string
	header             map[string]string
}

func (f *fixture) do(t *testing.T, c call) *httptest.ResponseRecorder {
	t.Helper()
	var body io.Reader
	if c.body != "" {
		body = strings.NewReader(c.body)
	}
	r := httptest.NewRequest(c.method, c.path, body)
	r.RemoteAddr = "192.0.2.10:40000"
	if c.remote != "" {
		r.RemoteAddr = c.remote
	}
	if c.host != "" {
		r.Host = c.host
	}
	if c.body != "" {
		r.Header.Set("Content-Type", "application/json")
	}
	for k, v := range c.header {
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	f.h.ServeHTTP(w, r)
	return w
}

func bearer(secret string) map[string]string {
	if secret == "" {
		return nil
	}
	return map[string]string{"Authorization": "Bearer " + secret}
}

// TestEveryRouteForEveryRole: anonymous → 401, a role below the route's → 403, the route's
// role and above → its answer.
func TestEveryRouteForEveryRole(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := newFixture(t, db, testTokens, api.InboxRule{})
		routes := []struct {
			method, path, body string
			need               api.Role
		}{
			{"GET", "/api/v1/status", "", api.RoleViewer},
			{"GET", "/api/v1/messages?flid=7001", "", api.RoleViewer},
			{"GET", "/api/v1/messages/1", "", api.RoleViewer},
			{"GET", "/api/v1/messages/1/raw", "", api.RoleViewer},
			{"GET", "/api/v1/messages/1/history", "", api.RoleViewer},
			{"GET", "/api/v1/events?flid=7001", "", api.RoleViewer},
			{"GET", fmt.Sprintf("/api/v1/events/%d/payload", f.ev), "", api.RoleViewer},
			{"GET", "/api/v1/flights/7001/history", "", api.RoleViewer},
			{"GET", "/api/v1/find?q=CA8241", "", api.RoleViewer},
			{"GET", "/api/v1/flights?flno=CA8241", "", api.RoleViewer},
			{"GET", "/api/v1/pauses", "", api.RoleViewer},
			{"GET", "/api/v1/me", "", api.RoleViewer},
			{"GET", "/api/v1/ref/AIRL", "", api.RoleViewer},
			{"POST", "/api/v1/messages/1/park", `{"reason":"poison"}`, api.RoleOperator},
			{"POST", "/api/v1/pump/pause", `{"reason":"maintenance"}`, api.RoleOperator},
			{"POST", "/api/v1/pump/resume", ``, api.RoleOperator},
			{"POST", "/api/v1/targets/KAFKA_FLOP/pause", `{}`, api.RoleOperator},
			{"POST", "/api/v1/targets/KAFKA_FLOP/resume", `{}`, api.RoleOperator},
			{"POST", "/api/v1/replay", `{"classes":["ORPHAN"],"dry_run":true}`, api.RoleOperator},
			{"POST", "/api/v1/events/replay", `{"target":"KAFKA_FLOP"}`, api.RoleOperator},
			{"GET", "/api/v1/jobs", "", api.RoleViewer},
			{"POST", "/api/v1/jobs", `{"kind":"ARCHIVE"}`, api.RoleAdmin},
			{"GET", "/api/v1/jobs/1", "", api.RoleViewer}, // the job the admin's POST enqueued
			{"GET", "/api/v1/audit", "", api.RoleAdmin},
			{"GET", "/api/v1/config", "", api.RoleAdmin},
		}
		secrets := map[api.Role]string{api.RoleNone: "", api.RoleViewer: viewerSecret, api.RoleOperator: operatorSecret, api.RoleAdmin: adminSecret}
		for _, rt := range routes {
			for _, role := range []api.Role{api.RoleNone, api.RoleViewer, api.RoleOperator, api.RoleAdmin} {
				w := f.do(t, call{method: rt.method, path: rt.path, body: rt.body, header: bearer(secrets[role])})
				want := http.StatusOK
				switch {
				case role == api.RoleNone:
					want = http.StatusUnauthorized
				case role < rt.need:
					want = http.StatusForbidden
				}
				if w.Code != want {
					t.Errorf("%s %s as %s: %d, want %d: %s", rt.method, rt.path, role, w.Code, want, w.Body)
				}
			}
		}
		// Each action is in the audit log with the token's name, and in the log.
		w := f.do(t, call{method: "GET", path: "/api/v1/audit?limit=1000", header: bearer(adminSecret)})
		var audit struct{ Audit []store.AuditEntry }
		json.Unmarshal(w.Body.Bytes(), &audit)
		actions := map[string]bool{}
		for _, a := range audit.Audit {
			actions[a.Actor+" "+a.Action] = true
		}
		for _, want := range []string{"ops message.park", "root message.park", "ops pump.pause", "ops pump.resume", "ops target.pause", "root job.enqueue", "ops events.replay"} {
			if !actions[want] {
				t.Errorf("audit log lacks %q: %v", want, actions)
			}
		}
		if !strings.Contains(f.logs.String(), `"msg":"operator action","actor":"ops","role":"operator","action":"message.park"`) {
			t.Errorf("no log line of the park with the token's name:\n%s", f.logs)
		}
		// A bad token is 401, not anonymous.
		if w := f.do(t, call{method: "GET", path: "/api/v1/status", header: bearer("not-a-token")}); w.Code != 401 || !strings.Contains(w.Body.String(), "bad_token") {
			t.Errorf("bad token: %d %s", w.Code, w.Body)
		}
		// /healthz stays open (load balancers).
		if w := f.do(t, call{method: "GET", path: "/healthz"}); w.Code != 200 {
			t.Errorf("healthz: %d", w.Code)
		}
	})
}

func TestWithoutTokensOnlyLoopbackIsAnswered(t *testing.T) {
	t.Parallel()
	f := newFixture(t, storetest.SQLite(t), nil, api.InboxRule{})
	w := f.do(t, call{method: "GET", path: "/api/v1/status", remote: "10.1.2.3:5555"})
	if w.Code != 403 || !strings.Contains(w.Body.String(), "only to loopback clients") || !strings.Contains(w.Body.String(), "10.1.2.3") {
		t.Errorf("remote without tokens: %d %s", w.Code, w.Body)
	}
	// The health routes answer any source: a kubelet or a load balancer probes from the network.
	for _, path := range []string{"/healthz", "/livez", "/readyz"} {
		if w := f.do(t, call{method: "GET", path: path, remote: "10.1.2.3:5555"}); w.Code == 401 || w.Code == 403 {
			t.Errorf("%s from the network without tokens: %d %s", path, w.Code, w.Body)
		}
	}
	for _, remote := range []string{"127.0.0.1:5555", "[::1]:5555"} {
		if w := f.do(t, call{method: "GET", path: "/api/v1/status", remote: remote, host: "127.0.0.1:8080"}); w.Code != 200 {
			t.Errorf("loopback %s: %d %s", remote, w.Code, w.Body)
		}
	}
	// DNS rebinding: a page of another name resolving to 127.0.0.1.
	if w := f.do(t, call{method: "GET", path: "/api/v1/status", remote: "127.0.0.1:5555", host: "evil.example:8080"}); w.Code != 403 {
		t.Errorf("foreign Host: %d %s", w.Code, w.Body)
	}
	// A cross-site form cannot act: not JSON, or another Origin.
	form := call{method: "POST", path: "/api/v1/pump/pause", remote: "127.0.0.1:1", host: "localhost:8080", header: map[string]string{"Content-Type": "text/plain"}}
	if w := f.do(t, form); w.Code != 403 || !strings.Contains(w.Body.String(), "csrf") {
		t.Errorf("text/plain post: %d %s", w.Code, w.Body)
	}
	cross := call{method: "POST", path: "/api/v1/pump/pause", body: "{}", remote: "127.0.0.1:1", host: "localhost:8080", header: map[string]string{"Origin": "http://evil.example"}}
	if w := f.do(t, cross); w.Code != 403 {
		t.Errorf("cross-origin post: %d %s", w.Code, w.Body)
	}
	same := call{method: "POST", path: "/api/v1/pump/pause", body: "{}", remote: "127.0.0.1:1", host: "localhost:8080", header: map[string]string{"Origin": "http://localhost:8080"}}
	if w := f.do(t, same); w.Code != 200 || !strings.Contains(w.Body.String(), `"paused_by":"loopback"`) {
		t.Errorf("same-origin JSON post: %d %s", w.Code, w.Body)
	}
	// The inbox stays open to anyone.
	if w := f.do(t, call{method: "POST", path: "/cminmsgs/send", body: "<x/>", remote: "10.9.9.9:1", header: map[string]string{"Content-Type": "text/xml"}}); w.Code != 200 {
		t.Errorf("inbox from afar: %d %s", w.Code, w.Body)
	}
}

func TestInboxAllowByNetworkOrToken(t *testing.T) {
	t.Parallel()
	rule := api.InboxRule{Tokens: []string{"watcher"}}
	cfg := config.Default()
	cfg.HTTP.InboxAllow = config.Strings{"10.5.0.0/16"}
	rule.Networks = cfg.InboxRule().Networks
	f := newFixture(t, storetest.SQLite(t), testTokens, rule)
	post := func(remote, secret string) int {
		h := map[string]string{"Content-Type": "text/xml"}
		if secret != "" {
			h["Authorization"] = "Bearer " + secret
		}
		return f.do(t, call{method: "POST", path: "/cminmsgs/send", body: "<x/>", remote: remote, header: h}).Code
	}
	if c := post("10.5.3.4:1", ""); c != 200 {
		t.Errorf("from the allowed network: %d", c)
	}
	if c := post("10.6.3.4:1", ""); c != 403 {
		t.Errorf("from elsewhere: %d", c)
	}
	if c := post("10.6.3.4:1", viewerSecret); c != 200 {
		t.Errorf("elsewhere with the allowed token: %d", c)
	}
	if c := post("10.6.3.4:1", operatorSecret); c != 403 {
		t.Errorf("elsewhere with another token: %d", c)
	}
}

func TestCookieLoginAndCSRF(t *testing.T) {
	t.Parallel()
	f := newFixture(t, storetest.SQLite(t), testTokens, api.InboxRule{})
	if w := f.do(t, call{method: "POST", path: "/api/v1/login", body: `{"token":"wrong"}`}); w.Code != 401 {
		t.Errorf("login with a wrong token: %d", w.Code)
	}
	w := f.do(t, call{method: "POST", path: "/api/v1/login", body: `{"token":"` + operatorSecret + `"}`})
	if w.Code != 200 {
		t.Fatalf("login: %d %s", w.Code, w.Body)
	}
	var me client.Session
	json.Unmarshal(w.Body.Bytes(), &me)
	if me.Name != "ops" || me.Role != "operator" || me.CSRF == "" {
		t.Fatalf("login answer: %s", w.Body)
	}
	sc := w.Header().Get("Set-Cookie")
	if !strings.Contains(sc, "HttpOnly") || !strings.Contains(sc, "SameSite=Strict") || strings.Contains(sc, operatorSecret) {
		t.Errorf("cookie: %s", sc)
	}
	cookie := strings.SplitN(sc, ";", 2)[0]
	withCookie := func(extra map[string]string) map[string]string {
		h := map[string]string{"Cookie": cookie}
		for k, v := range extra {
			h[k] = v
		}
		return h
	}
	if w := f.do(t, call{method: "GET", path: "/api/v1/me", header: withCookie(nil)}); w.Code != 200 || !strings.Contains(w.Body.String(), `"name":"ops"`) {
		t.Errorf("me: %d %s", w.Code, w.Body)
	}
	park := call{method: "POST", path: "/api/v1/messages/1/park", body: `{"reason":"x"}`}
	park.header = withCookie(nil)
	if w := f.do(t, park); w.Code != 403 || !strings.Contains(w.Body.String(), "CSRF") {
		t.Errorf("cookie post without the CSRF token: %d %s", w.Code, w.Body)
	}
	park.header = withCookie(map[string]string{api.CSRFHeader: "forged"})
	if w := f.do(t, park); w.Code != 403 {
		t.Errorf("cookie post with a wrong CSRF token: %d %s", w.Code, w.Body)
	}
	park.header = withCookie(map[string]string{api.CSRFHeader: me.CSRF})
	if w := f.do(t, park); w.Code != 200 {
		t.Errorf("cookie post with the CSRF token: %d %s", w.Code, w.Body)
	}
	if w := f.do(t, call{method: "POST", path: "/api/v1/logout", header: withCookie(nil)}); w.Code != 200 {
		t.Errorf("logout: %d", w.Code)
	}
	if w := f.do(t, call{method: "GET", path: "/api/v1/me", header: withCookie(nil)}); w.Code != 401 {
		t.Errorf("me after logout: %d %s", w.Code, w.Body)
	}
	// A public page (the console's) answers a stale cookie as it answers nobody.
	if w := f.do(t, call{method: "GET", path: "/console/", header: withCookie(nil)}); w.Code != 404 {
		t.Errorf("a public route with a stale cookie: %d %s", w.Code, w.Body)
	}
}

func TestRedactionOfAWebhookPassword(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := newFixture(t, db, nil, api.InboxRule{})
		// A row an older msgx wrote with the password in clear.
		storetest.Exec(t, db, fmt.Sprintf(`UPDATE MSG_EVENT SET ERROR_CLASS = 'INFRA', ATTEMPTS = 1, FIRST_FAILED_AT = '2026-12-01 00:00:00.000000',
LAST_ERROR = 'POST https://hookuser:Hunter2pw@hooks.example/x?token=T0psecret: HTTP 503' WHERE EVENT_ID = %d`, f.ev))
		srv := api.New(api.Deps{DB: storetest.API(db), Clock: pipeline.SystemClock{}, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
			StatusExtra: map[string]func(context.Context) (any, error){"targets": dispatch.StatusSection(db.Outbox, pipeline.SystemClock{}, nil)}})
		h := srv.Handler()
		for _, path := range []string{"/api/v1/status", "/api/v1/events", "/api/v1/events?state=PENDING"} {
			r := httptest.NewRequest("GET", path, nil)
			r.RemoteAddr, r.Host = "127.0.0.1:1", "127.0.0.1:8080"
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != 200 || !strings.Contains(w.Body.String(), "hooks.example") {
				t.Fatalf("%s: %d %s", path, w.Code, w.Body)
			}
			if strings.Contains(w.Body.String(), "Hunter2pw") || strings.Contains(w.Body.String(), "T0psecret") {
				t.Errorf("%s shows the secret: %s", path, w.Body)
			}
		}
	})
}

func TestListingsAreBoundedAndParametersChecked(t *testing.T) {
	t.Parallel()
	db := storetest.SQLite(t)
	f := newFixture(t, db, nil, api.InboxRule{})
	ctx := context.Background()
	ids, _ := db.Intake.InsertMessages(ctx, []string{"<big/>"}, time.Now())
	var evs []pipeline.Event
	for i := range 400 {
		evs = append(evs, pipeline.Event{Target: "ES_FLIGHT", Kind: "es-upsert", Key: fmt.Sprint(i),
			Payload: json.RawMessage(`{"v":"` + strings.Repeat("x", 15_000) + `"}`)})
	}
	evs = append(evs, pipeline.Event{Target: "ES_FLIGHT", Kind: "es-upsert", Key: "big", Payload: json.RawMessage(`{"v":"` + strings.Repeat("y", 3<<20) + `"}`)})
	if _, _, err := db.Processor.Succeed(ctx, ids[0], store.Success{TypeTag: "SCHD-DNLD", Identity: "big", Decision: pipeline.Decision{Events: evs}}, nil, time.Now()); err != nil {
		t.Fatal(err)
	}
	get := func(path string) (int, map[string]json.RawMessage, int) {
		w := f.do(t, call{method: "GET", path: path, remote: "127.0.0.1:1", host: "127.0.0.1"})
		var m map[string]json.RawMessage
		json.Unmarshal(w.Body.Bytes(), &m)
		return w.Code, m, w.Body.Len()
	}
	code, m, size := get("/api/v1/events?limit=2147483647")
	if code != 200 || string(m["limit"]) != "1000" || string(m["truncated"]) != "true" || !strings.HasPrefix(string(m["next"]), `"before=`) || size > api.MaxListBytes+64<<10 {
		t.Errorf("huge limit: %d limit %s truncated %s next %s, %d bytes", code, m["limit"], m["truncated"], m["next"], size)
	}
	_, m, size = get(fmt.Sprintf("/api/v1/events?msg_id=%d&after=%d", ids[0], f.ev+400))
	var list []client.Event
	json.Unmarshal(m["events"], &list)
	if len(list) != 1 || !list[0].PayloadElided || list[0].PayloadBytes < 3<<20 || size > 64<<10 {
		t.Errorf("the 3 MiB payload is not elided: %d events, %d bytes answered", len(list), size)
	}
	w := f.do(t, call{method: "GET", path: fmt.Sprintf("/api/v1/events/%d/payload", list[0].EventID), remote: "127.0.0.1:1", host: "127.0.0.1"})
	if w.Code != 200 || w.Body.Len() < 3<<20 {
		t.Errorf("payload route: %d, %d bytes", w.Code, w.Body.Len())
	}
	for path, want := range map[string]string{
		"/api/v1/messages?flight=7001&state=DEAD": "flight",
		"/api/v1/events?targte=X":                 "targte",
		"/api/v1/flights/7001/history?x=1":        "x",
		"/api/v1/messages/1/raw?pretty=1":         "pretty",
		"/api/v1/status?verbose=1":                "verbose",
		"/api/v1/messages/1?x=1":                  "x",
	} {
		w := f.do(t, call{method: "GET", path: path, remote: "127.0.0.1:1", host: "127.0.0.1"})
		if w.Code != 400 || !strings.Contains(w.Body.String(), want) {
			t.Errorf("%s: %d %s, want 400 naming %q", path, w.Code, w.Body, want)
		}
	}
	many := make([]string, api.MaxIDs+1)
	for i := range many {
		many[i] = fmt.Sprint(i + 1)
	}
	for _, path := range []string{"/api/v1/replay", "/api/v1/events/replay"} {
		w = f.do(t, call{method: "POST", path: path, body: `{"ids":[` + strings.Join(many, ",") + `]}`, remote: "127.0.0.1:1", host: "127.0.0.1"})
		if w.Code != 400 || !strings.Contains(w.Body.String(), "too_many_ids") {
			t.Errorf("%s with %d ids: %d %s", path, len(many), w.Code, w.Body)
		}
	}
	w = f.do(t, call{method: "POST", path: "/api/v1/targets/KAFKA_FLOPP/pause", body: "{}", remote: "127.0.0.1:1", host: "127.0.0.1"})
	if w.Code != 400 || !strings.Contains(w.Body.String(), "KAFKA_FLOPP") || !strings.Contains(w.Body.String(), "KAFKA_FLOP,") {
		t.Errorf("unknown target: %d %s", w.Code, w.Body)
	}
	w = f.do(t, call{method: "POST", path: "/api/v1/messages/2/park", body: `{"reason":"x"}`, remote: "127.0.0.1:1", host: "127.0.0.1"})
	if w.Code != 409 {
		t.Errorf("park of a SUCCEEDED message: %d %s", w.Code, w.Body)
	}
	w = f.do(t, call{method: "GET", path: "/api/v1/messages/1/raw", remote: "127.0.0.1:1", host: "127.0.0.1"})
	if w.Code != 200 || w.Body.String() != "<dead/>" || !strings.HasPrefix(w.Header().Get("Content-Type"), "text/plain") {
		t.Errorf("raw: %d %q %s", w.Code, w.Body, w.Header().Get("Content-Type"))
	}
}

// A session ends SessionTTL after its login (by the injected clock).
func TestSessionsExpire(t *testing.T) {
	t.Parallel()
	clock := testkit.NewClock(time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC))
	db := storetest.SQLite(t)
	srv := api.New(api.Deps{DB: storetest.API(db), Clock: clock, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Auth: api.NewAuth(testTokens, api.InboxRule{}, clock)})
	f := &fixture{db: db, h: srv.Handler()}
	w := f.do(t, call{method: "POST", path: "/api/v1/login", body: `{"token":"` + viewerSecret + `"}`})
	if w.Code != 200 {
		t.Fatalf("login: %d %s", w.Code, w.Body)
	}
	cookie := map[string]string{"Cookie": strings.SplitN(w.Header().Get("Set-Cookie"), ";", 2)[0]}
	clock.Add(api.SessionTTL - time.Second)
	if w := f.do(t, call{method: "GET", path: "/api/v1/me", header: cookie}); w.Code != 200 {
		t.Fatalf("before the end: %d %s", w.Code, w.Body)
	}
	clock.Add(time.Second)
	if w := f.do(t, call{method: "GET", path: "/api/v1/me", header: cookie}); w.Code != 401 || !strings.Contains(w.Body.String(), "session_expired") {
		t.Fatalf("after the end: %d %s", w.Code, w.Body)
	}
}

// The legacy admin contract (POST /view/admin/data-request) is an operator action.
func TestLegacyAdminRouteNeedsOperator(t *testing.T) {
	t.Parallel()
	mux := http.NewServeMux()
	mux.HandleFunc("POST /view/admin/data-request", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(200) })
	f := &fixture{h: api.NewAuth(testTokens, api.InboxRule{}, pipeline.SystemClock{}).Wrap(mux)}
	for secret, want := range map[string]int{"": 401, viewerSecret: 403, operatorSecret: 200, adminSecret: 200} {
		if w := f.do(t, call{method: "POST", path: "/view/admin/data-request", body: `{"RQRD":"AIRL"}`, header: bearer(secret)}); w.Code != want {
			t.Errorf("as %q: %d, want %d: %s", secret, w.Code, want, w.Body)
		}
	}
}
