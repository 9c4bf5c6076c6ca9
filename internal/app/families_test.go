package app

import (
	"maps"
	"testing"

	"msgx/internal/target"
)

// The families the dispatcher renders canonical events for and the API shows them by: each
// emitted target its own, each copy its source's, with no targets configured the four; a
// target that is not a copy has none.
func TestFamilies(t *testing.T) {
	got := families(map[string]target.Config{
		"KAFKA_FLOP": {Sink: "kafka"}, "WEBHOOK_OPS": {Sink: "webhook", CopyOf: "KAFKA_FLOP"},
		"REDIS_FLIGHT": {Sink: "redis-flights", CopyOf: "ES_FLIGHT"}, "LEGACY_FLOP": {Sink: "redis", CopyOf: "REDIS_NOTIFY"},
		"AUDIT_FILE": {Sink: "file"},
	})
	want := map[string]string{"KAFKA_FLOP": "KAFKA_FLOP", "KAFKA_SCHD": "KAFKA_SCHD", "REDIS_NOTIFY": "REDIS_NOTIFY", "ES_FLIGHT": "ES_FLIGHT",
		"WEBHOOK_OPS": "KAFKA_FLOP", "REDIS_FLIGHT": "ES_FLIGHT", "LEGACY_FLOP": "REDIS_NOTIFY"}
	if !maps.Equal(got, want) {
		t.Errorf("families:\n got %v\nwant %v", got, want)
	}
	if got := families(nil); len(got) != 4 || got["ES_FLIGHT"] != "ES_FLIGHT" {
		t.Errorf("families of the embedded default: %v", got)
	}
}
