package main_test

import (
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

// metricsText reads s's /metrics.
func (s *server) metricsText() string {
	s.t.Helper()
	resp, err := http.Get(s.url + "/metrics")
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// waitMetric waits until s's /metrics has line.
func (s *server) waitMetric(line string) {
	s.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(s.metricsText(), "\n"+line+"\n") {
		if time.Now().After(deadline) {
			s.t.Fatalf("/metrics never showed %q:\n%s", line, s.metricsText())
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
		body := s.metricsText()
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
		var h struct {
			PumpRunning bool `json:"pump_running"`
			PumpPaused  bool `json:"pump_paused"`
		}
		s.getJSON("/healthz", &h)
		if h.PumpRunning || !h.PumpPaused {
			t.Errorf("/healthz of a paused pump: %+v", h)
		}
		s.waitMetric(`msgx_pump_paused 1`)
		s.waitMetric(`msgx_target_paused{target="KAFKA_FLOP"} 1`)
		s.waitMetric(`msgx_operator_actions_total{action="target.pause"} 1`)
		if !strings.Contains(s.metricsText(), "\n"+`msgx_target_paused{target="REDIS_NOTIFY"} 0`+"\n") {
			t.Error("a target that is not paused shows as paused")
		}
		s.mustCLI([]string{"the pump running"}, "resume")
		s.getJSON("/healthz", &h)
		if !h.PumpRunning || h.PumpPaused {
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
		a := &bearerAPI{t: t, s: s, token: viewerSecret}
		var j struct {
			ID     int64   `json:"id"`
			Kind   string  `json:"kind"`
			State  string  `json:"state"`
			Result *string `json:"result"`
		}
		waitFor(t, "the job DONE", func() bool {
			a.getJSON("/api/v1/jobs/"+id, &j)
			return j.State == "DONE"
		})
		if fmt.Sprint(j.ID) != id || j.Kind != "ARCHIVE" || j.Result == nil || !strings.Contains(*j.Result, "archived 0 messages") {
			t.Errorf("GET /api/v1/jobs/%s: %+v", id, j)
		}
		a.getJSON("/api/v1/jobs/999999", &j, http.StatusNotFound)
		if out, err := s.cli(viewer, "jobs"); err != nil || !strings.Contains(out, "ARCHIVE") || !strings.Contains(out, "DONE") {
			t.Errorf("jobs as a viewer: %v %s", err, out)
		}
		if out, err := s.cli(viewer, "jobs", id); err != nil || !strings.Contains(out, "job "+id+" ARCHIVE: DONE") || !strings.Contains(out, "archived 0 messages") {
			t.Errorf("jobs %s as a viewer: %v %s", id, err, out)
		}
	})
}
