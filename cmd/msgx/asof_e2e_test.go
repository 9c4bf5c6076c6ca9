package main_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"msgx/client"
	"msgx/internal/store/storetest"
)

// TestBoardAsOf checks the board as of a past time (issue 34 item 6) on SQLite and MariaDB:
// a day's schedule, gate changes, a second schedule that replaces the window (deleting a
// flight it no longer names and adding one), an FDEL and another gate change are posted to a
// server, noting a time between each step. At every noted time the server's GET
// /api/v1/flights?as_of= and `msgx board --at` must equal the live board of a second, fresh
// server that was sent the same messages up to that step (a replay of the prefix). The
// earliest messages are then archived (their texts read from CMINMSGS_HST) and the boards
// asked again; last, retention purges them, and a time before the history kept is refused
// with 409 before_history and where the history starts.
func TestBoardAsOf(t *testing.T) {
	t.Parallel()
	eachDB(t, boardAsOfE2E)
}

// freshDB returns a database of the same kind as db, empty, with a data directory of its own.
func freshDB(t *testing.T, db dbEnv) dbEnv {
	data := t.TempDir()
	if db.Driver == "sqlite" {
		return dbEnv{Name: db.Name, Driver: "sqlite", DSN: filepath.Join(data, "msgx.db"), DataDir: data}
	}
	dsn := storetest.MySQLDSN(t)
	return dbEnv{Name: db.Name, Driver: "mysql", DSN: dsn, DataDir: data, Env: []string{
		"MSGX_DATABASE_DRIVER=mysql", "MSGX_DATABASE_DSN=" + dsn, "MSGX_PIPELINE_AUTOSTART=true"}}
}

