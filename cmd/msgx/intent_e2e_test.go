package main_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"msgx/client"
)

// waitMetric waits until s's /metrics has line.
func (s *server) waitMetric(line string) {
	s.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(s.metrics(), "\n"+line+"\n") {
		if time.Now().After(deadline) {
			s.t.Fatalf("/metrics never showed %q:\n%s", line, s.metrics())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Monitoring knows an operator's pause: /healthz does not call a paused pump running, the
// paused gauges say what is paused (the alert rules hold on them, deploy/), the labelled
// series exist at zero from the start, and msgx_build_info has a version.
func TestMonitoringKnowsPauses(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db dbEnv) {
		s := db.start(t, "MSGX_PIPELINE_POLL_INTERVAL=50ms", "MSGX_METRICS_SAMPLE_INTERVAL=100ms")
		body := s.metrics()
		for _, want := range []string{`msgx_events_sent_total{target="KAFKA_FLOP"} 0`, `msgx_events_dead_total{target="REDIS_NOTIFY"} 0`,
			`msgx_messages_finished_total{class="ORPHAN",state="DEAD",type_tag="FLOP-STND"} 0`,
			`msgx_job_last_success_timestamp_seconds{kind="ARCHIVE"} 0`, `msgx_operator_actions_total{action="pump.pause"} 0`} {
			if !strings.Contains(body, "\n"+want+"\n") {
				t.Errorf("/metrics at the start lacks %q", want)
			}
		}
		if m := regexp.MustCompile(`msgx_build_info\{commit="[^"]*",version="([^"]*)"\} 1`).FindStringSubmatch(body); m == nil || m[1] == "" {
			t.Errorf("msgx_build_info without a version: %v", m)
		}
		s.waitMetric(`msgx_pump_paused 0`)
		s.waitMetric(`msgx_target_paused{target="KAFKA_FLOP"} 0`)

		s.mustCLI([]string{"the pump paused"}, "pause", "--reason", "maintenance")
		s.mustCLI([]string{"target KAFKA_FLOP paused"}, "pause", "--target", "KAFKA_FLOP", "--reason", "broker upgrade")
		if h := s.health(); h.PumpRunning || !h.PumpPaused {
			t.Errorf("/healthz of a paused pump: %+v", h)
		}
		s.waitMetric(`msgx_pump_paused 1`)
		s.waitMetric(`msgx_target_paused{target="KAFKA_FLOP"} 1`)
		s.waitMetric(`msgx_operator_actions_total{action="target.pause"} 1`)
		if !strings.Contains(s.metrics(), "\n"+`msgx_target_paused{target="REDIS_NOTIFY"} 0`+"\n") {
			t.Error("a target that is not paused shows as paused")
		}
		s.mustCLI([]string{"the pump running"}, "resume")
		if h := s.health(); !h.PumpRunning || h.PumpPaused {
			t.Errorf("/healthz of a resumed pump: %+v", h)
		}
		s.waitMetric(`msgx_pump_paused 0`)
	})
}

// Every role follows the jobs; only an admin runs one; a mistyped kind gets a suggestion;
// GET /api/v1/jobs/{id} tells a job's state and result.
func TestJobsForEveryRole(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db dbEnv) {
		s := db.start(t, "MSGX_PIPELINE_POLL_INTERVAL=50ms",
			"MSGX_AUTH_TOKENS=watcher:viewer:"+tokenHash(viewerSecret)+",boss:admin:"+tokenHash(adminSecret))
		admin := []string{"MSGX_TOKEN=" + adminSecret}
		viewer := []string{"MSGX_TOKEN=" + viewerSecret}
		if out, err := s.cli(admin, "job", "run", "ARCHVE"); err == nil || !strings.Contains(out, `unknown job kind "ARCHVE" (did you mean ARCHIVE?)`) {
			t.Errorf("a mistyped kind: %v %s", err, out)
		}
		if out, err := s.cli(admin, "jobs", "--start", "retension"); err == nil || !strings.Contains(out, "did you mean RETENTION?") {
			t.Errorf("a mistyped kind to jobs --start: %v %s", err, out)
		}
		out, err := s.cli(admin, "job", "run", "--no-wait", "ARCHIVE")
		if err != nil {
			t.Fatalf("job run: %v %s", err, out)
		}
		lines := strings.Fields(out)
		id := lines[len(lines)-1]
		if out, err := s.cli(viewer, "jobs", "--start", "ARCHIVE"); err == nil || !strings.Contains(out, "needs admin") {
			t.Errorf("a job started by a viewer: %v %s", err, out)
		}
		asViewer := client.New(s.url, viewerSecret)
		jobID, err := strconv.ParseInt(id, 10, 64)
		if err != nil {
			t.Fatalf("job run printed %q, not an id", out)
		}
		var j client.Job
		waitFor(t, "the job DONE", func() bool {
			if j, err = asViewer.Job(t.Context(), jobID); err != nil {
				t.Fatalf("GET /api/v1/jobs/%s: %v", id, err)
			}
			return j.State == "DONE"
		})
		if fmt.Sprint(j.ID) != id || j.Kind != "ARCHIVE" || j.Result == nil || !strings.Contains(*j.Result, "archived 0 messages") {
			t.Errorf("GET /api/v1/jobs/%s: %+v", id, j)
		}
		var missing *client.Error
		if _, err := asViewer.Job(t.Context(), 999999); !errors.As(err, &missing) || missing.Status != http.StatusNotFound {
			t.Fatalf("GET /api/v1/jobs/999999: %v, want %d", err, http.StatusNotFound)
		}
		if out, err := s.cli(viewer, "jobs"); err != nil || !strings.Contains(out, "ARCHIVE") || !strings.Contains(out, "DONE") {
			t.Errorf("jobs as a viewer: %v %s", err, out)
		}
		if out, err := s.cli(viewer, "jobs", id); err != nil || !strings.Contains(out, "job "+id+" ARCHIVE: DONE") || !strings.Contains(out, "archived 0 messages") {
			t.Errorf("jobs %s as a viewer: %v %s", id, err, out)
		}
	})
}

