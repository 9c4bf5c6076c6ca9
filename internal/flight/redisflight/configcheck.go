package redisflight

import (
	"fmt"
	"strings"
	"time"
)

// MaxTimeout is the longest redis.timeout: a Redis call may keep the pump's batch (on SQLite
// the one write transaction) open that long, and the lease keeper gives a renewal 5 s.
const MaxTimeout = 4 * time.Second

// CheckConfig checks the redis section of the configuration, read into o, and names the
// first bad key. The call timeout and the Sentinel pair are checked always, since a
// REDIS_FLIGHT projection of phase B takes them too; the rest only in phase A, where Redis is
// the flight store: its server, db and key prefix, and the markers' lifetime, which must
// outlast pipeline.head-deadline (headDeadline) so that a message retried to the end still
// finds its marker. shadowOf is, in shadow mode, the production msgx's key prefix ("" outside
// it): a shadow in phase A must not write its flights into that key space.
func (o Options) CheckConfig(phaseA bool, headDeadline time.Duration, shadowOf string) error {
	if o.Timeout <= 0 || o.Timeout > MaxTimeout {
		return fmt.Errorf("redis.timeout: must be more than 0 and at most %s (a renewal of the pump lease may wait that long behind a Redis call on SQLite), got %s",
			MaxTimeout, o.Timeout)
	}
	if o.SentinelMaster != "" && len(o.SentinelAddrs) == 0 {
		return fmt.Errorf("redis.sentinel.addrs: must list the sentinels (host:port) when redis.sentinel.master is set")
	}
	if o.SentinelMaster == "" && len(o.SentinelAddrs) > 0 {
		return fmt.Errorf("redis.sentinel.master: must name the master the sentinels watch when redis.sentinel.addrs is set")
	}
	if !phaseA {
		return nil
	}
	if o.Addr == "" {
		return fmt.Errorf("redis.addr: must not be empty in phase A")
	}
	if o.DB < 0 {
		return fmt.Errorf("redis.db: must not be negative, got %d", o.DB)
	}
	if o.Prefix == "" {
		return fmt.Errorf("redis.key-prefix: must not be empty in phase A")
	}
	if o.MarkerTTL < time.Hour {
		return fmt.Errorf("redis.marker-ttl: must be at least 1h (well past any retry), got %s", o.MarkerTTL)
	}
	if headDeadline > 0 && o.MarkerTTL <= headDeadline {
		return fmt.Errorf("redis.marker-ttl: must be longer than pipeline.head-deadline (%s), got %s", headDeadline, o.MarkerTTL)
	}
	if shadowOf != "" && Overlaps(o.Prefix, shadowOf) {
		// The production msgx (and what reads its flights) uses that key space: a shadow
		// writing there would change the flights they read, or a wipe of its own prefix would
		// delete them.
		return fmt.Errorf("redis.key-prefix: %q overlaps the production msgx's key space %q; a shadow in phase A writes its flights under a prefix of its own that neither starts with %[2]q nor is the start of it (msgx-shadow:, say)",
			o.Prefix, shadowOf)
	}
	return nil
}

// Overlaps reports whether one of the key prefixes a and b starts with the other: their key
// spaces then share keys, or a scan of one finds the other's.
func Overlaps(a, b string) bool { return strings.HasPrefix(a, b) || strings.HasPrefix(b, a) }
