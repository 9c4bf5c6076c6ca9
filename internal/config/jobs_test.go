package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The history, retention and log shipping keys: defaults, from YAML or the environment, and
// bad values that name their key (the daily jobs' times and schedule: internal/jobs and
// internal/app).
func TestJobsRetentionAndLogShippingKeys(t *testing.T) {
	c, err := Load("", nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.History.KeepDays != 3 || c.Retention.Events != 7*24*time.Hour || c.Retention.Archive != 90*24*time.Hour ||
		c.History.Elasticsearch.Index != "msgx-flight-history" || c.Log.Logstash.Addr != "" || c.Log.Logstash.QueueSize != 4096 {
		t.Fatalf("defaults: %+v %+v %+v", c.History, c.Retention, c.Log)
	}
	path := filepath.Join(t.TempDir(), "msgx.yaml")
	os.WriteFile(path, []byte("jobs:\n  archive-at: \"off\"\n  history-sweep-at: \"02:15\"\nhistory:\n  keep-days: 5\n  elasticsearch: {url: \"http://es1:9200,http://es2:9200\", index: flights-hist}\nlog:\n  logstash: {addr: \"127.0.0.1:5044\"}\n"), 0o644)
	c, err = Load(path, []string{"MSGX_JOBS_RETENTION_AT=", "MSGX_RETENTION_EVENTS=48h"})
	if err != nil {
		t.Fatal(err)
	}
	if c.History.KeepDays != 5 || c.Retention.Events != 48*time.Hour || c.Log.Logstash.Addr != "127.0.0.1:5044" {
		t.Fatalf("loaded: %+v", c)
	}
	for env, key := range map[string]string{
		"MSGX_HISTORY_KEEP_DAYS=-1":              "history.keep-days",
		"MSGX_HISTORY_ELASTICSEARCH_URL=es:9200": "history.elasticsearch.url",
		"MSGX_HISTORY_ELASTICSEARCH_TIMEOUT=0s":  "history.elasticsearch.timeout",
		"MSGX_RETENTION_EVENTS=-1h":              "retention.events",
		"MSGX_RETENTION_ARCHIVE=90d":             "retention.archive",
		"MSGX_LOG_LOGSTASH_ADDR=logstash":        "log.logstash.addr",
		"MSGX_LOG_LOGSTASH_ADDR=ls:5044/x?t=1":   "log.logstash.addr",
		"MSGX_LOG_LOGSTASH_QUEUE_SIZE=0":         "log.logstash.queue-size",
	} {
		if _, err := Load("", []string{env}); err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%s: error %v does not name %s", env, err, key)
		}
	}
	if _, err := Load("", []string{"MSGX_HISTORY_ELASTICSEARCH_URL=http://es:9200", "MSGX_HISTORY_ELASTICSEARCH_INDEX="}); err == nil || !strings.Contains(err.Error(), "history.elasticsearch.index") {
		t.Errorf("an ES URL without an index: %v", err)
	}
}

// jobs.rebuild-days: the default span, an override from the environment, and refused spans
// that name the key.
func TestRebuildDays(t *testing.T) {
	c, err := Load("", nil)
	if err != nil {
		t.Fatal(err)
	}
	if from, to := c.RebuildDays(); from != -1 || to != 7 {
		t.Fatalf("default rebuild days %d..%d, want -1..7", from, to)
	}
	c, err = Load("", []string{"MSGX_JOBS_REBUILD_DAYS=-3..+1"})
	if err != nil {
		t.Fatal(err)
	}
	if from, to := c.RebuildDays(); from != -3 || to != 1 {
		t.Fatalf("rebuild days %d..%d, want -3..1", from, to)
	}
	for _, bad := range []string{"7", "7..-1", "a..b", "-400..0", "0..62", ""} {
		_, err := Load("", []string{"MSGX_JOBS_REBUILD_DAYS=" + bad})
		if err == nil || !strings.Contains(err.Error(), "jobs.rebuild-days") {
			t.Errorf("jobs.rebuild-days=%q: %v", bad, err)
		}
	}
}
