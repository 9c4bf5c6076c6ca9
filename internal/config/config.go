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
	"fmt"
	"strconv"
	"strings"
	"time"

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

// DefaultRedisKeyPrefix is redis.key-prefix's default: the key space of a production msgx's
// flights in Redis, which a shadow may not share (app.LoadConfig has it checked).
const DefaultRedisKeyPrefix = "msgx:"

// DefaultSISMaxRecords is sis.max-records's default, which package sis takes as its own when
// a decoder is given no limit: well above a large airport's daily schedule (a few thousand
// FLTRs) or a full reference list.
const DefaultSISMaxRecords = 20000

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

// Shadow reports whether msgx runs in shadow mode (mode: shadow).
func (c Config) Shadow() bool { return c.Mode == "shadow" }

// Autostart reports whether serve runs the pump and the dispatcher.
func (c *Config) Autostart() bool {
	if c.Pipeline.Autostart != nil {
		return *c.Pipeline.Autostart
	}
	return c.Database.Driver == "sqlite"
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
