package main_test

import (
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"msgx/client"
)

// TestKillNineWithReplaysEqualsACleanRun mixes replays of parked messages into a load that a
// SIGKILL interrupts: six clients post FLOPs for four scheduled flights and for two whose
// schedule arrives during the load (parked ORPHAN until it does), while a seventh replays the
// ORPHAN class every few milliseconds; the server is killed, started again, and the ORPHAN
// class replayed once more. Every message the database holds then equals, applied by a fresh
// server in inbox order with one replay of the ORPHAN class at the end, the same flights: the
// replays, wherever they fell, never put an older value over a newer one (invariant I6).
func TestKillNineWithReplaysEqualsACleanRun(t *testing.T) {
	t.Parallel()
	eachDB(t, testKillNineWithReplays)
}

const crashFlights = 6 // 99001-99004 scheduled first, 99005-99006 during the load

func testKillNineWithReplays(t *testing.T, db dbEnv) {
	ctx := t.Context()
	day := tomorrow(t)
	fltrs := func(from, to int) []string {
		var out []string
		for f := from; f <= to; f++ {
			out = append(out, e2eFltr(int64(99000+f), fmt.Sprintf("CA17%02d", f), "D", day.Add(time.Duration(8+f)*time.Hour), "<REMC>SCH</REMC>"))
		}
		return out
	}
	env := []string{"MSGX_PIPELINE_POLL_INTERVAL=50ms"}
	a := db.start(t, env...)
	a.await(a.post(e2eSchd(990000, fltrs(1, 4)...)), "snapshot SUCCEEDED", state("SUCCEEDED", ""))

	var mu sync.Mutex
	answered := map[int64]bool{}
	var seq sync.Mutex
	n := 0
	next := func() int { seq.Lock(); defer seq.Unlock(); n++; return n }
	body := func(i int) string {
		flid := int64(99001 + i%crashFlights)
		at := sisTime(day.Add(time.Duration(8+i%crashFlights)*time.Hour + time.Duration(i%50)*time.Minute))
		switch i % 3 {
		case 0:
			return e2eFlop(991000+i, "STND", flid, fmt.Sprintf("<STND>%d</STND>", 100+i))
		case 1:
			return e2eFlop(991000+i, "CTOT", flid, "<CTOT>"+at+"</CTOT>")
		}
		return e2eFlop(991000+i, "REMC", flid, fmt.Sprintf("<REMC>remark %d</REMC>", i))
	}
	var load, replays sync.WaitGroup
	stop := make(chan struct{})
	for w := 0; w < 6; w++ {
		load.Add(1)
		go func() {
			defer load.Done()
			for i := next(); i <= 600; i = next() {
				id, err := a.send(body(i))
				if err != nil {
					return // the server is gone
				}
				mu.Lock()
				answered[id] = true
				mu.Unlock()
			}
		}()
	}
	replays.Add(1)
	go func() {
		defer replays.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(15 * time.Millisecond):
			}
			_, err := a.api().Replay(ctx, []string{"ORPHAN"}, nil, false)
			var refused *client.Error
			if err != nil && !errors.As(err, &refused) {
				return // the server is gone
			}
		}
	}()
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(answered) }
	deadline := time.Now().Add(60 * time.Second)
	for count() < 60 {
		if time.Now().After(deadline) {
			t.Fatalf("%d answered in a minute\n%s", count(), a.logs)
		}
		time.Sleep(2 * time.Millisecond)
	}
	late := a.post(e2eSchdSTYP(990001, "ADFT", fltrs(5, 6)...)) // the two flights' schedule arrives
	for count() < 200 {
		if time.Now().After(deadline) {
			t.Fatalf("%d answered in a minute\n%s", count(), a.logs)
		}
		time.Sleep(2 * time.Millisecond)
	}
	a.cmd.Process.Kill()
	load.Wait()
	close(stop)
	replays.Wait()
	<-a.done

	b := db.start(t, env...)
	b.await(late, "the late schedule SUCCEEDED", state("SUCCEEDED", ""))
	settle := func(s *server) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for {
			st := s.status()
			if st.Counts["PENDING"]+st.Counts["FAILED"] == 0 {
				if st.Counts["DEAD"] == 0 {
					return
				}
				if _, err := s.api().Replay(ctx, []string{"ORPHAN"}, nil, false); err != nil {
					t.Fatal(err)
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("not settled: %v\n%s", st.Counts, s.logs)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	settle(b)
	for id := range answered {
		if m := b.message(id); m.State != "SUCCEEDED" {
			t.Fatalf("answered message %d is %s", id, m.State)
		}
	}

	// The clean run: every stored message, in inbox order, on a fresh server; then the ORPHAN
	// class replayed once.
	rows, err := db.open(t).SQL.Query(`SELECT CMINMSGS_CLOB_MSG FROM CMINMSGS ORDER BY CMINMSGS_ID`)
	if err != nil {
		t.Fatal(err)
	}
	var raws []string
	for rows.Next() {
		var raw string
		if err := rows.Scan(&raw); err != nil {
			t.Fatal(err)
		}
		raws = append(raws, raw)
	}
	rows.Close()
	c := start(t, t.TempDir(), env...)
	for _, raw := range raws {
		c.post(raw)
	}
	settle(c)
	for f := int64(99001); f < 99001+crashFlights; f++ {
		got, want := b.flight(f), c.flight(f)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("flight %d after the kill and the replays:\n%v\nin a clean run in inbox order:\n%v", f, got, want)
		}
	}
	t.Logf("%s: %d answered before SIGKILL, %d stored messages compared through a clean run", db.Name, len(answered), len(raws))
}
