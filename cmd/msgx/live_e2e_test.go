package main_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// A message posted while the messages list is open appears in it within 2 s, on top: behind
// the "1 new" bar (the rows do not move until it is clicked), and at once in tail mode.
func TestConsoleMessagesListFollowsArrivals(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db dbEnv) { messagesListFollows(t, db) })
}

func messagesListFollows(t *testing.T, db dbEnv) {
	chromium := chromiumPath(t)
	s := db.start(t, "MSGX_PIPELINE_POLL_INTERVAL=50ms")
	s.post(e2eFlop(850001, "STND", 95999, "<STND>118</STND>"))
	older := s.post(e2eFlop(850002, "STND", 95999, "<STND>119</STND>"))

	b := newBrowser(t, chromium)
	b.visit(s.url, "#/messages")
	top := `document.querySelector('#messages-table tbody tr:first-child')?.dataset.id`
	b.waitJS("the newest message on top", fmt.Sprintf(`%s === '%d'`, top, older))
	b.waitText("#live-state", "live")
	b.shot("messages-live")

	// within waits up to d for expr, failing the test (with a screenshot) after it.
	within := func(what, expr string, d time.Duration) time.Duration {
		t.Helper()
		start := time.Now()
		ctx, cancel := context.WithTimeout(b.ctx, d)
		defer cancel()
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(0))); err != nil {
			b.shot("failed-" + what)
			t.Fatalf("%s: not within %v (%s): %v", what, d, expr, err)
		}
		return time.Since(start)
	}
	posted := s.post(e2eFlop(850003, "STND", 95999, "<STND>120</STND>"))
	took := within("the 1 new bar", `!document.getElementById('new-bar').hidden && document.getElementById('new-bar').textContent.startsWith('1 new')`, 2*time.Second)
	t.Logf("%s: the new bar showed the posted message %v after its post", db.Name, took.Round(time.Millisecond))
	b.waitJS("the rows unmoved behind the bar", fmt.Sprintf(`%s === '%d'`, top, older))
	b.shot("new-bar")
	b.run("show the new message", chromedp.Click(chromedp.CSS("#new-bar")))
	b.waitJS("the posted message on top", fmt.Sprintf(`%s === '%d' && document.getElementById('new-bar').hidden`, top, posted))

	b.run("turn tail mode on", chromedp.Click(chromedp.CSS("#tail-toggle")))
	tailed := s.post(e2eFlop(850004, "STND", 95999, "<STND>121</STND>"))
	took = within("the tailed message on top", fmt.Sprintf(`%s === '%d'`, top, tailed), 2*time.Second)
	t.Logf("%s: in tail mode the posted message was on top %v after its post", db.Name, took.Round(time.Millisecond))
	// Its state changes follow in place: a FLOP of flight 95999, which no schedule holds, is
	// parked ORPHAN.
	b.waitText(`#messages-table tbody tr:first-child`, "DEAD", "ORPHAN")
	b.shot("tail")
}
