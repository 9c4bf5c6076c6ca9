package main_test

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"msgx/internal/flight"
	"msgx/internal/flight/flighttest"
	"msgx/internal/flight/redisflight"
)

// phaseAEnv is the environment of a server in phase A on the test Redis, under a key prefix
// of t's own (deleted when t ends).
func phaseAEnv(t *testing.T) []string {
	return []string{"MSGX_PHASE=A", "MSGX_REDIS_ADDR=" + flighttest.RedisAddr(), "MSGX_REDIS_KEY_PREFIX=" + flighttest.RedisPrefix(t),
		"MSGX_CONSISTENCY_CHECK_DAILY_AT=off"} // as the harness switches the daily jobs off
}

func redisPrefixOf(env []string) string {
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, "MSGX_REDIS_KEY_PREFIX="); ok {
			return v
		}
	}
	return ""
}

// TestPhaseACrashBetweenRedisAndSQL kills the server (SIGKILL, by the test-only failpoint
// MSGX_TEST_CRASH_AFTER_REDIS) right after a message's Redis script and before its SQL
// commit, again and again while a backlog of FLOPs is processed, restarting it each time. Then
// nothing is lost (every message SUCCEEDED), no event is doubled (four per changed flight
// per message), and every flight's version in Redis, and in the FLIGHT_STATE mirror, equals
// its number of effective changes. On both databases.
func TestPhaseACrashBetweenRedisAndSQL(t *testing.T) {
	eachDB(t, func(t *testing.T, db dbEnv) {
		env := phaseAEnv(t)
		day := tomorrow(t)
		const flights, flops = 8, 60
		var fltrs []string
		for i := range flights {
			fltrs = append(fltrs, e2eFltr(int64(97001+i), fmt.Sprintf("CA17%02d", i), "D", day.Add(time.Duration(8+i)*time.Hour), ""))
		}
		// The backlog is stored first by a server that does not run the pump.
		loader := db.start(t, append(env, "MSGX_PIPELINE_AUTOSTART=false")...)
		snapshot := loader.post(e2eSchd(980000, fltrs...))
		changes := map[int64]int{} // FLID → effective changes after the snapshot's insert
		ids := []int64{snapshot}
		for i := range flops {
			flid := int64(97001 + i%flights)
			ids = append(ids, loader.post(e2eFlop(980001+i, "REMC", flid, fmt.Sprintf("<REMC>remark %d</REMC>", i))))
			changes[flid]++
		}
		loader.stop()

		crashes := 0
		sqlDB := db.open(t)
		succeeded := func() int {
			var n int
			sqlDB.SQL.QueryRow(`SELECT COUNT(*) FROM PROC_STATE WHERE STATE = 'SUCCEEDED'`).Scan(&n)
			return n
		}
		for round := 0; succeeded() < len(ids); round++ {
			if round > 40 {
				t.Fatalf("still not done after %d crashes", crashes)
			}
			// Started by hand, not by db.start: it may die before it answers /healthz.
			cmd := db.command(t, "serve")
			cmd.Env = append(cmd.Env, env...)
			cmd.Env = append(cmd.Env, fmt.Sprintf("MSGX_TEST_CRASH_AFTER_REDIS=%d", 1+rand.IntN(12)), "MSGX_PIPELINE_POLL_INTERVAL=50ms",
				"MSGX_JOBS_ARCHIVE_AT=off", "MSGX_JOBS_HISTORY_SWEEP_AT=off", "MSGX_JOBS_RETENTION_AT=off")
			var logs syncBuffer
			cmd.Stdout, cmd.Stderr = &logs, &logs
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			deadline := time.Now().Add(20 * time.Second)
		wait:
			for {
				select {
				case err := <-done:
					if err == nil || !strings.Contains(err.Error(), "killed") {
						t.Fatalf("server ended with %v\n%s", err, logs.String())
					}
					crashes++
					break wait
				case <-time.After(50 * time.Millisecond):
				}
				if succeeded() >= len(ids) {
					cmd.Process.Signal(syscall.SIGTERM)
					<-done
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the server neither crashed nor finished\n%s", logs.String())
				}
			}
		}
		if crashes == 0 {
			t.Fatal("the failpoint never fired")
		}
		s := db.start(t, env...)
		for _, id := range ids {
			s.await(id, "SUCCEEDED", state("SUCCEEDED", ""))
		}
		// Four events per changed flight, per message: the snapshot's flights, one per FLOP.
		rows, err := db.open(t).SQL.Query(`SELECT CMINMSGS_ID, COUNT(*) FROM MSG_EVENT GROUP BY CMINMSGS_ID`)
		if err != nil {
			t.Fatal(err)
		}
		perMsg := map[int64]int{}
		for rows.Next() {
			var id int64
			var n int
			rows.Scan(&id, &n)
			perMsg[id] = n
		}
		rows.Close()
		for _, id := range ids {
			want := 4
			if id == snapshot {
				want = 4 * flights
			}
			if perMsg[id] != want {
				t.Fatalf("message %d has %d events, want %d (after %d crashes)", id, perMsg[id], want, crashes)
			}
		}
		if len(perMsg) != len(ids) {
			t.Fatalf("events of %d messages, want %d", len(perMsg), len(ids))
		}
		rs := redisflight.New(redisflight.Options{Addr: flighttest.RedisAddr(), Prefix: redisPrefixOf(env)})
		defer rs.Close()
		mirror := flight.New(db.open(t), nil, nil)
		ctx := context.Background()
		for flid, n := range changes {
			e, err := rs.Get(ctx, flid)
			if err != nil || e == nil || e.Version != int64(1+n) {
				t.Fatalf("flight %d in Redis: %+v %v, want version %d (after %d crashes)", flid, e, err, 1+n, crashes)
			}
			m, err := mirror.Get(ctx, flid)
			if err != nil || m == nil || m.Version != e.Version || string(m.Record) != string(e.Record) {
				t.Fatalf("flight %d in FLIGHT_STATE: %+v %v, Redis %+v", flid, m, err, e)
			}
		}
		t.Logf("%s: %d crashes between the Redis script and the SQL commit; nothing lost or doubled", db.Name, crashes)
	})
}

