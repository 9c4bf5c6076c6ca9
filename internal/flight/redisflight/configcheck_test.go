package redisflight_test

import (
	"strings"
	"testing"
	"time"

	"msgx/internal/flight/redisflight"
)

// defaults is the redis section with the configuration's defaults; headDeadline is
// pipeline.head-deadline's.
var defaults = redisflight.Options{Addr: "127.0.0.1:6379", Prefix: "msgx:", MarkerTTL: 7 * 24 * time.Hour, Timeout: 2 * time.Second}

const headDeadline = 10 * time.Minute

// Phase A is accepted with the redis.* keys' defaults; its keys are checked by name.
func TestPhaseAKeysNameTheirKey(t *testing.T) {
	if err := defaults.CheckConfig(true, headDeadline, ""); err != nil {
		t.Fatalf("phase A defaults: %v", err)
	}
	for _, c := range []struct {
		name     string
		change   func(*redisflight.Options)
		deadline time.Duration
		key      string
	}{
		{"addr empty", func(o *redisflight.Options) { o.Addr = "" }, headDeadline, "redis.addr"},
		{"db -1", func(o *redisflight.Options) { o.DB = -1 }, headDeadline, "redis.db"},
		{"key-prefix empty", func(o *redisflight.Options) { o.Prefix = "" }, headDeadline, "redis.key-prefix"},
		{"marker-ttl 10m", func(o *redisflight.Options) { o.MarkerTTL = 10 * time.Minute }, headDeadline, "redis.marker-ttl"},
		{"head-deadline 8760h", func(*redisflight.Options) {}, 8760 * time.Hour, "redis.marker-ttl"},
	} {
		o := defaults
		c.change(&o)
		if err := o.CheckConfig(true, c.deadline, ""); err == nil || !strings.Contains(err.Error(), c.key) {
			t.Errorf("%s: error %v does not name %s", c.name, err, c.key)
		}
	}
}

// A shadow in phase A must write its flights under a Redis key prefix of its own: the default
// (the production msgx's), or one overlapping it, is refused naming redis.key-prefix; a
// prefix of its own is accepted, and so is the default in phase B or outside shadow mode.
func TestShadowInPhaseANeedsItsOwnKeyPrefix(t *testing.T) {
	for _, prefix := range []string{"msgx:", "msgx:shadow:", "msgx", "m"} {
		o := defaults
		o.Prefix = prefix
		err := o.CheckConfig(true, headDeadline, "msgx:")
		if err == nil || !strings.Contains(err.Error(), "redis.key-prefix") || !strings.Contains(err.Error(), "msgx-shadow:") {
			t.Errorf("shadow in phase A with key prefix %q: %v, want a refusal naming redis.key-prefix", prefix, err)
		}
	}
	for _, c := range []struct {
		name     string
		prefix   string
		phaseA   bool
		shadowOf string
	}{
		{"shadow, phase A, msgx-shadow:", "msgx-shadow:", true, "msgx:"},
		{"shadow, phase A, shadow:", "shadow:", true, "msgx:"},
		{"shadow, phase B", "msgx:", false, "msgx:"},
		{"phase A, not a shadow", "msgx:", true, ""},
	} {
		o := defaults
		o.Prefix = c.prefix
		if err := o.CheckConfig(c.phaseA, headDeadline, c.shadowOf); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}

// redis.timeout is refused, naming the key, when it is not in (0, 4s]; redis.sentinel needs
// both its master and its sentinels.
func TestRedisTimeoutAndSentinel(t *testing.T) {
	for _, d := range []time.Duration{5 * time.Second, 0, -time.Second} {
		o := defaults
		o.Timeout = d
		if err := o.CheckConfig(false, headDeadline, ""); err == nil || !strings.Contains(err.Error(), "redis.timeout") {
			t.Errorf("%s: %v, want an error naming redis.timeout", d, err)
		}
	}
	o := defaults
	o.Timeout = 4 * time.Second
	if err := o.CheckConfig(false, headDeadline, ""); err != nil {
		t.Errorf("4s: %v", err)
	}
	o = defaults
	o.SentinelMaster = "m"
	if err := o.CheckConfig(false, headDeadline, ""); err == nil || !strings.Contains(err.Error(), "redis.sentinel.addrs") {
		t.Errorf("master without sentinels: %v", err)
	}
	o.SentinelAddrs = []string{"127.0.0.1:1", "127.0.0.1:2"}
	if err := o.CheckConfig(true, headDeadline, ""); err != nil {
		t.Fatalf("sentinel: %v", err)
	}
}
