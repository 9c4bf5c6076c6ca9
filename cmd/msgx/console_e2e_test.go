package main_test

// Browser tests of the web console: Debian's chromium, headless, driven by chromedp against
// the real binary, doing what an operator does. Screenshots of each step are saved under
// $MSGX_TEST_ARTIFACTS, else cmd/msgx/testdata/artifacts (ignored by git), in a directory per
// test and database; the test logs where.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"msgx/client"
)

// chromiumPath finds Debian's chromium. Under MSGX_TEST_REQUIRE_SERVICES=1 its absence fails
// the test; otherwise the test skips, saying how to install it. No browser is ever downloaded.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "chromium is not installed (apt-get install -y chromium)"
	if os.Getenv("MSGX_TEST_REQUIRE_SERVICES") == "1" {
		t.Fatal(msg + "; it is required with MSGX_TEST_REQUIRE_SERVICES=1")
	}
	t.Skip(msg + ", skipping the browser test (set MSGX_TEST_REQUIRE_SERVICES=1 to fail instead)")
	return ""
}

// browser is one headless chromium, with a fresh profile, and where its screenshots go.
type browser struct {
	t         *testing.T
	ctx       context.Context
	artifacts string
	shots     int
}

// newBrowser starts the chromium at path for t, with the extra options (chromedp.Env…); it
// is stopped when t ends.
func newBrowser(t *testing.T, path string, extra ...chromedp.ExecAllocatorOption) *browser {
	t.Helper()
	// A fresh profile. Not t.TempDir: chromium's helper processes can still write in it for a
	// moment after the browser has stopped, and a failed removal would fail the test.
	profile, err := os.MkdirTemp("", "msgx-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for range 50 {
			if os.RemoveAll(profile) == nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.NoFirstRun,
		chromedp.Flag("no-default-browser-check", true),
		chromedp.Flag("hide-scrollbars", true), // screenshots of the page, not of a scrollbar
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(1400, 1000),
	}
	opts = append(opts, extra...)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(allocCtx)
	// One deadline for the whole browser session: a page that never shows what the test waits
	// for fails the test instead of hanging it.
	ctx, cancelTimeout := context.WithTimeout(ctx, 5*time.Minute)
	t.Cleanup(func() { cancelTimeout(); cancelCtx(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium %s: %v", path, err)
	}
	dir := os.Getenv("MSGX_TEST_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join("testdata", "artifacts")
	}
	dir, _ = filepath.Abs(filepath.Join(dir, strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())))
	os.RemoveAll(dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots: %s", dir)
	return &browser{t: t, ctx: ctx, artifacts: dir}
}

// run runs chromedp actions, failing the test with what was being done.
func (b *browser) run(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, actions...); err != nil {
		b.shot("failed-" + what)
		b.t.Fatalf("%s: %v", what, err)
	}
}

// shot saves a full-page PNG screenshot as NN-name.png in the artifacts directory.
func (b *browser) shot(name string) {
	b.t.Helper()
	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100)) // 100: PNG
	if err != nil {
		b.t.Logf("screenshot %s: %v", name, err)
		return
	}
	b.shots++
	file := filepath.Join(b.artifacts, fmt.Sprintf("%02d-%s.png", b.shots, regexp.MustCompile(`[^a-zA-Z0-9-]+`).ReplaceAllString(name, "_")))
	if err := os.WriteFile(file, png, 0o644); err != nil {
		b.t.Logf("save screenshot: %v", err)
	}
}

