package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"msgx/client"
	"msgx/internal/flight/flighttest"
)

// phaseBProjection writes a config whose REDIS_FLIGHT target (sink redis-flights) projects
// the flights into the test Redis under a key prefix of t's own, and returns the server's
// environment and the prefix.
func phaseBProjection(t *testing.T) (env []string, prefix string) {
	prefix = flighttest.RedisPrefix(t)
	cfg := filepath.Join(t.TempDir(), "msgx.yaml")
	os.WriteFile(cfg, []byte(`targets:
  KAFKA_FLOP: {sink: file}
  KAFKA_SCHD: {sink: file}
  ES_FLIGHT: {sink: file}
  REDIS_NOTIFY: {sink: file}
  REDIS_FLIGHT: {sink: redis-flights, addr: "`+flighttest.RedisAddr()+`", key-prefix: "`+prefix+`"}
`), 0o644)
	return []string{"MSGX_CONFIG=" + cfg, "MSGX_PIPELINE_POLL_INTERVAL=50ms", "MSGX_CONSISTENCY_CHECK_DAILY_AT=off"}, prefix
}

// awaitProjected waits until no REDIS_FLIGHT event is pending and returns how many were sent.
func (s *server) awaitProjected() int {
	s.t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		all := s.events("target=REDIS_FLIGHT&limit=1000")
		sent := 0
		for _, e := range all {
			if e.State == "SENT" {
				sent++
			}
		}
		if len(all) > 0 && sent == len(all) {
			return sent
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("REDIS_FLIGHT events not all sent: %+v\n%s", all, s.logs)
		}
	}
}

// sameAsAPI checks that every flight of flids is in Redis exactly as the API (FLIGHT_STATE)
// answers it: record, version and day; or absent from both.
func sameAsAPI(t *testing.T, s *server, c *redis.Client, prefix string, flids ...int64) {
	t.Helper()
	ctx := context.Background()
	for _, flid := range flids {
		h := c.HGetAll(ctx, fmt.Sprintf("%sflight:%d", prefix, flid)).Val()
		raw, err := s.api().Flight(ctx, flid)
		var absent *client.Error
		if errors.As(err, &absent) && absent.Status == http.StatusNotFound {
			if len(h) != 0 {
				t.Fatalf("flight %d: absent from FLIGHT_STATE, in Redis %v", flid, h)
			}
			continue
		}
		var e client.FlightEntry
		if err != nil || json.Unmarshal(raw, &e) != nil {
			t.Fatalf("GET flight %d: %v %s", flid, err, raw)
		}
		var compact bytes.Buffer
		json.Compact(&compact, e.Record)
		if h["rec"] != compact.String() || h["ver"] != fmt.Sprint(e.Version) || h["day"] != e.Day {
			t.Fatalf("flight %d: API %s v%d %s, Redis %v", flid, compact.String(), e.Version, e.Day, h)
		}
	}
}

