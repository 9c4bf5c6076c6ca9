// Package config is msgx's one typed configuration: every key with its default (seed §6 plus
// the database, HTTP, data directory, SIS and delivery settings), read from an optional YAML
// file and then from MSGX_* environment variables, and checked so that a bad value stops the
// start with a message naming its key.
//
// An environment variable's name is the key path upper-cased, dots and dashes turned into
// underscores, prefixed MSGX_: pipeline.max-attempts → MSGX_PIPELINE_MAX_ATTEMPTS.
//
// The configuration holds the typed sections, the defaults, the loading and the generic
// checks (Validate); a rule that belongs to a subsystem is that subsystem's own check over its
// section, run by the wiring root (app.LoadConfig). So config is plain data: it imports only
// the targets' settings (internal/targetconf), the masking of secrets (internal/secret) and
// the did-you-mean of unknown keys (internal/suggest), never the sinks, stores, codecs or jobs
// that use it, so that what depends on it compiles without them.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"msgx/internal/targetconf"
)

// Config is the whole configuration.
type Config struct {
	Phase       string `yaml:"phase"`        // A: Redis flight store, FLIGHT_STATE its mirror; B: SQL FLIGHT_STATE
	ServiceName string `yaml:"service-name"` // the name msgx reports itself by
	DataDir     string `yaml:"data-dir"`     // where the SQLite file and the file outboxes live

	HTTP struct {
		Addr         string `yaml:"addr"`           // listen address
		MaxBodyBytes int64  `yaml:"max-body-bytes"` // inbox size limit
		// MaxInflightBytes bounds the bytes of the bodies the inbox holds at once (read, not
		// yet committed); beyond it a post is answered 503 with Retry-After.
		MaxInflightBytes int64 `yaml:"max-inflight-bytes"`
		// InboxDeadline is the longest the inbox holds a sender: a message the database has not
		// stored within it is answered 503 with Retry-After and not acknowledged.
		InboxDeadline time.Duration `yaml:"inbox-deadline"`
		// InboxAllow restricts the inbox (POST /cminmsgs/send) to these source networks
		// (CIDR or single address) and/or tokens ("token:NAME" of auth.tokens); empty: open.
		InboxAllow Strings `yaml:"inbox-allow"`
		// InboxOrigins are the browser origins ("https://ops.example") whose pages may post to
		// the inbox: a post carrying another Origin, or Sec-Fetch-Site cross-site or
		// same-site, is refused 403. Empty: every browser post is refused (the gateway sends
		// neither header).
		InboxOrigins Strings `yaml:"inbox-origins"`
		// MaxStreams bounds the live-list streams (SSE) open at once, MaxStreamsPerToken those
		// of one token (or session's token); beyond them a stream is answered 429.
		MaxStreams         int `yaml:"max-streams"`
		MaxStreamsPerToken int `yaml:"max-streams-per-token"`
		// AdminAddr, when set, is a second listener serving the API and the console; http.addr
		// then serves only the inbox, /healthz and /metrics.
		AdminAddr string `yaml:"admin-addr"`
	} `yaml:"http"`

	// Auth is the ops API's and console's access control (docs/operations.md, "Access control").
	Auth struct {
		// Tokens are the API's bearer tokens, stored as hashes (msgx token hash SECRET). None:
		// the API and the console answer only to loopback clients.
		Tokens Tokens `yaml:"tokens"`
	} `yaml:"auth"`

	Database struct {
		Driver string `yaml:"driver"` // sqlite | mysql
		DSN    string `yaml:"dsn"`    // sqlite: file path (default <data-dir>/msgx.db); mysql: user:pass@tcp(host:port)/db

		// Hosts lists the nodes of a MariaDB Galera cluster (host:port) for mysql (issue 22):
		// msgx uses the first that answers and is synced, and moves to the next when its node
		// fails. The DSN keeps the user, password, database and parameters; its own address is
		// then unused. Empty: the DSN's address alone.
		Hosts Strings `yaml:"hosts"`

		// Database outages (issue 7, item 6). WaitTimeout bounds how long `msgx serve` waits
		// for a MySQL server that does not answer at start, trying again with backoff and
		// logging each try; then it exits with code 5. 0 waits without limit. A SQLite file
		// that cannot be opened is not waited for.
		WaitTimeout time.Duration `yaml:"wait-timeout"`

		// A hung node is left in seconds (issue 33). StatementTimeout is the deadline of
		// ordinary statements on mysql (the connections' readTimeout and writeTimeout unless
		// the DSN names them); LongStatementTimeout that of the long ones (the archive, the
		// retention sweeps, the status counts; migrations have none). With several hosts
		// ProbeEvery and ProbeTimeout set the probe of the node in use: one that does not
		// answer SELECT 1 within ProbeTimeout is marked down and its connections closed (0: no
		// probe).
		StatementTimeout     time.Duration `yaml:"statement-timeout"`
		LongStatementTimeout time.Duration `yaml:"long-statement-timeout"`
		ProbeEvery           time.Duration `yaml:"probe-every"`
		ProbeTimeout         time.Duration `yaml:"probe-timeout"`
	} `yaml:"database"`

	Pipeline struct {
		PollInterval time.Duration `yaml:"poll-interval"`
		MaxAttempts  int           `yaml:"max-attempts"`
		BackoffMs    []int         `yaml:"backoff-ms"`
		BackoffCapMs int           `yaml:"backoff-cap-ms"`
		HeadDeadline time.Duration `yaml:"head-deadline"`
		// ParkClasses are the failure classes parked at once (DEAD under their own class,
		// replayable) instead of retried: a comma-separated list or a YAML list of
		// CODEC_ERROR, UNSUPPORTED, ORPHAN. Empty restores retry-then-EXHAUSTED.
		ParkClasses List `yaml:"park-classes"`
		// BatchSize is how many due messages the pump may commit in one transaction, a
		// savepoint each, sharing one durable commit; 1 commits each message alone.
		BatchSize int `yaml:"batch-size"`
		// BatchWait is how long a backlog smaller than a batch may wait for more messages;
		// 0 takes what is due now. A lone message is never held.
		BatchWait time.Duration `yaml:"batch-wait"`
		// Autostart runs the pump and the dispatcher in `msgx serve`. Unset means on for the
		// embedded SQLite default and off for MySQL, where production turns it on explicitly.
		Autostart *bool `yaml:"autostart"`
	} `yaml:"pipeline"`

	Delivery struct {
		// HeadDeadline is how long the head event of a target may keep failing with INFRA
		// errors (network, 5xx, broker down) before it goes DEAD; until then it stays PENDING
		// and is retried with backoff capped at pipeline.backoff-cap-ms.
		HeadDeadline time.Duration `yaml:"head-deadline"`
	} `yaml:"delivery"`

	Schd struct {
		FlushPeriod time.Duration `yaml:"flush-period"`
		FlushLimit  int           `yaml:"flush-limit"`
	} `yaml:"schd"`

	// Identity: how the pump tells a duplicate (SKIPPED duplicate-of) from a new message.
	// Validate leaves Mode one of pipeline's identity modes: content when unset, seqn-day when
	// only IncludeDayBoundary (the older spelling of seqn-day) is set.
	Identity struct {
		Mode               string `yaml:"mode"`
		IncludeDayBoundary bool   `yaml:"include-day-boundary"`
	} `yaml:"identity"`

	// Metrics: how often the instance running the pump reads the queue's state (messages
	// per state, each target's backlog and lag, the head) for the /metrics gauges.
	Metrics struct {
		SampleInterval time.Duration `yaml:"sample-interval"`
	} `yaml:"metrics"`

	// Alerts are thresholds of the alert rules in deploy/ that msgx exports as gauges, so the
	// configuration sets them without editing the rules file.
	Alerts struct {
		// PauseWarn is how long the pump or a target may stay paused before
		// MsgxPausedTooLong fires (msgx_pause_warn_seconds).
		PauseWarn time.Duration `yaml:"pause-warn"`
	} `yaml:"alerts"`

	ConsistencyCheck struct {
		OnStartup        bool    `yaml:"on-startup"`
		DailySampleRatio float64 `yaml:"daily-sample-ratio"`
		// DailyAt is the local time of the daily sample (phase A: CONSISTENCY_CHECK); "" or
		// "off" switches it off.
		DailyAt string `yaml:"daily-at"`
	} `yaml:"consistency-check"`

	SIS struct {
		Timezone string `yaml:"timezone"` // the airport's zone; every SIS body time is local time in it
		// MaxRecords bounds the records one message may carry (FLOP and reference records,
		// the FLTRs of a SCHD or SCHS); a message with more is a CODEC_ERROR (parked,
		// replayable once the limit is raised), decoded no further, so one huge message
		// cannot take the server's memory.
		MaxRecords int `yaml:"max-records"`
	} `yaml:"sis"`

	Ref struct {
		AllowEmptyReplace bool `yaml:"allow-empty-replace"` // a DNLD/RESP with zero records may wipe its TYPE
	} `yaml:"ref"`

	// Cut-over onto a legacy database (docs/cut-over.md): which rows
	// the legacy gateway inserted into CMINMSGS msgx adopts, and the zone of the legacy's
	// datetime columns.
	Inbox struct {
		// AdoptFromID: adopt only gateway rows with CMINMSGS_ID at or above it (0: no bound).
		AdoptFromID int64 `yaml:"adopt-from-id"`
		// AdoptSince: adopt only gateway rows received at or after it, airport local time in
		// legacy.timezone ("2026-12-01 06:00:00", "2026-12-01") or RFC 3339; empty: no bound.
		AdoptSince string `yaml:"adopt-since"`
	} `yaml:"inbox"`
	Legacy struct {
		// Timezone of CMINMSGS_DATE_RECEIVED, _DATE_PROCESSED and _SUBSYSTEM_DATE_SENT, which
		// the legacy writes in airport local time; empty means sis.timezone.
		Timezone string `yaml:"timezone"`
	} `yaml:"legacy"`

	// Mode is normal (default) or shadow: beside a running legacy, msgx reads the live
	// CMINMSGS and writes nothing into the legacy tables (docs/cut-over.md, "Shadow mode").
	Mode          string `yaml:"mode"`
	ShadowOptions struct {
		// StartAfterID: the shadow adopts the VALID CMINMSGS rows with higher ids. -1 (the
		// default) means the watermark stored at the shadow's first start (the highest id then).
		StartAfterID int64 `yaml:"start-after-id"`
	} `yaml:"shadow"`

	// Requests are the data requests to the AODB (docs/operations.md, "Data requests to the AODB").
	Requests struct {
		// Timeout is how long a request waits for its answer before it is sent again or
		// expires.
		Timeout time.Duration `yaml:"timeout"`
		// MaxResends is how many times a request without an answer is sent again.
		MaxResends int `yaml:"max-resends"`
	} `yaml:"requests"`

	// Eureka registration (docs/operations.md, "Service registration (Eureka)"): the instance registers
	// under RegistryName, heartbeats, and is UP or OUT_OF_SERVICE as the pump's health says.
	Eureka struct {
		Enabled bool `yaml:"enabled"`
		// ServiceURL is the Eureka servers, comma-separated, tried in order:
		// http://eureka1:8761/eureka,http://eureka2:8761/eureka.
		ServiceURL string        `yaml:"service-url"`
		Heartbeat  time.Duration `yaml:"heartbeat"` // lease renewal interval (default 30s)
		// The instance as registered; empty or 0 means derived from http.addr (its host, or
		// this machine's name and first non-loopback IPv4 when it listens on all addresses,
		// and the port it listens on).
		HostName   string `yaml:"hostname"`
		IPAddr     string `yaml:"ip-addr"`
		Port       int    `yaml:"port"`
		InstanceID string `yaml:"instance-id"` // default hostname:name:port
	} `yaml:"eureka"`

	Log struct {
		Level  string `yaml:"level"`  // debug | info | warn | error
		Format string `yaml:"format"` // json | text
		// Logstash ships every log line, as JSON lines over TCP, to a logstash tcp input
		// (json_lines codec) as well, through a bounded queue that drops rather than blocks.
		Logstash struct {
			Addr      string `yaml:"addr"`       // host:port; empty: no shipping
			QueueSize int    `yaml:"queue-size"` // lines held while logstash is slow or down
		} `yaml:"logstash"`
	} `yaml:"log"`

	// Jobs: the local times of day (sis.timezone) at which the instance holding the pump lease
	// enqueues the daily jobs, each once per day; "" or "off" switches one off.
	Jobs struct {
		ArchiveAt      string `yaml:"archive-at"`
		HistorySweepAt string `yaml:"history-sweep-at"`
		RetentionAt    string `yaml:"retention-at"`
		// RebuildDays is the span of local days PROJECTION_REBUILD and the consistency
		// sentinel cover, "FROM..TO" in days from today ("-1..7": yesterday … a week ahead).
		RebuildDays string `yaml:"rebuild-days"`
		// InfraDeadline is how long a job failing INFRA (a dependency down: the database,
		// Redis, the history sink) is retried with the pipeline's backoff, from its first
		// failure, before it is DEAD; 0: INFRA failures follow pipeline.max-attempts and
		// pipeline.head-deadline as the other classes do.
		InfraDeadline time.Duration `yaml:"infra-deadline"`
	} `yaml:"jobs"`

	// History is HISTORY_SWEEP's: how many local days of flights the flight store keeps
	// before today, and where older ones go (Elasticsearch when a URL is set, else JSON lines
	// under <data-dir>/history).
	History struct {
		KeepDays      int `yaml:"keep-days"`
		Elasticsearch struct {
			URL      string        `yaml:"url"` // node URL(s), comma-separated
			Index    string        `yaml:"index"`
			Username string        `yaml:"username"`
			Password string        `yaml:"password"`
			Timeout  time.Duration `yaml:"timeout"`
		} `yaml:"elasticsearch"`
	} `yaml:"history"`

	// Retention is RETENTION's: how long SENT events and archived finished messages are kept
	// (0 keeps them for ever).
	Retention struct {
		Events  time.Duration `yaml:"events"`
		Archive time.Duration `yaml:"archive"`
		// DeadLetters: RETENTION deletes the DEAD events and messages an operator
		// acknowledged longer ago than this (0 keeps them); unacknowledged dead letters are
		// never deleted.
		DeadLetters time.Duration `yaml:"dead-letters"`
	} `yaml:"retention"`

	// Targets are the delivery targets by name (KAFKA_SCHD, KAFKA_FLOP, …).
	Targets map[string]targetconf.Config `yaml:"targets"`

	// Redis is the flight store of phase A (docs/redis-flights.md).
	Redis struct {
		Addr      string `yaml:"addr"`
		DB        int    `yaml:"db"`
		Password  string `yaml:"password"`
		KeyPrefix string `yaml:"key-prefix"`
		// MarkerTTL is how long the marker of a message applied to Redis is kept: well past
		// any retry of the message (pipeline.head-deadline).
		MarkerTTL time.Duration `yaml:"marker-ttl"`
		// AllowVolatile accepts, in phase A, a Redis that keeps nothing on disk (redis.go).
		AllowVolatile bool `yaml:"allow-volatile"`
		// Timeout bounds every call to Redis (dial, write, read): a Redis that does not
		// answer within it fails the call (INFRA), so no database lock is held long behind it.
		Timeout time.Duration `yaml:"timeout"`
		// Sentinel, when Master is set, finds the flight store's Redis through Sentinel
		// (addr is then unused) and follows its failovers.
		Sentinel struct {
			Master   string  `yaml:"master"`
			Addrs    Strings `yaml:"addrs"`
			Password string  `yaml:"password"` // the sentinels' own (requirepass), if any
		} `yaml:"sentinel"`
	} `yaml:"redis"`
}