// Dead letters as a work queue, on a webhook that refuses everything (400): the target shows
// as rejecting (status, CLI, metric); an acknowledged dead message stays DEAD for audit but
// leaves the dead count; the recent problems (the pump's dead message, the operator's
// acknowledgements) survive a restart; RETENTION deletes the acknowledged dead events and
// keeps the unacknowledged ones.
func TestDeadLettersAsAWorkQueue(t *testing.T) {
	ctx := context.Background()
	t.Parallel()
	eachDB(t, func(t *testing.T, db dbEnv) {
		refuse := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "no such consumer", http.StatusBadRequest)
		}))
		defer refuse.Close()
		cfg := filepath.Join(t.TempDir(), "msgx.yaml")
		os.WriteFile(cfg, []byte(fmt.Sprintf(`targets:
  KAFKA_FLOP: {sink: file}
  KAFKA_SCHD: {sink: file}
  REDIS_NOTIFY: {sink: file}
  ES_FLIGHT: {sink: file}
  WEBHOOK_OPS: {sink: webhook, url: %q, secret: hmac-key-1, copy-of: REDIS_NOTIFY}
`, refuse.URL)), 0o644)
		env := []string{"MSGX_CONFIG=" + cfg, "MSGX_PIPELINE_POLL_INTERVAL=50ms", "MSGX_METRICS_SAMPLE_INTERVAL=100ms",
			"MSGX_RETENTION_DEAD_LETTERS=1ms"}
		s := db.start(t, env...)
		day := tomorrow(t)
		for i := range 4 {
			s.post(e2eSchd(860000+i, e2eFltr(int64(96000+i), fmt.Sprintf("CA%04d", 3000+i), "D", day.Add(time.Duration(i)*time.Minute), "")))
		}
		orphan := s.post(e2eFlop(860100, "EOBT", 99600, "<EOBT>"+sisTime(day.Add(9*time.Hour))+"</EOBT>"))
		s.await(orphan, "DEAD", state("DEAD", "ORPHAN"))
		waitFor(t, "WEBHOOK_OPS rejecting", func() bool {
			var targets []client.TargetStatus
			section(t, s.status(), "targets", &targets)
			for _, x := range targets {
				if x.Target == "WEBHOOK_OPS" {
					return x.Rejecting && x.Dead >= 4
				}
			}
			return false
		})
		s.mustCLI([]string{"REJECTING: its latest events all went DEAD", "dead letters to look at: 1 messages, 4 events"}, "status")
		s.waitMetric(`msgx_target_rejecting{target="WEBHOOK_OPS"} 1`)
		s.waitMetric(`msgx_target_rejecting{target="REDIS_NOTIFY"} 0`)

		s.mustCLI([]string{fmt.Sprintf("acknowledged 1 dead message(s) [%d]", orphan)}, "ack", "--note", "unknown flight, AODB ticket 7", fmt.Sprint(orphan))
		s.mustCLI([]string{fmt.Sprintf("already acknowledged: [%d]", orphan)}, "ack", fmt.Sprint(orphan))
		if out, err := s.cli(nil, "ack", "x1"); err == nil || !strings.Contains(out, `"x1" is not an id`) {
			t.Errorf("ack of a bad id: %v %s", err, out)
		}
		deadEvents := url.Values{"state": {"DEAD"}, "target": {"WEBHOOK_OPS"}, "limit": {"1000"}}
		evs, err := s.api().Events(ctx, deadEvents)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs.Events) < 4 {
			t.Fatalf("dead events of WEBHOOK_OPS: %d", len(evs.Events))
		}
		var ids []string
		for _, e := range evs.Events[:len(evs.Events)-1] { // all but one: that one stays unacknowledged
			ids = append(ids, fmt.Sprint(e.EventID))
		}
		s.mustCLI([]string{fmt.Sprintf("acknowledged %d dead event(s)", len(ids))}, "ack", "--events", strings.Join(ids, ","))
		s.mustCLI([]string{"dead letters to look at: 0 messages, 1 events (acknowledged, kept for audit: 1, " + fmt.Sprint(len(ids)) + ")"}, "status")
		if m := s.message(orphan); m.State != "DEAD" {
			t.Fatalf("the acknowledged message is %s, want DEAD", m.State)
		}

		// A restart keeps the recent problems: the pump's dead message and the operator's acts.
		if err := s.stop(); err != nil {
			t.Fatal(err)
		}
		s = db.start(t, env...)
		problems, err := s.api().Problems(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		var sawDead, sawAck bool
		for _, p := range problems {
			sawDead = sawDead || (p.Kind == "outcome" && p.MsgID == orphan && p.Class == "ORPHAN")
			sawAck = sawAck || (p.Kind == "action" && strings.HasPrefix(p.Note, "dead.ack"))
		}
		if !sawDead || !sawAck {
			t.Errorf("recent problems after a restart: dead message %v, acknowledgement %v: %+v", sawDead, sawAck, problems)
		}

		s.mustCLI([]string{fmt.Sprintf("%d dead events and 1 dead messages acknowledged longer than 1ms ago", len(ids))}, "job", "run", "RETENTION")
		if evs, err = s.api().Events(ctx, deadEvents); err != nil {
			t.Fatal(err)
		}
		if len(evs.Events) != 1 {
			t.Errorf("dead events after RETENTION: %d, want the unacknowledged one", len(evs.Events))
		}
		// The acknowledged message is gone; the recent problems keep its record.
		if m, err := s.api().Message(ctx, orphan); err == nil {
			t.Errorf("RETENTION kept the acknowledged message: %s", m.State)
		}
		if problems, err = s.api().Problems(ctx, 0); err != nil {
			t.Fatal(err)
		}
		sawDead = false
		for _, p := range problems {
			sawDead = sawDead || (p.Kind == "outcome" && p.MsgID == orphan)
		}
		if !sawDead {
			t.Errorf("recent problems after RETENTION lost the purged message: %+v", problems)
		}
	})
}

