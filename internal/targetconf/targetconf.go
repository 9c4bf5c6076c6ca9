// Package targetconf holds a delivery target's settings as the configuration reads them
// (targets.<NAME>): the Config struct, the sink kinds and the checks of Validate. It is plain
// data, so that internal/config can hold and check the targets without importing the sinks
// and their client libraries (internal/target opens a sink from a Config).
package targetconf

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"msgx/internal/secret"
)

// The sink kinds a target can use (Config.Sink).
const (
	SinkKafka         = "kafka"
	SinkRedis         = "redis"
	SinkElasticsearch = "elasticsearch"
	SinkWebhook       = "webhook"
	SinkFile          = "file"
	// SinkRedisFlights keeps the Redis flight layout as a projection of FLIGHT_STATE (phase
	// B, target REDIS_FLIGHT only; internal/target/redisflights.go).
	SinkRedisFlights = "redis-flights"
)

// FormatLegacy is the redis format that publishes the legacy's FLOP notification.
const FormatLegacy = "legacy"

// notifyTarget is the target whose events the legacy format converts (handler.TargetNotify).
const notifyTarget = "REDIS_NOTIFY"

// MinKafkaMaxRecordBytes and MaxKafkaMaxRecordBytes bound a Kafka target's
// max-record-bytes. The floor leaves room for a value after the record's own overhead; the
// ceiling stays well under franz-go's 100 MiB limit on one request.
const (
	MinKafkaMaxRecordBytes = 4 << 10
	MaxKafkaMaxRecordBytes = 64 << 20
)

// SASL mechanisms accepted by a Kafka target (SASLConfig.Mechanism).
const (
	SASLPlain       = "PLAIN"
	SASLScramSHA256 = "SCRAM-SHA-256"
	SASLScramSHA512 = "SCRAM-SHA-512"
)

// FlightProjection is the only target a redis-flights sink may serve: REDIS_FLIGHT keeps the
// Redis flight layout of phase A (docs/redis-flights.md) as a projection of FLIGHT_STATE in
// phase B.
const FlightProjection = "REDIS_FLIGHT"

// FlightProjectionSource is the target whose events REDIS_FLIGHT receives a copy of: the
// Elasticsearch flight document events carry the whole record after each change
// (es-upsert) or the deleted FLID (es-delete), one event per flight change.
const FlightProjectionSource = "ES_FLIGHT"

