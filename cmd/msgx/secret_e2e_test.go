package main_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"msgx/client"
)

// hookSecret is the secret query value of the webhook URL: it must appear nowhere.
const hookSecret = "s3cr3t"

// urlSecrets are the secrets the configured URLs carry, in their userinfo, path, query (code=,
// token=, access_token=, sig=, key=, and a name no list knows) and fragment: none may appear
// in any answer, CLI output or log line.
var urlSecrets = []string{hookSecret,
	"HookPw4u", "HookPath4u", "HookCode4u", "HookTok4u", "HookAccess4u", "HookSig4u", "HookOdd4u", "HookFrag4u",
	"KafkaPw4u", "KafkaPath4u", "KafkaCode4u", "KafkaFrag4u",
	"RedisPw4u", "RedisPath4u", "RedisTok4u", "RedisFrag4u",
	"FlightPw4u", "FlightPath4u", "FlightKey4u", "FlightFrag4u",
	"EsPw4u", "EsPath4u", "EsSig4u", "EsOdd4u", "EsFrag4u",
	"ShownTok4u", "ShownFrag4u",
	"EurekaPw4u", "EurekaPath4u", "EurekaTok4u", "EurekaFrag4u",
	"HistPw4u", "HistPath4u", "HistTok4u"}

// blockedWebhook is blockedTargets without how the webhook's URL shows.
func blockedWebhook(t *testing.T, db dbEnv) (s *server, dead []int64) {
	t.Helper()
	s, dead, _ = blockedTargets(t, db)
	return s, dead
}