// Default returns the configuration msgx runs with when nothing is set.
func Default() Config {
	var c Config
	c.Phase = "B"
	c.ServiceName = "msgexchangeapi"
	c.DataDir = "./data"
	c.HTTP.Addr = ":8080"
	c.HTTP.MaxBodyBytes = 32 << 20
	c.HTTP.MaxInflightBytes = 128 << 20
	c.HTTP.InboxDeadline = 5 * time.Second
	c.HTTP.MaxStreams = 256
	c.HTTP.MaxStreamsPerToken = 16
	c.Database.Driver = "sqlite"
	c.Database.WaitTimeout = 2 * time.Minute
	c.Database.StatementTimeout = 5 * time.Second
	c.Database.LongStatementTimeout = 5 * time.Minute
	c.Database.ProbeEvery = time.Second
	c.Database.ProbeTimeout = 2 * time.Second
	c.Pipeline.PollInterval = time.Second
	c.Pipeline.MaxAttempts = 5
	c.Pipeline.BackoffMs = []int{1000, 2000, 4000, 8000, 16000}
	c.Pipeline.BackoffCapMs = 60000
	c.Pipeline.HeadDeadline = 10 * time.Minute
	c.Pipeline.ParkClasses = List{"CODEC_ERROR", "UNSUPPORTED", "ORPHAN"}
	c.Pipeline.BatchSize = 200
	c.Delivery.HeadDeadline = 24 * time.Hour
	c.Schd.FlushPeriod = 3 * time.Second
	c.Schd.FlushLimit = 500
	c.Metrics.SampleInterval = 5 * time.Second
	c.Alerts.PauseWarn = time.Hour
	c.ConsistencyCheck.OnStartup = true
	c.ConsistencyCheck.DailySampleRatio = 0.01
	c.ConsistencyCheck.DailyAt = "05:00"
	c.SIS.Timezone = "Asia/Shanghai"
	c.SIS.MaxRecords = DefaultSISMaxRecords
	c.Log.Level = "info"
	c.Log.Format = "json"
	c.Eureka.Heartbeat = 30 * time.Second
	c.Log.Logstash.QueueSize = 4096
	c.Jobs.ArchiveAt = "03:00"
	c.Jobs.HistorySweepAt = "03:30"
	c.Jobs.RetentionAt = "04:00"
	c.Jobs.RebuildDays = "-1..7"
	c.Jobs.InfraDeadline = 10 * time.Minute
	c.History.KeepDays = 3
	c.History.Elasticsearch.Index = "msgx-flight-history"
	c.History.Elasticsearch.Timeout = 30 * time.Second
	c.Retention.Events = 7 * 24 * time.Hour
	c.Retention.Archive = 90 * 24 * time.Hour
	c.Retention.DeadLetters = 30 * 24 * time.Hour
	c.Mode = "normal"
	c.ShadowOptions.StartAfterID = -1
	c.Requests.Timeout = 10 * time.Minute
	c.Redis.Addr = "127.0.0.1:6379"
	c.Redis.KeyPrefix = DefaultRedisKeyPrefix
	c.Redis.MarkerTTL = 7 * 24 * time.Hour
	c.Redis.Timeout = 2 * time.Second
	c.Requests.MaxResends = 2
	return c
}