// TestPhaseBProjectionSentinelAndRebuild: in phase B with the REDIS_FLIGHT target, Redis
// follows FLIGHT_STATE (a snapshot, FLOPs with multi-byte text, a second snapshot that drops a
// flight): each hash equals what the API answers. A flight altered by hand in Redis and one
// deleted from it are found by the sentinel (POST /api/v1/consistency); `msgx job run
// PROJECTION_REBUILD` repairs both, the sentinel then finds nothing, and a FLOP after the
// rebuild is projected on top of it. On both databases.
func TestPhaseBProjectionSentinelAndRebuild(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db dbEnv) {
		env, prefix := phaseBProjection(t)
		day := tomorrow(t)
		s := db.start(t, env...)
		// The start-up check runs beside the first messages: wait for it, or on a loaded machine it
		// can compare FLIGHT_STATE with a Redis the projection has not reached yet and count those.
		waitFor(t, "the start-up consistency check", func() bool { return strings.Contains(s.logs.String(), "consistency check done") })
		fl := func(flid int64, h int) string {
			return e2eFltr(flid, fmt.Sprintf("CA2%03d", flid%1000), "D", day.Add(time.Duration(h)*time.Hour), "")
		}
		ids := []int64{s.post(e2eSchd(995001, fl(99501, 8), fl(99502, 10), fl(99503, 9)))}
		ids = append(ids, s.post(e2eFlop(995002, "STND", 99502, "<STND>318</STND>")))
		ids = append(ids, s.post(e2eSchd(995003, fl(99501, 8), fl(99502, 10)))) // drops 99503, in its window
		ids = append(ids, s.post(e2eFlop(995004, "REMC", 99501, "<REMC>经停北京 🛫 𠜎</REMC>")))
		for _, id := range ids {
			s.await(id, "SUCCEEDED", state("SUCCEEDED", ""))
		}
		if n := s.awaitProjected(); n < 6 {
			t.Fatalf("%d REDIS_FLIGHT events sent", n)
		}
		c := redis.NewClient(&redis.Options{Addr: flighttest.RedisAddr()})
		defer c.Close()
		sameAsAPI(t, s, c, prefix, 99501, 99502, 99503)
		ctx := context.Background()
		if h := c.HGet(ctx, prefix+"flight:99501", "rec").Val(); !strings.Contains(h, "经停北京 🛫 𠜎") {
			t.Fatalf("multi-byte remark in Redis: %s", h)
		}
		if c.Exists(ctx, prefix+"flight:99503").Val() != 0 || c.SIsMember(ctx, prefix+"day:"+day.Format(time.DateOnly), "99503").Val() {
			t.Fatal("the flight the second snapshot dropped is still in Redis")
		}
		if rep := s.checkConsistency(); rep.Checked != 2 || !noMismatch(rep) {
			t.Fatalf("consistency after delivery: %s, want 2 []", reported(rep))
		}

		// By hand: 99501's stand changed in Redis, 99502 deleted from it.
		rec := c.HGet(ctx, prefix+"flight:99501", "rec").Val()
		c.HSet(ctx, prefix+"flight:99501", "rec", strings.Replace(rec, `"STND":"201"`, `"STND":"777"`, 1))
		c.Del(ctx, prefix+"flight:99502")
		rep := s.checkConsistency()
		date := day.Format(time.DateOnly)
		if want := []client.Mismatch{{FLID: 99501, Day: date, Fields: []string{"STND"}}, {FLID: 99502, Day: date, Where: "mirror", Fields: []string{"missing"}}}; rep.Checked != 2 || !reflect.DeepEqual(rep.Mismatches, want) {
			t.Fatalf("consistency: %d %+v, want 2 %+v", rep.Checked, rep.Mismatches, want)
		}
		// Logged with FLID and fields, counted in the metric (the start-up check found none).
		logged := func() bool {
			for _, l := range strings.Split(s.logs.String(), "\n") {
				if strings.Contains(l, "Redis and FLIGHT_STATE differ") && strings.Contains(l, `"flid":99502`) && strings.Contains(l, `"fields":["missing"]`) {
					return true
				}
			}
			return false
		}
		for deadline := time.Now().Add(5 * time.Second); !logged(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("mismatch not logged\n%s", s.logs)
			}
		}
		if !strings.Contains(s.logs.String(), "consistency check done") {
			t.Fatalf("no consistency check logged\n%s", s.logs)
		}
		if metrics := s.metrics(); !strings.Contains(metrics, "msgx_consistency_mismatches_total 2") {
			t.Fatalf("metric:\n%s", metrics)
		}

		cmd := exec.Command(binary, "job", "run", "--server", s.url, "PROJECTION_REBUILD")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil || !strings.HasPrefix(stdout.String(), "rebuilt Redis from FLIGHT_STATE") {
			t.Fatalf("msgx job run PROJECTION_REBUILD: %v\n%s\n%s", err, stdout.String(), stderr.String())
		}
		if !strings.Contains(stderr.String(), "PROJECTION_REBUILD enqueued") {
			t.Fatalf("job run's stderr: %s", stderr.String())
		}
		if rep := s.checkConsistency(); rep.Checked != 2 || !noMismatch(rep) {
			t.Fatalf("consistency after the rebuild: %s, want 2 []", reported(rep))
		}
		sameAsAPI(t, s, c, prefix, 99501, 99502, 99503)
		// The daily sample, run by hand.
		out, err := exec.Command(binary, "job", "run", "--server", s.url, "CONSISTENCY_CHECK").Output()
		if err != nil || !strings.HasPrefix(string(out), "compared ") || !strings.Contains(string(out), " 0 mismatches") {
			t.Fatalf("msgx job run CONSISTENCY_CHECK: %v %s", err, out)
		}

		// A change after the rebuild is newer than its mark: projected on top.
		id := s.post(e2eFlop(995005, "STND", 99502, "<STND>319</STND>"))
		s.await(id, "SUCCEEDED", state("SUCCEEDED", ""))
		s.awaitProjected()
		sameAsAPI(t, s, c, prefix, 99501, 99502)
		if h := c.HGet(ctx, prefix+"flight:99502", "rec").Val(); !strings.Contains(h, `"STND":"319"`) {
			t.Fatalf("99502 after a FLOP past the rebuild: %s", h)
		}

		// Events still pending when a rebuild runs (the target paused) are older than its
		// mark: delivered after it, they change nothing (else 99501's version would count
		// its changes twice).
		if _, err := s.api().SetPaused(ctx, true, "REDIS_FLIGHT", "test"); err != nil {
			t.Fatal(err)
		}
		for i, stnd := range []string{"321", "322"} {
			id := s.post(e2eFlop(995006+i, "STND", 99501, "<STND>"+stnd+"</STND>"))
			s.await(id, "SUCCEEDED", state("SUCCEEDED", ""))
		}
		job := s.startJob("PROJECTION_REBUILD")
		s.awaitJob(job)
		sameAsAPI(t, s, c, prefix, 99501, 99502)
		if _, err := s.api().SetPaused(ctx, false, "REDIS_FLIGHT", ""); err != nil {
			t.Fatal(err)
		}
		s.awaitProjected()
		sameAsAPI(t, s, c, prefix, 99501, 99502)
		if rep := s.checkConsistency(); rep.Checked != 2 || !noMismatch(rep) {
			t.Fatalf("consistency after the pending events: %s, want 2 []", reported(rep))
		}
	})
}

