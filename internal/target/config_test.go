package target

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"msgx/internal/targetconf"
)

func TestValidateNamesTheKey(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    Config
		key  string // the key the error must name; "" for valid
	}{
		{"no sink", Config{}, "targets.T.sink"},
		{"unknown sink", Config{Sink: "kafak"}, "targets.T.sink"},
		{"kafka ok", Config{Sink: targetconf.SinkKafka, Brokers: []string{"k:9092"}, Topic: "t"}, ""},
		{"kafka no brokers", Config{Sink: targetconf.SinkKafka, Topic: "t"}, "targets.T.brokers"},
		{"kafka empty broker", Config{Sink: targetconf.SinkKafka, Brokers: []string{" "}, Topic: "t"}, "targets.T.brokers[0]"},
		{"kafka no topic", Config{Sink: targetconf.SinkKafka, Brokers: []string{"k:9092"}}, "targets.T.topic"},
		{"kafka bad sasl", Config{Sink: targetconf.SinkKafka, Brokers: []string{"k:9092"}, Topic: "t", SASL: targetconf.SASLConfig{Mechanism: "GSSAPI"}}, "targets.T.sasl.mechanism"},
		{"kafka sasl no user", Config{Sink: targetconf.SinkKafka, Brokers: []string{"k:9092"}, Topic: "t", SASL: targetconf.SASLConfig{Mechanism: targetconf.SASLScramSHA512}}, "targets.T.sasl.username"},
		{"tls files without enabled", Config{Sink: targetconf.SinkKafka, Brokers: []string{"k:9092"}, Topic: "t", TLS: TLSConfig{CAFile: "ca.pem"}}, "targets.T.tls.enabled"},
		{"tls cert without key", Config{Sink: targetconf.SinkKafka, Brokers: []string{"k:9092"}, Topic: "t", TLS: TLSConfig{Enabled: true, CertFile: "c.pem"}}, "targets.T.tls.key-file"},
		{"kafka max-record-bytes ok", Config{Sink: targetconf.SinkKafka, Brokers: []string{"k:9092"}, Topic: "t", MaxRecordBytes: targetconf.MinKafkaMaxRecordBytes}, ""},
		{"kafka max-record-bytes too small", Config{Sink: targetconf.SinkKafka, Brokers: []string{"k:9092"}, Topic: "t", MaxRecordBytes: targetconf.MinKafkaMaxRecordBytes - 1}, "targets.T.max-record-bytes"},
		{"kafka max-record-bytes too big", Config{Sink: targetconf.SinkKafka, Brokers: []string{"k:9092"}, Topic: "t", MaxRecordBytes: targetconf.MaxKafkaMaxRecordBytes + 1}, "targets.T.max-record-bytes"},
		{"kafka max-record-bytes negative", Config{Sink: targetconf.SinkKafka, Brokers: []string{"k:9092"}, Topic: "t", MaxRecordBytes: -1}, "targets.T.max-record-bytes"},
		{"redis ok", Config{Sink: targetconf.SinkRedis, Channel: "msgx:notify"}, ""},
		{"redis no channel", Config{Sink: targetconf.SinkRedis}, "targets.T.channel"},
		{"redis negative db", Config{Sink: targetconf.SinkRedis, Channel: "c", DB: -1}, "targets.T.db"},
		{"es ok", Config{Sink: targetconf.SinkElasticsearch, Index: "i"}, ""},
		{"es no index", Config{Sink: targetconf.SinkElasticsearch}, "targets.T.index"},
		{"es bad address", Config{Sink: targetconf.SinkElasticsearch, Index: "i", Addresses: []string{"127.0.0.1:9200"}}, "targets.T.addresses[0]"},
		{"es two auths", Config{Sink: targetconf.SinkElasticsearch, Index: "i", APIKey: "k", Username: "u"}, "targets.T.api-key"},
		{"webhook ok", Config{Sink: targetconf.SinkWebhook, URL: "https://h.example/x", Secret: "s"}, ""},
		{"webhook no url", Config{Sink: targetconf.SinkWebhook, Secret: "s"}, "targets.T.url"},
		{"webhook ftp url", Config{Sink: targetconf.SinkWebhook, URL: "ftp://h/x", Secret: "s"}, "targets.T.url"},
		{"webhook no secret", Config{Sink: targetconf.SinkWebhook, URL: "http://h/x"}, "targets.T.secret"},
		{"file ok", Config{Sink: targetconf.SinkFile}, ""},
		{"negative timeout", Config{Sink: targetconf.SinkFile, Timeout: -time.Second}, "targets.T.timeout"},
		{"start at the earliest", Config{Sink: targetconf.SinkFile, CopyOf: "REDIS_NOTIFY", StartAt: targetconf.StartAtEarliest}, ""},
		{"start at a bad place", Config{Sink: targetconf.SinkFile, CopyOf: "REDIS_NOTIFY", StartAt: "begin"}, "targets.T.start-at"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.c.Validate("T")
			if tc.key == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil || !strings.HasPrefix(err.Error(), tc.key+":") {
				t.Fatalf("Validate = %v; want an error naming %s", err, tc.key)
			}
		})
	}
	if err := (Config{Sink: targetconf.SinkFile}).Validate("../x"); err == nil || !strings.Contains(err.Error(), "targets.../x.path") {
		t.Errorf("a file target whose name is a path must name its path key, got %v", err)
	}
}

func TestDefaults(t *testing.T) {
	c := withDefaults(Config{Sink: targetconf.SinkRedis, Channel: "c"}, "R", "/data")
	if c.Addr != DefaultRedisAddr || c.Timeout != DefaultTimeout {
		t.Errorf("redis defaults: addr %q timeout %s", c.Addr, c.Timeout)
	}
	c = withDefaults(Config{Sink: targetconf.SinkElasticsearch, Index: "i"}, "E", "/data")
	if len(c.Addresses) != 1 || c.Addresses[0] != DefaultElasticsearchAddress {
		t.Errorf("elasticsearch default addresses %v", c.Addresses)
	}
	c = withDefaults(Config{Sink: targetconf.SinkFile}, "KAFKA_SCHD", "/data")
	if want := filepath.Join("/data", "outbox", "KAFKA_SCHD.jsonl"); c.Path != want {
		t.Errorf("file default path %q, want %q", c.Path, want)
	}
	c = withDefaults(Config{Sink: targetconf.SinkKafka, Timeout: 3 * time.Second}, "K", "")
	if c.Timeout != 3*time.Second {
		t.Errorf("a set timeout became %s", c.Timeout)
	}
	if c.MaxRecordBytes != DefaultKafkaMaxRecordBytes || c.Key != "K" {
		t.Errorf("kafka defaults: max-record-bytes %d, key %q", c.MaxRecordBytes, c.Key)
	}
	c = withDefaults(Config{Sink: targetconf.SinkKafka, MaxRecordBytes: 5000, Key: "k"}, "K", "")
	if c.MaxRecordBytes != 5000 || c.Key != "k" {
		t.Errorf("set kafka keys became: max-record-bytes %d, key %q", c.MaxRecordBytes, c.Key)
	}
}

func TestOpenFailsOnBadTLSFiles(t *testing.T) {
	_, err := Open(context.Background(), "K", Config{Sink: targetconf.SinkKafka, Brokers: []string{"k:9092"}, Topic: "t",
		TLS: TLSConfig{Enabled: true, CAFile: filepath.Join(t.TempDir(), "missing.pem")}}, "")
	if err == nil || !strings.Contains(err.Error(), "targets.K.tls") {
		t.Fatalf("Open with a missing ca-file = %v", err)
	}
}