// Load reads the YAML file at path (none when empty), then the environment, then validates
// (Validate).
func Load(path string, environ []string) (Config, error) {
	c := Default()
	if path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return c, fmt.Errorf("config: %w%s", err, missingHint(path, err))
		}
		var doc yaml.Node
		if err := yaml.Unmarshal(b, &doc); err != nil {
			return c, fmt.Errorf("config %s: %v", path, err)
		}
		if problems := checkYAML(&doc); len(problems) > 0 {
			return c, fmt.Errorf("config %s: %s", path, strings.Join(problems, "; "))
		}
		dec := yaml.NewDecoder(bytes.NewReader(b))
		dec.KnownFields(true)
		if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) {
			return c, fmt.Errorf("config %s: %s", path, describeYAMLError(b, err))
		}
	}
	if err := applyEnv(&c, environ); err != nil {
		return c, err
	}
	if err := c.Validate(); err != nil {
		return c, err
	}
	return c, nil
}

var yamlLine = regexp.MustCompile(`line (\d+): `)

// describeYAMLError rewrites yaml's "line N: cannot unmarshal …" so that each problem names
// the key at that line (pipeline.max-attempts), not only its line.
func describeYAMLError(doc []byte, err error) string {
	var root yaml.Node
	if yaml.Unmarshal(doc, &root) != nil {
		return err.Error()
	}
	keys := map[int]string{}
	var walk func(n *yaml.Node, path string)
	walk = func(n *yaml.Node, path string) {
		switch n.Kind {
		case yaml.DocumentNode, yaml.SequenceNode:
			for _, c := range n.Content {
				walk(c, path)
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k := n.Content[i].Value
				if path != "" {
					k = path + "." + k
				}
				keys[n.Content[i].Line] = k
				walk(n.Content[i+1], k)
			}
		}
	}
	walk(&root, "")
	return yamlLine.ReplaceAllStringFunc(err.Error(), func(m string) string {
		line, _ := strconv.Atoi(yamlLine.FindStringSubmatch(m)[1])
		if k, ok := keys[line]; ok {
			return fmt.Sprintf("line %d: %s: ", line, k)
		}
		return m
	})
}

