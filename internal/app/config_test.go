package app

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"msgx/internal/jobs"
)

// A bad value of a key a subsystem checks (a target's settings, the pump's batch limits and
// identity, the daily jobs' times, the redis block, a shadow's targets) stops LoadConfig, the
// load path of every command, with the message naming the key, as config.Load's own
// refusals do; the same file without the bad value loads.
func TestLoadConfigRefusesABadSubsystemValueNamingItsKey(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ doc, want string }{
		{"targets:\n  KAFKA_FLOP: {sink: kafka, topic: x}\n", "config: targets.KAFKA_FLOP.brokers: required for sink kafka"},
		{"pipeline:\n  batch-size: 0\n", "config: pipeline.batch-size: must be between 1"},
		{"pipeline:\n  park-classes: [INFRA]\n", `config: pipeline.park-classes: "INFRA" cannot be parked`},
		{"identity:\n  mode: sequence\n", `config: identity.mode: "sequence" is not content, seqn or seqn-day`},
		{"jobs:\n  archive-at: 3am\n", `config: jobs.archive-at: "3am" is not a local time of day HH:MM (or off)`},
		{"phase: A\nredis:\n  marker-ttl: 10m\n", "config: redis.marker-ttl: must be at least 1h"},
		{"redis:\n  timeout: 5s\n", "config: redis.timeout: must be more than 0 and at most 4s"},
		{"mode: shadow\nphase: A\n", `config: redis.key-prefix: "msgx:" overlaps the production msgx's key space "msgx:"`},
		{"phase: A\ntargets:\n  REDIS_FLIGHT: {sink: redis-flights}\n", "config: targets.REDIS_FLIGHT.sink: redis-flights keeps Redis as a projection"},
		{"mode: shadow\ntargets:\n  LEGACY_FLOP: {sink: redis, channel: FLOP}\n", "config: targets.LEGACY_FLOP.channel: in shadow mode a redis target needs a channel of msgx's own"},
	} {
		path := filepath.Join(dir, "msgx.yaml")
		if err := os.WriteFile(path, []byte(c.doc), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadConfig(path, nil); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%q: error %v, want it to start %q", c.doc, err, c.want)
		}
	}
	path := filepath.Join(dir, "good.yaml")
	os.WriteFile(path, []byte("targets:\n  KAFKA_FLOP: {sink: kafka, brokers: [k:9092], topic: x}\npipeline:\n  batch-size: 1\n"), 0o600)
	if _, err := LoadConfig(path, nil); err != nil {
		t.Fatal(err)
	}
	// A generic refusal is config.Load's, through LoadConfig unchanged.
	if _, err := LoadConfig("", []string{"MSGX_PIPELINE_MAX_ATTEMPTS=0"}); err == nil || !strings.HasPrefix(err.Error(), "config: pipeline.max-attempts: ") {
		t.Errorf("pipeline.max-attempts=0: %v", err)
	}
}

func TestPolicies(t *testing.T) {
	c, err := LoadConfig("", nil)
	if err != nil {
		t.Fatal(err)
	}
	p, d := retryPolicy(c), deliveryPolicy(c)
	if p.MaxAttempts != 5 || p.HeadDeadline != 10*time.Minute || p.Cap != time.Minute || len(p.Park) != 3 {
		t.Errorf("pump policy %+v", p)
	}
	if d.MaxAttempts != 0 || d.HeadDeadline != 24*time.Hour || d.Cap != p.Cap || len(d.Park) != 0 || len(d.Steps) != len(p.Steps) {
		t.Errorf("delivery policy %+v", d)
	}
}

// identity.mode as the pump reads it after loading: content when unset, seqn-day when only
// the older identity.include-day-boundary is set.
func TestLoadConfigResolvesIdentityMode(t *testing.T) {
	for env, want := range map[string]string{
		"":                            "content",
		"MSGX_IDENTITY_MODE=seqn":     "seqn",
		"MSGX_IDENTITY_MODE=seqn-day": "seqn-day",
		"MSGX_IDENTITY_INCLUDE_DAY_BOUNDARY=true": "seqn-day",
	} {
		c, err := LoadConfig("", strings.Fields(env))
		if err != nil || c.Identity.Mode != want {
			t.Errorf("%q: mode %q %v, want %s", env, c.Identity.Mode, err, want)
		}
	}
}

