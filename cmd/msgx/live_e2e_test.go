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

	posted := s.post(e2eFlop(850003, "STND", 95999, "<STND>120</STND>"))
	took := b.within("the 1 new bar", `!document.getElementById('new-bar').hidden && document.getElementById('new-bar').textContent.startsWith('1 new')`, 2*time.Second)
	t.Logf("%s: the new bar showed the posted message %v after its post", db.Name, took.Round(time.Millisecond))
	b.waitJS("the rows unmoved behind the bar", fmt.Sprintf(`%s === '%d'`, top, older))
	b.shot("new-bar")
	b.run("show the new message", chromedp.Click(chromedp.CSS("#new-bar")))
	b.waitJS("the posted message on top", fmt.Sprintf(`%s === '%d' && document.getElementById('new-bar').hidden`, top, posted))

	b.run("turn tail mode on", chromedp.Click(chromedp.CSS("#tail-toggle")))
	tailed := s.post(e2eFlop(850004, "STND", 95999, "<STND>121</STND>"))
	took = b.within("the tailed message on top", fmt.Sprintf(`%s === '%d'`, top, tailed), 2*time.Second)
	t.Logf("%s: in tail mode the posted message was on top %v after its post", db.Name, took.Round(time.Millisecond))
	// Its state changes follow in place: a FLOP of flight 95999, which no schedule holds, is
	// parked ORPHAN.
	b.waitText(`#messages-table tbody tr:first-child`, "DEAD", "ORPHAN")
	b.shot("tail")
}

// within waits up to d for expr, failing the test (with a screenshot) after it, and returns
// how long it took.
func (b *browser) within(what, expr string, d time.Duration) time.Duration {
	b.t.Helper()
	start := time.Now()
	ctx, cancel := context.WithTimeout(b.ctx, d)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(0))); err != nil {
		b.shot("failed-" + what)
		b.t.Fatalf("%s: not within %v (%s): %v", what, d, expr, err)
	}
	return time.Since(start)
}

// A message that goes DEAD while the dead letters page is open appears in its list within
// 2 s of going DEAD behind the "1 new" bar, on top once the bar is clicked; the jobs list follows the jobs
// stream too.
func TestConsoleDeadLettersFollow(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db dbEnv) { deadLettersFollow(t, db) })
}

func deadLettersFollow(t *testing.T, db dbEnv) {
	ctx := context.Background()
	chromium := chromiumPath(t)
	s := db.start(t, "MSGX_PIPELINE_POLL_INTERVAL=50ms")
	b := newBrowser(t, chromium)
	b.visit(s.url, "#/dead")
	b.waitText("#live-state", "live")
	top := `document.querySelector('#dead-messages tbody tr:first-child')?.dataset.id`
	// A FLOP of flight 95998, which no schedule holds, is parked ORPHAN: DEAD.
	posted := s.post(e2eFlop(850101, "STND", 95998, "<STND>118</STND>"))
	// The 2 s are the list's: from the message's DEAD (the pump's pace is not the console's).
	s.await(posted, "DEAD", state("DEAD", "ORPHAN"))
	took := b.within("the 1 new bar", `!document.getElementById('new-bar').hidden && document.getElementById('new-bar').textContent.startsWith('1 new')`, 2*time.Second)
	t.Logf("%s: the new bar showed the dead letter %v after it went DEAD", db.Name, took.Round(time.Millisecond))
	b.waitJS("no row moved behind the bar", `!document.querySelector('#dead-messages tbody tr')`)
	b.shot("dead-new-bar")
	b.run("show the dead letter", chromedp.Click(chromedp.CSS("#new-bar")))
	b.waitJS("the dead letter on top", fmt.Sprintf(`%s === '%d' && document.getElementById('new-bar').hidden`, top, posted))
	b.waitText("#dead-messages tbody tr:first-child", "ORPHAN")

	b.visit(s.url, "#/jobs")
	b.waitText("#live-state", "live")
	j, err := s.api().StartJob(ctx, "ARCHIVE")
	if err != nil {
		t.Fatal(err)
	}
	b.within("the new job's bar", `!document.getElementById('new-bar').hidden && document.getElementById('new-bar').textContent.startsWith('1 new')`, 2*time.Second)
	b.run("show the new job", chromedp.Click(chromedp.CSS("#new-bar")))
	b.waitJS("the job on top", fmt.Sprintf(`document.querySelector('#jobs-table tbody tr:first-child')?.dataset.id === '%d'`, j.ID))
	// Its end follows in place, without polling.
	b.waitText("#jobs-table tbody tr:first-child", "DONE")
}
