package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// Off a terminal, progress writes a plain line at most every five seconds and always the last
// one; on a terminal, it redraws one bar in place at most every 100 ms and ends its line.
func TestProgress(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var b bytes.Buffer
	p := &Progress{w: &b, label: "send", total: 100, start: now, every: 5 * time.Second, now: func() time.Time { return now }, lastPc: -1}
	for i := 1; i <= 100; i++ {
		now = now.Add(100 * time.Millisecond) // ten seconds in all
		p.Update(i, "x.xml")
	}
	p.Finish()
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 3 || lines[2] != "send: 100/100 (100%) 10s, x.xml" || strings.Contains(b.String(), "\r") {
		t.Fatalf("plain progress:\n%s", b.String())
	}

	b.Reset()
	p = &Progress{w: &b, tty: true, width: 60, label: "simulate", total: 10, start: now, every: 100 * time.Millisecond, now: func() time.Time { return now }}
	for i := 1; i <= 10; i++ {
		now = now.Add(50 * time.Millisecond)
		p.Update(i, "06:00 FLOP-CHOT")
	}
	p.Finish()
	out := b.String()
	if n := strings.Count(out, "\r"); n != 6 || !strings.HasSuffix(out, "\x1b[K\n") || strings.Count(out, "\n") != 1 {
		t.Fatalf("%d redraws in %q", n, out)
	}
	last := out[strings.LastIndex(out, "\r")+1:]
	if !strings.HasPrefix(last, "simulate [##############################] 10/10 100%") || len([]rune(strings.TrimSuffix(last, "\x1b[K\n"))) >= 60 {
		t.Fatalf("last bar %q", last)
	}
}