// blockedTargets starts msgx with a target of every kind whose URL or address carries
// secrets (urlSecrets) and points where nothing listens, with Eureka, log shipping and the
// history's Elasticsearch likewise; WEBHOOK_OPS copies REDIS_NOTIFY, and WEBHOOK_SHOWN (its
// path marked showable) too. It sends load: 30 schedules (one flight each, so one webhook
// event each, which all fail with a connection error that quotes the URL) and 6 changes of
// unknown flights (DEAD, ORPHAN). Delivery gives a head up after 2 s, so DEAD events pile up
// behind a target that stays blocked. It returns when the target is blocked and has dead
// events, with how WEBHOOK_OPS's URL shows (scheme, user, host and port).
func blockedTargets(t *testing.T, db dbEnv) (s *server, dead []int64, hookShown string) {
	t.Helper()
	hookAddr := freeAddr(t) // nothing listens at these
	hook := "http://huser:HookPw4u@" + hookAddr + "/hooks/HookPath4u/XYZ?code=HookCode4u&token=HookTok4u&access_token=HookAccess4u&sig=HookSig4u&key=" + hookSecret + "&zq_odd=HookOdd4u#access_token=HookFrag4u"
	cfg := filepath.Join(t.TempDir(), "msgx.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`targets:
  KAFKA_FLOP: {sink: file}
  KAFKA_SCHD: {sink: kafka, topic: t, timeout: 1s, brokers: ["kuser:KafkaPw4u@%s/KafkaPath4u?code=KafkaCode4u#access_token=KafkaFrag4u"]}
  REDIS_NOTIFY: {sink: redis, channel: c, timeout: 1s, addr: "ruser:RedisPw4u@%s/RedisPath4u?token=RedisTok4u#RedisFrag4u"}
  ES_FLIGHT: {sink: elasticsearch, index: i, timeout: 1s, addresses: ["http://euser:EsPw4u@%s/EsPath4u/?sig=EsSig4u&zq_odd=EsOdd4u#access_token=EsFrag4u"]}
  REDIS_FLIGHT: {sink: redis-flights, copy-of: ES_FLIGHT, timeout: 1s, addr: "fuser:FlightPw4u@%s/FlightPath4u?key=FlightKey4u#FlightFrag4u"}
  WEBHOOK_OPS: {sink: webhook, url: %q, secret: hmac-key-1, copy-of: REDIS_NOTIFY}
  WEBHOOK_SHOWN: {sink: webhook, url: "http://%s/shown/path?x=1&token=ShownTok4u#ShownFrag4u", secret: hmac-key-2, copy-of: REDIS_NOTIFY, show-path: true}
eureka: {enabled: true, heartbeat: 200ms, service-url: "http://euser:EurekaPw4u@%s/eureka/EurekaPath4u?token=EurekaTok4u#EurekaFrag4u"}
history: {elasticsearch: {url: "https://huser:HistPw4u@%s/HistPath4u?access_token=HistTok4u", index: h}}
log: {logstash: {addr: "%s"}}
consistency-check: {on-startup: false, daily-at: "off"}
jobs: {history-sweep-at: "off"}
`, freeAddr(t), freeAddr(t), freeAddr(t), freeAddr(t), hook, freeAddr(t), freeAddr(t), freeAddr(t), freeAddr(t))), 0o644)
	s = db.start(t, "MSGX_CONFIG="+cfg, "MSGX_PIPELINE_POLL_INTERVAL=50ms", "MSGX_DELIVERY_HEAD_DEADLINE=2s",
		"MSGX_PIPELINE_BACKOFF_MS=100", "MSGX_PIPELINE_BACKOFF_CAP_MS=200")
	day := tomorrow(t)
	var last int64
	for i := range 30 {
		last = s.post(e2eSchd(850000+i, e2eFltr(int64(95000+i), fmt.Sprintf("CA%04d", 2000+i), "D", day.Add(time.Duration(i)*time.Minute), "")))
	}
	for i := range 6 {
		last = s.post(e2eFlop(850100+i, "EOBT", int64(99500+i), "<EOBT>"+sisTime(day.Add(9*time.Hour))+"</EOBT>"))
		dead = append(dead, last)
	}
	s.await(last, "DEAD", state("DEAD", "ORPHAN"))
	waitFor(t, "WEBHOOK_OPS blocked with DEAD events", func() bool {
		w := webhookTarget(t, s, "WEBHOOK_OPS")
		return w != nil && w.BlockedSince != nil && w.Dead > 0 && w.Pending > 0
	})
	return s, dead, "http://huser:xxxxx@" + hookAddr + "/xxxxx"
}

// webhookTarget reads target name from /api/v1/status (nil when it has no events yet),
// failing the test when the status is not valid JSON.
func webhookTarget(t *testing.T, s *server, name string) *client.TargetStatus {
	t.Helper()
	var targets []client.TargetStatus
	section(t, s.status(), "targets", &targets)
	for i := range targets {
		if targets[i].Target == name {
			return &targets[i]
		}
	}
	return nil
}

// Targets of every kind whose URLs carry secrets in their userinfo, path, query and fragment
// fail under load with errors that quote them (a webhook, whose path is its token, among
// them): every answer of the API parses and shows the real figures, msgx status and msgx
// events work, the URLs show their scheme, host and port (a show-path target its path too),
// and no secret appears anywhere (API answers, the console's pages, metrics, CLI output,
// server log); each JSON log line stays valid.
func TestSecretBearingWebhookErrorsKeepEveryAnswerValid(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db dbEnv) {
		s, dead, hookShown := blockedTargets(t, db)
		waitFor(t, "WEBHOOK_SHOWN failed", func() bool {
			w := webhookTarget(t, s, "WEBHOOK_SHOWN")
			return w != nil && w.LastError != nil
		})
		seen := map[string]string{}
		get := func(path string) []byte {
			t.Helper()
			resp, err := http.Get(s.url + path)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			seen["GET "+path] = string(b)
			if (strings.HasPrefix(path, "/api/") || strings.HasSuffix(path, "z")) && !json.Valid(b) {
				t.Errorf("GET %s (%d) is not valid JSON:\n%s", path, resp.StatusCode, b)
			}
			return b
		}
		day := tomorrow(t).Format(time.DateOnly)
		for _, path := range []string{"/api/v1/events", "/api/v1/events?target=WEBHOOK_OPS&state=DEAD", "/api/v1/events?target=WEBHOOK_OPS&state=PENDING",
			"/api/v1/events?state=DEAD", "/api/v1/events?state=PENDING", "/api/v1/dead", "/api/v1/problems",
			"/api/v1/messages", "/api/v1/messages?state=DEAD", fmt.Sprintf("/api/v1/messages/%d", dead[0]), fmt.Sprintf("/api/v1/messages/%d/history", dead[0]),
			"/api/v1/jobs", "/api/v1/pauses", "/api/v1/config", "/api/v1/audit", "/api/v1/me", "/healthz", "/readyz", "/livez",
			"/api/v1/flights?day=" + day, "/api/v1/flights/95000", "/api/v1/console/throughput", "/metrics",
			"/", "/console/app.js", "/console/app.css"} {
			get(path)
		}
		for _, target := range []string{"KAFKA_SCHD", "REDIS_NOTIFY", "ES_FLIGHT", "REDIS_FLIGHT", "WEBHOOK_SHOWN"} {
			get("/api/v1/events?target=" + target)
		}
		var st struct {
			Counts map[string]int `json:"counts"`
		}
		if err := json.Unmarshal(get("/api/v1/status"), &st); err != nil {
			t.Fatal(err)
		}
		if st.Counts["DEAD"] != len(dead) || st.Counts["SUCCEEDED"] != 30 {
			t.Errorf("status counts %v, want %d DEAD and 30 SUCCEEDED", st.Counts, len(dead))
		}
		w := webhookTarget(t, s, "WEBHOOK_OPS")
		if w.BlockedSince == nil || w.Dead == 0 || w.LastError == nil || !strings.Contains(*w.LastError, hookShown) || !strings.Contains(*w.LastError, "connect") {
			t.Errorf("status does not show WEBHOOK_OPS blocked by its connection error at %s: %+v %v", hookShown, w, w.LastError)
		}
		if w := webhookTarget(t, s, "WEBHOOK_SHOWN"); !strings.Contains(*w.LastError, "/shown/path?x=1&token=xxxxx#xxxxx") {
			t.Errorf("WEBHOOK_SHOWN (show-path: true) does not show its path: %s", *w.LastError)
		}
		// The configuration view shows where each URL goes, and nothing more.
		config := seen["GET /api/v1/config"]
		for _, want := range []string{hookShown, "kuser:xxxxx@127.0.0.1:", "ruser:xxxxx@127.0.0.1:", "http://euser:xxxxx@127.0.0.1:", "fuser:xxxxx@127.0.0.1:",
			`/shown/path?x=1\u0026token=xxxxx#xxxxx`, "https://huser:xxxxx@127.0.0.1:"} {
			if !strings.Contains(config, want) {
				t.Errorf("GET /api/v1/config does not show %q:\n%s", want, config)
			}
		}
		var evs struct {
			Events []struct {
				LastError string `json:"last_error"`
			} `json:"events"`
		}
		json.Unmarshal([]byte(seen["GET /api/v1/events?target=WEBHOOK_OPS&state=DEAD"]), &evs)
		if len(evs.Events) == 0 || !strings.Contains(evs.Events[0].LastError, `"http://`) {
			t.Errorf("the DEAD events do not keep the error as the sink said it (quotes and all): %+v", evs.Events)
		}
		seen["msgx status"] = s.mustCLI([]string{"WEBHOOK_OPS", "BLOCKED since", hookShown, fmt.Sprintf("DEAD       %d", len(dead)), "SUCCEEDED  30"}, "status")
		seen["msgx status --json"] = s.mustCLI([]string{`"WEBHOOK_OPS"`}, "status", "--json")
		seen["msgx events"] = s.mustCLI([]string{"WEBHOOK_OPS", hookShown}, "events", "--target", "WEBHOOK_OPS", "--state", "DEAD")
		seen["msgx messages"] = s.mustCLI([]string{"ORPHAN"}, "messages", "--state", "DEAD")
		seen["msgx problems"], _ = s.cli(nil, "problems")
		s.stop()
		seen["server log"] = s.logs.String()
		for what, text := range seen {
			for _, secret := range urlSecrets {
				if strings.Contains(text, secret) {
					t.Errorf("%s shows the secret %s:\n%s", what, secret, text)
				}
			}
		}
		if !strings.Contains(seen["server log"], hookShown) {
			t.Errorf("the log never says which webhook failed:\n%s", seen["server log"])
		}
		sc := bufio.NewScanner(strings.NewReader(seen["server log"]))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if line := sc.Bytes(); len(line) > 0 && line[0] == '{' && !json.Valid(line) {
				t.Errorf("a log line is not valid JSON: %s", line)
			}
		}
	})
}