// Config is one target's settings, as read from YAML under targets.<NAME> (kebab-case keys).
// Only the settings of the chosen sink are used; the zero value of each is its default
// (target.Open applies them).
type Config struct {
	Sink string `yaml:"sink"` // kafka | redis | elasticsearch | webhook | file

	// Kafka.
	Brokers  []string   `yaml:"brokers"`   // seed brokers, host:port; required
	Topic    string     `yaml:"topic"`     // required
	ClientID string     `yaml:"client-id"` // default: franz-go's "kgo"
	TLS      TLSConfig  `yaml:"tls"`       // also used by redis, elasticsearch and webhook
	SASL     SASLConfig `yaml:"sasl"`
	// MaxRecordBytes bounds one produce batch, and so one record with its key and headers
	// (franz-go's ProducerBatchMaxBytes, set to this). Default target.DefaultKafkaMaxRecordBytes,
	// franz-go's own default and Kafka's max.message.bytes default. The schedule batch is
	// split so that no record passes it; keep it at or under the topic's max.message.bytes.
	MaxRecordBytes int `yaml:"max-record-bytes"`
	// Key is the Kafka key of every record that has none of its own: each KAFKA_SCHD batch
	// record, and an event without a flight. One key means one partition, so those records
	// stay in order. Default: the target name.
	Key string `yaml:"key"`

	// Redis.
	Addr     string `yaml:"addr"`     // default 127.0.0.1:6379
	Password string `yaml:"password"` // redis AUTH password; elasticsearch basic-auth password
	DB       int    `yaml:"db"`
	Channel  string `yaml:"channel"` // required, except with format legacy (default FLOP)
	// Format is what a redis target publishes: empty for the delivery envelope, "legacy" for
	// the legacy web-socket service's FLOP notification (internal/legacyflop), built from
	// REDIS_NOTIFY events (the target REDIS_NOTIFY itself, or one with copy-of: REDIS_NOTIFY).
	Format string `yaml:"format"`

	// Redis-flights (also addr, password, db, tls: unset, they default to the redis block's).
	KeyPrefix string `yaml:"key-prefix"` // the flight layout's prefix; default redis.key-prefix
	// Sentinel finds the projection's Redis through Sentinel and follows its failovers. Not
	// read from YAML: a redis-flights target without an addr of its own takes the redis
	// block's (redis.sentinel), as it takes its address.
	Sentinel Sentinel `yaml:"-"`
	// Location is the airport's zone, which a flight's local day is taken in (sis.timezone).
	// Not read from YAML; nil means UTC.
	Location *time.Location `yaml:"-"`

	// Elasticsearch.
	Addresses []string `yaml:"addresses"` // default http://127.0.0.1:9200
	Index     string   `yaml:"index"`     // required
	Username  string   `yaml:"username"`  // basic-auth user (elasticsearch), ACL user (redis)
	APIKey    string   `yaml:"api-key"`   // base64 API key; excludes username/password

	// Webhook.
	URL    string `yaml:"url"`    // required, http or https
	Secret string `yaml:"secret"` // required, the HMAC-SHA256 key

	// File.
	Path string `yaml:"path"` // default <dataDir>/outbox/<NAME>.jsonl

	// Logger receives a sink's lifecycle lines (for the file sink: a torn last line cut at
	// open). Not read from YAML; nil means slog.Default().
	Logger *slog.Logger `yaml:"-"`

	// Common.
	Timeout time.Duration `yaml:"timeout"` // per send; default 10s
	// ShowPath lets msgx show the path and the ordinary query parameters of this target's
	// URLs (url, addresses, brokers, addr) wherever it shows them (the configuration view,
	// errors, logs); by default only their scheme, host and port show, as a webhook's path
	// is often its token. Secret parameters (token=, code=, sig=, key=, …), the fragment and
	// the userinfo are masked either way (internal/secret).
	ShowPath bool `yaml:"show-path"`
	// CopyOf names a target the handlers emit to (REDIS_NOTIFY, KAFKA_FLOP, …): this target
	// receives a copy of each of its events, in its own FIFO. It is how a webhook (or a
	// second Kafka cluster) gets events; empty means the target's own events only.
	CopyOf string `yaml:"copy-of"`
	// StartAt is where a copy-of target first configured starts in the outbox's log of flight
	// changes: "end" (default: the changes written from then on) or "earliest" (every one the
	// log still holds). It matters only the first time: after that the target goes on from
	// where it is.
	StartAt string `yaml:"start-at"`
}

// Where a copy-of target first configured starts (Config.StartAt).
const (
	StartAtEnd      = "end"
	StartAtEarliest = "earliest"
)

// URLs returns the URLs and addresses of the target (url, addresses, brokers, addr), as
// configured.
func (c Config) URLs() []string {
	var out []string
	for _, u := range append(append([]string{c.URL, c.Addr}, c.Addresses...), c.Brokers...) {
		if u != "" {
			out = append(out, u)
		}
	}
	return out
}

// Shown returns c as msgx shows it (the configuration view): each URL and address as
// secret.URL shows it, with its path when ShowPath is set. Passwords and keys are left to the
// caller.
func (c Config) Shown() Config {
	show := func(s string) string { return secret.URL(s, c.ShowPath) }
	list := func(l []string) []string {
		if l == nil {
			return nil
		}
		out := make([]string, len(l))
		for i, s := range l {
			out[i] = show(s)
		}
		return out
	}
	if c.URL != "" {
		c.URL = show(c.URL)
	}
	if c.Addr != "" {
		c.Addr = show(c.Addr)
	}
	c.Addresses, c.Brokers = list(c.Addresses), list(c.Brokers)
	return c
}

