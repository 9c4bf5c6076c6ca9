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

type nodes struct{ cur string }

func (n *nodes) Current() string { return n.cur }
func (n *nodes) All() []string   { return []string{"db1:3306", "db2:3306"} }
func (n *nodes) Failovers() map[string]int64 {
	return map[string]int64{"start": 1, "failed": 3}
}

// The database node gauges say which node msgx uses, read at the scrape, and count the moves
// by reason: a start with the first node down is not counted as a failover.
func TestDatabaseNodes(t *testing.T) {
	n := &nodes{cur: "db1:3306"}
	m := metrics.New(nil, "v", nil)
	m.Register(metrics.DatabaseNodes(n)...)
	n.cur = "db2:3306"
	fams, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range fams {
		for _, s := range f.GetMetric() {
			switch f.GetName() {
			case "msgx_db_node":
				got[s.GetLabel()[0].GetValue()] = s.GetGauge().GetValue()
			case "msgx_db_failovers_total":
				got["failovers "+s.GetLabel()[0].GetValue()] = s.GetCounter().GetValue()
			}
		}
	}
	if got["db1:3306"] != 0 || got["db2:3306"] != 1 || got["failovers failed"] != 3 || got["failovers start"] != 1 {
		t.Fatalf("node metrics %v", got)
	}
}