// Validate checks the values that need no subsystem to judge them (a duration positive, a
// port in range, a zone known, an enumeration's word) and fills the derived defaults (the
// SQLite path, legacy.timezone). The first bad value ends it, the sections checked in the
// order below. The rules that belong to a subsystem (a target's settings, the pump's batch
// limits and identity, the daily jobs' times, the redis block) are the subsystem's, run by
// the wiring root (app.LoadConfig) after Load.
func (c *Config) Validate() error {
	for _, validate := range []func() error{
		c.validatePhase, c.validateHTTP, c.validateDatabase, c.validatePipeline, c.validateZones,
		c.validateMode, c.validateRequests, c.validateAuth, c.validateEureka, c.validateLog,
		c.validateJobs,
	} {
		if err := validate(); err != nil {
			return err
		}
	}
	return nil
}

// bad is the error of an invalid value: it names the key.
func bad(key, format string, args ...any) error {
	return fmt.Errorf("config: %s: %s", key, fmt.Sprintf(format, args...))
}

// validatePhase checks phase (the redis block is redisflight's to check).
func (c *Config) validatePhase() error {
	if c.Phase != "A" && c.Phase != "B" {
		return bad("phase", "%q is not A or B", c.Phase)
	}
	return nil
}

// validateHTTP checks the instance's name, data directory and listener.
func (c *Config) validateHTTP() error {
	if c.ServiceName == "" {
		return bad("service-name", "must not be empty")
	}
	if c.DataDir == "" {
		return bad("data-dir", "must not be empty")
	}
	if c.HTTP.Addr == "" {
		return bad("http.addr", "must not be empty")
	}
	if c.HTTP.MaxBodyBytes <= 0 {
		return bad("http.max-body-bytes", "must be positive, got %d", c.HTTP.MaxBodyBytes)
	}
	if c.HTTP.MaxInflightBytes < c.HTTP.MaxBodyBytes {
		return bad("http.max-inflight-bytes", "must be at least http.max-body-bytes (%d), got %d", c.HTTP.MaxBodyBytes, c.HTTP.MaxInflightBytes)
	}
	if c.HTTP.InboxDeadline < 100*time.Millisecond || c.HTTP.InboxDeadline > 10*time.Minute {
		return bad("http.inbox-deadline", "must be between 100ms and 10m, got %s", c.HTTP.InboxDeadline)
	}
	if c.HTTP.MaxStreams < 1 {
		return bad("http.max-streams", "must be at least 1, got %d", c.HTTP.MaxStreams)
	}
	if c.HTTP.MaxStreamsPerToken < 1 || c.HTTP.MaxStreamsPerToken > c.HTTP.MaxStreams {
		return bad("http.max-streams-per-token", "must be 1..http.max-streams (%d), got %d", c.HTTP.MaxStreams, c.HTTP.MaxStreamsPerToken)
	}
	for _, o := range c.HTTP.InboxOrigins {
		if err := checkOrigin(o); err != nil {
			return bad("http.inbox-origins", "%v", err)
		}
	}
	return nil
}

