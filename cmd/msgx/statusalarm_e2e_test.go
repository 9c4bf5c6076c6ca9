package main_test

import (
	"strings"
	"testing"
)

// msgx status says first what stops work, and its exit code says it too: paused, the first
// line is "PAUSED for … by NAME: REASON" and the exit 8; a paused target (the pump running)
// is its own line and exit 9; resumed, exit 0 and the pump's line first, as before.
func TestStatusSaysItIsPaused(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db dbEnv) {
		s := db.start(t, "MSGX_PIPELINE_POLL_INTERVAL=50ms")
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

		s.mustCLI([]string{"the pump running"}, "resume")
		status(9, "target KAFKA_FLOP PAUSED for ", "pump running: true")
		s.mustCLI(nil, "resume", "--target", "KAFKA_FLOP")
		status(0, "pump running: true")
	})
}