// waitJS polls a JavaScript expression until it is true, failing the test (with a screenshot
// and the page's text) after 20 s.
func (b *browser) waitJS(what, expr string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(0))); err != nil {
		b.shot("failed-" + what)
		body, _ := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.body.innerText`))
		b.t.Fatalf("waiting for %s (%s): %v\npage text:\n%s", what, expr, err, body)
	}
}

// waitText waits until the element sel exists and its text contains every one of want.
func (b *browser) waitText(sel string, want ...string) {
	b.t.Helper()
	conds := []string{fmt.Sprintf("document.querySelector(%q)", sel)}
	for _, w := range want {
		conds = append(conds, fmt.Sprintf("document.querySelector(%q).textContent.includes(%q)", sel, w))
	}
	b.waitJS(fmt.Sprintf("%s to say %q", sel, want), strings.Join(conds, " && "))
}

// confirm fills the modal's reason (when given) and presses Confirm, then waits for the modal
// to close (the action answered 2xx).
func (b *browser) confirm(what, reason string) {
	b.t.Helper()
	b.waitJS("the confirmation of "+what, `!document.getElementById('modal').hidden`)
	b.shot("confirm-" + what)
	if reason != "" {
		b.run("give the reason for "+what, chromedp.SendKeys(chromedp.CSS("#modal-reason"), reason))
	}
	b.run("confirm "+what, chromedp.Click(chromedp.CSS("#modal-confirm")))
	b.waitJS(what+" to be done", `document.getElementById('modal').hidden`)
}

// visit opens the console at path (a hash route such as "#/messages").
func (b *browser) visit(base, path string) {
	b.t.Helper()
	b.run("open "+path, chromedp.Navigate(base+"/"+path))
}

// The operator's day in the console: log in, see the head and why it waits, find a flight's
// messages, open the head message (raw body, history), preview a replay, park it and watch the
// queue move on, pause and resume the pump, pause a target and watch its events wait while the
// others are delivered, resume it, read the day's board and a flight's history; then a
// viewer, who is offered no action.
func TestConsoleOperatorWalkThrough(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db dbEnv) { consoleWalkThrough(t, db) })
}

// Tokens of the walk-through: an operator who acts, a viewer who only looks.
const (
	operatorSecret = "console-operator-secret-1"
	viewerSecret   = "console-viewer-secret-2"
	adminSecret    = "console-admin-secret-3"
)

func tokenHash(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return "sha256:" + hex.EncodeToString(sum[:])
}

func consoleWalkThrough(t *testing.T, db dbEnv) {
	chromium := chromiumPath(t) // before anything else: skip (or fail) at once without it
	day := tomorrow(t)
	s := db.start(t,
		"MSGX_AUTH_TOKENS=ops:operator:"+tokenHash(operatorSecret)+",watcher:viewer:"+tokenHash(viewerSecret)+",boss:admin:"+tokenHash(adminSecret),
		"MSGX_PIPELINE_POLL_INTERVAL=50ms",
		// FLOP CTOT fails with INFRA every time: the head the operator has to deal with.
		"MSGX_TEST_INFRA_TAG=FLOP-CTOT",
		"MSGX_PIPELINE_MAX_ATTEMPTS=100000",
		"MSGX_PIPELINE_HEAD_DEADLINE=1h",
		"MSGX_PIPELINE_BACKOFF_MS=500",
		"MSGX_SIS_TIMEZONE=Asia/Shanghai",
	)
	// A sender whose text is markup: the console must show it as text, never as an element.
	markup := s.post(refWithSender(`&lt;img src=x id=injected&gt;`, 1, "XSS"))
	snap := s.post(e2eSchd(830001,
		e2eFltr(93001, "CA1301", "D", day.Add(10*time.Hour), ""),
		e2eFltr(93002, "CA1302", "D", day.Add(11*time.Hour), "")))
	a := &bearerAPI{t: t, s: s, token: operatorSecret}
	a.await(markup, "SUCCEEDED", state("SUCCEEDED", ""))
	a.await(snap, "SUCCEEDED", state("SUCCEEDED", ""))
	head := s.post(e2eFlop(830002, "CTOT", 93001, "<CTOT>"+sisTime(day.Add(10*time.Hour+20*time.Minute))+"</CTOT>"))
	behind := s.post(e2eFlop(830003, "EOBT", 93002, "<EOBT>"+sisTime(day.Add(11*time.Hour+5*time.Minute))+"</EOBT>"))
	a.await(head, "FAILED/INFRA", func(m message) bool { return m.State == "FAILED" && m.Attempts >= 2 })
	if m := a.message(behind); m.State != "PENDING" {
		t.Fatalf("the message behind a FAILED head is %s, want PENDING", m.State)
	}

	// A browser in UTC: every time the console shows is airport time all the same.
	b := newBrowser(t, chromium, chromedp.Env("TZ=UTC"))
	// Anonymous: the console asks for a token; a wrong one is refused.
	b.visit(s.url, "")
	b.waitJS("the login page", `location.hash.startsWith('#/login') && !!document.getElementById('login-token')`)
	b.run("log in with a wrong token", chromedp.SendKeys(chromedp.CSS("#login-token"), "not-a-token"), chromedp.Click(chromedp.CSS("#login-submit")))
	b.waitText("#login-error", "not known")
	b.shot("login-refused")
	b.run("log in as the operator", chromedp.SendKeys(chromedp.CSS("#login-token"), operatorSecret), chromedp.Click(chromedp.CSS("#login-submit")))
	b.waitText("#who", "ops", "operator")
	// The overview: the head, and why it waits.
	b.waitText("#head-why", "FAILED INFRA", "everything behind it waits")
	// Its next attempt in airport time, as every time the console shows, never the API's UTC.
	b.waitJS("the head's next attempt in airport time", `/next attempt \d{4}-\d\d-\d\d \d\d:\d\d:\d\d:/.test(document.getElementById('head-why').textContent)`)
	b.waitText("#head-id", fmt.Sprint(head), "FLOP-CTOT")
	b.waitText("#count-FAILED", "1")
	b.waitText("#pump-state", "running")
	b.shot("overview-head-waits")

	// Messages of flight 93001: the schedule that created it; not the unrelated STTS.
	b.visit(s.url, "#/messages")
	b.waitJS("the message filters", `!!document.getElementById('filter-flid')`)
	b.run("filter by FLID",
		chromedp.SendKeys(chromedp.CSS("#filter-flid"), "93001"),
		chromedp.Click(chromedp.CSS("#filter-apply")))
	b.waitJS("the messages of flight 93001", fmt.Sprintf(`location.hash.includes('flid=93001') && !!document.querySelector('#messages-table tr[data-id="%d"]')`, snap))
	b.waitJS("only that flight's messages", fmt.Sprintf(`!document.querySelector('#messages-table tr[data-id="%d"]')`, markup))
	b.shot("messages-of-flight")

	// Markup in server data is shown as text.
	b.visit(s.url, "#/messages")
	b.waitText(fmt.Sprintf(`#messages-table tr[data-id="%d"]`, markup), "<img src=x id=injected>")
	b.waitJS("no injected element", `!document.getElementById('injected') && !document.querySelector('#messages-table img')`)

	// The head message: raw body (indented XML), its history of failed attempts.
	b.visit(s.url, "#/")
	b.waitJS("the head link", fmt.Sprintf(`!!document.querySelector('#head-id a[href="#/message/%d"]')`, head))
	b.run("open the head message", chromedp.Click(chromedp.CSS(fmt.Sprintf(`#head-id a[href="#/message/%d"]`, head))))
	b.waitText("#msg-state", "FAILED", "INFRA")
	b.waitText("#raw-body", "<CTOT>", "<FLID>93001</FLID>")
	b.waitText("#history-list", "FAILED", "INFRA", "does not answer")
	b.waitText("#decoded-json", `"STYP": "CTOT"`)
	b.shot("head-message")

	// Park it with a reason: it goes DEAD/PARKED and the queue moves on.
	b.run("press park", chromedp.Click(chromedp.CSS("#park")))
	b.confirm("park", "CTOT service down for the night")
	b.waitText("#msg-state", "DEAD", "PARKED")
	b.waitText("#msg-error", "CTOT service down for the night")
	b.waitText("#history-list", "parked")
	b.shot("head-parked")
	// A replay shows first what would move (a dry run); cancelled, nothing moves.
	b.run("press replay", chromedp.Click(chromedp.CSS("#replay")))
	b.waitText("#replay-preview", "1 message(s) would move back to PENDING")
	// The table of what would move, as the CLI's dry run prints it: id, tag, class, age.
	row := fmt.Sprintf(`#replay-items tbody tr[data-id="%d"]`, head)
	b.waitJS("the replay's table", fmt.Sprintf(`(() => {
		const rows = document.querySelectorAll('#replay-items tbody tr');
		const cells = [...document.querySelectorAll(%q)].map(td => td.textContent);
		const heads = [...document.querySelectorAll('#replay-items thead th')].map(th => th.textContent);
		return rows.length === 1 && heads.join() === 'id,tag,class,age' && cells[0] === '%d' && cells[1] === 'FLOP-CTOT' &&
			cells[2] === 'PARKED' && /^\d+(s|m \d+s)$/.test(cells[3]) && !document.getElementById('replay-more');
	})()`, row+" td", head))
	b.shot("replay-preview")
	b.run("cancel the replay", chromedp.Click(chromedp.CSS("#modal-cancel")))
	b.waitJS("the dialog closed", `document.getElementById('modal').hidden`)
	if m := a.message(head); m.State != "DEAD" || m.Class() != "PARKED" {
		t.Fatalf("after a cancelled replay the parked message is %s/%s", m.State, m.Class())
	}
	a.await(behind, "SUCCEEDED (the queue moved on)", state("SUCCEEDED", ""))
	b.visit(s.url, "#/")
	b.waitText("#head-why", "Nothing waits")
	b.waitText("#count-DEAD", "1")
	b.shot("overview-queue-moved-on")
	// The operator's park is in the recent problems, which the server keeps.
	b.waitText("#recent-table", "ops on message "+fmt.Sprint(head), "message.park")

	// Acknowledged, the parked message stays for audit but leaves the red count.
	b.visit(s.url, "#/dead")
	b.run("acknowledge the parked message", chromedp.Click(chromedp.CSS(fmt.Sprintf("#ack-message-%d", head))))
	b.confirm("acknowledge the parked message", "known bad test data")
	b.waitText(fmt.Sprintf("#acked-message-%d", head), "by ops", "known bad test data")
	b.visit(s.url, "#/")
	b.waitText("#count-DEAD", "0")
	b.waitText("#count-DEAD-acked", "1 acknowledged")
	b.waitText("#recent-table", "dead.ack")
	if m := a.message(head); m.State != "DEAD" {
		t.Fatalf("an acknowledged message is %s, want DEAD (kept)", m.State)
	}

	// Pause the pump: a new message waits, and the head says why; resumed, it is processed.
	b.run("press pause on the pump", chromedp.Click(chromedp.CSS("#pump-pause")))
	b.confirm("pause the pump", "database maintenance")
	b.waitText("#pump-state", "paused by ops", "database maintenance")
	held := s.post(refWithSender("AODB", 2, "HLD"))
	b.waitText("#head-why", "paused by ops")
	b.waitJS("the pause's time in airport time", `/since \d{4}-\d\d-\d\d \d\d:\d\d:\d\d \(/.test(document.getElementById('head-why').textContent)`)
	b.waitText("#head-id", fmt.Sprint(held))
	b.waitText("#alarm", "PAUSED for ", " by ops: database maintenance") // the header, on every page
	b.shot("pump-paused")
	if m := a.message(held); m.State != "PENDING" {
		t.Fatalf("a message sent while the pump is paused is %s", m.State)
	}
	b.run("press resume on the pump", chromedp.Click(chromedp.CSS("#pump-resume")))
	b.confirm("resume the pump", "")
	a.await(held, "SUCCEEDED after the resume", state("SUCCEEDED", ""))
	b.waitText("#head-why", "Nothing waits")
	b.waitText("#pump-state", "running")
	b.waitJS("the header's pause gone", `document.getElementById('alarm').hidden`)

	// Pause KAFKA_FLOP: a new change of flight 93002 is delivered everywhere but there.
	b.waitJS("the KAFKA_FLOP row", `!!document.getElementById('target-pause-KAFKA_FLOP')`)
	b.run("press pause on KAFKA_FLOP", chromedp.Click(chromedp.CSS("#target-pause-KAFKA_FLOP")))
	b.confirm("pause KAFKA_FLOP", "consumer maintenance")
	b.waitText(`#targets-table tr[data-id="KAFKA_FLOP"]`, "paused", "consumer maintenance")
	change := s.post(e2eFlop(830004, "EOBT", 93002, "<EOBT>"+sisTime(day.Add(11*time.Hour+15*time.Minute))+"</EOBT>"))
	a.await(change, "SUCCEEDED", state("SUCCEEDED", ""))
	a.awaitEvent(change, "ES_FLIGHT", "SENT")
	b.visit(s.url, fmt.Sprintf("#/message/%d", change))
	b.waitText("#message-events", "ES_FLIGHT", "KAFKA_FLOP")
	b.waitText("#alarm", "paused: KAFKA_FLOP")
	b.waitJS("KAFKA_FLOP's event waiting", `[...document.querySelectorAll('#events-table tbody tr')].some(r => r.textContent.includes('KAFKA_FLOP') && r.textContent.includes('PENDING'))`)
	b.waitJS("ES_FLIGHT's event sent", `[...document.querySelectorAll('#events-table tbody tr')].some(r => r.textContent.includes('ES_FLIGHT') && r.textContent.includes('SENT'))`)
	b.shot("paused-target-events-wait")
	if ev := a.eventOf(change, "KAFKA_FLOP"); ev.State != "PENDING" {
		t.Fatalf("KAFKA_FLOP's event of message %d is %s while the target is paused", change, ev.State)
	}
	b.visit(s.url, "#/")
	b.waitJS("KAFKA_FLOP pending", `(() => { const r = document.querySelector('#targets-table tr[data-id="KAFKA_FLOP"]'); return r && r.children[2].textContent !== '0'; })()`)
	b.shot("overview-target-paused")

	// Resume it: the waiting event is delivered.
	b.run("press resume on KAFKA_FLOP", chromedp.Click(chromedp.CSS("#target-resume-KAFKA_FLOP")))
	b.confirm("resume KAFKA_FLOP", "")
	a.awaitEvent(change, "KAFKA_FLOP", "SENT")
	b.visit(s.url, fmt.Sprintf("#/message/%d", change))
	b.waitJS("KAFKA_FLOP's event sent", `[...document.querySelectorAll('#events-table tbody tr')].some(r => r.textContent.includes('KAFKA_FLOP') && r.textContent.includes('SENT'))`)
	b.shot("target-resumed")

	// The board of the flights' day, and flight 93002's history: each EOBT change, old and new.
	b.visit(s.url, "#/flights?day="+day.Format(time.DateOnly))
	b.waitText(`#flights-table tr[data-id="93002"]`, "CA1302")
	b.shot("flights-board")
	b.run("open flight 93002", chromedp.Click(chromedp.CSS(`#flights-table tr[data-id="93002"] a`)))
	// In airport time (day is midnight in Shanghai), as labelled rows, not JSON.
	first := day.Add(11*time.Hour + 5*time.Minute).Format(time.DateTime)
	second := day.Add(11*time.Hour + 15*time.Minute).Format(time.DateTime)
	b.waitText("#flight-record", "CA1302", "Estimated off-block (EOBT)", second)
	b.waitText("#flight-history-list", "SCHD-DNLD", "insert", "FLOP-EOBT", "update", first, second)
	b.waitText("#flight-messages", fmt.Sprint(snap), fmt.Sprint(behind), fmt.Sprint(change))
	b.shot("flight-history")

	// Every action is in the audit log under the operator's token name.
	audit, err := client.New(s.url, adminSecret).Audit(t.Context(), url.Values{"order": {"asc"}, "limit": {"1000"}})
	if err != nil {
		t.Fatal(err)
	}
	var done []string
	for _, e := range audit.Audit {
		if e.Actor == "ops" {
			done = append(done, e.Action)
		}
	}
	if want := "message.park dead.ack pump.pause pump.resume target.pause target.resume"; strings.Join(done, " ") != want {
		t.Fatalf("the operator's audited actions: %q, want %q (%+v)", done, want, audit.Audit)
	}

	// A viewer sees the same but is offered no action.
	b.run("log out", chromedp.Click(chromedp.CSS("#logout")))
	b.waitJS("the login page again", `location.hash.startsWith('#/login') && !!document.getElementById('login-token')`)
	b.run("log in as the viewer", chromedp.SendKeys(chromedp.CSS("#login-token"), viewerSecret), chromedp.Click(chromedp.CSS("#login-submit")))
	b.waitText("#who", "watcher", "viewer")
	b.waitText("#head-why", "Nothing waits")
	b.waitJS("the targets", `!!document.querySelector('#targets-table tr[data-id="KAFKA_FLOP"]')`)
	b.waitJS("no action for a viewer", `!document.querySelector('#pump-pause, #pump-resume, [id^="target-pause-"], [id^="target-resume-"]') && !document.querySelector('#nav a[data-view="jobs"]').hidden`)
	// The viewer follows the jobs an admin runs, without being offered to start one.
	job := (&bearerAPI{t: t, s: s, token: adminSecret}).startJob("ARCHIVE")
	b.visit(s.url, "#/jobs")
	b.waitText(fmt.Sprintf(`#jobs-table tr[data-id="%d"]`, job), "ARCHIVE")
	b.waitJS("no job form for a viewer", `!document.getElementById('job-start')`)
	b.visit(s.url, fmt.Sprintf("#/jobs/%d", job))
	b.waitJS("the job's page follows it to its end", fmt.Sprintf(
		`/ARCHIVE.*DONE.*archived \d+ messages/.test(document.querySelector('#job-detail tr[data-id="%d"]')?.textContent || '')`, job))
	b.shot("viewer-job")
	b.visit(s.url, fmt.Sprintf("#/message/%d", head))
	b.waitText("#msg-state", "PARKED")
	b.waitJS("no park or replay for a viewer", `!document.getElementById('park') && !document.getElementById('replay')`)
	b.shot("viewer-message")
}