// checkOrigin says what is wrong with o as an entry of http.inbox-origins: a browser origin,
// scheme (http or https) and host with an optional port, nothing after them.
func checkOrigin(o string) error {
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("%q is not an origin (scheme://host[:port], e.g. https://ops.example)", o)
	}
	return nil
}

// validateDatabase checks database.* and fills the SQLite file's default path.
func (c *Config) validateDatabase() error {
	switch c.Database.Driver {
	case "sqlite":
		if c.Database.DSN == "" {
			c.Database.DSN = filepath.Join(c.DataDir, "msgx.db")
		}
	case "mysql":
		if c.Database.DSN == "" {
			return bad("database.dsn", "required for driver mysql (user:password@tcp(host:3306)/database)")
		}
	default:
		return bad("database.driver", "%q is not sqlite or mysql", c.Database.Driver)
	}
	if len(c.Database.Hosts) > 0 && c.Database.Driver != "mysql" {
		return bad("database.hosts", "only for driver mysql (a Galera cluster's nodes), not %s", c.Database.Driver)
	}
	seen := map[string]bool{}
	for _, h := range c.Database.Hosts {
		if _, port, err := net.SplitHostPort(h); err != nil || port == "" {
			return bad("database.hosts", "%q is not host:port", h)
		}
		if seen[h] {
			return bad("database.hosts", "%s is listed twice", h)
		}
		seen[h] = true
	}
	if c.Database.WaitTimeout < 0 {
		return bad("database.wait-timeout", "must not be negative (0 waits without limit), got %s", c.Database.WaitTimeout)
	}
	for _, d := range []struct {
		key string
		v   time.Duration
	}{{"database.statement-timeout", c.Database.StatementTimeout}, {"database.long-statement-timeout", c.Database.LongStatementTimeout}} {
		if d.v <= 0 {
			return bad(d.key, "must be positive, got %s", d.v)
		}
	}
	if c.Database.ProbeEvery <= 0 {
		return bad("database.probe-every", "must be positive, got %s", c.Database.ProbeEvery)
	}
	if c.Database.ProbeTimeout < 0 {
		return bad("database.probe-timeout", "must not be negative (0: no probe), got %s", c.Database.ProbeTimeout)
	}
	return nil
}

// validatePipeline checks the generic keys of the pump and the dispatcher: pipeline, delivery,
// schd, metrics and consistency-check (the batch limits, the parked classes and identity are
// the pump's to check).
func (c *Config) validatePipeline() error {
	if c.Pipeline.PollInterval < 50*time.Millisecond {
		return bad("pipeline.poll-interval", "%s is under the 50ms minimum", c.Pipeline.PollInterval)
	}
	if c.Pipeline.MaxAttempts < 1 {
		return bad("pipeline.max-attempts", "must be at least 1, got %d", c.Pipeline.MaxAttempts)
	}
	if len(c.Pipeline.BackoffMs) == 0 {
		return bad("pipeline.backoff-ms", "needs at least one step")
	}
	for _, ms := range c.Pipeline.BackoffMs {
		if ms <= 0 {
			return bad("pipeline.backoff-ms", "step %d is not positive", ms)
		}
	}
	if c.Pipeline.BackoffCapMs <= 0 {
		return bad("pipeline.backoff-cap-ms", "must be positive, got %d", c.Pipeline.BackoffCapMs)
	}
	if c.Pipeline.HeadDeadline <= 0 {
		return bad("pipeline.head-deadline", "must be positive, got %s", c.Pipeline.HeadDeadline)
	}
	if c.Delivery.HeadDeadline <= 0 {
		return bad("delivery.head-deadline", "must be positive, got %s", c.Delivery.HeadDeadline)
	}
	if c.Schd.FlushPeriod <= 0 {
		return bad("schd.flush-period", "must be positive, got %s", c.Schd.FlushPeriod)
	}
	if c.Alerts.PauseWarn < time.Minute {
		return bad("alerts.pause-warn", "must be at least 1m, got %s", c.Alerts.PauseWarn)
	}
	if c.Metrics.SampleInterval < 100*time.Millisecond {
		return bad("metrics.sample-interval", "must be at least 100ms, got %s", c.Metrics.SampleInterval)
	}
	if c.Schd.FlushLimit < 1 {
		return bad("schd.flush-limit", "must be at least 1, got %d", c.Schd.FlushLimit)
	}
	if r := c.ConsistencyCheck.DailySampleRatio; r < 0 || r > 1 {
		return bad("consistency-check.daily-sample-ratio", "%v is not between 0 and 1", r)
	}
	return nil
}

