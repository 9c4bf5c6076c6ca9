package metrics_test

import (
	"testing"
	"time"

	"msgx/internal/metrics"
	"msgx/internal/testkit"
)

// msgx_paused_seconds{what} is each pause's age at the scrape (0 for what runs), and
// msgx_pause_warn_seconds is alerts.pause-warn: MsgxPausedTooLong compares the two.
func TestPausedSecondsAndTheirThreshold(t *testing.T) {
	clock := testkit.NewClock(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	m := metrics.New(clock, "v", nil)
	m.SetSnapshot(&metrics.Snapshot{At: clock.Now(), PumpPaused: true, PumpPausedAt: clock.Now().Add(-72 * time.Minute),
		Targets: []metrics.TargetSample{
			{Target: "KAFKA_FLOP", Paused: true, PausedAt: clock.Now().Add(-10 * time.Minute)},
			{Target: "REDIS_NOTIFY"},
		}})
	clock.Add(5 * time.Second) // the scrape comes after the sample
	got := gauges(t, m, "msgx_paused_seconds", "what")
	want := map[string]float64{"pump": 72*60 + 5, "KAFKA_FLOP": 10*60 + 5, "REDIS_NOTIFY": 0}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("msgx_paused_seconds %v, want %v", got, want)
			break
		}
	}
	if w := gauges(t, m, "msgx_pause_warn_seconds", ""); w[""] != 3600 {
		t.Errorf("msgx_pause_warn_seconds by default %v, want 3600", w)
	}
	m.SetPauseWarn(15 * time.Minute)
	if w := gauges(t, m, "msgx_pause_warn_seconds", ""); w[""] != 900 {
		t.Errorf("msgx_pause_warn_seconds after alerts.pause-warn 15m: %v, want 900", w)
	}
}

// gauges returns the values of name's series by the value of label ("" for none).
func gauges(t *testing.T, m *metrics.Metrics, name, label string) map[string]float64 {
	t.Helper()
	fams, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, s := range f.GetMetric() {
			key := ""
			for _, l := range s.GetLabel() {
				if l.GetName() == label {
					key = l.GetValue()
				}
			}
			out[key] = s.GetGauge().GetValue()
		}
	}
	return out
}
