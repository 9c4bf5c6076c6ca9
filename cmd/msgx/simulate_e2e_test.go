package main_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"msgx/client"
)

// simulateRun is the part of `msgx simulate --json` the test reads.
type simulateRun struct {
	Messages  int            `json:"messages"`
	Generated int            `json:"generated"`
	Failed    int            `json:"failed"`
	Flights   int            `json:"flights"`
	Cancelled int            `json:"cancelled"`
	Expected  map[string]int `json:"expected"`
	DeadBy    map[string]int `json:"dead_by_class"`
	Faults    map[string]int `json:"faults"`
	FirstID   int64          `json:"first_id"`
	LastID    int64          `json:"last_id"`
	Seconds   float64        `json:"elapsed_s"`
}

// TestSimulateAgainstAServer runs `msgx simulate --flights 300 --speed 600 --faults all`
// against a running `msgx serve` (issue 12's check): every message ends in the state the
// summary expected, and the summary matches the server's own counts, per state and per class
// of the dead ones; the day's board has every flight. The scheduled times are spread over
// half an hour (--hours 0.5) so that the stream, about four simulated hours, takes about
// half a minute at 600 times real time.
func TestSimulateAgainstAServer(t *testing.T) {
	t.Parallel()
	eachDB(t, testSimulateAgainstAServer)
}

// simulate runs `msgx simulate --json` with args against s and returns its summary, its output
// and what it wrote on stderr (its progress lines).
// Its deadline is a safety net, not a timing assertion: on a loaded 2-core machine a
// half-minute stream took over two minutes.
func simulate(t *testing.T, s *server, args ...string) (run simulateRun, out []byte, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	cmd := dieWithTest(exec.CommandContext(ctx, binary, append([]string{"simulate", "--server", strings.TrimPrefix(s.url, "http://"), "--json"}, args...)...))
	cmd.Env = os.Environ()
	var errs syncBuffer
	cmd.Stderr = &errs
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("msgx simulate: %v\n%s\n%s", err, out, errs.String())
	}
	if err := json.Unmarshal(out, &run); err != nil {
		t.Fatalf("summary: %v\n%s", err, out)
	}
	return run, out, errs.String()
}

func testSimulateAgainstAServer(t *testing.T, db dbEnv) {
	// The pump waits for a batch to fill a little instead of committing each message alone,
	// so it contends less with the inbox for the database.
	s := db.start(t, "MSGX_PIPELINE_POLL_INTERVAL=50ms", "MSGX_PIPELINE_BATCH_WAIT=500ms")
	day := tomorrow(t).Format(time.DateOnly)
	run, _, stderr := simulate(t, s, "--flights", "300", "--speed", "600", "--hours", "0.5", "--faults", "all", "--fault-rate", "0.005",
		"--seed", "12", "--day", day)
	if run.Flights != 300 || run.Failed != 0 || run.Messages != run.Generated || run.Messages < 2500 ||
		run.LastID-run.FirstID+1 != int64(run.Messages) {
		t.Fatalf("summary: %+v", run)
	}
	for _, f := range []string{"malformed", "orphan", "unknown-styp", "duplicate-seqn"} {
		if run.Faults[f] == 0 {
			t.Fatalf("no %s in the stream: %+v", f, run.Faults)
		}
	}
	if !strings.Contains(stderr, fmt.Sprintf("simulate: %d/%d (100%%)", run.Messages, run.Messages)) {
		t.Errorf("no progress lines on stderr:\n%s", stderr)
	}

	// Wait for the queue to drain, then compare the server's counts with the summary.
	var st client.Status
	deadline := time.Now().Add(90 * time.Second)
	for {
		st = s.status()
		if st.Counts["PENDING"]+st.Counts["FAILED"] == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the queue did not drain: %v\n%s", st.Counts, s.logs)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("%d messages posted in %.1fs, drained %.1fs later", run.Messages, run.Seconds, time.Since(deadline.Add(-90*time.Second)).Seconds())
	for _, state := range []string{"SUCCEEDED", "SKIPPED", "DEAD"} {
		if st.Counts[state] != run.Expected[state] {
			t.Errorf("%s: the server has %d, the summary expected %d (all counts %v)", state, st.Counts[state], run.Expected[state], st.Counts)
		}
	}
	for class, want := range run.DeadBy {
		list, err := s.api().Messages(t.Context(), url.Values{"state": {"DEAD"}, "limit": {"1000"}, "class": {class}})
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Messages) != want {
			t.Errorf("DEAD %s: the server has %d, the summary expected %d", class, len(list.Messages), want)
		}
	}
	board, err := s.api().Board(t.Context(), day)
	if err != nil {
		t.Fatal(err)
	}
	if board.Count != 300 {
		t.Errorf("the board of %s has %d flights, want 300", day, board.Count)
	}
}
