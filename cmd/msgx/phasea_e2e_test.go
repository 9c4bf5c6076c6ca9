package main_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"msgx/internal/store/storetest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"msgx/client"
	"msgx/internal/config"
	"msgx/internal/flight"
	"msgx/internal/flight/flighttest"
	"msgx/internal/flight/redisflight"
)

// phaseAEnv is the environment of a server in phase A on the test Redis, under a key prefix
// of t's own (deleted when t ends).
func phaseAEnv(t *testing.T) []string {
	return []string{"MSGX_PHASE=A", "MSGX_REDIS_ADDR=" + flighttest.RedisAddr(), "MSGX_REDIS_KEY_PREFIX=" + flighttest.RedisPrefix(t),
		"MSGX_CONSISTENCY_CHECK_DAILY_AT=off", // as the harness switches the daily jobs off
		"MSGX_REDIS_ALLOW_VOLATILE=true"}      // the test Redis keeps nothing on disk
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
// MSGX_TEST_CRASH_AFTER_REDIS) right after a message's Redis script and before the SQL commit,
// again and again, restarting it each time, with batching on (pipeline.batch-size 200, the
// default): a kill lands in the middle of a batch, after the scripts of several of its
// messages and before its one SQL commit. The load: a backlog stored before the first start
// (a snapshot, FLOPs, reference messages, two duplicates), and more FLOPs posted all along by a
// pump-less API node on the same database. Then nothing is lost (every message SUCCEEDED but the
// duplicates, SKIPPED), no event is doubled (four per changed flight per message), and every
// flight's version in Redis, and in the FLIGHT_STATE mirror, equals its number of effective
// changes. On both databases.
func TestPhaseACrashBetweenRedisAndSQL(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db dbEnv) {
		env := phaseAEnv(t)
		day := tomorrow(t)
		const flights, backlog, later = 12, 100, 100
		var fltrs []string
		for i := range flights {
			fltrs = append(fltrs, e2eFltr(int64(97001+i), fmt.Sprintf("CA17%02d", i), "D", day.Add(time.Duration(8+i)*time.Hour), ""))
		}
		changes := map[int64]int{}  // FLID → effective changes after the snapshot's insert
		events := map[int64]int{}   // message → the events it must have
		skipped := map[int64]bool{} // the duplicates
		flop := func(i int) string {
			flid := int64(97001 + i%flights)
			changes[flid]++
			return e2eFlop(980001+i, "REMC", flid, fmt.Sprintf("<REMC>remark %d</REMC>", i))
		}
		// The backlog is stored first by a server that does not run the pump; it stays up and
		// posts more while the pump crashes and restarts.
		loader := db.start(t, append(env, "MSGX_PIPELINE_AUTOSTART=false")...)
		snapshot := loader.post(e2eSchd(980000, fltrs...))
		events[snapshot] = 4 * flights
		ids := []int64{snapshot}
		for i := range backlog {
			id := loader.post(flop(i))
			events[id] = 4
			ids = append(ids, id)
			switch i {
			case 20, 60:
				ref := loader.post(e2eRef(985000+i, fmt.Sprintf("C%d", i), "crash test"))
				ids = append(ids, ref)
				events[ref] = 0 // reference data: no events by default
			case 40, 80:
				// An earlier FLOP sent again (the bytes the sender built, META DTTM included):
				// SKIPPED as its duplicate.
				dup := loader.post(e2eFlop(980001+i-5, "REMC", int64(97001+(i-5)%flights), fmt.Sprintf("<REMC>remark %d</REMC>", i-5)))
				ids = append(ids, dup)
				skipped[dup] = true
			}
		}
		var posted sync.WaitGroup
		posted.Add(1)
		var laterIDs []int64
		var postErr error
		go func() {
			defer posted.Done()
			for i := backlog; i < backlog+later; i++ {
				id, err := loader.send(flop(i))
				if err != nil {
					postErr = err
					return
				}
				laterIDs = append(laterIDs, id)
				// Pacing, not waiting: the later posts are spread out so that they arrive
				// while the pump crashes and restarts.
				time.Sleep(time.Duration(rand.IntN(30)) * time.Millisecond)
			}
		}()

		sqlDB := db.open(t)
		rs := redisflight.New(redisflight.Options{Addr: flighttest.RedisAddr(), Prefix: redisPrefixOf(env)})
		defer rs.Close()
		ctx := context.Background()
		total := len(ids) + later
		finished := func() int {
			var n int
			sqlDB.SQL.QueryRow(`SELECT COUNT(*) FROM PROC_STATE WHERE STATE IN ('SUCCEEDED', 'SKIPPED')`).Scan(&n)
			return n
		}
		// ahead counts the messages whose Redis script ran and whose SQL side is not committed:
		// after a kill in the middle of a batch, more than one.
		ahead := func() int {
			rows, err := sqlDB.SQL.Query(`SELECT CMINMSGS_ID FROM PROC_STATE WHERE STATE NOT IN ('SUCCEEDED', 'SKIPPED')`)
			if err != nil {
				t.Fatal(err)
			}
			var open []int64
			for rows.Next() {
				var id int64
				rows.Scan(&id)
				open = append(open, id)
			}
			rows.Close()
			ms, err := rs.Markers(ctx, open)
			if err != nil {
				t.Fatal(err)
			}
			return len(ms)
		}
		crashes, mostAhead := 0, 0
		for round := 0; finished() < total; round++ {
			if round > 80 {
				t.Fatalf("still not done after %d crashes (%d of %d finished)", crashes, finished(), total)
			}
			// Started by hand, not by db.start: it may die before it answers /healthz.
			cmd := db.command(t, "serve")
			cmd.Env = append(cmd.Env, env...)
			cmd.Env = append(cmd.Env, fmt.Sprintf("MSGX_TEST_CRASH_AFTER_REDIS=%d", 1+rand.IntN(40)), "MSGX_PIPELINE_POLL_INTERVAL=50ms",
				"MSGX_JOBS_ARCHIVE_AT=off", "MSGX_JOBS_HISTORY_SWEEP_AT=off", "MSGX_JOBS_RETENTION_AT=off")
			var logs syncBuffer
			cmd.Stdout, cmd.Stderr = &logs, &logs
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			deadline := time.Now().Add(30 * time.Second)
		wait:
			for {
				select {
				case err := <-done:
					if err == nil || !strings.Contains(err.Error(), "killed") {
						t.Fatalf("server ended with %v\n%s", err, logs.String())
					}
					crashes++
					mostAhead = max(mostAhead, ahead())
					break wait
				case <-time.After(50 * time.Millisecond):
				}
				if finished() >= total {
					cmd.Process.Signal(syscall.SIGTERM)
					<-done
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the server neither crashed nor finished\n%s", logs.String())
				}
			}
		}
		posted.Wait()
		if postErr != nil {
			t.Fatal(postErr)
		}
		if crashes < 3 {
			t.Fatalf("the failpoint fired %d times, want several", crashes)
		}
		if mostAhead < 2 {
			t.Fatalf("no kill left more than %d message(s) applied in Redis and not committed: the crashes were not in the middle of a batch", mostAhead)
		}
		for _, id := range laterIDs {
			events[id] = 4
			ids = append(ids, id)
		}
		s := db.start(t, env...)
		for _, id := range ids {
			if skipped[id] {
				s.await(id, "SKIPPED", state("SKIPPED", ""))
			} else {
				s.await(id, "SUCCEEDED", state("SUCCEEDED", ""))
			}
		}
		perMsg := map[int64]int{} // the events the targets take
		for _, e := range targetEvents(t, sqlDB) {
			perMsg[e.msg]++
		}
		for _, id := range ids {
			if perMsg[id] != events[id] {
				t.Fatalf("message %d has %d events, want %d (after %d crashes)", id, perMsg[id], events[id], crashes)
			}
		}
		mirror := flight.New(storetest.Flight(sqlDB), nil, nil)
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
		t.Logf("%s: %d crashes between the Redis scripts and the SQL commit, up to %d messages of a batch applied in Redis and not committed; nothing lost or doubled",
			db.Name, crashes, mostAhead)
	})
}

