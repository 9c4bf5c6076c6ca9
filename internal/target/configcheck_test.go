package target

import (
	"strings"
	"testing"

	"msgx/internal/targetconf"
)

// The targets are checked in the order of their names, each naming its key, and a
// redis-flights projection is refused in phase A, where Redis is the flight store itself.
func TestCheckConfigNamesTheKey(t *testing.T) {
	targets := map[string]Config{
		"B_WEBHOOK": {Sink: targetconf.SinkWebhook},
		"A_KAFKA":   {Sink: targetconf.SinkKafka, Topic: "t"},
	}
	if err := CheckConfig(targets, false); err == nil || !strings.Contains(err.Error(), "targets.A_KAFKA.brokers") {
		t.Errorf("two bad targets: %v, want the first by name, targets.A_KAFKA.brokers", err)
	}
	projection := map[string]Config{
		targetconf.FlightProjection: {Sink: targetconf.SinkRedisFlights},
		"KAFKA_FLOP":                {Sink: targetconf.SinkFile},
	}
	if err := CheckConfig(projection, false); err != nil {
		t.Fatalf("phase B with REDIS_FLIGHT: %v", err)
	}
	if err := CheckConfig(projection, true); err == nil || !strings.Contains(err.Error(), "targets.REDIS_FLIGHT.sink") {
		t.Fatalf("phase A with REDIS_FLIGHT: %v", err)
	}
}

// A shadow's redis targets stay off the legacy's channel: a format legacy target without a
// channel (it defaults to the legacy's) or on FLOP is refused naming its channel, one on a
// channel of msgx's own is accepted, and so is none other than redis.
func TestShadowKeepsOffTheLegacyChannel(t *testing.T) {
	legacy := func(channel string) map[string]Config {
		return map[string]Config{"LEGACY_FLOP": {Sink: targetconf.SinkRedis, Format: targetconf.FormatLegacy, CopyOf: "REDIS_NOTIFY", Channel: channel}}
	}
	for _, ch := range []string{"", "FLOP"} {
		if err := CheckShadow(legacy(ch), "msgx:"); err == nil || !strings.Contains(err.Error(), "targets.LEGACY_FLOP.channel") {
			t.Errorf("%q: %v, want an error naming targets.LEGACY_FLOP.channel", ch, err)
		}
	}
	if err := CheckShadow(legacy("FLOP-msgx"), "msgx:"); err != nil {
		t.Error(err)
	}
	// Whatever its format, a redis target of a shadow stays off the legacy's channel.
	other := map[string]Config{"NOTIFY2": {Sink: targetconf.SinkRedis, Channel: " FLOP", CopyOf: "REDIS_NOTIFY"}}
	if err := CheckShadow(other, "msgx:"); err == nil || !strings.Contains(err.Error(), "targets.NOTIFY2.channel") {
		t.Errorf("a json target on channel FLOP: %v, want an error naming targets.NOTIFY2.channel", err)
	}
}

// A shadow's REDIS_FLIGHT projection (its settings filled from the redis block) must project
// under a key prefix of its own: one overlapping the production msgx's is refused naming
// targets.REDIS_FLIGHT.key-prefix.
func TestShadowProjectionNeedsItsOwnKeyPrefix(t *testing.T) {
	for _, prefix := range []string{"msgx:", "msgx:shadow:", "msgx"} {
		targets := map[string]Config{targetconf.FlightProjection: {Sink: targetconf.SinkRedisFlights, KeyPrefix: prefix}}
		if err := CheckShadow(targets, "msgx:"); err == nil || !strings.Contains(err.Error(), "targets.REDIS_FLIGHT.key-prefix") {
			t.Errorf("%q: %v, want a refusal naming targets.REDIS_FLIGHT.key-prefix", prefix, err)
		}
	}
	own := map[string]Config{targetconf.FlightProjection: {Sink: targetconf.SinkRedisFlights, KeyPrefix: "msgx-shadow:"}}
	if err := CheckShadow(own, "msgx:"); err != nil {
		t.Fatal(err)
	}
}
