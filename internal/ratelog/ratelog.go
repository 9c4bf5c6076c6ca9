// Package ratelog keeps a storm of one warning to a few log lines: the first occurrence is
// logged at once, as it comes; the ones after it within a window are counted and logged as one
// line when the window ends, with their count, the span they came in and the attributes of the
// last one ("inbox post answered 503 …: 373 more in the last 55s"). A window in which nothing
// more came closes without a line, and the next occurrence is logged at once again.
package ratelog

import (
	"fmt"
	"log/slog"
	"sync"
	"time"

	"msgx/internal/pipeline"
)

// DefaultEvery is the window of a Limiter whose Every is 0.
const DefaultEvery = time.Minute

// Limiter rate-limits warnings by their message. Its zero value works (slog.Default, a
// minute, the system clock); set the fields before its first use.
type Limiter struct {
	Log   *slog.Logger
	Every time.Duration
	Clock pipeline.Clock
	// After runs f once d has passed (time.AfterFunc when nil); tests run it by hand.
	After func(d time.Duration, f func())

	mu   sync.Mutex
	open map[string]*window
}

// window is one message's open window: since when, how many came after its first line, and
// the attributes of the last of them.
type window struct {
	since time.Time
	n     int
	args  []any
}

// Warn logs msg with args at WARN, or, within the window its last line opened, counts it.
func (l *Limiter) Warn(msg string, args ...any) {
	l.mu.Lock()
	if w := l.open[msg]; w != nil {
		w.n++
		w.args = args
		l.mu.Unlock()
		return
	}
	if l.open == nil {
		l.open = map[string]*window{}
	}
	l.open[msg] = &window{since: l.now()}
	l.mu.Unlock()
	l.log().Warn(msg, args...)
	l.schedule(msg)
}

// schedule ends msg's window after Every.
func (l *Limiter) schedule(msg string) {
	every := l.Every
	if every <= 0 {
		every = DefaultEvery
	}
	after := l.After
	if after == nil {
		after = func(d time.Duration, f func()) { time.AfterFunc(d, f) }
	}
	after(every, func() { l.end(msg) })
}

// end closes msg's window: with nothing counted in it, silently; else with the count's line,
// opening the next window.
func (l *Limiter) end(msg string) {
	l.mu.Lock()
	w := l.open[msg]
	if w == nil || w.n == 0 {
		delete(l.open, msg)
		l.mu.Unlock()
		return
	}
	now := l.now()
	n, args, span := w.n, w.args, now.Sub(w.since).Round(time.Second)
	l.open[msg] = &window{since: now}
	l.mu.Unlock()
	l.log().Warn(fmt.Sprintf("%s: %d more in the last %s", msg, n, span), append([]any{"repeated", n, "window_seconds", span.Seconds()}, args...)...)
	l.schedule(msg)
}

func (l *Limiter) now() time.Time {
	if l.Clock == nil {
		return pipeline.SystemClock{}.Now()
	}
	return l.Clock.Now()
}

func (l *Limiter) log() *slog.Logger {
	if l.Log == nil {
		return slog.Default()
	}
	return l.Log
}
