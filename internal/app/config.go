package app

import (
	"fmt"

	"msgx/internal/config"
	"msgx/internal/flight/redisflight"
	"msgx/internal/jobs"
	"msgx/internal/pump"
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
