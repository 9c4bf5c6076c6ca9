package main_test

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"msgx/internal/flight/flighttest"
)

// Phase A reads Redis's persistence until it is known (issue 33): msgx started while its Redis
// does not answer says "not checked" in /readyz (503: redis.allow-volatile is not set); a
// private redis-server started afterwards that keeps nothing on disk is then found volatile
// (/readyz 503 naming it, msgx_redis_volatile 1), and after it restarts with appendonly yes the
// reconnect reads it again (msgx_redis_volatile 0).
func TestPhaseARedisPersistenceCheckedWhenRedisAnswers(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat(doRedisBin); err != nil {
		if os.Getenv("MSGX_TEST_REQUIRE_SERVICES") == "1" {
			t.Fatalf("redis-server: %v", err)
		}
		t.Skipf("redis-server: %v", err)
	}
	port := ogFreePort(t)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	s := start(t, t.TempDir(), "MSGX_PHASE=A", "MSGX_REDIS_ADDR="+addr, "MSGX_REDIS_KEY_PREFIX="+flighttest.RedisPrefix(t),
		"MSGX_CONSISTENCY_CHECK_DAILY_AT=off", "MSGX_CONSISTENCY_CHECK_ON_STARTUP=false")
	readyz := func() (int, map[string]any) {
		t.Helper()
		resp, err := http.Get(s.url + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var rd map[string]any
		b, _ := io.ReadAll(resp.Body)
		json.Unmarshal(b, &rd)
		return resp.StatusCode, rd
	}
	volatileGauge := func() string {
		body := s.metrics()
		for _, l := range strings.Split(body, "\n") {
			if v, ok := strings.CutPrefix(l, "msgx_redis_volatile "); ok {
				return v
			}
		}
		return "absent"
	}
	if !strings.Contains(s.logs.String(), "not checked yet") {
		t.Errorf("the start did not say the persistence was not checked:\n%s", s.logs)
	}
	code, rd := readyz()
	for deadline := time.Now().Add(5 * time.Second); rd["database"] == "not checked" && time.Now().Before(deadline); code, rd = readyz() {
		time.Sleep(50 * time.Millisecond) // the database's first background check, a second at most
	}
	if code != 503 || rd["redis_persistence"] != "not checked" || !strings.Contains(rd["reason"].(string), "not checked") {
		t.Errorf("/readyz before Redis answers: %d %v", code, rd)
	}

	dir := t.TempDir()
	r := doStartRedis(t, port, dir)
	snWait(t, "Redis found volatile", 20*time.Second, func() bool {
		_, rd = readyz()
		return rd["redis_persistence"] == "volatile"
	})
	code, rd = readyz()
	if code != 503 || !strings.Contains(rd["reason"].(string), "keeps nothing on disk") {
		t.Errorf("/readyz on a volatile Redis: %d %v", code, rd)
	}
	if v := volatileGauge(); v != "1" {
		t.Errorf("msgx_redis_volatile %s on a volatile Redis", v)
	}

	r.stop(syscall.SIGKILL)
	doStartRedis(t, port, dir, "--appendonly", "yes")
	snWait(t, "Redis read again after the reconnect", 30*time.Second, func() bool {
		_, rd = readyz()
		p, _ := rd["redis_persistence"].(string)
		return strings.HasPrefix(p, "appendonly yes")
	})
	if v := volatileGauge(); v != "0" {
		t.Errorf("msgx_redis_volatile %s on a Redis with appendonly yes", v)
	}
}