// TestPhaseASentinelAndRebuild: in phase A, a flight altered by hand in Redis and a flight
// missing from FLIGHT_STATE are found by the consistency sentinel (listed, counted in the
// metric), and PROJECTION_REBUILD, started through the API, repairs both from Redis.
func TestPhaseASentinelAndRebuild(t *testing.T) {
	eachDB(t, func(t *testing.T, db dbEnv) {
		env := phaseAEnv(t)
		day := tomorrow(t)
		s := db.start(t, append(env, "MSGX_PIPELINE_POLL_INTERVAL=50ms")...)
		id := s.post(e2eSchd(990001, e2eFltr(99001, "CA1901", "D", day.Add(9*time.Hour), ""), e2eFltr(99002, "CA1902", "D", day.Add(10*time.Hour), "")))
		s.await(id, "SUCCEEDED", state("SUCCEEDED", ""))
		ctx := context.Background()
		c := redis.NewClient(&redis.Options{Addr: flighttest.RedisAddr()})
		defer c.Close()
		prefix := redisPrefixOf(env)
		rec := c.HGet(ctx, prefix+"flight:99001", "rec").Val()
		c.HSet(ctx, prefix+"flight:99001", "rec", strings.Replace(rec, `"STND":"201"`, `"STND":"777"`, 1))
		if _, err := db.open(t).SQL.Exec(`DELETE FROM FLIGHT_STATE WHERE FLID = 99002`); err != nil {
			t.Fatal(err)
		}
		rep := s.postJSON("/api/v1/consistency", "")
		if got := fmt.Sprint(rep["checked"], " ", rep["mismatches"]); got != fmt.Sprintf("2 [map[day:%s fields:[STND] flid:99001] map[day:%[1]s fields:[missing] flid:99002 where:mirror]]", day.Format(time.DateOnly)) {
			t.Fatalf("consistency: %s", got)
		}
		// The log reaches the test through a pipe: it may come a little after the answer.
		for deadline := time.Now().Add(5 * time.Second); !strings.Contains(s.logs.String(), "consistency: Redis and FLIGHT_STATE differ"); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("mismatch not logged\n%s", s.logs)
			}
		}
		resp, err := http.Get(s.url + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		metrics, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(metrics), "msgx_consistency_mismatches_total 2") {
			t.Fatalf("metric:\n%s", metrics)
		}
		job := s.postJSON("/api/v1/jobs", `{"kind":"PROJECTION_REBUILD"}`)
		if res := s.awaitJob(int64(job["id"].(float64))); !strings.HasPrefix(res, "rebuilt FLIGHT_STATE from Redis") {
			t.Fatalf("rebuild result %q", res)
		}
		rep = s.postJSON("/api/v1/consistency", "")
		if fmt.Sprint(rep["checked"], " ", rep["mismatches"]) != "2 []" {
			t.Fatalf("after the rebuild: %v", rep)
		}
	})
}