// TLSConfig is the tls block of a network target. Files are PEM.
type TLSConfig struct {
	Enabled            bool   `yaml:"enabled"`
	CAFile             string `yaml:"ca-file"`   // roots to trust; default the system pool
	CertFile           string `yaml:"cert-file"` // client certificate, with key-file
	KeyFile            string `yaml:"key-file"`
	InsecureSkipVerify bool   `yaml:"insecure-skip-verify"`
}

// SASLConfig is the sasl block of a Kafka target. An empty mechanism means no SASL.
type SASLConfig struct {
	Mechanism string `yaml:"mechanism"` // PLAIN | SCRAM-SHA-256 | SCRAM-SHA-512
	Username  string `yaml:"username"`
	Password  string `yaml:"password"`
}

// Validate checks the settings of target name and returns an error naming the first
// missing or invalid key as targets.<NAME>.<key>. It does not read files or dial.
func (c Config) Validate(name string) error {
	key := func(k string) string { return "targets." + name + "." + k }
	if name == "" {
		return errors.New("targets: a target has an empty name")
	}
	if c.Timeout < 0 {
		return fmt.Errorf("%s: must not be negative, got %s", key("timeout"), c.Timeout)
	}
	switch c.StartAt {
	case "", StartAtEnd, StartAtEarliest:
	default:
		return fmt.Errorf("%s: %q is not %s or %s", key("start-at"), c.StartAt, StartAtEnd, StartAtEarliest)
	}
	var err error
	switch c.Sink {
	case SinkKafka:
		err = c.validateKafka(key)
	case SinkRedis:
		err = c.validateRedis(name, key)
	case SinkRedisFlights:
		err = c.validateRedisFlights(name, key)
	case SinkElasticsearch:
		err = c.validateElasticsearch(key)
	case SinkWebhook:
		err = c.validateWebhook(key)
	case SinkFile:
		if c.Path == "" && (filepath.Base(name) != name || name == "." || name == "..") {
			return fmt.Errorf("%s: required, the target name %q cannot be a file name", key("path"), name)
		}
	case "":
		return fmt.Errorf("%s: required (one of kafka, redis, elasticsearch, webhook, file, redis-flights)", key("sink"))
	default:
		return fmt.Errorf("%s: %q is not one of kafka, redis, elasticsearch, webhook, file, redis-flights", key("sink"), c.Sink)
	}
	if err != nil {
		return err
	}
	if c.Format != "" && c.Sink != SinkRedis {
		return fmt.Errorf("%s: only a redis target has a format", key("format"))
	}
	if t := c.TLS; !t.Enabled && (t.CAFile != "" || t.CertFile != "" || t.KeyFile != "" || t.InsecureSkipVerify) {
		return fmt.Errorf("%s: tls settings are given but tls.enabled is false", key("tls.enabled"))
	}
	if (c.TLS.CertFile == "") != (c.TLS.KeyFile == "") {
		return fmt.Errorf("%s: cert-file and key-file go together", key("tls.key-file"))
	}
	return nil
}

// validateKafka checks the settings of a kafka target; key names them.
func (c Config) validateKafka(key func(string) string) error {
	if len(c.Brokers) == 0 {
		return fmt.Errorf("%s: required for sink kafka (a list of host:port)", key("brokers"))
	}
	for i, b := range c.Brokers {
		if strings.TrimSpace(b) == "" {
			return fmt.Errorf("%s[%d]: empty broker address", key("brokers"), i)
		}
	}
	if c.Topic == "" {
		return fmt.Errorf("%s: required for sink kafka", key("topic"))
	}
	if c.MaxRecordBytes != 0 && (c.MaxRecordBytes < MinKafkaMaxRecordBytes || c.MaxRecordBytes > MaxKafkaMaxRecordBytes) {
		return fmt.Errorf("%s: must be between %d and %d bytes, got %d", key("max-record-bytes"),
			MinKafkaMaxRecordBytes, MaxKafkaMaxRecordBytes, c.MaxRecordBytes)
	}
	switch c.SASL.Mechanism {
	case "":
	case SASLPlain, SASLScramSHA256, SASLScramSHA512:
		if c.SASL.Username == "" {
			return fmt.Errorf("%s: required with sasl.mechanism %s", key("sasl.username"), c.SASL.Mechanism)
		}
	default:
		return fmt.Errorf("%s: %q is not one of %s, %s, %s", key("sasl.mechanism"), c.SASL.Mechanism,
			SASLPlain, SASLScramSHA256, SASLScramSHA512)
	}
	return nil
}

