package main_test

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// msgx status says first what stops work, and its exit code says it too: paused, the first
// line is "PAUSED for … by NAME: REASON" and the exit 8; a paused target (the pump running)
// is its own line and exit 9; resumed, exit 0 and the pump's line first, as before. The
// pauses' ages are on /metrics (msgx_paused_seconds, for MsgxPausedTooLong) beside their
// threshold, alerts.pause-warn.
func TestStatusSaysItIsPaused(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db dbEnv) {
		s := db.start(t, "MSGX_PIPELINE_POLL_INTERVAL=50ms", "MSGX_METRICS_SAMPLE_INTERVAL=100ms", "MSGX_ALERTS_PAUSE_WARN=15m")
		status := func(wantCode int, wantFirst ...string) {
			t.Helper()
			out, err := s.cli(nil, "status")
			lines := strings.Split(out, "\n")
			if code := exitCode(err); code != wantCode || len(lines) < len(wantFirst) {
				t.Fatalf("msgx status: exit %d, want %d\n%s", code, wantCode, out)
			}
			for i, w := range wantFirst {
				if !strings.HasPrefix(lines[i], w) {
					t.Fatalf("msgx status line %d: %q, want it to start %q\n%s", i+1, lines[i], w, out)
				}
			}
		}
		status(0, "pump running: true")

		s.mustCLI([]string{"the pump paused by loopback"}, "pause", "--reason", "downstream maintenance")
		s.mustCLI([]string{"target KAFKA_FLOP paused"}, "pause", "--target", "KAFKA_FLOP", "--reason", "broker upgrade")
		status(8, "PAUSED for 0 s by loopback: downstream maintenance (since ",
			"target KAFKA_FLOP PAUSED for 0 s by loopback: broker upgrade (since ", "pump running: true")
		if out, err := s.cli(nil, "status", "--json"); exitCode(err) != 8 || !strings.Contains(out, `"pump_paused":{`) {
			t.Fatalf("msgx status --json while paused: exit %d\n%s", exitCode(err), out)
		}
		for _, what := range []string{"pump", "KAFKA_FLOP"} {
			if age := pausedSeconds(t, s, what); age <= 0 || age > 60 {
				t.Errorf("msgx_paused_seconds{what=%q} = %v while paused", what, age)
			}
		}
		if !strings.Contains(s.metrics(), "\nmsgx_pause_warn_seconds 900\n") {
			t.Error("msgx_pause_warn_seconds is not alerts.pause-warn (15m)")
		}

		s.mustCLI([]string{"the pump running"}, "resume")
		status(9, "target KAFKA_FLOP PAUSED for ", "pump running: true")
		s.mustCLI(nil, "resume", "--target", "KAFKA_FLOP")
		status(0, "pump running: true")
		s.waitMetric(`msgx_paused_seconds{what="KAFKA_FLOP"} 0`)
	})
}

// pausedSeconds waits for the state sample to show what paused and returns its
// msgx_paused_seconds.
func pausedSeconds(t *testing.T, s *server, what string) float64 {
	t.Helper()
	re := regexp.MustCompile(`(?m)^msgx_paused_seconds\{what="` + what + `"\} (\S+)$`)
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if m := re.FindStringSubmatch(s.metrics()); m != nil {
			if v, _ := strconv.ParseFloat(m[1], 64); v > 0 {
				return v
			}
		}
	}
	return 0
}