// validateZones checks the airport's zone and records, and the cut-over's legacy zone and
// adoption bounds, filling legacy.timezone from sis.timezone when unset.
func (c *Config) validateZones() error {
	if _, err := time.LoadLocation(c.SIS.Timezone); err != nil || c.SIS.Timezone == "" {
		return bad("sis.timezone", "%q is not a known time zone", c.SIS.Timezone)
	}
	if c.SIS.MaxRecords < 1 {
		return bad("sis.max-records", "must be at least 1, got %d", c.SIS.MaxRecords)
	}
	if c.Legacy.Timezone == "" {
		c.Legacy.Timezone = c.SIS.Timezone
	}
	if _, err := time.LoadLocation(c.Legacy.Timezone); err != nil {
		return bad("legacy.timezone", "%q is not a known time zone", c.Legacy.Timezone)
	}
	if c.Inbox.AdoptFromID < 0 {
		return bad("inbox.adopt-from-id", "must not be negative, got %d", c.Inbox.AdoptFromID)
	}
	if _, err := c.AdoptSince(); err != nil {
		return bad("inbox.adopt-since", "%v", err)
	}
	return nil
}

// validateMode checks mode and where a shadow starts (its redis key space and targets are
// redisflight's and target's to check).
func (c *Config) validateMode() error {
	switch c.Mode {
	case "normal", "shadow":
	default:
		return bad("mode", "%q is not normal or shadow", c.Mode)
	}
	if c.ShadowOptions.StartAfterID < -1 {
		return bad("shadow.start-after-id", "must be -1 (the stored watermark) or an id, got %d", c.ShadowOptions.StartAfterID)
	}
	return nil
}

// validateRequests checks the data requests to the AODB.
func (c *Config) validateRequests() error {
	if c.Requests.Timeout <= 0 {
		return bad("requests.timeout", "must be positive, got %s", c.Requests.Timeout)
	}
	if c.Requests.MaxResends < 0 || c.Requests.MaxResends > 100 {
		return bad("requests.max-resends", "must be between 0 and 100, got %d", c.Requests.MaxResends)
	}
	return nil
}

// validateEureka checks the Eureka registration.
func (c *Config) validateEureka() error {
	if c.Eureka.Heartbeat <= 0 {
		return bad("eureka.heartbeat", "must be positive, got %s", c.Eureka.Heartbeat)
	}
	if c.Eureka.Port < 0 || c.Eureka.Port > 65535 {
		return bad("eureka.port", "must be between 0 (the port of http.addr) and 65535, got %d", c.Eureka.Port)
	}
	if c.Eureka.Enabled && len(c.EurekaURLs()) == 0 {
		return bad("eureka.service-url", "required with eureka.enabled (http://eureka:8761/eureka, comma-separated for several)")
	}
	for _, u := range c.EurekaURLs() {
		if p, err := url.Parse(u); err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			return bad("eureka.service-url", "%q is not an http or https URL", u)
		}
	}
	return nil
}

// validateLog checks the log's level and format (validateJobs its shipping).
func (c *Config) validateLog() error {
	switch c.Log.Level {
	case "debug", "info", "warn", "error":
	default:
		return bad("log.level", "%q is not debug, info, warn or error", c.Log.Level)
	}
	if c.Log.Format != "json" && c.Log.Format != "text" {
		return bad("log.format", "%q is not json or text", c.Log.Format)
	}
	return nil
}

// flightProjection fills the settings a redis-flights target leaves unset from the redis
// block (the same server and layout as phase A): addr (with redis.sentinel), db, password,
// key-prefix; its copy-of (ES_FLIGHT events) and the airport's zone.
func (c *Config) flightProjection(t targetconf.Config) targetconf.Config {
	if t.Addr == "" {
		t.Addr = c.Redis.Addr
		t.Sentinel = targetconf.Sentinel{Master: c.Redis.Sentinel.Master, Addrs: c.Redis.Sentinel.Addrs,
			Password: c.Redis.Sentinel.Password}
	}
	if t.DB == 0 {
		t.DB = c.Redis.DB
	}
	if t.Password == "" {
		t.Password = c.Redis.Password
	}
	if t.KeyPrefix == "" {
		t.KeyPrefix = c.Redis.KeyPrefix
	}
	if t.CopyOf == "" {
		t.CopyOf = targetconf.FlightProjectionSource
	}
	t.Location = c.Location()
	return t
}

// FlightProjection returns the REDIS_FLIGHT target of phase B (sink redis-flights) with its
// settings filled, or ok=false when none is configured.
func (c *Config) FlightProjection() (t targetconf.Config, ok bool) {
	t, ok = c.Targets[targetconf.FlightProjection]
	if !ok || t.Sink != targetconf.SinkRedisFlights || c.Phase == "A" {
		return targetconf.Config{}, false
	}
	return c.flightProjection(t), true
}

