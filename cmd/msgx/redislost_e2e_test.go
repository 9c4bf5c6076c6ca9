package main_test

// End-to-end tests of phase A with a Redis that loses data (issue 21): a flight DEL'd from
// Redis found by the consistency check and brought back by REDIS_RESTORE alone; a FLUSHDB
// under load stopping the pump within a step (status, /readyz, the metric) and REDIS_RESTORE
// making it resume, every message's effects there exactly once.

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"msgx/client"
)

// jobRun runs `msgx job run KIND args…` against s and returns its result line.
func (s *server) jobRun(kind string, args ...string) string {
	s.t.Helper()
	cmd := exec.Command(binary, append([]string{"job", "run", "--server", s.url, "--timeout", "60s", kind}, args...)...)
	out, err := cmd.Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		s.t.Fatalf("msgx job run %s %v: %v\n%s%s\n%s", kind, args, err, out, stderr, s.logs)
	}
	return strings.TrimSpace(string(out))
}

// flightRow is a FLIGHT_STATE row as the test reads it.
func flightRow(t *testing.T, db dbEnv, flid int64) string {
	t.Helper()
	var rec, upd string
	var ver int64
	if err := db.open(t).SQL.QueryRow(`SELECT RECORD, VERSION, UPDATED_AT FROM FLIGHT_STATE WHERE FLID = ?`, flid).Scan(&rec, &ver, &upd); err != nil {
		t.Fatalf("FLIGHT_STATE row of %d: %v", flid, err)
	}
	return fmt.Sprintf("%d %s %s", ver, upd, rec)
}

// TestPhaseAFlightDeletedFromRedisIsRestored: a flight hash DEL'd in Redis: PROJECTION_REBUILD
// keeps its FLIGHT_STATE row (and names it) instead of deleting it; the consistency check
// reports it; REDIS_RESTORE of that flight, through `msgx job run`, brings it back into Redis
// with FLIGHT_STATE untouched, and the API and Redis agree again.
func TestPhaseAFlightDeletedFromRedisIsRestored(t *testing.T) {
	eachDB(t, func(t *testing.T, db dbEnv) {
		env := phaseAEnv(t)
		day := tomorrow(t)
		s := db.start(t, append(env, "MSGX_PIPELINE_POLL_INTERVAL=50ms")...)
		id := s.post(e2eSchd(991001, e2eFltr(99101, "CA1911", "D", day.Add(9*time.Hour), ""), e2eFltr(99102, "CA1912", "D", day.Add(10*time.Hour), "")))
		s.await(id, "SUCCEEDED", state("SUCCEEDED", ""))
		before := s.flightEntry(99101)
		row := flightRow(t, db, 99101)

		rdb := redisForE2E(t)
		ctx := context.Background()
		prefix := redisPrefixOf(env)
		if n := rdb.Del(ctx, prefix+"flight:99101").Val(); n != 1 {
			t.Fatalf("DEL: %d", n)
		}
		// The rebuild before the check: the check stops the pump (a flight Redis lost), and a
		// stopped pump runs no job but REDIS_RESTORE.
		res := s.jobRun("PROJECTION_REBUILD")
		if !strings.Contains(res, "1 rows Redis lacks kept (FLID 99101)") || !strings.Contains(res, "0 deleted") {
			t.Fatalf("PROJECTION_REBUILD: %q", res)
		}
		if got := flightRow(t, db, 99101); got != row {
			t.Fatalf("FLIGHT_STATE row changed by the rebuild:\n%s\n%s", row, got)
		}
		rep := s.checkConsistency()
		if want := []client.Mismatch{{FLID: 99101, Day: day.Format(time.DateOnly), Where: "authoritative", Fields: []string{"missing"}}}; !reflect.DeepEqual(rep.Mismatches, want) {
			t.Fatalf("consistency after the DEL: %+v, want %+v", rep.Mismatches, want)
		}

		res = s.jobRun("REDIS_RESTORE", "--flid", "99101")
		if !strings.HasPrefix(res, "restored Redis from FLIGHT_STATE for flight 99101: 1 flights written, 0 replaced, 0 deleted; the marks are unchanged") {
			t.Fatalf("REDIS_RESTORE: %q", res)
		}
		if got := flightRow(t, db, 99101); got != row {
			t.Fatalf("FLIGHT_STATE row changed by the restore:\n%s\n%s", row, got)
		}
		rep = s.checkConsistency()
		if rep.Checked != 2 || !noMismatch(rep) {
			t.Fatalf("consistency after the restore: %s, want 2 []", reported(rep))
		}
		if after := s.flightEntry(99101); fmt.Sprint(after) != fmt.Sprint(before) {
			t.Fatalf("API after the restore:\n%v\nbefore:\n%v", after, before)
		}
	})
}

