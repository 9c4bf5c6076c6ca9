package main_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"msgx/client"
)

// TestKillNineLosesNothing posts messages from several clients, kills the server with
// SIGKILL in the middle, starts it again on the same database and data directory and checks
// that every message that was answered is processed exactly once, its events are neither lost
// nor doubled, and every event reaches the outbox. It runs on SQLite and on MariaDB.
func TestKillNineLosesNothing(t *testing.T) {
	t.Parallel()
	eachDB(t, testKillNineLosesNothing)
}

func testKillNineLosesNothing(t *testing.T, db dbEnv) {
	ctx := t.Context()
	day := tomorrow(t)
	a := db.start(t, "MSGX_SCHD_FLUSH_PERIOD=200ms")
	a.await(a.post(e2eSchd(950000, e2eFltr(96001, "CA1601", "D", day.Add(23*time.Hour), ""))), "snapshot SUCCEEDED", state("SUCCEEDED", ""))

	var mu sync.Mutex
	statusOf := answered           // the map below takes the name
	answered := map[int64]string{} // id → kind
	var wg sync.WaitGroup
	var seq sync.Mutex
	n := 0
	next := func() int { seq.Lock(); defer seq.Unlock(); n++; return n }
	for w := 0; w < 6; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := a.api()
			code := statusOf(c)
			for {
				i := next()
				if i > 600 {
					return
				}
				kind, body := "ref", fmt.Sprintf(`<MSG><META><SNDR>AODB</SNDR><SEQN>%d</SEQN><DTTM>20261201091600</DTTM><TYPE>STTS</TYPE><STYP>ADD</STYP></META><RECS>1</RECS><STTS><STTC>K%d</STTC><STTD>status %d</STTD></STTS></MSG>`, 960000+i, i, i)
				if i%3 == 0 {
					kind, body = "flop", e2eFlop(970000+i, "REMC", 96001, fmt.Sprintf("<REMC>remark %d</REMC>", i))
				}
				id, err := c.Send(ctx, []byte(body))
				var refused *client.Error
				if errors.As(err, &refused) {
					continue
				}
				if err != nil {
					return // the server is gone
				}
				if code() != http.StatusOK {
					t.Errorf("the inbox answered %d, want 200", code())
					return
				}
				mu.Lock()
				answered[id] = kind
				mu.Unlock()
			}
		}()
	}
	// Kill once the inbox has answered 150 and the pump has finished a few of them, so the
	// kill falls in the pump's and the dispatcher's work as well as in the inbox's.
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		got := len(answered)
		mu.Unlock()
		if got >= 150 {
			if st := a.status(); st.Counts["SUCCEEDED"] > 20 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d answered and the pump has not finished 20 of them\n%s", got, a.logs)
		}
		time.Sleep(5 * time.Millisecond)
	}
	a.cmd.Process.Kill() // SIGKILL: no clean shutdown, the lease is left behind
	wg.Wait()
	<-a.done

	b := db.start(t, "MSGX_SCHD_FLUSH_PERIOD=200ms")
	if !strings.Contains(b.logs.String(), "took over the pump lease of a dead instance") {
		t.Errorf("the restarted server did not take over the dead instance's lease:\n%s", b.logs)
	}
	atRestart := b.status()
	flops := 0
	for id, kind := range answered {
		b.await(id, "SUCCEEDED", state("SUCCEEDED", ""))
		if kind == "flop" {
			flops++
		}
	}
	if st := b.status(); st.Counts["PENDING"]+st.Counts["FAILED"]+st.Counts["DEAD"] != 0 {
		t.Fatalf("after recovery: %v", st.Counts)
	}
	// Every FLOP changed the remark: four events each, plus the snapshot's four, never doubled.
	// Messages stored but unanswered at the kill (the client lost the reply) may add more FLOPs.
	evs := b.events("target=KAFKA_FLOP")
	deadline = time.Now().Add(20 * time.Second)
	for len(b.events("state=PENDING")) > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	msgs := map[int64]int{}
	list := b.events("target=KAFKA_FLOP")
	for _, e := range list {
		msgs[e.MsgID]++
		if e.State != "SENT" {
			t.Fatalf("event %d is %s", e.EventID, e.State)
		}
	}
	for id, c := range msgs {
		if c != 1 {
			t.Fatalf("message %d has %d KAFKA_FLOP events, want exactly 1", id, c)
		}
	}
	if len(evs) < flops+1 {
		t.Fatalf("%d KAFKA_FLOP events for %d answered FLOPs and the snapshot", len(evs), flops)
	}
	// At least once: every SENT event is in the outbox file (a copy may appear twice if the
	// kill fell between the write and the SENT mark).
	inFile := map[int64]bool{}
	for _, line := range readLines(t, db.outbox("KAFKA_FLOP")) {
		var env struct {
			EventID int64 `json:"event_id"`
		}
		if err := json.Unmarshal(line, &env); err != nil {
			t.Fatalf("outbox line %q: %v", line, err)
		}
		inFile[env.EventID] = true
	}
	for _, e := range list {
		if !inFile[e.EventID] {
			t.Fatalf("SENT event %d is missing from the outbox", e.EventID)
		}
	}
	t.Logf("%s: answered %d messages (%d FLOPs) before SIGKILL, %d still PENDING just after the restart; %d KAFKA_FLOP events, all delivered",
		db.Name, len(answered), flops, atRestart.Counts["PENDING"], len(list))
}
