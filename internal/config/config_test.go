package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestDefaultsMatchTheSeed(t *testing.T) {
	c, err := Load("", nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Pipeline.PollInterval != time.Second || c.Pipeline.MaxAttempts != 5 || c.Pipeline.BackoffCapMs != 60000 ||
		c.Pipeline.HeadDeadline != 10*time.Minute || c.Schd.FlushPeriod != 3*time.Second || c.Schd.FlushLimit != 500 ||
		c.Identity.IncludeDayBoundary || !c.ConsistencyCheck.OnStartup || c.ConsistencyCheck.DailySampleRatio != 0.01 ||
		c.ServiceName != "msgexchangeapi" || c.HTTP.Addr != ":8080" || c.HTTP.MaxBodyBytes != 32<<20 {
		t.Fatalf("defaults: %+v", c)
	}
	if c.Database.Driver != "sqlite" || c.Database.DSN != filepath.Join("data", "msgx.db") || !c.Autostart() {
		t.Fatalf("embedded default: driver %s dsn %s autostart %v", c.Database.Driver, c.Database.DSN, c.Autostart())
	}
}

func TestFileThenEnvironment(t *testing.T) {
	path := filepath.Join(t.TempDir(), "msgx.yaml")
	os.WriteFile(path, []byte("database:\n  driver: mysql\n  dsn: root@tcp(127.0.0.1:3306)/msgx\npipeline:\n  max-attempts: 7\n  head-deadline: 2m\n"), 0o644)
	c, err := Load(path, []string{"MSGX_PIPELINE_MAX_ATTEMPTS=9", "MSGX_HTTP_ADDR=127.0.0.1:18080", "MSGX_PIPELINE_BACKOFF_MS=100,200", "OTHER=1"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Pipeline.MaxAttempts != 9 || c.Pipeline.HeadDeadline != 2*time.Minute || c.HTTP.Addr != "127.0.0.1:18080" ||
		len(c.Pipeline.BackoffMs) != 2 || c.Database.Driver != "mysql" {
		t.Fatalf("loaded: %+v", c)
	}
	if c.Autostart() {
		t.Fatal("autostart must be off by default on mysql")
	}
	c, err = Load(path, []string{"MSGX_PIPELINE_AUTOSTART=true"})
	if err != nil || !c.Autostart() {
		t.Fatalf("explicit autostart: %v %v", c.Autostart(), err)
	}
}

func TestInvalidValuesNameTheirKey(t *testing.T) {
	for env, key := range map[string]string{
		"MSGX_PIPELINE_MAX_ATTEMPTS=0":           "pipeline.max-attempts",
		"MSGX_PIPELINE_MAX_ATTEMPTS=five":        "pipeline.max-attempts",
		"MSGX_PIPELINE_POLL_INTERVAL=10ms":       "pipeline.poll-interval",
		"MSGX_PIPELINE_HEAD_DEADLINE=soon":       "pipeline.head-deadline",
		"MSGX_DATABASE_DRIVER=oracle":            "database.driver",
		"MSGX_SIS_TIMEZONE=Mars/Olympus":         "sis.timezone",
		"MSGX_PHASE=C":                           "phase",
		"MSGX_SCHD_FLUSH_LIMIT=0":                "schd.flush-limit",
		"MSGX_IDENTITY_INCLUDE_DAY_BOUNDARY=yes": "identity.include-day-boundary",
		"MSGX_DATABASE_WAIT_TIMEOUT=-1s":         "database.wait-timeout",
		"MSGX_DATABASE_HOSTS=db1:3306":           "database.hosts",
		"MSGX_DATABASE_WAIT_TIMEOUT=forever":     "database.wait-timeout",
		"MSGX_MODE=mirror":                       "mode",
		"MSGX_SHADOW_START_AFTER_ID=-2":          "shadow.start-after-id",
		"MSGX_REQUESTS_TIMEOUT=0s":               "requests.timeout",
		"MSGX_REQUESTS_MAX_RESENDS=-1":           "requests.max-resends",
	} {
		_, err := Load("", []string{env})
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%s: error %v does not name %s", env, err, key)
		}
	}
	typed := filepath.Join(t.TempDir(), "typed.yaml")
	os.WriteFile(typed, []byte("pipeline:\n  poll-interval: 1s\n  max-attempts: abc\n"), 0o644)
	if _, err := Load(typed, nil); err == nil || !strings.Contains(err.Error(), "pipeline.max-attempts") {
		t.Errorf("a YAML value of the wrong type must name its key: %v", err)
	}
	path := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(path, []byte("pipeline:\n  max-atempts: 3\n"), 0o644)
	if _, err := Load(path, nil); err == nil || !strings.Contains(err.Error(), "max-atempts") {
		t.Errorf("a misspelt key must be an error naming it: %v", err)
	}
}

func TestEnvNames(t *testing.T) {
	if EnvName("pipeline.max-attempts") != "MSGX_PIPELINE_MAX_ATTEMPTS" {
		t.Fatal(EnvName("pipeline.max-attempts"))
	}
	keys := strings.Join(Keys(), " ")
	for _, k := range []string{"consistency-check.daily-sample-ratio", "schd.flush-period", "pipeline.autostart", "database.dsn", "data-dir"} {
		if !strings.Contains(keys, k) {
			t.Errorf("Keys() lacks %s", k)
		}
	}
}

// The database outage keys (issue 7, item 6): a default bound, 0 for no limit, from the
// environment like every key.
func TestDatabaseWaitTimeout(t *testing.T) {
	c, err := Load("", nil)
	if err != nil || c.Database.WaitTimeout != 2*time.Minute {
		t.Fatalf("default database.wait-timeout: %s %v", c.Database.WaitTimeout, err)
	}
	for env, want := range map[string]time.Duration{"MSGX_DATABASE_WAIT_TIMEOUT=0": 0, "MSGX_DATABASE_WAIT_TIMEOUT=45s": 45 * time.Second} {
		c, err := Load("", []string{env})
		if err != nil || c.Database.WaitTimeout != want {
			t.Errorf("%s: %s %v, want %s", env, c.Database.WaitTimeout, err, want)
		}
	}
}

func TestParkClasses(t *testing.T) {
	c, err := Load("", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(c.Pipeline.ParkClasses); got != "[CODEC_ERROR UNSUPPORTED ORPHAN]" {
		t.Errorf("default park classes %s", got)
	}
	if c.Delivery.HeadDeadline != 24*time.Hour {
		t.Errorf("default delivery.head-deadline %s", c.Delivery.HeadDeadline)
	}
	c, err = Load("", []string{"MSGX_PIPELINE_PARK_CLASSES="})
	if err != nil || len(c.Pipeline.ParkClasses) != 0 {
		t.Errorf("empty park classes from the environment: %v %v", c.Pipeline.ParkClasses, err)
	}
	c, err = Load("", []string{"MSGX_PIPELINE_PARK_CLASSES=orphan, codec_error"})
	if err != nil || fmt.Sprint(c.Pipeline.ParkClasses) != "[ORPHAN CODEC_ERROR]" {
		t.Errorf("park classes from the environment: %v %v", c.Pipeline.ParkClasses, err)
	}
	dir := t.TempDir()
	for doc, want := range map[string]string{
		"pipeline:\n  park-classes: [UNSUPPORTED]\n":      "[UNSUPPORTED]",
		"pipeline:\n  park-classes: \"\"\n":               "[]",
		"pipeline:\n  park-classes: ORPHAN,UNSUPPORTED\n": "[ORPHAN UNSUPPORTED]",
	} {
		path := filepath.Join(dir, "c.yaml")
		if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := Load(path, nil)
		if err != nil || fmt.Sprint(c.Pipeline.ParkClasses) != want {
			t.Errorf("%q: got %v %v, want %s", doc, c.Pipeline.ParkClasses, err, want)
		}
	}
}

func TestBatchKeys(t *testing.T) {
	c, err := Load("", nil)
	if err != nil || c.Pipeline.BatchSize != 200 || c.Pipeline.BatchWait != 0 {
		t.Fatalf("defaults: batch-size %d batch-wait %s %v", c.Pipeline.BatchSize, c.Pipeline.BatchWait, err)
	}
	c, err = Load("", []string{"MSGX_PIPELINE_BATCH_SIZE=1", "MSGX_PIPELINE_BATCH_WAIT=5ms"})
	if err != nil || c.Pipeline.BatchSize != 1 || c.Pipeline.BatchWait != 5*time.Millisecond {
		t.Fatalf("from the environment: %d %s %v", c.Pipeline.BatchSize, c.Pipeline.BatchWait, err)
	}
}

// A misspelt YAML key gets the key it probably meant; a value of the wrong kind names its key
// and says what it must be, in words, not in Go types.
func TestYAMLProblemsInTheKeysWords(t *testing.T) {
	for _, c := range []struct{ doc, want string }{
		{"pipline:\n  batch-size: 10\n", "line 1: unknown key pipline (did you mean pipeline?)"},
		{"pipeline:\n  batch-siz: 10\n", "line 2: unknown key pipeline.batch-siz (did you mean pipeline.batch-size?)"},
		{"pipeline:\n  max-attempts: abc\n", `line 2: pipeline.max-attempts: "abc" is not an integer`},
		{"pipeline:\n  head-deadline: soon\n", `line 2: pipeline.head-deadline: "soon" is not a duration (like 1s, 500ms, 10m)`},
		{"pipeline:\n  autostart: maybe\n", `line 2: pipeline.autostart: "maybe" is not true or false`},
		{"pipeline:\n  backoff-ms: [1, x]\n", `line 2: pipeline.backoff-ms: a list is not a list of integers`},
		{"http: 8080\n", `line 1: http: "8080" is not a mapping of keys`},
		{"batch-size: 10\n", "line 1: unknown key batch-size (did you mean pipeline.batch-size?)"},
		{"targets:\n  KAFKA_FLOP: {sink: kafka, topik: x}\n", "unknown key targets.KAFKA_FLOP.topik (did you mean targets.KAFKA_FLOP.topic?)"},
		{"identity:\n  include-day-boundary: 3\n", `identity.include-day-boundary: "3" is not true or false`},
	} {
		path := filepath.Join(t.TempDir(), "msgx.yaml")
		os.WriteFile(path, []byte(c.doc), 0o644)
		_, err := Load(path, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want it to say %q", c.doc, err, c.want)
			continue
		}
		if strings.Contains(err.Error(), "!!") || strings.Contains(err.Error(), "unmarshal") || strings.Contains(err.Error(), "config.Config") {
			t.Errorf("%q: error %q speaks Go", c.doc, err)
		}
	}
	// Two problems are both named.
	path := filepath.Join(t.TempDir(), "two.yaml")
	os.WriteFile(path, []byte("pipeline:\n  max-atempts: 3\n  poll-interval: x\n"), 0o644)
	if _, err := Load(path, nil); err == nil || !strings.Contains(err.Error(), "pipeline.max-attempts?") || !strings.Contains(err.Error(), "pipeline.poll-interval") {
		t.Errorf("two problems: %v", err)
	}
	// A correct file still loads.
	os.WriteFile(path, []byte("pipeline:\n  max-attempts: 3\n  autostart: true\n  park-classes: [ORPHAN]\nhttp:\ntargets:\n  KAFKA_FLOP: {sink: file}\n"), 0o644)
	if c, err := Load(path, nil); err != nil || c.Pipeline.MaxAttempts != 3 || !c.Autostart() {
		t.Errorf("a valid file: %v", err)
	}
}

// An MSGX_* variable msgx does not read is reported with the one it probably meant.
func TestUnknownEnv(t *testing.T) {
	got := UnknownEnv([]string{
		"MSGX_PIPELINE_BATCH_SIZ=10", "MSGX_PIPELINE_BATCH_SIZE=10", "MSGX_SERVER=x", "MSGX_CONFIG=y",
		"MSGX_TEST_REQUIRE_SERVICES=1", "HOME=/root", "MSGX_TARGETS_KAFKA_FLOP_TOPIC=x", "MSGX_FROBNICATE=1",
	})
	want := []string{
		"environment variable MSGX_TARGETS_KAFKA_FLOP_TOPIC is ignored: targets are set in the YAML file only",
		"unknown environment variable MSGX_FROBNICATE",
		"unknown environment variable MSGX_PIPELINE_BATCH_SIZ (did you mean MSGX_PIPELINE_BATCH_SIZE?)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("UnknownEnv =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestShadowModeAndRequestKeys(t *testing.T) {
	c, err := Load("", nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Shadow() || c.ShadowOptions.StartAfterID != -1 || c.Requests.Timeout != 10*time.Minute || c.Requests.MaxResends != 2 {
		t.Fatalf("defaults: mode %q start-after-id %d requests %+v", c.Mode, c.ShadowOptions.StartAfterID, c.Requests)
	}
	c, err = Load("", []string{"MSGX_MODE=shadow", "MSGX_SHADOW_START_AFTER_ID=42", "MSGX_REQUESTS_TIMEOUT=2s", "MSGX_REQUESTS_MAX_RESENDS=0"})
	if err != nil {
		t.Fatal(err)
	}
	if !c.Shadow() || c.ShadowOptions.StartAfterID != 42 || c.Requests.Timeout != 2*time.Second || c.Requests.MaxResends != 0 {
		t.Fatalf("from the environment: mode %q start-after-id %d requests %+v", c.Mode, c.ShadowOptions.StartAfterID, c.Requests)
	}
}

// Phase A is accepted with the redis.* keys' defaults (redisflight checks them by name).
func TestPhaseA(t *testing.T) {
	c, err := Load("", []string{"MSGX_PHASE=A"})
	if err != nil || c.Phase != "A" || c.Redis.Addr != "127.0.0.1:6379" || c.Redis.KeyPrefix != "msgx:" || c.Redis.DB != 0 || c.Redis.MarkerTTL != 7*24*time.Hour {
		t.Fatalf("phase A defaults: %+v %v", c.Redis, err)
	}
}

// redis.timeout defaults to 2s; redis.timeout and redis.sentinel load from the environment
// (redisflight checks them by name).
func TestRedisTimeoutAndSentinel(t *testing.T) {
	c, err := Load("", []string{"MSGX_PHASE=A"})
	if err != nil || c.Redis.Timeout != 2*time.Second {
		t.Fatalf("default redis.timeout %s, %v", c.Redis.Timeout, err)
	}
	if c, err := Load("", []string{"MSGX_REDIS_TIMEOUT=4s"}); err != nil || c.Redis.Timeout != 4*time.Second {
		t.Errorf("4s: %v %v", c.Redis.Timeout, err)
	}
	c, err = Load("", []string{"MSGX_PHASE=A", "MSGX_REDIS_SENTINEL_MASTER=m", "MSGX_REDIS_SENTINEL_ADDRS=127.0.0.1:1,127.0.0.1:2"})
	if err != nil || len(c.Redis.Sentinel.Addrs) != 2 || c.Redis.Sentinel.Master != "m" {
		t.Fatalf("sentinel: %+v %v", c.Redis.Sentinel, err)
	}
}

// database.hosts (issue 22): a Galera cluster's nodes, from YAML or the environment as a
// comma-separated list, each host:port, none twice.
func TestDatabaseHosts(t *testing.T) {
	env := []string{"MSGX_DATABASE_DRIVER=mysql", "MSGX_DATABASE_DSN=msgx:pw@tcp(db:3306)/aodb"}
	c, err := Load("", append(env, "MSGX_DATABASE_HOSTS=db1:3306, db2:3306,db3:3307"))
	if err != nil || strings.Join(c.Database.Hosts, " ") != "db1:3306 db2:3306 db3:3307" {
		t.Fatalf("hosts %q %v", c.Database.Hosts, err)
	}
	for _, bad := range []string{"db1", "db1:3306,db1:3306"} {
		if _, err := Load("", append(env, "MSGX_DATABASE_HOSTS="+bad)); err == nil || !strings.Contains(err.Error(), "database.hosts") {
			t.Errorf("hosts %q: %v", bad, err)
		}
	}
}