// TestPhaseARedisFlushedUnderLoad: msgx in phase A on a private redis-server; FOPs arrive
// steadily; FLUSHDB empties Redis. The pump stops within a step: no FLOP is applied to the
// empty Redis (none ORPHAN), status and /readyz name the reason, msgx_pump_halted is 1. The
// inbox keeps accepting. REDIS_RESTORE (through `msgx job run`) writes FLIGHT_STATE back
// and the pump resumes by itself: every message SUCCEEDED, each flight's version is one for
// the snapshot plus the FLOPs that changed it, in Redis and FLIGHT_STATE alike.
func TestPhaseARedisFlushedUnderLoad(t *testing.T) {
	if _, err := os.Stat(doRedisBin); err != nil {
		if os.Getenv("MSGX_TEST_REQUIRE_SERVICES") == "1" {
			t.Fatalf("redis-server: %v", err)
		}
		t.Skipf("redis-server: %v", err)
	}
	eachDB(t, testPhaseARedisFlushedUnderLoad)
}

func testPhaseARedisFlushedUnderLoad(t *testing.T, db dbEnv) {
	addr, _ := privateRedis(t)
	rdb := doClient(addr)
	defer rdb.Close()
	ctx := context.Background()
	s := db.start(t, "MSGX_PHASE=A", "MSGX_REDIS_ADDR="+addr, "MSGX_CONSISTENCY_CHECK_DAILY_AT=off",
		"MSGX_PIPELINE_POLL_INTERVAL=50ms", "MSGX_REDIS_ALLOW_VOLATILE=true")
	day := tomorrow(t)
	flights := []int64{99201, 99202, 99203, 99204}
	var fltrs []string
	for i, f := range flights {
		fltrs = append(fltrs, e2eFltr(f, fmt.Sprintf("CA19%02d", 20+i), "D", day.Add(time.Duration(8+i)*time.Hour), ""))
	}
	snap := s.post(e2eSchd(992001, fltrs...))
	s.await(snap, "SUCCEEDED", state("SUCCEEDED", ""))

	// FLOPs, each a new stand: every one changes its flight.
	const total = 80
	var mu sync.Mutex
	var ids []int64
	changes := map[int64]int{}
	post := func(i int) {
		f := flights[i%len(flights)]
		id, err := s.send(e2eFlop(992100+i, "STND", f, fmt.Sprintf("<STND>%d</STND>", 300+i)))
		if err != nil {
			t.Error(err)
			return
		}
		mu.Lock()
		ids = append(ids, id)
		changes[f]++
		mu.Unlock()
	}
	for i := 0; i < total/2; i++ {
		post(i)
		time.Sleep(10 * time.Millisecond)
	}
	if err := rdb.FlushDB(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	flushedAt := time.Now()
	for i := total / 2; i < total; i++ {
		post(i)
		time.Sleep(10 * time.Millisecond)
	}

	// Stopped, with the reason.
	var reason string
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		resp, err := http.Get(s.url + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusServiceUnavailable && strings.Contains(string(b), "Redis lost its data: mark ") {
			reason = string(b)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz never named the loss: %d %s\n%s", resp.StatusCode, b, s.logs)
		}
	}
	t.Logf("%s: stopped %s after the FLUSHDB: %s", db.Name, time.Since(flushedAt).Round(time.Millisecond), reason)
	if h := s.status().Halted(); h == nil || !strings.HasPrefix(h.Reason, "Redis lost its data: mark ") || !strings.HasSuffix(h.Reason, " in SQL, none in Redis") {
		t.Fatalf("status pump_halted: %+v", h)
	}
	if m := s.metrics(); !strings.Contains(m, "msgx_pump_halted 1") {
		t.Fatalf("metric msgx_pump_halted not 1")
	}
	if out, err := s.cli(nil, "status"); exitCode(err) != 7 || !strings.HasPrefix(out, "HALTED: Redis lost its data: mark ") {
		t.Fatalf("msgx status while halted: exit %d\n%s", exitCode(err), out)
	}
	// Nothing went on behind the hole: no message ORPHAN or DEAD, and Redis holds nothing
	// but what the first FLOP after the flush may have left (its script refused: nothing).
	time.Sleep(300 * time.Millisecond)
	mu.Lock()
	all := append([]int64(nil), ids...)
	mu.Unlock()
	failed := 0
	for _, id := range all {
		m := s.message(id)
		switch m.State {
		case "DEAD":
			t.Fatalf("message %d DEAD %s while Redis was empty: %v", id, m.Class(), m.LastError)
		case "FAILED":
			failed++
		}
	}
	if failed > 1 {
		t.Fatalf("%d messages FAILED: the pump went on after the first met the empty Redis", failed)
	}
	if n := rdb.Exists(ctx, redisKeyPrefixDefault+"days").Val(); n != 0 {
		t.Fatalf("flights written into the emptied Redis")
	}

	res := s.jobRun("REDIS_RESTORE")
	if !strings.HasPrefix(res, "restored Redis from FLIGHT_STATE for "+day.Format(time.DateOnly)+": 4 flights written, 0 replaced, 0 deleted") || !strings.Contains(res, "marks: epoch ") {
		t.Fatalf("REDIS_RESTORE: %q", res)
	}
	for _, id := range all {
		s.await(id, "SUCCEEDED", state("SUCCEEDED", ""))
	}
	resp, err := http.Get(s.url + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/readyz after the restore: %d", resp.StatusCode)
	}
	for _, f := range flights {
		want := int64(1 + changes[f])
		ver, err := rdb.HGet(ctx, fmt.Sprintf("%sflight:%d", redisKeyPrefixDefault, f), "ver").Int64()
		if err != nil || ver != want {
			t.Fatalf("flight %d in Redis at version %d (%v), want %d", f, ver, err, want)
		}
		var sqlVer int64
		if err := db.open(t).SQL.QueryRow(`SELECT VERSION FROM FLIGHT_STATE WHERE FLID = ?`, f).Scan(&sqlVer); err != nil || sqlVer != want {
			t.Fatalf("flight %d in FLIGHT_STATE at version %d (%v), want %d", f, sqlVer, err, want)
		}
	}
	rep := s.checkConsistency()
	if !noMismatch(rep) {
		t.Fatalf("consistency after the restore: %s, want no mismatch ([])", reported(rep))
	}
	t.Logf("%s: %d FLOPs, %d posted after the FLUSHDB; all applied exactly once after REDIS_RESTORE (%d failed once on the emptied Redis)",
		db.Name, total, total/2, failed)
}

// TestPhaseARefusesAVolatileRedis: at start in phase A msgx reads Redis's persistence. A
// private redis-server with appendonly no and no save point makes serve exit 4 naming the
// settings; with redis.allow-volatile it starts, with a WARN and msgx_redis_volatile 1; a
// Redis with appendonly yes starts without either.
func TestPhaseARefusesAVolatileRedis(t *testing.T) {
	if _, err := os.Stat(doRedisBin); err != nil {
		if os.Getenv("MSGX_TEST_REQUIRE_SERVICES") == "1" {
			t.Fatalf("redis-server: %v", err)
		}
		t.Skipf("redis-server: %v", err)
	}
	eachDB(t, func(t *testing.T, db dbEnv) {
		addr, r := privateRedis(t)
		env := []string{"MSGX_PHASE=A", "MSGX_REDIS_ADDR=" + addr, "MSGX_CONSISTENCY_CHECK_DAILY_AT=off"}
		cmd := db.command(t, "serve")
		cmd.Env = append(cmd.Env, env...)
		out, err := cmd.CombinedOutput()
		if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 4 || !strings.Contains(string(out), `appendonly is "no" and save is ""`) ||
			!strings.Contains(string(out), "redis.allow-volatile") {
			t.Fatalf("serve on a volatile Redis: %v (exit %v)\n%s", err, cmd.ProcessState, out)
		}
		s := db.start(t, append(env, "MSGX_REDIS_ALLOW_VOLATILE=true")...)
		if !strings.Contains(s.logs.String(), "Redis keeps nothing on disk (redis.allow-volatile: true)") {
			t.Fatalf("no WARN:\n%s", s.logs)
		}
		if m := s.metrics(); !strings.Contains(m, "msgx_redis_volatile 1") {
			t.Fatalf("msgx_redis_volatile not 1")
		}
		s.stop()
		r.stop(syscall.SIGKILL)

		addr, _ = privateRedis(t, "--appendonly", "yes")
		s = db.start(t, "MSGX_PHASE=A", "MSGX_REDIS_ADDR="+addr, "MSGX_CONSISTENCY_CHECK_DAILY_AT=off")
		if strings.Contains(s.logs.String(), "keeps nothing on disk") {
			t.Fatalf("WARN with appendonly yes:\n%s", s.logs)
		}
		if m := s.metrics(); !strings.Contains(m, "msgx_redis_volatile 0") {
			t.Fatalf("msgx_redis_volatile not 0")
		}
	})
}

// redisKeyPrefixDefault is redis.key-prefix's default, the private Redis's keys.
const redisKeyPrefixDefault = "msgx:"

// privateRedis starts a redis-server of the test's own on a free loopback port, with its
// default user open as msgx uses it and extra arguments, and returns its address.
func privateRedis(t *testing.T, extra ...string) (string, *doRedis) {
	t.Helper()
	port := ogFreePort(t)
	r := doStartRedis(t, port, t.TempDir(), append([]string{"--user", "default", "on", "nopass", "~*", "&*", "+@all"}, extra...)...)
	return fmt.Sprintf("127.0.0.1:%d", port), r
}
