package config

import (
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"time"
)

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