// TestPhaseBProjectionWaitsForRedis: with Redis down for REDIS_FLIGHT, messages still
// succeed and the target's events wait, PENDING and retried; once Redis answers (here: the
// server restarted pointing at it) every event is delivered in order and Redis equals the API.
// On both databases.
func TestPhaseBProjectionWaitsForRedis(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db dbEnv) {
		env, prefix := phaseBProjection(t)
		cfgPath := strings.TrimPrefix(env[0], "MSGX_CONFIG=")
		good, _ := os.ReadFile(cfgPath)
		down := strings.Replace(string(good), `addr: "`+flighttest.RedisAddr()+`"`, `addr: "`+freeAddr(t)+`", timeout: 500ms`, 1)
		os.WriteFile(cfgPath, []byte(down), 0o644)
		env = append(env, "MSGX_PIPELINE_BACKOFF_MS=200")
		day := tomorrow(t)
		s := db.start(t, env...)
		id := s.post(e2eSchd(996001, e2eFltr(99601, "CA2601", "D", day.Add(8*time.Hour), ""), e2eFltr(99602, "CA2602", "D", day.Add(9*time.Hour), "")))
		flop := s.post(e2eFlop(996002, "STND", 99601, "<STND>330</STND>"))
		s.await(id, "SUCCEEDED", state("SUCCEEDED", ""))
		s.await(flop, "SUCCEEDED", state("SUCCEEDED", ""))
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			if strings.Contains(s.logs.String(), "REDIS_FLIGHT") && strings.Contains(s.logs.String(), "connection refused") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no failed REDIS_FLIGHT send logged\n%s", s.logs)
			}
		}
		pending := 0
		for _, e := range s.events("target=REDIS_FLIGHT&limit=100") {
			if e.State != "PENDING" {
				t.Fatalf("event %d is %s while Redis is down", e.EventID, e.State)
			}
			pending++
		}
		if pending != 3 {
			t.Fatalf("%d REDIS_FLIGHT events pending, want 3", pending)
		}
		s.stop()
		os.WriteFile(cfgPath, good, 0o644)
		s = db.start(t, env...)
		if n := s.awaitProjected(); n != 3 {
			t.Fatalf("%d REDIS_FLIGHT events sent, want 3", n)
		}
		c := redis.NewClient(&redis.Options{Addr: flighttest.RedisAddr()})
		defer c.Close()
		sameAsAPI(t, s, c, prefix, 99601, 99602)
		if v := c.HGet(context.Background(), prefix+"flight:99601", "ver").Val(); v != "2" {
			t.Fatalf("99601 at version %s in Redis, want 2", v)
		}
	})
}

// In phase A, where the pump writes Redis itself, serve refuses a redis-flights target (exit
// code 4, naming the key).
func TestPhaseARefusesTheProjectionTarget(t *testing.T) {
	t.Parallel()
	env, _ := phaseBProjection(t)
	data := t.TempDir()
	cmd := dieWithTest(exec.Command(binary, "serve"))
	cmd.Env = append(os.Environ(), "MSGX_HTTP_ADDR="+freeAddr(t), "MSGX_DATA_DIR="+data, env[0], "MSGX_PHASE=A")
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 4 || !strings.Contains(string(out), "targets.REDIS_FLIGHT.sink") {
		t.Fatalf("serve in phase A with REDIS_FLIGHT: %v\n%s", err, out)
	}
}