// bearerAPI reads the server's API with a bearer token (the harness's helpers are anonymous,
// which a server with auth.tokens refuses).
type bearerAPI struct {
	t     *testing.T
	s     *server
	token string
}

// api is the typed client of the server with the token.
func (a *bearerAPI) api() *client.Client { return client.New(a.s.url, a.token) }

// startJob enqueues a job of kind (the token must be an admin's) and returns its id.
func (a *bearerAPI) startJob(kind string) int64 {
	a.t.Helper()
	c := a.api()
	code := answered(c)
	j, err := c.StartJob(context.Background(), kind)
	if err != nil || code() != http.StatusOK || j.ID == 0 {
		a.t.Fatalf("POST /api/v1/jobs %s: %d %+v %v", kind, code(), j, err)
	}
	return j.ID
}

func (a *bearerAPI) message(id int64) message {
	a.t.Helper()
	m, err := a.api().Message(context.Background(), id)
	if err != nil {
		a.t.Fatalf("GET message %d: %v", id, err)
	}
	return m
}

// await polls message id until cond holds.
func (a *bearerAPI) await(id int64, what string, cond func(message) bool) message {
	a.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	var m message
	for time.Now().Before(deadline) {
		if m = a.message(id); cond(m) {
			return m
		}
		time.Sleep(20 * time.Millisecond)
	}
	a.t.Fatalf("message %d never became %s; last %+v\n%s", id, what, m, a.s.logs)
	return m
}

