package pump_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"msgx/internal/handler"
	"msgx/internal/metrics"
	"msgx/internal/pipeline"
	"msgx/internal/pump"
	"msgx/internal/store"
	"msgx/internal/store/storetest"
	"msgx/internal/testkit"
)

// series returns every sample of metric name: a counter's value or a histogram's count and
// sum, keyed by its labels ("state=…,class=…").
func series(t *testing.T, m *metrics.Metrics, name string) map[string][2]float64 {
	t.Helper()
	fams, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][2]float64{}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, mt := range f.GetMetric() {
			key := ""
			for _, l := range mt.GetLabel() {
				key += l.GetName() + "=" + l.GetValue() + ","
			}
			if h := mt.GetHistogram(); h != nil {
				out[key] = [2]float64{float64(h.GetSampleCount()), h.GetSampleSum()}
			} else {
				out[key] = [2]float64{mt.GetCounter().GetValue() + mt.GetGauge().GetValue(), 0}
			}
		}
	}
	return out
}

// Each final outcome moves msgx_messages_finished_total once, with its state, class and type
// tag (an unknown tag as "other"), and the two histograms once, the accept→finish time by the
// injected clock; a step stamps msgx_pump_last_step_timestamp_seconds. One by one and batched.
func TestFinishedMessagesMoveTheMetrics(t *testing.T) {
	t.Parallel()
	for _, size := range []int{1, 200} {
		t.Run(fmt.Sprintf("batch-%d", size), func(t *testing.T) {
			storetest.Each(t, func(t *testing.T, db *store.DB) {
				clock := testkit.NewClock(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
				m := metrics.New(clock, "test", nil)
				policy := defaultPolicy
				policy.Park = pipeline.DefaultPark
				p := pump.New(storetest.Pump(db), handler.Default(handler.Options{}), pump.Options{Policy: policy, Clock: clock,
					Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), BatchSize: size, Metrics: m})
				e := &env{db: db, clock: clock, pump: p, t: t}
				add := refMsg("STTS", "ADD", "1", stts("DEP", "departed"), 1)
				ids := e.post(add, add, unknownFLOP)
				clock.Add(2 * time.Second)
				e.drain()
				e.want(ids[0], pipeline.Succeeded, "")
				e.want(ids[1], pipeline.Skipped, "")
				e.want(ids[2], pipeline.Dead, pipeline.Unsupported)

				want := map[string][2]float64{
					"class=,state=SUCCEEDED,type_tag=STTS-ADD,":    {1, 0},
					"class=,state=SKIPPED,type_tag=STTS-ADD,":      {1, 0},
					"class=UNSUPPORTED,state=DEAD,type_tag=other,": {1, 0},
				}
				if got := series(t, m, "msgx_messages_finished_total"); fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("finished: %v, want %v", got, want)
				}
				if got := series(t, m, "msgx_accept_to_finish_seconds")[""]; got != [2]float64{3, 6} {
					t.Errorf("accept to finish: %v samples/sum, want 3 samples summing 6 s", got)
				}
				if got := series(t, m, "msgx_processing_duration_seconds")[""]; got[0] != 3 {
					t.Errorf("processing: %v samples, want 3", got[0])
				}
				p.Run(canceled())
				if got := series(t, m, "msgx_pump_last_step_timestamp_seconds")[""]; got[0] != float64(clock.Now().Unix()) {
					t.Errorf("last step %v, want %d", got[0], clock.Now().Unix())
				}
			})
		})
	}
}

// canceled returns a context that has ended: Run does one step and returns.
func canceled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}