// TestPhaseASentinelAndRebuild: in phase A, a flight altered by hand in Redis and a flight
// missing from FLIGHT_STATE are found by the consistency sentinel (listed, counted in the
// metric), and PROJECTION_REBUILD, started through the API, repairs both from Redis.
func TestPhaseASentinelAndRebuild(t *testing.T) {
	t.Parallel()
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
		rep := s.checkConsistency()
		date := day.Format(time.DateOnly)
		if want := []client.Mismatch{{FLID: 99001, Day: date, Fields: []string{"STND"}}, {FLID: 99002, Day: date, Where: "mirror", Fields: []string{"missing"}}}; rep.Checked != 2 || !reflect.DeepEqual(rep.Mismatches, want) {
			t.Fatalf("consistency: %d %+v, want 2 %+v", rep.Checked, rep.Mismatches, want)
		}
		// The log reaches the test through a pipe: it may come a little after the answer.
		for deadline := time.Now().Add(5 * time.Second); !strings.Contains(s.logs.String(), "consistency: Redis and FLIGHT_STATE differ"); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("mismatch not logged\n%s", s.logs)
			}
		}
		if metrics := s.metrics(); !strings.Contains(metrics, "msgx_consistency_mismatches_total 2") {
			t.Fatalf("metric:\n%s", metrics)
		}
		job := s.startJob("PROJECTION_REBUILD")
		if res := s.awaitJob(job); !strings.HasPrefix(res, "rebuilt FLIGHT_STATE from Redis") {
			t.Fatalf("rebuild result %q", res)
		}
		rep = s.checkConsistency()
		if rep.Checked != 2 || !noMismatch(rep) {
			t.Fatalf("after the rebuild: %s, want 2 []", reported(rep))
		}
	})
}