// eventsOf lists target's events of message id.
func (a *bearerAPI) eventsOf(id int64, target string) []listedEvent {
	a.t.Helper()
	out, err := a.api().Events(context.Background(), url.Values{"order": {"asc"}, "limit": {"1000"}, "target": {target}, "msg_id": {fmt.Sprint(id)}})
	if err != nil {
		a.t.Fatalf("GET the %s events of message %d: %v", target, id, err)
	}
	return out.Events
}

// eventOf returns message id's one event for target.
func (a *bearerAPI) eventOf(id int64, target string) listedEvent {
	a.t.Helper()
	evs := a.eventsOf(id, target)
	if len(evs) != 1 {
		a.t.Fatalf("message %d has %d %s events, want 1: %+v", id, len(evs), target, evs)
	}
	return evs[0]
}

// awaitEvent waits until message id's event for target is in state.
func (a *bearerAPI) awaitEvent(id int64, target, state string) {
	a.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		evs := a.eventsOf(id, target)
		if len(evs) == 1 && evs[0].State == state {
			return
		}
		if time.Now().After(deadline) {
			a.t.Fatalf("message %d's %s event never became %s: %+v\n%s", id, target, state, evs, a.s.logs)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// After a fresh log-in, in a browser whose zone is UTC, every page of the console shows
// airport time (sis.timezone Asia/Shanghai) from its first render, without a reload, names
// the zone, and shows "null" nowhere: the log-in answer once carried no zone, so a message
// taken at 10:07 airport time showed "Received 02:07" and the header read
// "otto (operator)null". The flight page shows its record's times and groups (PSDT, GTDT,
// CKDT, CHOT) as labelled rows in airport time, not JSON; the board's day is written
// YYYY-MM-DD whatever the browser's locale; the job form offers a job that cannot run here
// disabled, with the reason.
func TestConsoleAirportTimeFromLogIn(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db dbEnv) { consoleAirportTime(t, db) })
}