// EurekaURLs returns eureka.service-url split at commas, blanks dropped.
func (c *Config) EurekaURLs() []string {
	var out []string
	for _, u := range strings.Split(c.Eureka.ServiceURL, ",") {
		if u = strings.TrimSpace(u); u != "" {
			out = append(out, u)
		}
	}
	return out
}

// RegistryName is the name msgx registers under in Eureka: service-name, or
// <service-name>-shadow in shadow mode, so a shadow never takes the legacy's name.
func (c *Config) RegistryName() string {
	if c.Shadow() {
		return c.ServiceName + "-shadow"
	}
	return c.ServiceName
}

// validateJobs checks the keys of the rebuild span, history, retention and log shipping (the
// daily jobs' times are the jobs' to check).
func (c *Config) validateJobs() error {
	if _, _, err := ParseDayRange(c.Jobs.RebuildDays); err != nil {
		return bad("jobs.rebuild-days", "%v", err)
	}
	if c.Jobs.InfraDeadline < 0 {
		return bad("jobs.infra-deadline", "must be 0 (off) or positive, got %s", c.Jobs.InfraDeadline)
	}
	if c.History.KeepDays < 0 || c.History.KeepDays > 3650 {
		return bad("history.keep-days", "must be between 0 (keep only today) and 3650, got %d", c.History.KeepDays)
	}
	es := c.History.Elasticsearch
	for _, u := range strings.Split(es.URL, ",") {
		if u = strings.TrimSpace(u); u == "" {
			continue
		}
		if p, err := url.Parse(u); err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			return bad("history.elasticsearch.url", "%q is not an http(s) URL", u)
		}
	}
	if strings.TrimSpace(es.URL) != "" && es.Index == "" {
		return bad("history.elasticsearch.index", "must not be empty when history.elasticsearch.url is set")
	}
	if es.Timeout <= 0 {
		return bad("history.elasticsearch.timeout", "must be positive, got %s", es.Timeout)
	}
	if c.Retention.Events < 0 {
		return bad("retention.events", "must not be negative (0 keeps SENT events for ever), got %s", c.Retention.Events)
	}
	if c.Retention.Archive < 0 {
		return bad("retention.archive", "must not be negative (0 keeps archived messages for ever), got %s", c.Retention.Archive)
	}
	if c.Retention.DeadLetters < 0 {
		return bad("retention.dead-letters", "must not be negative (0 keeps acknowledged dead letters for ever), got %s", c.Retention.DeadLetters)
	}
	if a := c.Log.Logstash.Addr; a != "" {
		if host, port, err := net.SplitHostPort(a); err != nil || host == "" || port == "" || strings.ContainsAny(port, "/?#@ ") {
			return bad("log.logstash.addr", "%q is not host:port", a)
		}
	}
	if q := c.Log.Logstash.QueueSize; q < 1 || q > 1<<20 {
		return bad("log.logstash.queue-size", "must be between 1 and 1048576, got %d", q)
	}
	return nil
}

// DefaultSISMaxRecords is sis.max-records's default, which package sis takes as its own when
// a decoder is given no limit: well above a large airport's daily schedule (a few thousand
// FLTRs) or a full reference list.
const DefaultSISMaxRecords = 20000

// ParseDayRange reads a span of days relative to today, "FROM..TO" ("-1..7"): both between
// -366 and 366, FROM not after TO, at most 62 days.
func ParseDayRange(s string) (from, to int, err error) {
	a, b, ok := strings.Cut(strings.TrimSpace(s), "..")
	if ok {
		from, err = strconv.Atoi(strings.TrimSpace(a))
		if err == nil {
			to, err = strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(b), "+")))
		}
	}
	switch {
	case !ok || err != nil:
		return 0, 0, fmt.Errorf("%q is not FROM..TO in days from today (like -1..7)", s)
	case from < -366 || to > 366:
		return 0, 0, fmt.Errorf("%q reaches more than a year from today", s)
	case from > to:
		return 0, 0, fmt.Errorf("%q starts after it ends", s)
	case to-from >= 62:
		return 0, 0, fmt.Errorf("%q spans %d days; at most 62", s, to-from+1)
	}
	return from, to, nil
}

// RebuildDays returns jobs.rebuild-days (validated by Validate).
func (c Config) RebuildDays() (from, to int) {
	from, to, _ = ParseDayRange(c.Jobs.RebuildDays)
	return from, to
}

// DefaultRedisKeyPrefix is redis.key-prefix's default: the key space of a production msgx's
// flights in Redis, which a shadow may not share (app.LoadConfig has it checked).
const DefaultRedisKeyPrefix = "msgx:"

// Shadow reports whether msgx runs in shadow mode (mode: shadow).
func (c Config) Shadow() bool { return c.Mode == "shadow" }

// Autostart reports whether serve runs the pump and the dispatcher.
func (c *Config) Autostart() bool {
	if c.Pipeline.Autostart != nil {
		return *c.Pipeline.Autostart
	}
	return c.Database.Driver == "sqlite"
}

// List is a list of words written as a YAML list or as one comma-separated string (as the
// environment gives it); blanks are dropped and each word is upper-cased.
type List []string

// UnmarshalYAML accepts a sequence or a comma-separated scalar.
func (l *List) UnmarshalYAML(n *yaml.Node) error {
	items, err := listItems(n, upperWord)
	*l = items
	return err
}

func upperWord(w string) string { return strings.ToUpper(strings.TrimSpace(w)) }

func splitList(s string) List { return splitWords(s, upperWord) }