// statusBreaker is a reverse proxy in front of msgx that, once broken, answers GET
// /api/v1/status with what the test sets (invalid JSON, a 500) and passes everything else.
type statusBreaker struct {
	proxy *httputil.ReverseProxy
	mode  atomic.Value // "", "invalid", "500"
}

func (p *statusBreaker) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	mode, _ := p.mode.Load().(string)
	if r.URL.Path == "/api/v1/status" {
		switch mode {
		case "invalid":
			// What the masking over encoded JSON used to answer: an escape eaten.
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"counts":{"DEAD":0},"extra":{"targets":[{"target":"WEBHOOK_OPS","last_error":"Post \"http://h/hook?key=xxxxx": dial"}]}}`+"\n")
			return
		case "500":
			http.Error(w, "upstream exploded", http.StatusInternalServerError)
			return
		}
	}
	p.proxy.ServeHTTP(w, r)
}

// The console never shows "all clear" on a failed status answer: a banner names the route
// and says what failed, the last good figures stay, marked stale, and "No targets reported",
// "Nothing waits" and "No DEAD event" are not shown; a good answer clears the banner.
func TestConsoleKeepsTheLastFiguresWhenStatusFails(t *testing.T) {
	t.Parallel()
	chromium := chromiumPath(t)
	data := t.TempDir()
	db := dbEnv{Name: "sqlite", Driver: "sqlite", DSN: filepath.Join(data, "msgx.db"), DataDir: data}
	s, dead, hookShown := blockedTargets(t, db)
	target, _ := url.Parse(s.url)
	breaker := &statusBreaker{proxy: httputil.NewSingleHostReverseProxy(target)}
	breaker.mode.Store("")
	front := httptest.NewServer(breaker)
	// Closed after the browser (cleanups run last first): Close waits for the page's open
	// live connections, which only the browser's end ends.
	t.Cleanup(front.Close)

	b := newBrowser(t, chromium)
	b.visit(front.URL, "#/")
	deadCount := fmt.Sprint(len(dead))
	b.waitText("#count-DEAD", deadCount)
	b.waitText("#count-SUCCEEDED", "30")
	b.waitText(`#targets-table tr[data-id="WEBHOOK_OPS"]`, "blocked", hookShown)
	b.waitJS("no banner while the status answers", `document.getElementById('status-error').hidden`)
	b.shot("overview-good")

	// The queue is really empty here, so the kept (stale) head may say "Nothing waits"; a
	// page that never had a good answer may not (below).
	allClear := `(() => { const t = document.getElementById('view').innerText;
		return !t.includes('No targets reported') && !t.includes('No DEAD event'); })()`
	nothing := `(() => { const t = document.getElementById('view').innerText;
		return !t.includes('No targets reported') && !t.includes('Nothing waits') && !t.includes('No DEAD event') && !document.getElementById('count-DEAD'); })()`
	kept := fmt.Sprintf(`document.querySelector('#count-DEAD').textContent.includes(%q) && document.querySelector('#count-SUCCEEDED').textContent.includes('30')
		&& !!document.querySelector('#targets-table tr[data-id="WEBHOOK_OPS"]') && document.getElementById('counts').classList.contains('stale')
		&& document.getElementById('targets').classList.contains('stale')`, deadCount)
	for _, c := range []struct{ mode, says string }{{"invalid", "/api/v1/status: invalid answer"}, {"500", "upstream exploded"}} {
		breaker.mode.Store(c.mode)
		b.waitText("#status-error", "/api/v1/status", c.says, "stale")
		b.waitJS("the last figures kept and marked stale ("+c.mode+")", kept)
		b.waitJS("no all clear ("+c.mode+")", allClear)
		b.shot("overview-status-" + c.mode)
	}
	// The dead letters page does not call an unknown count "No DEAD event".
	breaker.mode.Store("invalid")
	b.visit(front.URL, "#/dead")
	b.waitText("#dead-events-error", "/api/v1/status")
	b.waitJS("no all clear on the dead letters page", allClear)
	b.shot("dead-letters-status-failed")
	// An overview opened while the status fails has no figures to keep: it shows none.
	b.visit(front.URL, "#/")
	b.waitText("#status-error", "/api/v1/status: invalid answer", "No figures yet")
	b.waitJS("no figures and no all clear on a fresh overview", nothing)
	b.shot("overview-status-failed-from-the-start")

	breaker.mode.Store("")
	b.visit(front.URL, "#/")
	b.waitText(`#targets-table tr[data-id="WEBHOOK_OPS"]`, "blocked")
	b.waitJS("the banner gone and the figures fresh", `document.getElementById('status-error').hidden && !document.getElementById('counts').classList.contains('stale')`)
	b.visit(front.URL, "#/dead")
	b.waitText("#view", "WEBHOOK_OPS")
	for _, secret := range urlSecrets {
		if strings.Contains(s.logs.String(), secret) {
			t.Errorf("the log shows the secret %s:\n%s", secret, s.logs)
		}
	}
}
