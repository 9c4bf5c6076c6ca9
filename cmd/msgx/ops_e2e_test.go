package main_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"msgx/internal/testkit"
)

// cli runs `msgx args…` against s (MSGX_SERVER) with env added, and returns its combined
// output and error.
func (s *server) cli(env []string, args ...string) (string, error) {
	s.t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = append(append(os.Environ(), "MSGX_SERVER="+s.url, "MSGX_TOKEN="), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// mustCLI is cli that fails the test when the command fails or its output lacks a want.
func (s *server) mustCLI(want []string, args ...string) string {
	s.t.Helper()
	out, err := s.cli(nil, args...)
	if err != nil {
		s.t.Fatalf("msgx %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			s.t.Fatalf("msgx %s: output lacks %q:\n%s", strings.Join(args, " "), w, out)
		}
	}
	return out
}

// stays checks that message id is still in st after a few poll intervals (a negative check
// needs some wait; the pump polls every 50ms here).
func (s *server) stays(id int64, st string) {
	s.t.Helper()
	time.Sleep(500 * time.Millisecond)
	if m := s.message(id); m.State != st {
		s.t.Fatalf("message %d is %s, want it still %s", id, m.State, st)
	}
}

// A head that keeps failing blocks the queue; msgx park sets it aside and the next message is
// processed at once. Parked, it is DEAD/PARKED with the reason, its history shows the attempt
// and the park, and it can be replayed (a dry run first).
func TestParkMovesTheQueueOn(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db dbEnv) {
		s := db.start(t, "MSGX_PIPELINE_POLL_INTERVAL=50ms", "MSGX_TEST_PANIC_TAG=STTS-ADD",
			"MSGX_PIPELINE_PARK_CLASSES=", "MSGX_PIPELINE_BACKOFF_MS=600000", "MSGX_PIPELINE_BACKOFF_CAP_MS=600000")
		if !strings.Contains(s.logs.String(), "no auth.tokens configured") {
			t.Errorf("serve does not warn that it answers only loopback clients:\n%s", s.logs)
		}
		poison := s.post(refWithSender("AODB", 1, "PSN"))
		s.await(poison, "FAILED", state("FAILED", "CODEC_ERROR"))
		next := s.post(airline)
		s.stays(next, "PENDING")

		s.mustCLI([]string{fmt.Sprintf("message %d: FAILED → DEAD PARKED", poison)}, "park", fmt.Sprint(poison), "--reason", "poison: 毒 🛑")
		s.await(next, "SUCCEEDED", state("SUCCEEDED", ""))
		m := s.message(poison)
		if m.State != "DEAD" || m.Class() != "PARKED" || m.LastError == nil || !strings.HasPrefix(*m.LastError, "parked by loopback: poison: 毒 🛑") {
			t.Fatalf("parked message: %+v", m)
		}
		s.mustCLI([]string{"FAILED", "CODEC_ERROR", "DEAD      PARKED", "by loopback: parked: poison"}, "message", fmt.Sprint(poison), "--history")
		s.mustCLI([]string{"<STTC>PSN</STTC>"}, "message", "--raw", fmt.Sprint(poison))
		s.mustCLI([]string{"PARKED"}, "messages", "--class", "PARKED")
		if out, err := s.cli(nil, "park", fmt.Sprint(next), "--reason", "x"); err == nil || !strings.Contains(out, "409") {
			t.Errorf("park of a SUCCEEDED message: %v %s", err, out)
		}
		s.mustCLI([]string{"dry run: would move 1 messages to PENDING", "STTS-ADD", "PARKED"}, "replay", "--class", "PARKED", "--dry-run")
		if m := s.message(poison); m.State != "DEAD" {
			t.Fatalf("the dry run moved the message: %+v", m)
		}
		s.mustCLI([]string{"message.park", "loopback"}, "audit")
	})
}

