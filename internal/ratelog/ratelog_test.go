package ratelog_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"msgx/internal/ratelog"
	"msgx/internal/testkit"
)

// lines decodes the JSON log lines of buf.
func lines(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

// A storm of 374 warnings in 55 s from four senders is two lines: the first at once, and one
// with the count of the rest when the minute ends; a quiet minute ends without a line, and the
// next warning is logged at once again.
func TestStormIsCounted(t *testing.T) {
	var buf bytes.Buffer
	c := testkit.NewClock(time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC))
	var due []func()
	l := &ratelog.Limiter{Log: slog.New(slog.NewJSONHandler(&buf, nil)), Every: time.Minute, Clock: c,
		After: func(d time.Duration, f func()) {
			if d != time.Minute {
				t.Errorf("window %s, want 1m", d)
			}
			due = append(due, f)
		}}
	const msg = "inbox post answered 503"
	start := c.Now()
	for i := 0; i < 374; i++ {
		c.Set(start.Add(time.Duration(i) * 55 * time.Second / 374))
		l.Warn(msg, "remote", fmt.Sprintf("10.0.0.%d", i%4))
	}
	l.Warn("another warning") // its own window
	got := lines(t, &buf)
	if len(got) != 2 || got[0]["msg"] != msg || got[0]["remote"] != "10.0.0.0" || got[1]["msg"] != "another warning" {
		t.Fatalf("during the storm: %v", got)
	}
	if len(due) != 2 {
		t.Fatalf("%d windows scheduled, want 2", len(due))
	}
	buf.Reset()
	c.Set(start.Add(time.Minute))
	due[0]()
	due[1]() // nothing more came: no line
	got = lines(t, &buf)
	if len(got) != 1 || got[0]["msg"] != msg+": 373 more in the last 1m0s" || got[0]["repeated"] != 373.0 ||
		got[0]["remote"] != "10.0.0.1" || got[0]["level"] != "WARN" {
		t.Fatalf("at the end of the window: %v", got)
	}
	// The storm's window reopened; nothing came in it: it closes silently.
	if len(due) != 3 {
		t.Fatalf("%d windows scheduled, want the storm's second", len(due))
	}
	buf.Reset()
	c.Set(start.Add(2 * time.Minute))
	due[2]()
	c.Set(start.Add(5 * time.Minute))
	l.Warn(msg, "remote", "10.0.0.9")
	l.Warn("another warning")
	if got = lines(t, &buf); len(got) != 2 || got[0]["remote"] != "10.0.0.9" {
		t.Fatalf("after quiet windows: %v", got)
	}
}