func consoleAirportTime(t *testing.T, db dbEnv) {
	chromium := chromiumPath(t)
	s := db.start(t,
		"MSGX_AUTH_TOKENS=otto:operator:"+tokenHash(operatorSecret)+",boss:admin:"+tokenHash(adminSecret),
		"MSGX_PIPELINE_POLL_INTERVAL=50ms",
		"MSGX_SIS_TIMEZONE=Asia/Shanghai",
	)
	shanghai, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		t.Fatal(err)
	}
	day := tomorrow(t)
	at := func(h, m int) time.Time { return day.Add(time.Duration(h)*time.Hour + time.Duration(m)*time.Minute) }
	groups := fmt.Sprintf(`<PSDT PSNO="1"><PSST>201</PSST><STST>%s</STST><STET>%s</STET></PSDT>`, sisTime(at(9, 0)), sisTime(at(10, 20))) +
		fmt.Sprintf(`<GTDT GTNO="1"><GATE>B12</GATE><PGOT>%s</PGOT><PGCT>%s</PGCT><GTYP>D</GTYP></GTDT>`, sisTime(at(9, 20)), sisTime(at(9, 45))) +
		fmt.Sprintf(`<CKDT CKNO="1"><CHKC>K101</CHKC><CCLS>Y</CCLS><PCOT>%s</PCOT><PCCT>%s</PCCT><CTYP>D</CTYP></CKDT>`, sisTime(at(7, 0)), sisTime(at(9, 15)))
	a := &bearerAPI{t: t, s: s, token: adminSecret}
	snap := s.post(e2eSchd(860001, e2eFltr(97001, "CA1701", "D", at(10, 0), groups)))
	a.await(snap, "SUCCEEDED", state("SUCCEEDED", ""))
	chocks := s.post(e2eFlop(860002, "CHOT", 97001, fmt.Sprintf(`<CHOT CSNO="1"><CHTM>%s</CHTM><CHID>OFF</CHID><CHST>201</CHST></CHOT>`, sisTime(at(10, 7)))))
	orphan := s.post(e2eFlop(860003, "STND", 97999, "<STND>118</STND>")) // no such flight: DEAD ORPHAN
	a.await(chocks, "SUCCEEDED", state("SUCCEEDED", ""))
	a.await(orphan, "DEAD ORPHAN", state("DEAD", "ORPHAN"))
	job := a.startJob("ARCHIVE") // the jobs and the audit log have a time to show
	received := a.message(chocks).ReceivedAt
	if received == nil {
		t.Fatalf("message %d has no received_at", chocks)
	}
	airport, utc := received.In(shanghai).Format(time.DateTime), received.UTC().Format(time.DateTime)
	// A job that cannot run in this configuration: phase B (the default) has no REDIS_FLIGHT
	// target here, so PROJECTION_REBUILD has nothing to rebuild.
	kinds, err := a.api().JobKinds(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	reason := ""
	for _, k := range kinds {
		if k.Kind == "PROJECTION_REBUILD" && !k.Runnable {
			reason = k.Reason
		}
	}
	if reason == "" {
		t.Fatalf("PROJECTION_REBUILD is runnable on a phase B server without REDIS_FLIGHT: %+v", kinds)
	}

	b := newBrowser(t, chromium, chromedp.Env("TZ=UTC"))
	b.visit(s.url, "")
	b.waitJS("the login page", `location.hash.startsWith('#/login') && !!document.getElementById('login-token')`)
	b.waitJS("a browser in UTC", `Intl.DateTimeFormat().resolvedOptions().timeZone === 'UTC'`)
	b.run("log in as the admin", chromedp.SendKeys(chromedp.CSS("#login-token"), adminSecret), chromedp.Click(chromedp.CSS("#login-submit")))
	b.waitText("#who", "boss", "(admin)", "Asia/Shanghai")
	// From here on the page is never loaded again: each page is opened as a click would.
	b.run("mark the document", chromedp.Evaluate[chromedp.Void](`window.sameDocument = true`))
	open := func(hash string) {
		t.Helper()
		b.run("open "+hash, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`location.hash = %q`, hash)))
	}
	// airportTimes: every <time> on the page shows its instant in Shanghai (UTC+8, no
	// daylight saving): computed here apart from the console's own formatting; and the page's
	// text holds no "null", "undefined", "NaN", "Invalid Date" nor a raw UTC time.
	check := func(page string, minTimes int) {
		t.Helper()
		b.waitJS(page+" in airport time", fmt.Sprintf(`(() => {
			if (!window.sameDocument) throw new Error('the page was loaded again');
			const ts = [...document.querySelectorAll('#view time')];
			if (ts.length < %d) return false;
			const want = d => new Date(new Date(d).getTime() + 8 * 3600e3).toISOString().slice(0, 19).replace('T', ' ');
			const bad = ts.filter(el => el.textContent !== want(el.getAttribute('datetime')));
			if (bad.length) throw new Error('not in airport time: ' + bad.map(el => el.getAttribute('datetime') + ' shown ' + el.textContent).join(', '));
			const text = document.body.innerText;
			const wrong = /\bnull\b|\bundefined\b|\bNaN\b|Invalid Date|\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d)?(\.\d+)?Z/.exec(text);
			if (wrong) throw new Error('the page shows ' + JSON.stringify(wrong[0]) + ': ' + text.slice(Math.max(0, wrong.index - 80), wrong.index + 80));
			return document.getElementById('who-zone').textContent.includes('Asia/Shanghai');
		})()`, minTimes))
		b.shot(page)
	}

	b.waitText("#head-why", "Nothing waits")
	check("overview", 1) // the recent problems: the orphan's time
	open("#/messages")
	row := fmt.Sprintf(`#messages-table tr[data-id="%d"]`, chocks)
	b.waitText(row, "FLOP-CHOT", airport)
	b.waitJS("not UTC", fmt.Sprintf(`!document.querySelector(%q).textContent.includes(%q)`, row, utc))
	check("messages", 3)
	open(fmt.Sprintf("#/message/%d", chocks))
	b.waitText("#summary", airport)
	b.waitText("#decoded-json", "+08:00")
	check("message", 2)
	open("#/flights?day=" + day.Format(time.DateOnly))
	b.waitText(`#flights-table tr[data-id="97001"] td.sched`, "10:00")
	// The day is an ISO date, typed as such; a day written otherwise is refused, saying how.
	b.waitJS("the day picker in ISO", fmt.Sprintf(`(el => el.type === 'text' && el.value === %q)(document.getElementById('flights-day'))`, day.Format(time.DateOnly)))
	b.run("type a day in another format", chromedp.SetValue(chromedp.CSS("#flights-day"), "12/03/2026"), chromedp.Click(chromedp.CSS("#board-show")))
	b.waitText("#flights-day-error", "YYYY-MM-DD")
	next := day.AddDate(0, 0, 1).Format(time.DateOnly)
	b.run("type the next day", chromedp.SetValue(chromedp.CSS("#flights-day"), next), chromedp.Click(chromedp.CSS("#board-show")))
	b.waitJS("the next day's board", fmt.Sprintf(`location.hash.includes('day=%s') && document.querySelector('#view h1')?.textContent.includes('Flights of %s')`, next, next))
	open("#/flight/97001")
	b.waitText("#record-fields", "Flight number (FLNO)", "CA1701", "Scheduled (SODT)", at(10, 0).Format(time.DateTime))
	b.waitText("#record-PSDT", "Stands (PSDT)", "Stand (PSST)", "201", at(9, 0).Format(time.DateTime), at(10, 20).Format(time.DateTime))
	b.waitText("#record-GTDT", "Gates (GTDT)", "B12", "Planned open (PGOT)", at(9, 20).Format(time.DateTime))
	b.waitText("#record-CKDT", "Check-in counters (CKDT)", "K101", at(7, 0).Format(time.DateTime))
	b.waitText("#record-CHOT", "Chocks (CHOT)", "OFF", at(10, 7).Format(time.DateTime))
	b.waitText("#flight-history-list", "Chocks (CHOT)", at(10, 7).Format(time.DateTime))
	b.waitJS("no JSON in the record", `!/[{}"]/.test(document.getElementById('flight-record').innerText)`)
	check("flight", 8)
	open("#/events")
	b.waitJS("the events", `document.querySelectorAll('#events-table tbody tr').length > 0`)
	check("events", 1)
	open("#/dead")
	b.waitText(fmt.Sprintf(`#dead-messages tr[data-id="%d"]`, orphan), "ORPHAN")
	check("dead letters", 1)
	open("#/requests")
	b.waitText("#live-state", "live")
	check("requests", 0)
	open("#/jobs")
	b.waitText(fmt.Sprintf(`#jobs-table tr[data-id="%d"]`, job), "ARCHIVE")
	// PROJECTION_REBUILD is shown, disabled, with the server's reason; ARCHIVE can be started.
	b.waitText(`#job-kinds tr[data-id="PROJECTION_REBUILD"]`, "cannot run", reason)
	b.waitJS("PROJECTION_REBUILD disabled", `document.querySelector('#job-kind option[value="PROJECTION_REBUILD"]').disabled &&
		!document.querySelector('#job-kind option[value="ARCHIVE"]').disabled && document.getElementById('job-kind').value !== 'PROJECTION_REBUILD'`)
	check("jobs", 1)
	open(fmt.Sprintf("#/jobs/%d", job))
	b.waitText("#job-detail", "ARCHIVE", "DONE")
	check("job", 2)
	open("#/audit")
	b.waitText("#audit-table", "job.enqueue", "boss")
	check("audit", 1)
	open("#/find?q=CA1701&list=1")
	b.waitText("#find-hits", "97001")
	check("find", 0)
	open("#/")
	b.waitText("#head-why", "Nothing waits")
	check("overview again", 1)
}