// msgx pause stops the pump at its next step, durably: a restarted server is still paused
// and says by whom; msgx resume lets the queue go on.
func TestPumpPauseSurvivesARestart(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db dbEnv) {
		s := db.start(t, "MSGX_PIPELINE_POLL_INTERVAL=50ms")
		s.mustCLI([]string{"the pump paused by loopback", "downstream maintenance"}, "pause", "--reason", "downstream maintenance")
		id := s.post(airline)
		s.stays(id, "PENDING")
		if err := s.stop(); err != nil {
			t.Fatal(err)
		}
		s = db.start(t, "MSGX_PIPELINE_POLL_INTERVAL=50ms")
		s.stays(id, "PENDING")
		st := s.status()
		if st.PumpPause == nil || st.PumpPause.By != "loopback" || st.Head == nil || !strings.Contains(st.Head.Why, "paused by loopback") {
			t.Fatalf("status after a restart: %+v", st)
		}
		if out, err := s.cli(nil, "status"); exitCode(err) != 8 || !strings.HasPrefix(out, "PAUSED for ") || !strings.Contains(out, " by loopback: downstream maintenance") {
			t.Fatalf("msgx status after a restart: exit %d\n%s", exitCode(err), out)
		}
		s.mustCLI([]string{"the pump running"}, "resume")
		s.await(id, "SUCCEEDED", state("SUCCEEDED", ""))
	})
}

// A paused target's events wait while the other targets deliver; resumed, they go, in order.
// msgx events and msgx flight find the flight's events and its history.
func TestTargetPauseHoldsItsEvents(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db dbEnv) {
		s := db.start(t, "MSGX_PIPELINE_POLL_INTERVAL=50ms")
		if out, err := s.cli(nil, "pause", "--target", "KAFKA_FLOPX"); err == nil || !strings.Contains(out, "KAFKA_FLOP, KAFKA_SCHD") {
			t.Fatalf("unknown target: %v %s", err, out)
		}
		s.mustCLI([]string{"target KAFKA_FLOP paused by loopback"}, "pause", "--target", "KAFKA_FLOP")
		day := tomorrow(t)
		snap := s.post(e2eSchd(820001, e2eFltr(92001, "CA1301", "D", day.Add(10*time.Hour), "")))
		stnd := s.post(e2eFlop(820002, "STND", 92001, "<STND>231</STND>"))
		s.await(stnd, "SUCCEEDED", state("SUCCEEDED", ""))
		waitFor(t, "REDIS_NOTIFY delivered", func() bool {
			evs := s.events("target=REDIS_NOTIFY&flid=92001")
			return len(evs) == 2 && evs[0].State == "SENT" && evs[1].State == "SENT"
		})
		for _, e := range s.events("target=KAFKA_FLOP&flid=92001") {
			if e.State != "PENDING" {
				t.Fatalf("an event of the paused target moved: %+v", e)
			}
		}
		// A paused target is what status says first, and its exit code (9) says so to a script.
		status, err := s.cli(nil, "status")
		if exitCode(err) != 9 || !strings.HasPrefix(status, "target KAFKA_FLOP PAUSED for ") || !strings.Contains(status, "msgx resume --target KAFKA_FLOP") {
			t.Fatalf("msgx status with KAFKA_FLOP paused: exit %d, want 9, starting with the paused target:\n%s", exitCode(err), status)
		}
		s.mustCLI([]string{"target KAFKA_FLOP running"}, "resume", "--target", "KAFKA_FLOP")
		waitFor(t, "KAFKA_FLOP delivered", func() bool {
			evs := s.events("target=KAFKA_FLOP&flid=92001")
			return len(evs) == 2 && evs[0].State == "SENT" && evs[1].State == "SENT"
		})
		lines := readLines(t, db.outbox("KAFKA_FLOP"))
		if len(lines) != 2 || !strings.Contains(string(lines[1]), `"STND"`) {
			t.Fatalf("KAFKA_FLOP outbox after the resume: %q", lines)
		}
		s.mustCLI([]string{"KAFKA_FLOP", "SENT", "92001"}, "events", "--flid", "92001", "--target", "KAFKA_FLOP")
		out := s.mustCLI([]string{fmt.Sprintf("message %d SCHD-DNLD  insert", snap), fmt.Sprintf("message %d FLOP-STND  update", stnd), `STND   "201" → "231"`},
			"flight", "92001", "--history")
		_ = out
		s.mustCLI([]string{"FLID  92001"}, "flight", "92001")
		s.mustCLI([]string{fmt.Sprint(snap), fmt.Sprint(stnd)}, "messages", "--flid", "92001")
		s.mustCLI([]string{"dry run: would move 0 dead events", "note: replayed events are delivered again"}, "replay", "--events", "--target", "KAFKA_FLOP", "--dry-run")
		if out, err := s.cli(nil, "replay", "--events", "--target", "KAFKA_FLOPP"); err == nil || !strings.Contains(out, `unknown target "KAFKA_FLOPP" (did you mean KAFKA_FLOP?)`) {
			t.Errorf("event replay of an unknown target: %v %s", err, out)
		}
		s.mustCLI([]string{"no jobs"}, "jobs")
		s.mustCLI([]string{"enqueued"}, "jobs", "--start", "ARCHIVE")
		s.mustCLI([]string{"ARCHIVE"}, "jobs")
	})
}

