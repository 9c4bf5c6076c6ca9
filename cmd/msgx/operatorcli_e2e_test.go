package main_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"msgx/client"
)

// The operator's command line at the API's level (issue 34), through the binary on SQLite and
// MariaDB: lists newest first with --order asc, a text board of the day in airport time,
// msgx flight in airport time with the zone named (--utc for scripts) and its groups as
// labelled rows, a flight number that finds the FLOPs which changed the flight, a job that
// cannot run refused with the reason and nothing queued (the API's 409), aligned tables, and
// the suggestions for a mistyped command and config file name.
func TestOperatorCommandLine(t *testing.T) {
	t.Parallel()
	eachDB(t, operatorCommandLine)
}

func operatorCommandLine(t *testing.T, db dbEnv) {
	ctx := context.Background()
	day := tomorrow(t)
	date := day.Format(time.DateOnly)
	at := func(h, m int) time.Time { return day.Add(time.Duration(h)*time.Hour + time.Duration(m)*time.Minute) }
	s := db.start(t, "MSGX_PIPELINE_POLL_INTERVAL=50ms", "MSGX_SIS_TIMEZONE=Asia/Shanghai")
	snap := s.post(e2eSchd(850001,
		e2eFltr(95001, "CA8241", "D", at(15, 10), "<TRML>T3</TRML>"),
		e2eFltr(95002, "MU5101", "A", at(9, 30), "<TRML>T2</TRML>"),
		e2eFltr(95003, "CA1302", "D", at(20, 45), "<TRML>T3</TRML>")))
	s.await(snap, "SUCCEEDED", state("SUCCEEDED", ""))
	psdt := s.post(e2eFlop(850002, "PSDT", 95001, fmt.Sprintf(`<PSDT PSNO="1"><PSST>213</PSST><STST>%s</STST><STET>%s</STET></PSDT>`,
		sisTime(at(14, 0)), sisTime(at(15, 20)))))
	other := s.post(e2eFlop(850003, "STND", 95002, "<STND>208</STND>"))
	stnd := s.post(e2eFlop(850004, "STND", 95001, "<STND>231</STND>"))
	s.await(stnd, "SUCCEEDED", state("SUCCEEDED", ""))

	// Lists: newest first, --order asc oldest first, and the next page.
	firstID := func(out string) string {
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) < 2 {
			t.Fatalf("a list without rows:\n%s", out)
		}
		return strings.Fields(lines[1])[0]
	}
	if out := s.mustCLI(nil, "messages"); firstID(out) != fmt.Sprint(stnd) {
		t.Errorf("msgx messages: first %s, want the newest %d:\n%s", firstID(out), stnd, out)
	}
	if out := s.mustCLI(nil, "messages", "--order", "asc"); firstID(out) != fmt.Sprint(snap) {
		t.Errorf("msgx messages --order asc: first %s, want the oldest %d:\n%s", firstID(out), snap, out)
	}
	s.mustCLI([]string{fmt.Sprint(stnd), fmt.Sprintf("more: --before %d", stnd)}, "messages", "--limit", "1")
	if out := s.mustCLI([]string{fmt.Sprint(other)}, "messages", "--before", fmt.Sprint(stnd), "--limit", "1"); strings.Contains(out, fmt.Sprint(stnd)+" ") {
		t.Errorf("msgx messages --before %d lists it:\n%s", stnd, out)
	}
	if out, err := s.cli(nil, "messages", "--order", "up"); exitCode(err) != 2 || !strings.Contains(out, `--order "up" is neither desc`) {
		t.Errorf("msgx messages --order up: %v\n%s", err, out)
	}
	if out := s.mustCLI([]string{"KAFKA_FLOP"}, "events", "--target", "KAFKA_FLOP", "--limit", "2"); !strings.Contains(out, "more: --before ") {
		t.Errorf("msgx events --limit 2: no next page:\n%s", out)
	}

	// The board of the day, in airport time, in scheduled order; filtered as the console's.
	board := s.mustCLI([]string{"flights of " + date + " (airport day, Asia/Shanghai)", "3 of 3 flights"}, "board", "--day", date)
	rows := boardRows(t, board)
	if len(rows) != 3 || rows[0][0] != "MU5101" || rows[1][0] != "CA8241" || rows[2][0] != "CA1302" {
		t.Fatalf("msgx board: rows %q\n%s", rows, board)
	}
	if r := rows[1]; r[1] != "95001" || r[2] != "D" || r[3] != "15:10" || r[4] != "T3" || r[5] != "231" {
		t.Errorf("msgx board: CA8241's row %q, want FLID, D, 15:10 airport time, T3, stand 231\n%s", r, board)
	}
	if out := s.mustCLI([]string{"1 of 3 flights (filtered)"}, "board", "--day", date, "--movement", "A"); !strings.Contains(out, "MU5101") || strings.Contains(out, "CA8241") {
		t.Errorf("msgx board --movement A:\n%s", out)
	}
	if out := s.mustCLI([]string{"2 of 3 flights"}, "board", "--day", date, "--airline", "ca", "--terminal", "T3"); strings.Contains(out, "MU5101") {
		t.Errorf("msgx board --airline ca --terminal T3:\n%s", out)
	}
	if out := s.mustCLI([]string{"times in UTC"}, "board", "--day", date, "--utc"); !strings.Contains(out, "07:10") {
		t.Errorf("msgx board --utc: CA8241 not at 07:10 UTC:\n%s", out)
	}
	// --watch piped: a plain board after another, no terminal control codes, until Ctrl-C.
	watch := exec.Command(binary, "board", "--day", date, "--watch", "--every", "1s")
	watch.Env = append(os.Environ(), "MSGX_SERVER="+s.url, "MSGX_TOKEN=")
	watched := &syncBuffer{}
	watch.Stdout, watch.Stderr = watched, watched
	if err := dieWithTest(watch).Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "two boards", func() bool { return strings.Count(watched.String(), "3 of 3 flights") >= 2 })
	watch.Process.Signal(os.Interrupt)
	if err := watch.Wait(); err != nil || strings.Contains(watched.String(), "\x1b[") {
		t.Errorf("msgx board --watch piped: %v\n%q", err, watched.String())
	}

	// One flight: airport time with the zone named, the groups as labelled rows; --utc: UTC.
	rec := s.mustCLI([]string{"flight 95001, day " + date, "(times Asia/Shanghai)", "SODT  " + date + " 15:10:00", "STND  231",
		"PSDT  PSNO 1  PSST 213  STST " + date + " 14:00:00  STET " + date + " 15:20:00"}, "flight", "95001")
	if strings.Contains(rec, `{"`) || strings.Contains(rec, "T07:10:00Z") {
		t.Errorf("msgx flight prints JSON or UTC:\n%s", rec)
	}
	s.mustCLI([]string{"(times UTC)", "SODT  " + at(15, 10).UTC().Format(time.DateTime), "STST " + at(14, 0).UTC().Format(time.DateTime)}, "flight", "--utc", "95001")
	s.mustCLI([]string{`"SODT": "` + at(15, 10).UTC().Format(time.RFC3339)}, "flight", "--json", "95001")
	s.mustCLI([]string{"(times Asia/Shanghai)"}, "flight", "--history", "95001")
	s.mustCLI([]string{"received:   ", " Asia/Shanghai"}, "message", fmt.Sprint(stnd))

	// A flight number finds the FLOPs that changed the flight (their bodies carry only the
	// FLID), newest first, and the schedule; not the other flight's FLOP.
	found, err := s.api().Find(ctx, "CA8241", 0, "")
	if err != nil {
		t.Fatal(err)
	}
	var msgs []int64
	for _, h := range found.Hits {
		if h.Kind == "message" {
			msgs = append(msgs, h.ID)
		}
	}
	if fmt.Sprint(msgs) != fmt.Sprint([]int64{stnd, psdt, snap}) {
		t.Errorf("find CA8241: messages %v, want %v: %+v", msgs, []int64{stnd, psdt, snap}, found.Hits)
	}
	out := s.mustCLI([]string{fmt.Sprintf("message  %d", stnd), "FLOP-STND", "flight CA8241 (FLID 95001)"}, "find", "CA8241")
	if strings.Contains(out, fmt.Sprintf("message  %d ", other)) {
		t.Errorf("msgx find CA8241 lists MU5101's FLOP %d:\n%s", other, out)
	}

	// A job that cannot run here (phase B without REDIS_FLIGHT) is refused with the reason,
	// nothing queued; the API says 409; the kinds say so.
	const reason = "phase B without a REDIS_FLIGHT target: nothing to rebuild"
	if out, err := s.cli(nil, "job", "run", "PROJECTION_REBUILD"); exitCode(err) != 1 || !strings.Contains(out, reason) || strings.Contains(out, "enqueued") {
		t.Errorf("msgx job run PROJECTION_REBUILD: %v\n%s", err, out)
	}
	if out, err := s.cli(nil, "jobs", "--start", "PROJECTION_REBUILD"); exitCode(err) != 1 || !strings.Contains(out, reason) {
		t.Errorf("msgx jobs --start PROJECTION_REBUILD: %v\n%s", err, out)
	}
	var refused *client.Error
	if _, err := s.api().StartJob(ctx, "PROJECTION_REBUILD"); !errors.As(err, &refused) || refused.Status != http.StatusConflict {
		t.Errorf("POST /api/v1/jobs PROJECTION_REBUILD: %v, want 409", err)
	}
	if jobs, err := s.api().Jobs(ctx); err != nil || len(jobs) != 0 {
		t.Errorf("jobs after the refusals: %+v %v, want none", jobs, err)
	}
	kinds := s.mustCLI([]string{"ARCHIVE", "yes"}, "jobs", "--kinds")
	if !regexpLine(kinds, `^PROJECTION_REBUILD +no +`+reason+`$`) {
		t.Errorf("msgx jobs --kinds:\n%s", kinds)
	}

	// Aligned tables: each column starts where its head does.
	s.mustCLI([]string{"enqueued"}, "jobs", "--start", "ARCHIVE")
	s.mustCLI([]string{"enqueued"}, "jobs", "--start", "RETENTION")
	waitFor(t, "the jobs done or dead", func() bool {
		jobs, _ := s.api().Jobs(ctx)
		return len(jobs) == 2 && jobs[0].State != "PENDING" && jobs[1].State != "PENDING"
	})
	table := s.mustCLI([]string{"created (Asia/Shanghai)"}, "jobs")
	lines := strings.Split(strings.TrimRight(table, "\n"), "\n")
	for _, col := range []string{"kind", "state", "after", "created"} {
		i := strings.Index(lines[0], col)
		for _, l := range lines[1:] {
			if i <= 0 || len(l) <= i || l[i-1] != ' ' || l[i] == ' ' {
				t.Errorf("msgx jobs: column %q is not aligned:\n%s", col, table)
				break
			}
		}
	}

	// Suggestions: the board for "flights", the config file that is there.
	if out, err := s.cli(nil, "flights"); exitCode(err) != 2 || !strings.Contains(out, `unknown command "flights" (did you mean board? or flight?)`) {
		t.Errorf("msgx flights: %v\n%s", err, out)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "msgx.yaml"), []byte("http:\n  addr: "+strings.TrimPrefix(s.url, "http://")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := msgx(t, []string{"MSGX_SERVER="}, "status", "--config", filepath.Join(dir, "msgx.yml")); code != 4 ||
		!strings.Contains(stderr, "(did you mean "+filepath.Join(dir, "msgx.yaml")+"?)") {
		t.Errorf("msgx status --config msgx.yml: exit %d\n%s", code, stderr)
	}
}

// regexpLine reports whether a line of text matches the regular expression re.
func regexpLine(text, re string) bool {
	return regexp.MustCompile("(?m)" + re).MatchString(text)
}

// boardRows returns the board's data rows, each cut at runs of two or more spaces.
func boardRows(t *testing.T, board string) [][]string {
	t.Helper()
	var rows [][]string
	for _, l := range strings.Split(board, "\n")[2:] {
		if l == "" || strings.Contains(l, " flights") {
			continue
		}
		var cells []string
		for _, c := range strings.Split(l, "  ") {
			if c = strings.TrimSpace(c); c != "" {
				cells = append(cells, c)
			}
		}
		rows = append(rows, cells)
	}
	return rows
}
