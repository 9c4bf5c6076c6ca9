package dispatch_test

import (
	"testing"
	"time"

	"msgx/internal/dispatch"
	"msgx/internal/metrics"
	"msgx/internal/pipeline"
	"msgx/internal/store"
	"msgx/internal/store/storetest"
	"msgx/internal/target"
	"msgx/internal/testkit"
)

// sample returns the value of the metric name whose target label is tgt: a counter's value,
// or a histogram's sample count and sum.
func sample(t *testing.T, m *metrics.Metrics, name, tgt string) (value float64, count uint64, sum float64) {
	t.Helper()
	fams, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, mt := range f.GetMetric() {
			for _, l := range mt.GetLabel() {
				if l.GetName() == "target" && l.GetValue() == tgt {
					if h := mt.GetHistogram(); h != nil {
						return 0, h.GetSampleCount(), h.GetSampleSum()
					}
					return mt.GetCounter().GetValue(), 0, 0
				}
			}
		}
	}
	return 0, 0, 0
}

// The dispatcher counts what it marks SENT and DEAD, per target, with each SENT event's
// latency from its creation, one by one and in a schedule batch, and stamps its last step.
func TestDeliveryMovesTheMetrics(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		clock := testkit.NewClock(t0)
		m := metrics.New(clock, "test", nil)
		h := newHarness(t, db, dispatch.Options{Policy: policy, Clock: clock, Metrics: m, SchdTarget: "KAFKA_SCHD"}, "WEBHOOK_OPS", "KAFKA_SCHD")
		bad := insert(t, db, ev{target: "WEBHOOK_OPS", kind: "notify"})
		insert(t, db, ev{target: "WEBHOOK_OPS", kind: "notify"})
		insert(t, db, ev{target: "WEBHOOK_OPS", kind: "notify"})
		insert(t, db, ev{target: "KAFKA_SCHD", kind: "schedule", key: "1"})
		insert(t, db, ev{target: "KAFKA_SCHD", kind: "schedule", key: "2"})
		insert(t, db, ev{target: "KAFKA_SCHD", kind: "schedule", key: "1"}) // supersedes the first: both SENT
		h.sinks["WEBHOOK_OPS"].setFail(func(recs []target.Record) (int, error) {
			if recs[0].EventID == bad {
				return 0, pipeline.Errorf(pipeline.Rejected, "webhook answered 400")
			}
			return len(recs), nil
		})
		clock.Add(30 * time.Second)
		h.deliver(t, "WEBHOOK_OPS")
		if n, _ := h.deliver(t, "WEBHOOK_OPS"); n != 2 {
			t.Fatalf("sent %d, want 2", n)
		}
		if n, _ := h.flush(t, true); n != 3 {
			t.Fatalf("schedule batch sent %d, want 3", n)
		}
		if v, _, _ := sample(t, m, "msgx_events_dead_total", "WEBHOOK_OPS"); v != 1 {
			t.Errorf("dead WEBHOOK_OPS: %v, want 1", v)
		}
		if v, _, _ := sample(t, m, "msgx_events_sent_total", "WEBHOOK_OPS"); v != 2 {
			t.Errorf("sent WEBHOOK_OPS: %v, want 2", v)
		}
		if v, _, _ := sample(t, m, "msgx_events_sent_total", "KAFKA_SCHD"); v != 3 {
			t.Errorf("sent KAFKA_SCHD: %v, want 3", v)
		}
		if _, n, sum := sample(t, m, "msgx_delivery_latency_seconds", "WEBHOOK_OPS"); n != 2 || sum != 60 {
			t.Errorf("latency WEBHOOK_OPS: %d samples, sum %v; want 2, 60", n, sum)
		}
		if _, n, sum := sample(t, m, "msgx_delivery_latency_seconds", "KAFKA_SCHD"); n != 3 || sum != 90 {
			t.Errorf("latency KAFKA_SCHD: %d samples, sum %v; want 3, 90", n, sum)
		}
	})
}
