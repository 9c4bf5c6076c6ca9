package metrics_test

import (
	"slices"
	"testing"

	"msgx/internal/metrics"
)

// The doors' counters exist at zero from the start (so increase() sees their first refusal),
// and a nil Metrics counts nothing without panicking.
func TestDoorCountersExistAtZero(t *testing.T) {
	var none *metrics.Metrics
	none.InboxRefused("origin")
	none.LoginRefused("backoff")
	none.StreamRefused("token")
	none.SetStreamsOpen(3)
	m := metrics.New(nil, "v", nil)
	m.LoginRefused("backoff")
	fams, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range fams {
		for _, s := range f.GetMetric() {
			key := f.GetName()
			for _, l := range s.GetLabel() {
				key += "/" + l.GetValue()
			}
			got[key] = s.GetCounter().GetValue()
		}
	}
	for _, want := range []string{"msgx_inbox_refused_total/origin", "msgx_login_refused_total/bad_token", "msgx_login_refused_total/origin",
		"msgx_streams_refused_total/token", "msgx_streams_refused_total/server"} {
		if v, ok := got[want]; !ok || v != 0 {
			t.Errorf("%s: %v (present %v), want 0", want, v, ok)
		}
	}
	if got["msgx_login_refused_total/backoff"] != 1 {
		t.Errorf("backoff refusals %v, want 1", got["msgx_login_refused_total/backoff"])
	}
	if !slices.Contains(m.Names(), "msgx_streams_open") {
		t.Error("Names lacks msgx_streams_open")
	}
}
