package target

import (
	"fmt"
	"sort"
	"strings"

	"msgx/internal/flight/redisflight"
	"msgx/internal/legacyflop"
	"msgx/internal/targetconf"
)

// CheckConfig checks the targets section of the configuration and names the first bad key:
// each target's settings, in the order of their names, and then, in phase A, that no target
// is a redis-flights projection, since Redis is then the flight store itself.
func CheckConfig(targets map[string]Config, phaseA bool) error {
	for _, n := range sortedNames(targets) {
		if err := targets[n].Validate(n); err != nil {
			return err
		}
	}
	if t, ok := targets[targetconf.FlightProjection]; ok && t.Sink == targetconf.SinkRedisFlights && phaseA {
		return fmt.Errorf("targets.%s.sink: redis-flights keeps Redis as a projection of FLIGHT_STATE in phase B; in phase A Redis is the flight store itself (remove the target, docs/redis-flights.md)",
			targetconf.FlightProjection)
	}
	return nil
}

// CheckShadow checks the targets of a shadow (mode: shadow), which runs beside the production
// msgx and the legacy, and names the first bad key: the REDIS_FLIGHT projection, its settings
// already filled from the redis block, writes under a key prefix that does not overlap prod,
// the production msgx's; and no redis target publishes on the legacy's own channel, where the
// legacy's consumers would take it (a format legacy target defaults to that channel).
func CheckShadow(targets map[string]Config, prod string) error {
	if t, ok := targets[targetconf.FlightProjection]; ok && t.Sink == targetconf.SinkRedisFlights && redisflight.Overlaps(t.KeyPrefix, prod) {
		// The projection is the same layout as phase A's flight store: a shadow's must not
		// write the production msgx's keys either.
		return fmt.Errorf("targets.%s.key-prefix: %q overlaps the production msgx's key space %q; a shadow projects its flights under a prefix of its own that neither starts with %[3]q nor is the start of it (msgx-shadow:, say; redis.key-prefix sets it too)",
			targetconf.FlightProjection, t.KeyPrefix, prod)
	}
	for _, n := range sortedNames(targets) {
		if t := targets[n]; t.Sink == targetconf.SinkRedis &&
			(strings.TrimSpace(t.Channel) == legacyflop.DefaultChannel || t.Format == targetconf.FormatLegacy && t.Channel == "") {
			return fmt.Errorf("targets.%s.channel: in shadow mode a redis target needs a channel of msgx's own (FLOP-msgx, say), not the legacy's %s", n, legacyflop.DefaultChannel)
		}
	}
	return nil
}

// sortedNames returns the names of the targets in order, so that the first bad one named is
// always the same.
func sortedNames(targets map[string]Config) []string {
	names := make([]string, 0, len(targets))
	for n := range targets {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