// A second `msgx simulate` for a day the server already has flights on stops before it sends
// anything and says how to avoid it; another --day goes; --replace replaces the day, warning.
func TestSimulateWarnsBeforeReplacingADay(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db dbEnv) {
		s := db.start(t, "MSGX_PIPELINE_POLL_INTERVAL=50ms")
		day := tomorrow(t)
		simulate := func(args ...string) (string, error) {
			return s.cli(nil, append([]string{"simulate", "--flights", "3", "--speed", "0", "--hours", "1"}, args...)...)
		}
		if out, err := simulate("--seed", "1", "--day", day.Format(time.DateOnly)); err != nil {
			t.Fatalf("first run: %v %s", err, out)
		}
		waitFor(t, "the day's 3 flights", func() bool {
			board, err := s.api().Board(t.Context(), day.Format(time.DateOnly))
			if err != nil {
				t.Fatal(err)
			}
			return board.Count == 3
		})
		// The newest message's id: a run that sends anything moves it (the status's state
		// counts would not do: their finished part is recounted only every minute).
		newest := func() int64 {
			list, err := s.api().Messages(t.Context(), url.Values{"limit": {"1"}})
			if err != nil {
				t.Fatal(err)
			}
			if len(list.Messages) != 1 {
				t.Fatalf("GET /api/v1/messages?limit=1: %+v", list)
			}
			return list.Messages[0].ID
		}
		before := newest()
		out, err := simulate("--seed", "2", "--day", day.Format(time.DateOnly))
		if err == nil || !strings.Contains(out, "already has 3 flights on "+day.Format(time.DateOnly)) ||
			!strings.Contains(out, "--day YYYY-MM-DD") || !strings.Contains(out, "fresh data directory") || !strings.Contains(out, "--replace") {
			t.Fatalf("second run on the same day: %v %s", err, out)
		}
		if after := newest(); after != before {
			t.Errorf("the refused run sent messages: the newest was %d, then %d", before, after)
		}
		if out, err := simulate("--seed", "3", "--day", day.AddDate(0, 0, 1).Format(time.DateOnly)); err != nil {
			t.Fatalf("another day: %v %s", err, out)
		}
		if out, err := simulate("--seed", "4", "--day", day.Format(time.DateOnly), "--replace"); err != nil ||
			!strings.Contains(out, "warning: --replace: ") {
			t.Fatalf("--replace: %v %s", err, out)
		}
	})
}