// TestShadowModeInPhaseA: msgx in shadow mode and phase A beside a legacy whose gateway fills
// CMINMSGS adopts the gateway's rows (those the legacy took and those it has not), applies
// their flights to Redis under the shadow's own key prefix (FLIGHT_STATE mirroring them, the
// API reading them), and writes no legacy table and no key of the production msgx's key space
// (a flight there is left as it was). A shadow in phase A on the default prefix, the production
// msgx's, does not start (exit code 4, naming redis.key-prefix).
func TestShadowModeInPhaseA(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db dbEnv) {
		legacy := createLegacy(t, db)
		rdb := redisForE2E(t)
		ctx := context.Background()
		base := int64(93001)
		if db.Name == "mariadb" {
			base = 94001 // the subtests run in parallel on one Redis
		}

		cmd := db.command(t, "serve")
		cmd.Env = append(cmd.Env, "MSGX_MODE=shadow", "MSGX_PHASE=A", "MSGX_REDIS_ADDR="+flighttest.RedisAddr())
		out, err := cmd.CombinedOutput()
		if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 4 || !strings.Contains(string(out), "redis.key-prefix") {
			t.Fatalf("a shadow in phase A on the production key prefix: %v (exit %v)\n%s", err, cmd.ProcessState, out)
		}

		// What the production msgx keeps in its key space: the shadow must leave it alone.
		prod := fmt.Sprintf("%sflight:%d", config.DefaultRedisKeyPrefix, base)
		if err := rdb.HSet(ctx, prod, "rec", fmt.Sprintf(`{"FLID":%d,"FLNO":"PROD"}`, base), "ver", "7").Err(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rdb.Del(context.Background(), prod) })

		prefix := flighttest.RedisPrefix(t)
		env := []string{"MSGX_MODE=shadow", "MSGX_PHASE=A", "MSGX_REDIS_ADDR=" + flighttest.RedisAddr(), "MSGX_REDIS_KEY_PREFIX=" + prefix,
			"MSGX_CONSISTENCY_CHECK_DAILY_AT=off", "MSGX_PIPELINE_POLL_INTERVAL=50ms", "MSGX_REDIS_ALLOW_VOLATILE=true"}
		s := db.start(t, env...)
		day := tomorrow(t)
		want := map[int64]legacyRow{}
		var rows []int64
		gateway := func(raw string, takenByLegacy bool) int64 {
			now := legacyLocal(t, time.Now())
			processed := ""
			if takenByLegacy {
				processed = now
			}
			id := legacy.gateway(t, raw, now, processed)
			want[id] = legacyRow{Received: now, Processed: processed}
			rows = append(rows, id)
			return id
		}
		gateway(e2eSchd(930000, e2eFltr(base, "CA1931", "D", day.Add(9*time.Hour), ""), e2eFltr(base+1, "CA1932", "A", day.Add(10*time.Hour), "")), true)
		for i := range 6 {
			gateway(e2eFlop(930001+i, "REMC", base+int64(i%2), fmt.Sprintf("<REMC>shadow remark %d</REMC>", i)), i%3 != 2)
		}
		for _, id := range rows {
			awaitSucceeded(t, s, id)
		}
		for _, id := range rows {
			if got := legacy.row(t, id); got != want[id] {
				t.Fatalf("the shadow in phase A changed CMINMSGS row %d: %+v, want %+v", id, got, want[id])
			}
		}
		var n int
		if err := legacy.db.QueryRow(`SELECT COUNT(*) FROM COUTMSGS`).Scan(&n); err != nil || n != 0 {
			t.Fatalf("%d COUTMSGS rows (%v) in shadow", n, err)
		}

		// The flights are in Redis under the shadow's prefix, mirrored in FLIGHT_STATE and
		// answered by the API.
		rs := redisflight.New(redisflight.Options{Addr: flighttest.RedisAddr(), Prefix: prefix})
		defer rs.Close()
		mirror := flight.New(storetest.Flight(db.open(t)), nil, nil)
		for i, flid := range []int64{base, base + 1} {
			e, err := rs.Get(ctx, flid)
			if err != nil || e == nil || e.Version != 4 || !strings.Contains(string(e.Record), fmt.Sprintf("shadow remark %d", 4+i)) {
				t.Fatalf("flight %d under the shadow's prefix: %+v %v, want version 4 with remark %d", flid, e, err, 4+i)
			}
			m, err := mirror.Get(ctx, flid)
			if err != nil || m == nil || m.Version != e.Version || string(m.Record) != string(e.Record) {
				t.Fatalf("flight %d in FLIGHT_STATE: %+v %v, Redis %+v", flid, m, err, e)
			}
			if rec := s.flight(flid); fmt.Sprint(rec["REMC"]) != fmt.Sprintf("shadow remark %d", 4+i) {
				t.Fatalf("GET /api/v1/flights/%d: %v", flid, rec)
			}
		}
		// Nothing in the production key space.
		if got := rdb.HGetAll(ctx, prod).Val(); got["ver"] != "7" || got["rec"] != fmt.Sprintf(`{"FLID":%d,"FLNO":"PROD"}`, base) || len(got) != 2 {
			t.Fatalf("the production msgx's flight %d changed: %v", base, got)
		}
		for _, k := range []string{fmt.Sprintf("%sflight:%d", config.DefaultRedisKeyPrefix, base+1), config.DefaultRedisKeyPrefix + "day:" + day.Format(time.DateOnly)} {
			if members := rdb.SMembers(ctx, k).Val(); rdb.Type(ctx, k).Val() == "set" && slices.Contains(members, fmt.Sprint(base+1)) {
				t.Fatalf("the shadow wrote %s: %v", k, members)
			}
			if rdb.Type(ctx, k).Val() == "hash" {
				t.Fatalf("the shadow wrote %s", k)
			}
		}
	})
}