// The daily jobs: the default schedule, and one switched off from YAML or the environment.
func TestSchedule(t *testing.T) {
	c, err := LoadConfig("", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(schedule(c)); got != "[{ARCHIVE 3 0} {HISTORY_SWEEP 3 30} {RETENTION 4 0}]" {
		t.Fatalf("default schedule %s", got)
	}
	path := filepath.Join(t.TempDir(), "msgx.yaml")
	os.WriteFile(path, []byte("jobs:\n  archive-at: \"off\"\n  history-sweep-at: \"02:15\"\n"), 0o644)
	c, err = LoadConfig(path, []string{"MSGX_JOBS_RETENTION_AT="})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(schedule(c)); got != "[{HISTORY_SWEEP 2 15}]" {
		t.Fatalf("loaded: schedule %s", got)
	}
}

// A shadow in phase B with a REDIS_FLIGHT projection must project under a key prefix of its
// own too: the default (from redis.key-prefix, or the target's own key-prefix) overlapping the
// production msgx's stops the start naming targets.REDIS_FLIGHT.key-prefix.
func TestShadowProjectionNeedsItsOwnKeyPrefix(t *testing.T) {
	dir := t.TempDir()
	for name, yaml := range map[string]string{
		"default": "mode: shadow\ntargets:\n  REDIS_FLIGHT: {sink: redis-flights}\n",
		"target":  "mode: shadow\ntargets:\n  REDIS_FLIGHT: {sink: redis-flights, key-prefix: \"msgx:\"}\nredis: {key-prefix: \"msgx-shadow:\"}\n",
	} {
		path := filepath.Join(dir, name+".yaml")
		os.WriteFile(path, []byte(yaml), 0o644)
		if _, err := LoadConfig(path, nil); err == nil || !strings.Contains(err.Error(), "targets.REDIS_FLIGHT.key-prefix") {
			t.Errorf("%s: %v, want a refusal naming targets.REDIS_FLIGHT.key-prefix", name, err)
		}
	}
	path := filepath.Join(dir, "own.yaml")
	os.WriteFile(path, []byte("mode: shadow\nredis: {key-prefix: \"msgx-shadow:\"}\ntargets:\n  REDIS_FLIGHT: {sink: redis-flights}\n"), 0o644)
	c, err := LoadConfig(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tc, _ := c.FlightProjection(); tc.KeyPrefix != "msgx-shadow:" {
		t.Fatalf("the shadow's projection prefix: %q", tc.KeyPrefix)
	}
}

// The sentinel's daily sample is scheduled in phase A only, at consistency-check.daily-at.
func TestConsistencyCheckIsScheduledInPhaseA(t *testing.T) {
	has := func(env ...string) bool {
		c, err := LoadConfig("", env)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range schedule(c) {
			if e.Kind == jobs.ConsistencyCheck {
				return e.Hour == 5 && e.Minute == 0
			}
		}
		return false
	}
	if !has("MSGX_PHASE=A") || has() || has("MSGX_PHASE=A", "MSGX_CONSISTENCY_CHECK_DAILY_AT=off") || has("MSGX_PHASE=A", "MSGX_CONSISTENCY_CHECK_DAILY_SAMPLE_RATIO=0") {
		t.Fatal("CONSISTENCY_CHECK scheduled wrongly")
	}
}

// A REDIS_FLIGHT target (sink redis-flights) takes the redis block's server and prefix when
// it sets none, copies ES_FLIGHT's events, turns the daily consistency sample on in phase B,
// and is refused in phase A, where Redis is the flight store itself.
func TestFlightProjectionTarget(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "msgx.yaml")
	os.WriteFile(path, []byte("targets:\n  REDIS_FLIGHT: {sink: redis-flights}\n  KAFKA_FLOP: {sink: file}\n"), 0o644)
	c, err := LoadConfig(path, []string{"MSGX_REDIS_ADDR=10.0.0.9:6380", "MSGX_REDIS_KEY_PREFIX=aodb:", "MSGX_REDIS_DB=3"})
	if err != nil {
		t.Fatal(err)
	}
	tc, ok := c.FlightProjection()
	if !ok || tc.Addr != "10.0.0.9:6380" || tc.KeyPrefix != "aodb:" || tc.DB != 3 || tc.CopyOf != "ES_FLIGHT" || tc.Location == nil {
		t.Fatalf("projection target: %v %+v", ok, tc)
	}
	if c.Targets["REDIS_FLIGHT"].CopyOf != "ES_FLIGHT" {
		t.Fatalf("the configured target does not copy ES_FLIGHT: %+v", c.Targets["REDIS_FLIGHT"])
	}
	kinds := ""
	for _, e := range schedule(c) {
		kinds += e.Kind + " "
	}
	if !strings.Contains(kinds, "CONSISTENCY_CHECK") {
		t.Fatalf("phase B with REDIS_FLIGHT schedules %s", kinds)
	}
	if _, err := LoadConfig(path, []string{"MSGX_PHASE=A"}); err == nil || !strings.Contains(err.Error(), "targets.REDIS_FLIGHT.sink") {
		t.Fatalf("phase A with REDIS_FLIGHT: %v", err)
	}
	plain, _ := LoadConfig("", nil)
	for _, e := range schedule(plain) {
		if e.Kind == "CONSISTENCY_CHECK" {
			t.Fatal("phase B without REDIS_FLIGHT schedules the consistency check")
		}
	}
}
