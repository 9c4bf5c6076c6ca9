package main_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// An operator who knows only a flight number finds the flight everywhere: the API
// (GET /api/v1/flights?flno=, GET /api/v1/find), the CLI (msgx find, with the server taken
// from a config file) and the console's header search, which opens the flight's page.
func TestFindAFlightByItsNumber(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db dbEnv) { findAFlight(t, db) })
}

func findAFlight(t *testing.T, db dbEnv) {
	chromium := chromiumPath(t)
	day := tomorrow(t)
	s := db.start(t, "MSGX_PIPELINE_POLL_INTERVAL=50ms")
	snap := s.post(e2eSchd(840001,
		e2eFltr(94001, "CA8241", "D", day.Add(10*time.Hour), "<RENO>B-6543</RENO>"),
		e2eFltr(94002, "MU5101", "A", day.Add(11*time.Hour), ""),
		e2eFltr(94003, "CA8242", "D", day.Add(12*time.Hour), ""),
		e2eFltr(94004, "CA8242A", "D", day.Add(13*time.Hour), "")))
	s.await(snap, "SUCCEEDED", state("SUCCEEDED", ""))
	// Two long remarks that differ only at their end: the history shows both in full.
	long := strings.Repeat("crew change delayed, await ops ", 2)
	remark1, remark2 := long+"tail ONE", long+"tail TWO"
	s.await(s.post(e2eFlop(840002, "REMC", 94001, "<REMC>"+remark1+"</REMC>")), "SUCCEEDED", state("SUCCEEDED", ""))
	s.await(s.post(e2eFlop(840003, "REMC", 94001, "<REMC>"+remark2+"</REMC>")), "SUCCEEDED", state("SUCCEEDED", ""))
	s.mustCLI([]string{`old: "` + remark1 + `"`, `new: "` + remark2 + `"`}, "flight", "--history", "94001")

	// The API: by number, however it is written.
	ctx := t.Context()
	for _, flno := range []string{"CA8241", "ca8241", "CA08241"} {
		ans, err := s.api().FlightsByNumber(ctx, flno, "")
		if err != nil {
			t.Fatal(err)
		}
		var f struct {
			FLID int64
			FLNO string
		}
		if ans.Count != 1 || len(ans.Flights) != 1 || json.Unmarshal(ans.Flights[0], &f) != nil || f.FLID != 94001 || f.FLNO != "CA8241" {
			t.Fatalf("flights?flno=%s: %+v", flno, ans)
		}
	}
	if two, err := s.api().FlightsByNumber(ctx, "CA8242", ""); err != nil || two.Count != 2 {
		t.Errorf("flights?flno=CA8242 (with and without suffix): %d, want 2 (%v)", two.Count, err)
	}
	// The registration names the flight, and the schedule's body holds it.
	found, err := s.api().Find(ctx, "B-6543", 0, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(found.Hits) != 2 || found.Hits[0].ID != 94001 || found.Hits[0].Match != "registration" ||
		found.Hits[1].Kind != "message" || found.Hits[1].ID != snap {
		t.Errorf("find by registration: %+v", found)
	}

	// The CLI: the hit and, being the only flight, its record.
	s.mustCLI([]string{"flight", "94001", "registration", "FLNO  CA8241", "RENO  B-6543"}, "find", "B-6543")
	out := s.mustCLI([]string{"94001", "flno", "CA8241, departure", "FLNO  CA8241", "bodies of the newest 50000 messages"}, "find", "CA8241")
	if strings.Contains(out, "94003") {
		t.Errorf("msgx find CA8241 lists CA8242:\n%s", out)
	}
	if out, _ := s.cli(nil, "find", "CA8242"); !strings.Contains(out, "94003") || !strings.Contains(out, "94004") || strings.Contains(out, "FLNO  ") {
		t.Errorf("msgx find CA8242: both flights, no record:\n%s", out)
	}
	if out, err := s.cli(nil, "find", "ZZ9999"); err == nil || !strings.Contains(out, `nothing matches "ZZ9999"`) {
		t.Errorf("msgx find of nothing: %v\n%s", err, out)
	}

	// The CLI finds the server in the config file: --config before or after the command, and
	// MSGX_CONFIG; --server wins over it.
	cfg := filepath.Join(t.TempDir(), "cfg.yaml")
	addr := strings.TrimPrefix(s.url, "http://")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("http:\n  addr: %q\n", addr)), 0o644); err != nil {
		t.Fatal(err)
	}
	noServer := []string{"MSGX_SERVER="}
	for _, args := range [][]string{{"--config", cfg, "status"}, {"status", "--config", cfg}, {"--config=" + cfg, "find", "CA8241"}} {
		if stdout, stderr, code := msgx(t, noServer, args...); code != 0 || !strings.Contains(stdout, "pump running: true") && !strings.Contains(stdout, "CA8241") {
			t.Errorf("msgx %s: exit %d\n%s%s", strings.Join(args, " "), code, stdout, stderr)
		}
	}
	if stdout, stderr, code := msgx(t, append(noServer, "MSGX_CONFIG="+cfg), "status"); code != 0 || !strings.Contains(stdout, "pump running") {
		t.Errorf("MSGX_CONFIG msgx status: exit %d\n%s%s", code, stdout, stderr)
	}
	if _, stderr, code := msgx(t, noServer, "--config", cfg, "status", "--server", "127.0.0.1:1"); code == 0 || !strings.Contains(stderr, "127.0.0.1:1") {
		t.Errorf("--server does not win over --config: exit %d\n%s", code, stderr)
	}

	// Every flag value is checked, with the value probably meant; a cap is said.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"pause", "--target", "KAFKA_FLOPX"}, `unknown target "KAFKA_FLOPX" (did you mean KAFKA_FLOP?)`},
		{[]string{"jobs", "--start", "ARCHIV"}, `(did you mean ARCHIVE?)`},
		{[]string{"messages", "--state", "DAED"}, `(did you mean DEAD?)`},
		{[]string{"events", "--state", "snt"}, `(did you mean SENT?)`},
	} {
		if out, err := s.cli(nil, c.args...); err == nil || !strings.Contains(out, c.want) {
			t.Errorf("msgx %s: %v\n%s", strings.Join(c.args, " "), err, out)
		}
	}
	s.mustCLI([]string{"--limit 5000 is more than a page holds: showing at most 1000", fmt.Sprint(snap)}, "messages", "--limit", "5000")
	if out, _ := s.cli(nil, "status"); strings.Contains(out, "PAUSED") {
		t.Errorf("a refused pause paused:\n%s", out)
	}

	// The console: the header search for the flight number opens the flight's page.
	b := newBrowser(t, chromium)
	b.visit(s.url, "#/")
	b.waitJS("the console", `!!document.getElementById('search-q') && document.getElementById('who').textContent !== ''`)
	b.run("search CA8241", chromedp.SendKeys(chromedp.CSS("#search-q"), "CA8241"+kb.Enter))
	b.waitJS("the flight's page", `location.hash.startsWith('#/flight/94001')`)
	b.waitText("#flight-record", "CA8241", "B-6543")
	b.waitText("#flight-found", "CA8241")
	b.waitText("#flight-messages", fmt.Sprint(snap))
	b.waitText("#flight-history", remark1, remark2)
	b.shot("search-opens-the-flight")
	// Several flights: the list of hits, each a link.
	b.waitJS("an empty search box", `(document.getElementById('search-q').value = '') === ''`)
	b.run("search ca 8242", chromedp.SendKeys(chromedp.CSS("#search-q"), "ca 8242"+kb.Enter))
	b.waitText("#find-hits", "94003", "94004", "CA8242A")
	b.waitText("#find-searched", "newest 50000 messages")
	b.shot("search-lists-the-hits")
	b.run("open a hit", chromedp.Click(chromedp.CSS(`#find-hits a[href="#/flight/94004"]`)))
	b.waitText("#flight-record", "CA8242A")
}
