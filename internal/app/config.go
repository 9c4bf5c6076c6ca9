package app

import (
	"fmt"
	"time"

	"msgx/internal/config"
	"msgx/internal/flight/redisflight"
	"msgx/internal/jobs"
	"msgx/internal/jobs/jobkind"
	"msgx/internal/pipeline"
	"msgx/internal/pump"
	"msgx/internal/sis"
	"msgx/internal/target"
	"msgx/internal/targetconf"
)

// LoadConfig reads the configuration as config.Load does (the YAML file, the MSGX_*
// environment, the generic checks) and then has each subsystem check its own section
// (checkConfig). Every command that reads the configuration loads it here, so that a bad
// value of any key stops it before it opens anything, with a message naming the key.
func LoadConfig(path string, environ []string) (config.Config, error) {
	cfg, err := config.Load(path, environ)
	if err != nil {
		return cfg, err
	}
	if err := checkConfig(&cfg); err != nil {
		return cfg, fmt.Errorf("config: %w", err)
	}
	return cfg, nil
}

// checkConfig runs the subsystems' checks of their sections, the first bad key ending it, and
// fills in what they settle: identity.mode resolved, and the REDIS_FLIGHT projection's
// settings taken from the redis block (after its own settings are checked, before a shadow's
// key prefix is).
func checkConfig(cfg *config.Config) error {
	phaseA := cfg.Phase == "A"
	shadowOf := ""
	if cfg.Shadow() {
		shadowOf = config.DefaultRedisKeyPrefix
	}
	r := cfg.Redis
	redis := redisflight.Options{Addr: r.Addr, DB: r.DB, Prefix: r.KeyPrefix, MarkerTTL: r.MarkerTTL, Timeout: r.Timeout,
		SentinelMaster: r.Sentinel.Master, SentinelAddrs: r.Sentinel.Addrs}
	if err := redis.CheckConfig(phaseA, cfg.Pipeline.HeadDeadline, shadowOf); err != nil {
		return err
	}
	mode, err := pump.CheckConfig(pump.ConfigKeys{BatchSize: cfg.Pipeline.BatchSize, BatchWait: cfg.Pipeline.BatchWait,
		ParkClasses: cfg.Pipeline.ParkClasses, IdentityMode: cfg.Identity.Mode, IncludeDayBoundary: cfg.Identity.IncludeDayBoundary})
	if err != nil {
		return err
	}
	cfg.Identity.Mode = string(mode)
	if err := jobs.CheckTimes(map[string]string{"jobs.archive-at": cfg.Jobs.ArchiveAt, "jobs.history-sweep-at": cfg.Jobs.HistorySweepAt,
		"jobs.retention-at": cfg.Jobs.RetentionAt, "consistency-check.daily-at": cfg.ConsistencyCheck.DailyAt}); err != nil {
		return err
	}
	if err := target.CheckConfig(cfg.Targets, phaseA); err != nil {
		return err
	}
	if t, ok := cfg.FlightProjection(); ok {
		cfg.Targets[targetconf.FlightProjection] = t
	}
	if cfg.Shadow() {
		return target.CheckShadow(cfg.Targets, config.DefaultRedisKeyPrefix)
	}
	return nil
}

// retryPolicy is the pump's retry policy: pipeline.max-attempts, backoff-ms, backoff-cap-ms,
// head-deadline and park-classes.
func retryPolicy(cfg config.Config) pipeline.RetryPolicy {
	steps := make([]time.Duration, len(cfg.Pipeline.BackoffMs))
	for i, ms := range cfg.Pipeline.BackoffMs {
		steps[i] = time.Duration(ms) * time.Millisecond
	}
	park := make([]pipeline.ErrorClass, 0, len(cfg.Pipeline.ParkClasses))
	for _, name := range cfg.Pipeline.ParkClasses {
		park = append(park, pipeline.ErrorClass(name))
	}
	return pipeline.RetryPolicy{
		MaxAttempts:  cfg.Pipeline.MaxAttempts,
		Steps:        steps,
		Cap:          time.Duration(cfg.Pipeline.BackoffCapMs) * time.Millisecond,
		HeadDeadline: cfg.Pipeline.HeadDeadline,
		Park:         park,
	}
}

// deliveryPolicy is the dispatcher's: the pump's backoff and cap, but no attempt limit and
// delivery.head-deadline, so an INFRA failure (network, 5xx, broker down) keeps the head
// event PENDING and a sink outage delays events but never kills them. Nothing is parked.
func deliveryPolicy(cfg config.Config) pipeline.RetryPolicy {
	p := retryPolicy(cfg)
	p.MaxAttempts = 0
	p.HeadDeadline = cfg.Delivery.HeadDeadline
	p.Park = nil
	return p
}

// Decoding returns how SIS messages are decoded: in the airport's zone, with at most
// sis.max-records records each.
func Decoding(cfg config.Config) sis.Options {
	return sis.Options{Location: cfg.Location(), MaxRecords: cfg.SIS.MaxRecords}
}

// schedule returns the daily jobs that are switched on (checked by LoadConfig): the archive,
// the history sweep, the retention and, where two flight stores are kept for it to compare
// (phase A, or phase B with the REDIS_FLIGHT projection) and it samples anything, the
// consistency sentinel's daily sample.
func schedule(cfg config.Config) []jobkind.Entry {
	var out []jobkind.Entry
	for _, e := range []struct{ kind, at string }{{jobkind.Archive, cfg.Jobs.ArchiveAt}, {jobkind.HistorySweep, cfg.Jobs.HistorySweepAt}, {jobkind.Retention, cfg.Jobs.RetentionAt}} {
		if h, m, on, err := jobkind.ParseAt(e.at); err == nil && on {
			out = append(out, jobkind.Entry{Kind: e.kind, Hour: h, Minute: m})
		}
	}
	_, projection := cfg.FlightProjection()
	if h, m, on, err := jobkind.ParseAt(cfg.ConsistencyCheck.DailyAt); err == nil && on && cfg.ConsistencyCheck.DailySampleRatio > 0 && (cfg.Phase == "A" || projection) {
		out = append(out, jobkind.Entry{Kind: jobkind.ConsistencyCheck, Hour: h, Minute: m})
	}
	return out
}