// validateRedis checks the settings of the redis target name; key names them.
func (c Config) validateRedis(name string, key func(string) string) error {
	switch c.Format {
	case "":
		if c.Channel == "" {
			return fmt.Errorf("%s: required for sink redis", key("channel"))
		}
	case FormatLegacy:
		if name != notifyTarget && c.CopyOf != notifyTarget {
			return fmt.Errorf("%s: legacy is built from %s events: use it on target %s or on a target with copy-of: %s", key("format"), notifyTarget, notifyTarget, notifyTarget)
		}
	default:
		return fmt.Errorf("%s: %q is not empty (the delivery envelope) or legacy", key("format"), c.Format)
	}
	if c.DB < 0 {
		return fmt.Errorf("%s: must not be negative, got %d", key("db"), c.DB)
	}
	return nil
}

// validateRedisFlights checks the settings of the redis-flights target name; key names them.
func (c Config) validateRedisFlights(name string, key func(string) string) error {
	if name != FlightProjection {
		return fmt.Errorf("%s: redis-flights serves the target %s only (the Redis flight projection of phase B)", key("sink"), FlightProjection)
	}
	if c.CopyOf != "" && c.CopyOf != FlightProjectionSource {
		return fmt.Errorf("%s: a redis-flights target takes copies of %s events (the whole record after each change), not %q", key("copy-of"), FlightProjectionSource, c.CopyOf)
	}
	if c.DB < 0 {
		return fmt.Errorf("%s: must not be negative, got %d", key("db"), c.DB)
	}
	if c.TLS.Enabled || c.Username != "" {
		return fmt.Errorf("%s: a redis-flights target has no tls or username in this version (addr, db, password, key-prefix)", key("tls.enabled"))
	}
	return nil
}

// validateElasticsearch checks the settings of an elasticsearch target; key names them.
func (c Config) validateElasticsearch(key func(string) string) error {
	if c.Index == "" {
		return fmt.Errorf("%s: required for sink elasticsearch", key("index"))
	}
	for i, a := range c.Addresses {
		if err := checkHTTPURL(a); err != nil {
			return fmt.Errorf("%s[%d]: %w", key("addresses"), i, err)
		}
	}
	if c.APIKey != "" && (c.Username != "" || c.Password != "") {
		return fmt.Errorf("%s: set either api-key or username/password, not both", key("api-key"))
	}
	return nil
}

// validateWebhook checks the settings of a webhook target; key names them.
func (c Config) validateWebhook(key func(string) string) error {
	if c.URL == "" {
		return fmt.Errorf("%s: required for sink webhook", key("url"))
	}
	if err := checkHTTPURL(c.URL); err != nil {
		return fmt.Errorf("%s: %w", key("url"), err)
	}
	if c.Secret == "" {
		return fmt.Errorf("%s: required for sink webhook (the HMAC-SHA256 signing key)", key("secret"))
	}
	return nil
}

func checkHTTPURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("%q: scheme must be http or https", s)
	}
	if u.Host == "" {
		return fmt.Errorf("%q: no host", s)
	}
	return nil
}

// Sentinel is where Sentinel finds a Redis master: the master's name, the sentinels
// (host:port) and their own password. Zero: no Sentinel, the target's addr is used.
type Sentinel struct {
	Master   string
	Addrs    []string
	Password string
}
