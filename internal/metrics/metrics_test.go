package metrics_test

import (
	"slices"
	"testing"
	"time"

	"msgx/internal/metrics"
	"msgx/internal/pipeline"
)

// A nil *Metrics records nothing and never panics, so the pump, the dispatcher and the inbox
// call it without checks.
func TestNilMetricsDoNothing(t *testing.T) {
	var m *metrics.Metrics
	now := time.Now()
	m.Received("inbox", 1)
	m.Finished(pipeline.Succeeded, "", "X-Y", now, now)
	m.Sent("T", []time.Time{now}, now)
	m.Dead("T", 1)
	m.PumpStepped()
	m.DispatcherStepped()
	m.SetLeaseHeld(true)
	m.SetSnapshot(&metrics.Snapshot{})
	m.Register()
	if !m.LastPumpStep().IsZero() {
		t.Error("a nil Metrics has a last step")
	}
}

// Names lists every msgx metric, with a value or not yet; the database gauge only when there
// is a ping.
func TestNamesListEveryMetric(t *testing.T) {
	names := metrics.New(nil, "v", nil).Names()
	for _, want := range []string{"msgx_messages_received_total", "msgx_messages_finished_total", "msgx_delivery_latency_seconds",
		"msgx_messages", "msgx_target_blocked_since_seconds", "msgx_build_info", "msgx_lease_held"} {
		if !slices.Contains(names, want) {
			t.Errorf("Names lacks %s: %v", want, names)
		}
	}
	if slices.Contains(names, "msgx_database_up") {
		t.Error("msgx_database_up without a ping")
	}
	if !slices.Contains(metrics.New(nil, "v", func() bool { return true }).Names(), "msgx_database_up") {
		t.Error("msgx_database_up missing with a ping")
	}
}