// listItems reads a YAML list or a comma-separated string into its non-empty words, each
// passed through norm (List: upper case; Strings: as written).
func listItems(n *yaml.Node, norm func(string) string) ([]string, error) {
	switch n.Kind {
	case yaml.ScalarNode:
		return splitWords(n.Value, norm), nil
	case yaml.SequenceNode:
		var items []string
		if err := n.Decode(&items); err != nil {
			return nil, err
		}
		return splitWords(strings.Join(items, ","), norm), nil
	}
	return nil, fmt.Errorf("line %d: want a list or a comma-separated string", n.Line)
}

// splitWords splits s at commas and keeps the non-empty words, each passed through norm.
func splitWords(s string, norm func(string) string) []string {
	out := []string{}
	for _, w := range strings.Split(s, ",") {
		if w = norm(w); w != "" {
			out = append(out, w)
		}
	}
	return out
}

// Location returns the airport's zone.
func (c *Config) Location() *time.Location {
	loc, err := time.LoadLocation(c.SIS.Timezone)
	if err != nil {
		return time.UTC
	}
	return loc
}

// LegacyLocation returns the zone of the legacy CMINMSGS datetime columns (legacy.timezone,
// default sis.timezone).
func (c *Config) LegacyLocation() *time.Location {
	name := c.Legacy.Timezone
	if name == "" {
		name = c.SIS.Timezone
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return time.UTC
	}
	return loc
}

// AdoptSince returns inbox.adopt-since as a time (zero when unset): local time in
// legacy.timezone unless it carries an offset.
func (c *Config) AdoptSince() (time.Time, error) {
	s := strings.TrimSpace(c.Inbox.AdoptSince)
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	for _, layout := range []string{time.DateTime, "2006-01-02T15:04:05", time.DateOnly} {
		if t, err := time.ParseInLocation(layout, s, c.LegacyLocation()); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is not a time (2026-12-01 06:00:00, 2026-12-01 or RFC 3339)", s)
}

// EnvName returns the environment variable of a key path ("pipeline.max-attempts").
func EnvName(key string) string {
	r := strings.NewReplacer(".", "_", "-", "_")
	return "MSGX_" + strings.ToUpper(r.Replace(key))
}

// Keys lists every key path of the configuration that an environment variable can set.
func Keys() []string {
	var out []string
	walk(reflect.ValueOf(&Config{}).Elem(), "", func(key string, _ reflect.Value) error {
		out = append(out, key)
		return nil
	})
	return out
}

func applyEnv(c *Config, environ []string) error {
	env := map[string]string{}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && strings.HasPrefix(k, "MSGX_") {
			env[k] = v
		}
	}
	return walk(reflect.ValueOf(c).Elem(), "", func(key string, f reflect.Value) error {
		v, ok := env[EnvName(key)]
		if !ok {
			return nil
		}
		if err := setValue(f, v); err != nil {
			return fmt.Errorf("config: %s (from %s=%q): %v", key, EnvName(key), v, err)
		}
		return nil
	})
}

// walk calls fn for every settable leaf of v with its key path; maps (targets) are skipped.
func walk(v reflect.Value, prefix string, fn func(string, reflect.Value) error) error {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		tag := strings.Split(t.Field(i).Tag.Get("yaml"), ",")[0]
		if tag == "" || tag == "-" {
			continue
		}
		key := tag
		if prefix != "" {
			key = prefix + "." + tag
		}
		f := v.Field(i)
		if f.Kind() == reflect.Struct && f.Type() != reflect.TypeOf(time.Duration(0)) {
			if err := walk(f, key, fn); err != nil {
				return err
			}
			continue
		}
		if f.Kind() == reflect.Map {
			continue
		}
		if err := fn(key, f); err != nil {
			return err
		}
	}
	return nil
}

func setValue(f reflect.Value, s string) error {
	s = strings.TrimSpace(s)
	switch {
	case f.Type() == reflect.TypeOf(time.Duration(0)):
		d, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("not a duration (like 1s, 500ms, 10m)")
		}
		f.SetInt(int64(d))
	case f.Kind() == reflect.Pointer && f.Type().Elem().Kind() == reflect.Bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return fmt.Errorf("not true or false")
		}
		f.Set(reflect.ValueOf(&b))
	case f.Kind() == reflect.Bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return fmt.Errorf("not true or false")
		}
		f.SetBool(b)
	case f.Kind() == reflect.String:
		f.SetString(s)
	case f.Kind() == reflect.Int || f.Kind() == reflect.Int64:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return fmt.Errorf("not an integer")
		}
		f.SetInt(n)
	case f.Kind() == reflect.Float64:
		x, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return fmt.Errorf("not a number")
		}
		f.SetFloat(x)
	case f.Type() == reflect.TypeOf(List{}):
		f.Set(reflect.ValueOf(splitList(s)))
	case f.Type() == reflect.TypeOf(Strings{}):
		f.Set(reflect.ValueOf(splitStrings(s)))
	case f.Type() == reflect.TypeOf(Tokens{}):
		ts, err := parseTokens(s)
		if err != nil {
			return err
		}
		f.Set(reflect.ValueOf(ts))
	case f.Kind() == reflect.Slice && f.Type().Elem().Kind() == reflect.Int:
		parts := strings.Split(s, ",")
		out := reflect.MakeSlice(f.Type(), len(parts), len(parts))
		for i, p := range parts {
			n, err := strconv.Atoi(strings.TrimSpace(p))
			if err != nil {
				return fmt.Errorf("not a comma-separated list of integers")
			}
			out.Index(i).SetInt(int64(n))
		}
		f.Set(out)
	default:
		return fmt.Errorf("cannot be set from the environment")
	}
	return nil
}