// waitFor is testkit.Eventually with the end-to-end tests' limit, 20 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testkit.Eventually(t, 20*time.Second, what, cond)
}

// With tokens configured the CLI needs one (--token or MSGX_TOKEN), a viewer cannot act and
// only an admin sees jobs; msgx token hash prints the configured form on its last line.
func TestCLITokens(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	probe := &server{t: t, url: "http://127.0.0.1:1"}
	out, err := probe.cli(nil, "token", "hash", "operator-secret-0123456789")
	if err != nil {
		t.Fatalf("token hash: %v %s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	opHash := lines[len(lines)-1]
	if !strings.HasPrefix(opHash, "sha256:") || len(opHash) != 71 {
		t.Fatalf("token hash last line: %q", opHash)
	}
	if out, err := probe.cli(nil, "token", "hash", "short"); err == nil {
		t.Fatalf("a short secret was hashed: %s", out)
	}
	out, _ = probe.cli(nil, "token", "new")
	lines = strings.Split(strings.TrimSpace(out), "\n")
	viewerSecret := strings.TrimSpace(strings.SplitN(lines[0], ": ", 2)[1])
	viewerHash := lines[len(lines)-1]
	s := start(t, data, "MSGX_PIPELINE_POLL_INTERVAL=50ms", "MSGX_AUTH_TOKENS=ops:operator:"+opHash+",eye:viewer:"+viewerHash)
	if strings.Contains(s.logs.String(), "no auth.tokens configured") {
		t.Errorf("serve warns of loopback-only with tokens configured")
	}
	if out, err := s.cli(nil, "status"); err == nil || !strings.Contains(out, "401") {
		t.Fatalf("status without a token: %v %s", err, out)
	}
	if out, err := s.cli([]string{"MSGX_TOKEN=operator-secret-0123456789"}, "status"); err != nil || !strings.Contains(out, "PENDING") {
		t.Fatalf("status with MSGX_TOKEN: %v %s", err, out)
	}
	if out, err := s.cli(nil, "status", "--token", viewerSecret); err != nil {
		t.Fatalf("status with --token: %v %s", err, out)
	}
	if out, err := s.cli(nil, "pause", "--token", viewerSecret); err == nil || !strings.Contains(out, "403") || !strings.Contains(out, "needs operator") {
		t.Fatalf("pause as a viewer: %v %s", err, out)
	}
	if out, err := s.cli([]string{"MSGX_TOKEN=operator-secret-0123456789"}, "jobs", "--start", "ARCHIVE"); err == nil || !strings.Contains(out, "needs admin") {
		t.Fatalf("a job started by an operator: %v %s", err, out)
	}
	if out, _ := s.cli([]string{"MSGX_TOKEN=operator-secret-0123456789"}, "messages", "--help"); strings.Contains(out, "operator-secret") {
		t.Fatalf("usage shows the token: %s", out)
	}
	if out, err := s.cli([]string{"MSGX_TOKEN=operator-secret-0123456789"}, "pause"); err != nil || !strings.Contains(out, "paused by ops") {
		t.Fatalf("pause as an operator: %v %s", err, out)
	}
	// The log reaches the test through a pipe: the line may come a little after the answer.
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(s.logs.String(), `"actor":"ops"`) && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(s.logs.String(), `"actor":"ops"`) {
		t.Errorf("the action is not logged with the token's name:\n%s", s.logs)
	}
}

// A webhook URL's password and secret query value appear nowhere: not in the stored last
// error, GET /api/v1/status, msgx status, msgx events, nor the log.
func TestWebhookPasswordIsRedactedEverywhere(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db dbEnv) {
		var hits atomic.Int32
		hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hits.Add(1)
			http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
		}))
		defer hook.Close()
		hookURL := strings.Replace(hook.URL, "http://", "http://hookuser:Hunter2pw@", 1) + "/hook?token=T0psecret&x=1"
		cfg := filepath.Join(t.TempDir(), "msgx.yaml")
		os.WriteFile(cfg, []byte(fmt.Sprintf(`targets:
  KAFKA_FLOP: {sink: file}
  KAFKA_SCHD: {sink: file}
  REDIS_NOTIFY: {sink: file}
  ES_FLIGHT: {sink: file}
  WEBHOOK_OPS: {sink: webhook, url: %q, secret: s3cret, copy-of: REDIS_NOTIFY}
`, hookURL)), 0o644)
		s := db.start(t, "MSGX_PIPELINE_POLL_INTERVAL=50ms", "MSGX_CONFIG="+cfg)
		id := s.post(e2eSchd(830001, e2eFltr(93001, "CA1401", "D", tomorrow(t).Add(9*time.Hour), "")))
		s.await(id, "SUCCEEDED", state("SUCCEEDED", ""))
		waitFor(t, "the webhook failed once", func() bool {
			var lastErr *string
			db.open(t).SQL.QueryRow(`SELECT LAST_ERROR FROM MSG_EVENT WHERE TARGET = 'WEBHOOK_OPS'`).Scan(&lastErr)
			return lastErr != nil
		})
		var stored string
		db.open(t).SQL.QueryRow(`SELECT LAST_ERROR FROM MSG_EVENT WHERE TARGET = 'WEBHOOK_OPS'`).Scan(&stored)
		// The body as sent: a secret anywhere in it counts, not only in the fields a client reads.
		resp, err := http.Get(s.url + "/api/v1/status")
		if err != nil {
			t.Fatal(err)
		}
		var status json.RawMessage
		json.NewDecoder(resp.Body).Decode(&status)
		resp.Body.Close()
		cliStatus := s.mustCLI([]string{"WEBHOOK_OPS", "503"}, "status")
		cliEvents := s.mustCLI([]string{"WEBHOOK_OPS"}, "events", "--target", "WEBHOOK_OPS")
		for what, text := range map[string]string{"stored last_error": stored, "status JSON": string(status), "msgx status": cliStatus, "msgx events": cliEvents, "log": s.logs.String()} {
			if strings.Contains(text, "Hunter2pw") || strings.Contains(text, "T0psecret") {
				t.Errorf("%s shows the webhook's secret:\n%s", what, text)
			}
		}
		if !strings.Contains(stored, "hookuser:xxxxx@"+strings.TrimPrefix(hook.URL, "http://")+"/xxxxx") {
			t.Errorf("stored last_error does not say where it failed: %s", stored)
		}
	})
}

// With http.admin-addr the API and the console move there; http.addr keeps the inbox,
// /healthz and /metrics.
func TestAdminListenerSplitsTheAPIFromTheInbox(t *testing.T) {
	t.Parallel()
	admin := freeAddr(t)
	s := start(t, t.TempDir(), "MSGX_PIPELINE_POLL_INTERVAL=50ms", "MSGX_HTTP_ADMIN_ADDR="+admin)
	id := s.post(airline)
	resp, err := http.Get(s.url + "/api/v1/status")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Fatalf("the API on http.addr: %d, want 404", resp.StatusCode)
	}
	a := &server{t: t, url: "http://" + admin, logs: s.logs}
	a.await(id, "SUCCEEDED", state("SUCCEEDED", ""))
	if !strings.Contains(s.logs.String(), "msgx admin listener") {
		t.Errorf("serve does not log the admin listener:\n%s", s.logs)
	}
}
