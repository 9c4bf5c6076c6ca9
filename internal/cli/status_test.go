package cli_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"msgx/client"
	"msgx/internal/cli"
)

// status decodes a GET /api/v1/status answer as the server writes it.
func status(t *testing.T, answer string) client.Status {
	t.Helper()
	var st client.Status
	if err := json.Unmarshal([]byte(answer), &st); err != nil {
		t.Fatal(err)
	}
	return st
}

// msgx status says first what stops work: a halted pump (phase A, Redis lost data), a paused
// pump, a paused target, each on its own line with how long and why; the halt's raw section
// is not repeated at the bottom. A running pump's status starts as before.
func TestStatusStartsWithHaltsAndPauses(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 12, 30, 0, time.UTC)
	for _, c := range []struct {
		name, answer string
		first        []string // the first lines
		halted       bool
		pump         bool
		targets      int
	}{
		{name: "running", answer: `{"counts":{},"pump_running":true,"paused":[],"extra":{"pump_halted":null}}`,
			first: []string{"pump running: true"}},
		{name: "halted", answer: `{"counts":{},"pump_running":true,"paused":[],"extra":{"pump_halted":{"reason":"Redis lost data: its epoch 3 is not SQL's 2","since":"2026-12-01T10:00:00Z"}}}`,
			first:  []string{"HALTED: Redis lost data: its epoch 3 is not SQL's 2 (for 12 min, since 2026-12-01 10:00:00 UTC)", "pump running: true"},
			halted: true},
		{name: "paused", answer: `{"counts":{},"pump_running":true,"paused":[{"name":"pump","paused_by":"ops","reason":"downstream maintenance","paused_at":"2026-12-01T09:00:00Z"},{"name":"target:KAFKA_FLOP","paused_by":"li","reason":"","paused_at":"2026-12-01T10:02:00Z"}]}`,
			first: []string{"PAUSED for 1 h 12 min by ops: downstream maintenance (since 2026-12-01 09:00:00 UTC; msgx resume)",
				"target KAFKA_FLOP PAUSED for 10 min by li: no reason given (since 2026-12-01 10:02:00 UTC; msgx resume --target KAFKA_FLOP)", "pump running: true"},
			pump: true, targets: 1},
		{name: "target paused", answer: `{"counts":{},"pump_running":true,"paused":[{"name":"target:ES_FLIGHT","paused_by":"li","reason":"reindex","paused_at":"2026-11-28T06:00:00Z"}]}`,
			first:   []string{"target ES_FLIGHT PAUSED for 3 d 4 h by li: reindex (since 2026-11-28 06:00:00 UTC; msgx resume --target ES_FLIGHT)", "pump running: true"},
			targets: 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := status(t, c.answer)
			if st.Halted() != nil != c.halted || st.PumpPaused() != c.pump || st.TargetsPaused() != c.targets {
				t.Errorf("halted %v, pump paused %v, targets paused %d", st.Halted(), st.PumpPaused(), st.TargetsPaused())
			}
			var b bytes.Buffer
			cli.WriteStatus(&b, st, now, cli.UTC)
			lines := strings.Split(b.String(), "\n")
			for i, want := range c.first {
				if lines[i] != want {
					t.Errorf("line %d: %q, want %q\n%s", i+1, lines[i], want, b.String())
				}
			}
			if st.Halted() != nil != c.halted {
				t.Error("writing the status took its halt out of it")
			}
			if strings.Contains(b.String(), "pump_halted") {
				t.Errorf("the halt is said again at the bottom:\n%s", b.String())
			}
		})
	}
}

func TestAge(t *testing.T) {
	for d, want := range map[time.Duration]string{
		-time.Second: "0 s", 45 * time.Second: "45 s", 12*time.Minute + 59*time.Second: "12 min", time.Hour: "1 h",
		72 * time.Minute: "1 h 12 min", 24 * time.Hour: "1 d", 76 * time.Hour: "3 d 4 h",
	} {
		if got := cli.Age(d); got != want {
			t.Errorf("Age(%s) = %q, want %q", d, got, want)
		}
	}
}
