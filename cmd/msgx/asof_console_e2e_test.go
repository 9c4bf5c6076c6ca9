package main_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The console board's time control (issue 34 item 6), in Debian's chromium with TZ=UTC and
// the airport in Asia/Shanghai: a flight's gate changes from B12 to B14; the live board shows
// B14; the time control set to a minute between the two (airport time) shows B12, names the
// time and the messages it was rebuilt from, and does not refresh back to B14; Live returns
// to the live board; a time before the kept history says so with the way back. The flight's
// page lists the gate's two changes, each with its message.
func TestConsoleBoardAsOf(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db dbEnv) { consoleBoardAsOf(t, db) })
}

func consoleBoardAsOf(t *testing.T, db dbEnv) {
	chromium := chromiumPath(t)
	s := db.start(t,
		"MSGX_AUTH_TOKENS=otto:operator:"+tokenHash(operatorSecret),
		"MSGX_PIPELINE_POLL_INTERVAL=50ms",
		"MSGX_SIS_TIMEZONE=Asia/Shanghai",
	)
	day := tomorrow(t)
	date := day.Format(time.DateOnly)
	at := func(h, m int) time.Time { return day.Add(time.Duration(h)*time.Hour + time.Duration(m)*time.Minute) }
	gate := func(g string) string {
		return fmt.Sprintf(`<GTDT GTNO="1"><GATE>%s</GATE><PGOT>%s</PGOT><PGCT>%s</PGCT><GTYP>D</GTYP></GTDT>`, g, sisTime(at(9, 20)), sisTime(at(9, 45)))
	}
	a := &bearerAPI{t: t, s: s, token: operatorSecret}
	snap := s.post(e2eSchd(880001, e2eFltr(98001, "CA1801", "D", at(10, 0), gate("B12")), e2eFltr(98002, "MU2202", "A", at(11, 0), "")))
	a.await(snap, "SUCCEEDED", state("SUCCEEDED", ""))
	// A whole second after the snapshot and before the change: the board then had B12.
	mark := time.Now().Truncate(time.Second).Add(time.Second)
	time.Sleep(time.Until(mark) + 50*time.Millisecond)
	change := s.post(e2eFlop(880002, "GTDT", 98001, gate("B14")))
	a.await(change, "SUCCEEDED", state("SUCCEEDED", ""))
	then := mark.In(day.Location()).Format("2006-01-02T15:04:05")

	b := newBrowser(t, chromium, chromedp.Env("TZ=UTC"))
	b.visit(s.url, "")
	b.waitJS("the login page", `location.hash.startsWith('#/login') && !!document.getElementById('login-token')`)
	b.waitJS("a browser in UTC", `Intl.DateTimeFormat().resolvedOptions().timeZone === 'UTC'`)
	b.run("log in", chromedp.SendKeys(chromedp.CSS("#login-token"), operatorSecret), chromedp.Click(chromedp.CSS("#login-submit")))
	b.waitText("#who", "otto")
	b.run("open the board", chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`location.hash = %q`, "#/flights?day="+date)))
	row := `(document.querySelector('#flights-table tr[data-id="98001"]')?.textContent || '')`
	b.waitJS("the live board shows gate B14", row+`.includes('B14')`)

	b.run("set the time control", chromedp.SendKeys(chromedp.CSS("#board-asof"), then), chromedp.Click(chromedp.CSS("#board-show")))
	b.waitText("#board-asof-title", "as of "+then[:10]+" "+then[11:])
	b.waitJS("the board as of then shows gate B12", row+`.includes('B12') && !`+row+`.includes('B14')`)
	b.waitText("#board-updated", "As it stood at "+then[:10]+" "+then[11:]+" airport time, rebuilt from 1 applied messages")
	b.shot("board-as-of")
	// A past board does not refresh back to the live one.
	time.Sleep(6 * time.Second)
	b.waitJS("still B12 after a refresh period", row+`.includes('B12') && !!document.getElementById('board-asof-title')`)

	b.run("back to live", chromedp.Click(chromedp.CSS("#board-live")))
	b.waitJS("the live board again", row+`.includes('B14') && !document.getElementById('board-asof-title') && document.getElementById('board-asof').value === ''`)

	// The flight's page: the gate's changes, each with its time and message.
	b.run("open the flight", chromedp.Evaluate[chromedp.Void](`location.hash = '#/flight/98001'`))
	b.waitJS("the gate's changes by field", fmt.Sprintf(`(() => {
		const g = document.querySelector('#flight-fields [data-field="GTDT"]');
		if (!g) return false;
		const t = g.querySelector('table'); const rows = t && t.tBodies[0] ? [...t.tBodies[0].rows].map(r => r.textContent) : [];
		return rows.length === 2 && rows[0].includes('B12') && rows[1].includes('B12') && rows[1].includes('B14') &&
			rows[0].includes('%d') && rows[1].includes('%d') && g.textContent.includes('Gates (GTDT)');
	})()`, snap, change))
	b.shot("flight-fields")

	// Before anything was processed: before the kept history, said so, with the way back.
	before := mark.Add(-time.Hour).In(day.Location()).Format("2006-01-02T15:04")
	b.run("a time before the history", chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`location.hash = %q`, "#/flights?day="+date+"&at="+before)))
	b.waitText("#board-asof-error", "before the retained history")
	b.run("back", chromedp.Click(chromedp.CSS("#board-live")))
	b.waitJS("the live board again", row+`.includes('B14')`)
}