func boardAsOfE2E(t *testing.T, db dbEnv) {
	day := tomorrow(t)
	date := day.Format(time.DateOnly)
	zone := day.Location()
	at := func(h, m int) time.Time { return day.Add(time.Duration(h)*time.Hour + time.Duration(m)*time.Minute) }
	env := []string{"MSGX_PIPELINE_POLL_INTERVAL=50ms", "MSGX_SIS_TIMEZONE=Asia/Shanghai"}
	s := db.start(t, env...)
	replay := freshDB(t, db).start(t, env...)
	gate := func(g string) string {
		return fmt.Sprintf(`<GTDT GTNO="1"><GATE>%s</GATE><PGOT>%s</PGOT><PGCT>%s</PGCT><GTYP>D</GTYP></GTDT>`, g, sisTime(at(9, 20)), sisTime(at(9, 45)))
	}
	steps := [][]string{
		{e2eSchd(870001,
			e2eFltr(96001, "CA8241", "D", at(10, 0), "<TRML>T3</TRML>"),
			e2eFltr(96002, "MU5101", "A", at(11, 0), "<TRML>T2</TRML>"),
			e2eFltr(96003, "CA1302", "D", at(12, 0), "<TRML>T3</TRML>"))},
		{e2eFlop(870002, "GTDT", 96001, gate("B12"))},
		{e2eFlop(870003, "GTDT", 96001, gate("B14")), e2eFlop(870004, "STND", 96002, "<STND>208</STND>")},
		// The snapshot replaces 10:00–12:00: MU5101 is not named (deleted), CZ3101 is new.
		{e2eSchd(870005,
			e2eFltr(96001, "CA8241", "D", at(10, 0), "<TRML>T3</TRML>"),
			e2eFltr(96004, "CZ3101", "D", at(11, 30), "<TRML>T2</TRML>"),
			e2eFltr(96003, "CA1302", "D", at(12, 0), "<TRML>T3</TRML>"))},
		{e2eFlop(870006, "FDEL", 96003, "<FDEL/>")},
		{e2eFlop(870007, "GTDT", 96004, gate("C3"))},
	}
	// Each step is applied on the server; the noted time is the whole second after it, and
	// the next step is posted only after that second: messages of step i were processed at or
	// before marks[i], those of step i+1 after it.
	var marks []time.Time
	var ids [][]int64
	for _, msgs := range steps {
		var stepIDs []int64
		for _, m := range msgs {
			id := s.post(m)
			s.await(id, "SUCCEEDED", state("SUCCEEDED", ""))
			stepIDs = append(stepIDs, id)
		}
		mark := time.Now().Truncate(time.Second).Add(time.Second)
		time.Sleep(time.Until(mark) + 50*time.Millisecond)
		marks = append(marks, mark)
		ids = append(ids, stepIDs)
	}

	type board = client.Board
	ctx := t.Context()
	// liveBoard is srv's board of the day now.
	liveBoard := func(srv *server) board {
		t.Helper()
		b, err := srv.api().Board(ctx, date)
		if err != nil {
			t.Fatalf("GET the board of %s: %v", date, err)
		}
		return b
	}
	asOf := func(when time.Time) board {
		t.Helper()
		b, err := s.api().BoardAsOf(ctx, date, when.UTC().Format(time.RFC3339Nano), false)
		if err != nil {
			t.Fatalf("GET the board of %s as of %s: %v", date, when, err)
		}
		if b.AsOf == nil || !b.AsOf.Equal(when) {
			t.Fatalf("as_of %s: the answer's as_of is %v", when, b.AsOf)
		}
		return b
	}
	records := func(rs []json.RawMessage) []any {
		out := make([]any, len(rs))
		for i, r := range rs {
			if err := json.Unmarshal(r, &out[i]); err != nil {
				t.Fatal(err)
			}
		}
		return out
	}
	gateOf := func(b board, flid int64) string {
		for _, r := range b.Flights {
			var f struct {
				FLID int64
				GTDT []struct{ GATE string }
			}
			json.Unmarshal(r, &f)
			if f.FLID == flid && len(f.GTDT) > 0 {
				return f.GTDT[0].GATE
			}
		}
		return ""
	}
	local := func(when time.Time) string { return when.In(zone).Format("2006-01-02T15:04:05") }
	// compare checks the server's board as of marks[i] (API and CLI) against the replay's live
	// board after the same steps (live, and want as msgx board printed it).
	var lives []board
	var wants []string
	compare := func(i int, what string) board {
		t.Helper()
		b := asOf(marks[i])
		live, want := lives[i], wants[i]
		if !reflect.DeepEqual(records(b.Flights), records(live.Flights)) {
			t.Fatalf("%s: the board as of step %d (%s) differs from a replay of its messages:\nas of: %s\nreplay: %s",
				what, i+1, marks[i].Format(time.RFC3339), b.Flights, live.Flights)
		}
		if len(b.Warnings) > 0 {
			t.Errorf("%s: step %d: warnings %q", what, i+1, b.Warnings)
		}
		cli := s.mustCLI([]string{"as it stood at " + marks[i].In(zone).Format(time.DateTime)}, "board", "--day", date, "--at", local(marks[i]))
		if got, w := boardRows(t, cli), boardRows(t, want); !reflect.DeepEqual(got, w) {
			t.Fatalf("%s: msgx board --at %s differs from the replay's board:\n%s\nreplay:\n%s", what, local(marks[i]), cli, want)
		}
		return b
	}
	for i, msgs := range steps {
		for _, m := range msgs {
			id := replay.post(m)
			replay.await(id, "SUCCEEDED", state("SUCCEEDED", ""))
		}
		lives = append(lives, liveBoard(replay))
		wants = append(wants, replay.mustCLI(nil, "board", "--day", date))
		b := compare(i, "step")
		switch i {
		case 1:
			if g := gateOf(b, 96001); g != "B12" {
				t.Errorf("as of step 2 CA8241's gate is %q, want B12", g)
			}
			if c := b.Changed[96001]; c.MsgID != ids[1][0] || c.At.After(marks[1]) || !c.At.After(marks[0]) {
				t.Errorf("as of step 2 CA8241 last changed %+v, want by message %d between %s and %s", c, ids[1][0], marks[0], marks[1])
			}
		case 2:
			if g := gateOf(b, 96001); g != "B14" {
				t.Errorf("as of step 3 CA8241's gate is %q, want B14", g)
			}
		case 3:
			if b.Count != 3 || strings.Contains(fmt.Sprint(records(b.Flights)), "MU5101") {
				t.Errorf("as of the second snapshot: %d flights, MU5101 must be gone: %s", b.Count, b.Flights)
			}
		case 4:
			if b.Count != 2 || strings.Contains(fmt.Sprint(records(b.Flights)), "CA1302") {
				t.Errorf("as of the FDEL: %d flights, CA1302 must be gone: %s", b.Count, b.Flights)
			}
		}
	}
	// The last mark equals the live board; a time between two steps is the earlier step's.
	live := liveBoard(s)
	if last := asOf(marks[len(marks)-1]); !reflect.DeepEqual(records(last.Flights), records(live.Flights)) {
		t.Errorf("as of the last step the board differs from the live one:\n%s\n%s", last.Flights, live.Flights)
	}
	if g := gateOf(asOf(marks[1].Add(20*time.Millisecond)), 96001); g != "B12" {
		t.Errorf("between step 2's mark and step 3 CA8241's gate is %q, want B12", g)
	}

	// Archived: the texts of the first three steps move to CMINMSGS_HST; the boards are the same.
	st := db.open(t)
	moved, err := st.Archiver.Archive(ctx, ids[2][len(ids[2])-1], time.Now().Add(time.Hour), time.Now(), nil)
	if err != nil || moved != 4 {
		t.Fatalf("archive the first three steps: moved %d, %v", moved, err)
	}
	for i := range steps {
		compare(i, "archived")
	}

	// Purged: retention deletes the archived messages; a time before the kept history is
	// refused, saying where it starts.
	if _, err := st.Archiver.PurgeArchived(ctx, time.Now().Add(2*time.Hour), nil); err != nil {
		t.Fatal(err)
	}
	_, err = s.api().BoardAsOf(ctx, date, marks[1].UTC().Format(time.RFC3339), false)
	if err == nil || !strings.Contains(err.Error(), "before_history") && !strings.Contains(err.Error(), "before the retained history") {
		t.Errorf("as_of before the kept history: %v, want 409 before_history", err)
	}
	out, err := s.cli(nil, "board", "--day", date, "--at", local(marks[1]))
	if err == nil || !strings.Contains(out, "before the retained history") {
		t.Errorf("msgx board --at before the kept history: %v\n%s", err, out)
	}
	// After the purge the kept history starts with step 4's snapshot, which names the day's
	// flights anew: the board as of step 5 is still right.
	b := asOf(marks[4])
	if b.HistoryFrom == nil || b.HistoryFrom.Before(marks[2]) {
		t.Errorf("history_from %v, want after %s (the purged steps)", b.HistoryFrom, marks[2])
	}
	if b.Count != 2 {
		t.Errorf("as of step 5 after the purge: %d flights, want 2: %s", b.Count, b.Flights)
	}
}
