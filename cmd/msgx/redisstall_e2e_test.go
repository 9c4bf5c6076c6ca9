package main_test

// End-to-end test of a Redis that stalls under phase A (issue 21, item 5): `CLIENT PAUSE 12000
// ALL` on msgx's Redis while FLOPs arrive. No database lock is held while the pump waits on
// Redis (the lease row is locked only at a batch's commit, a Redis call gives up after
// redis.timeout), so the pump lease is renewed throughout: the log never says the database
// does not answer, pump and dispatcher are never stopped, and the FLOPs, delayed by the pause,
// are applied afterwards in order, each once.

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestPhaseARedisStallIsNotADatabaseOutage(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat(doRedisBin); err != nil {
		if os.Getenv("MSGX_TEST_REQUIRE_SERVICES") == "1" {
			t.Fatalf("redis-server: %v", err)
		}
		t.Skipf("redis-server: %v", err)
	}
	eachDB(t, testPhaseARedisStall)
}

// rsPause is how long the test pauses Redis: longer than the lease's renewal period (5 s) and
// than the lease's whole time to live (15 s) less its margin, as in the issue.
const rsPause = 12 * time.Second

func testPhaseARedisStall(t *testing.T, db dbEnv) {
	addr, _ := privateRedis(t)
	rdb := doClient(addr)
	defer rdb.Close()
	ctx := context.Background()
	s := db.start(t, "MSGX_PHASE=A", "MSGX_REDIS_ADDR="+addr, "MSGX_CONSISTENCY_CHECK_DAILY_AT=off",
		"MSGX_PIPELINE_POLL_INTERVAL=50ms", "MSGX_REDIS_ALLOW_VOLATILE=true", "MSGX_PIPELINE_BACKOFF_CAP_MS=2000", "MSGX_PIPELINE_MAX_ATTEMPTS=100")
	day := tomorrow(t)
	flights := []int64{99301, 99302, 99303, 99304}
	var fltrs []string
	for i, f := range flights {
		fltrs = append(fltrs, e2eFltr(f, fmt.Sprintf("CA19%02d", 40+i), "D", day.Add(time.Duration(8+i)*time.Hour), ""))
	}
	snap := s.post(e2eSchd(993001, fltrs...))
	s.await(snap, "SUCCEEDED", state("SUCCEEDED", ""))

	// FLOPs all along, each a new stand, 25 a second: the pump is busy in its batches when the
	// pause begins, so it meets the pause in the middle of one (with its transaction open),
	// not only between steps.
	const total, pauseAfter = 200, 25
	var mu sync.Mutex
	var ids []int64
	changes := map[int64]int{}
	last := map[int64]string{}
	post := func(i int) {
		f := flights[i%len(flights)]
		stand := fmt.Sprint(500 + i)
		id, err := s.send(e2eFlop(993100+i, "STND", f, "<STND>"+stand+"</STND>"))
		if err != nil {
			t.Error(err)
			return
		}
		mu.Lock()
		ids = append(ids, id)
		changes[f]++
		last[f] = stand
		mu.Unlock()
	}
	busy, posted := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(posted)
		for i := 0; i < total; i++ {
			post(i)
			if i == pauseAfter {
				close(busy)
			}
			time.Sleep(40 * time.Millisecond) // the pace of the load
		}
	}()
	<-busy
	if err := rdb.Do(ctx, "CLIENT", "PAUSE", rsPause.Milliseconds(), "ALL").Err(); err != nil {
		t.Fatal(err)
	}
	pausedAt := time.Now()
	<-posted
	mu.Lock()
	duringPause := ids[len(ids)-1]
	mu.Unlock()
	if m := s.message(duringPause); m.State == "SUCCEEDED" && time.Since(pausedAt) < rsPause-time.Second {
		t.Fatalf("message %d applied while Redis was paused", duringPause)
	}

	for _, id := range ids {
		s.await(id, "SUCCEEDED", state("SUCCEEDED", ""))
	}
	took := time.Since(pausedAt)
	if took < rsPause-time.Second {
		t.Fatalf("all applied %s after a pause of %s: the pause did not delay them", took, rsPause)
	}
	logs := s.logs.String()
	for _, bad := range []string{"the database does not answer", "cannot renew the pump lease", "pump lease lost", "cannot take the pump lease"} {
		if strings.Contains(logs, bad) {
			t.Fatalf("the Redis stall was taken for a database outage (%q):\n%s", bad, logs)
		}
	}
	if n := strings.Count(logs, "pump lease acquired"); n != 1 {
		t.Fatalf("pump lease acquired %d times: pump and dispatcher restarted\n%s", n, logs)
	}
	if !strings.Contains(logs, "Redis does not answer ("+addr+")") {
		t.Fatalf("no message failed INFRA saying Redis does not answer (%s):\n%s", addr, logs)
	}
	// In order, each once: every flight at version 1 (the snapshot) + its FLOPs, holding the
	// stand of its last FLOP, in Redis and the FLIGHT_STATE mirror.
	for _, f := range flights {
		want := int64(1 + changes[f])
		h, err := rdb.HGetAll(ctx, fmt.Sprintf("%sflight:%d", redisKeyPrefixDefault, f)).Result()
		if err != nil || h["ver"] != fmt.Sprint(want) || !strings.Contains(h["rec"], `"STND":"`+last[f]+`"`) {
			t.Fatalf("flight %d in Redis: version %s, want %d, stand %s (%v): %s", f, h["ver"], want, last[f], err, h["rec"])
		}
		var sqlVer int64
		var rec string
		if err := db.open(t).SQL.QueryRow(`SELECT VERSION, RECORD FROM FLIGHT_STATE WHERE FLID = ?`, f).Scan(&sqlVer, &rec); err != nil ||
			sqlVer != want || !strings.Contains(rec, `"STND":"`+last[f]+`"`) {
			t.Fatalf("flight %d in FLIGHT_STATE at version %d (%v), want %d with stand %s", f, sqlVer, err, want, last[f])
		}
	}
	t.Logf("%s: %d FLOPs at 25/s, a %s CLIENT PAUSE after the %dth; all applied in order %s after it began, the lease kept",
		db.Name, total, rsPause, pauseAfter, took.Round(time.Millisecond))
}
