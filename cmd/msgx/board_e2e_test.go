package main_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"msgx/internal/store"
)

// The board an ops room leaves on a screen shows airport time (sis.timezone) in a browser of
// another zone: a flight scheduled at 00:30 in Shanghai is on its Shanghai day at 00:30 (a
// UTC browser once put it at 16:30 the day before). Estimated, actual, status and remarks
// come from the FLOPs the AODB sends (IEST/EOBT, chocks on/off, FTSS, REMC); a flight whose
// record changed in the last minute by the server's knowledge is highlighted, whether the
// change came before the page opened or while it is open; the movement filter keeps
// departures. The console's other times are airport time too.
func TestBoardShowsAirportTimeInAUTCBrowser(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db dbEnv) { boardInAirportTime(t, db) })
}

func boardInAirportTime(t *testing.T, db dbEnv) {
	chromium := chromiumPath(t)
	s := db.start(t, "MSGX_PIPELINE_POLL_INTERVAL=50ms", "MSGX_SIS_TIMEZONE=Asia/Shanghai")
	shanghai, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		t.Fatal(err)
	}
	day := tomorrow(t)
	at := func(h, m int) time.Time { return day.Add(time.Duration(h)*time.Hour + time.Duration(m)*time.Minute) }
	s.post(e2eRef(1, "DLY", "delayed"))
	s.post(e2eSchd(2, e2eFltr(96001, "CA1501", "A", at(0, 30), ""), e2eFltr(96002, "MU2602", "D", at(10, 0), "<TRML>T2</TRML>")))
	var last int64
	for _, flop := range []string{
		e2eFlop(3, "IEST", 96001, "<IEST>"+sisTime(at(0, 50))+"</IEST>"),
		e2eFlop(4, "FTSS", 96001, "<FTSS>DLY</FTSS>"),
		e2eFlop(5, "CHOT", 96001, fmt.Sprintf(`<CHOT CSNO="1"><CHTM>%s</CHTM><CHID>ON</CHID><CHST>201</CHST></CHOT>`, sisTime(at(0, 52)))),
		e2eFlop(6, "EOBT", 96002, "<EOBT>"+sisTime(at(10, 20))+"</EOBT>"),
		e2eFlop(7, "CHOT", 96002, fmt.Sprintf(`<CHOT CSNO="1"><CHTM>%s</CHTM><CHID>OFF</CHID><CHST>202</CHST></CHOT>`, sisTime(at(10, 22)))),
	} {
		last = s.post(flop)
	}
	s.await(last, "SUCCEEDED", state("SUCCEEDED", ""))
	// The arrival's record last changed ten minutes ago, as far as the server knows; the
	// departure's FLOPs were applied just now, before the page opens.
	sdb := db.open(t)
	setChanged := func(flid int64, at time.Time) {
		t.Helper()
		if _, err := sdb.SQLDB().Exec(`UPDATE FLIGHT_STATE SET UPDATED_AT = ? WHERE FLID = ?`, store.T(at), flid); err != nil {
			t.Fatal(err)
		}
	}
	setChanged(96001, time.Now().Add(-10*time.Minute))

	b := newBrowser(t, chromium, chromedp.Env("TZ=UTC"))
	b.visit(s.url, "#/flights?day="+day.Format(time.DateOnly))
	b.waitJS("a browser in UTC", `Intl.DateTimeFormat().resolvedOptions().timeZone === 'UTC'`)
	b.waitText("#view h1", "Flights of "+day.Format(time.DateOnly), "airport time, Asia/Shanghai")
	first := `#flights-table tbody tr:first-child`
	b.waitText(first, "CA1501")
	b.waitText(first+" td.sched", "00:30")
	b.waitText(first+" td.est", "00:50")
	b.waitText(first+" td.act", "00:52")
	b.waitText(first+" td.status", "DLY", "delayed")
	// Every other time of the console is airport time too, the zone named in the header.
	b.waitText("#who-zone", "Asia/Shanghai")
	b.waitJS("the console's times in airport time", `fmtTime('2026-12-03T16:30:00Z') === '2026-12-04 00:30:00'`)
	dep := `#flights-table tr[data-id="96002"]`
	arr := `#flights-table tr[data-id="96001"]`
	b.waitText(dep+" td.sched", "10:00")
	b.waitText(dep+" td.est", "10:20")
	b.waitText(dep+" td.act", "10:22")
	highlighted := func(row string) string { return `document.querySelector('` + row + `').classList.contains('changed')` }
	b.waitJS("on load, the flight changed before the page opened highlighted, the older one not", highlighted(dep)+` && !`+highlighted(arr))
	b.shot("board-airport-time")

	// The departure's change ages past a minute by the server's clock: the next refresh drops
	// its highlight.
	setChanged(96002, time.Now().Add(-2*time.Minute))
	b.waitJS("the older change no longer highlighted", `!`+highlighted(dep))

	// Live: a remark sent while the board is open shows up by itself, highlighted.
	remark := s.post(e2eFlop(8, "REMC", 96002, "<REMC>gate closes early</REMC>"))
	s.await(remark, "SUCCEEDED", state("SUCCEEDED", ""))
	b.waitText(dep+" td.remarks", "gate closes early")
	b.waitJS("the changed row highlighted", highlighted(dep)+` && !`+highlighted(arr))
	b.shot("board-live-change")

	// Filters: each shows a different set than the one before, so each check sees its own.
	for _, c := range []struct{ query, field, value, shown, hidden string }{
		{"ad=D", "board-ad", "D", dep, arr},
		{"airline=CA", "board-airline", "CA", arr, dep},
		{"terminal=T2", "board-terminal", "T2", dep, arr},
		{"ad=A", "board-ad", "A", arr, dep},
		{"airline=MU", "board-airline", "MU", dep, arr},
	} {
		b.visit(s.url, "#/flights?"+c.query+"&day="+day.Format(time.DateOnly))
		b.waitJS("the board filtered by "+c.query, fmt.Sprintf(`(document.getElementById(%q) || {}).value === %q && !!document.querySelector(%q) && !document.querySelector(%q)`,
			c.field, c.value, c.shown, c.hidden))
	}

	// No day: the airport's today, not the browser's.
	before := time.Now().In(shanghai).Format(time.DateOnly)
	b.visit(s.url, "#/flights")
	after := time.Now().In(shanghai).Format(time.DateOnly)
	b.waitJS("the airport's today", fmt.Sprintf(`['%s','%s'].includes((document.getElementById('flights-day') || {}).value)`, before, after))
}
