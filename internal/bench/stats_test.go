package bench

import (
	"strings"
	"testing"
	"time"
)

func TestPercentileNearestRank(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = 100 - i // 100 … 1, unsorted on purpose
	}
	cases := []struct {
		name string
		in   []time.Duration
		p    float64
		want time.Duration
	}{
		{"empty", nil, 50, 0},
		{"one value", ms(7), 99, 7 * time.Millisecond},
		{"p50 of 1..100", ms(hundred...), 50, 50 * time.Millisecond},
		{"p99 of 1..100", ms(hundred...), 99, 99 * time.Millisecond},
		{"p100 is the max", ms(hundred...), 100, 100 * time.Millisecond},
		{"p50 of an even pair is the lower", ms(10, 20), 50, 10 * time.Millisecond},
		{"p99 of few values is the max", ms(3, 1, 2), 99, 3 * time.Millisecond},
		{"tiny p is the min", ms(5, 9, 7), 0.1, 5 * time.Millisecond},
		{"p 0 is nothing", ms(5), 0, 0},
		{"above 100 is the max", ms(5, 6), 150, 6 * time.Millisecond},
	}
	for _, c := range cases {
		if got := Percentile(c.in, c.p); got != c.want {
			t.Errorf("%s: Percentile(p%v) = %v, want %v", c.name, c.p, got, c.want)
		}
	}
}

func TestPercentileLeavesInputAlone(t *testing.T) {
	in := []time.Duration{3, 1, 2}
	Percentile(in, 50)
	if in[0] != 3 || in[1] != 1 || in[2] != 2 {
		t.Fatalf("input reordered: %v", in)
	}
}

func TestRatioAndRates(t *testing.T) {
	if got := Ratio(300, 1200); got != 0.25 {
		t.Errorf("Ratio(300, 1200) = %v", got)
	}
	if got := Ratio(5, 0); got != 0 {
		t.Errorf("Ratio over no floor = %v, want 0", got)
	}
	if got := Ratio(5, -1); got != 0 {
		t.Errorf("Ratio over a negative floor = %v, want 0", got)
	}
	if got := PerSecond(500, 250*time.Millisecond); got != 2000 {
		t.Errorf("PerSecond = %v, want 2000", got)
	}
	if got := PerSecond(5, 0); got != 0 {
		t.Errorf("PerSecond over nothing = %v", got)
	}
	if got := Millis(1500 * time.Microsecond); got != 1.5 {
		t.Errorf("Millis = %v", got)
	}
}

func TestWriteTableNamesEveryFigure(t *testing.T) {
	t.Parallel()
	for workload, extra := range map[string][]string{
		WorkloadClassic: nil,
		WorkloadDay:     {"accept_to_sent_p999_ms", "targets.KAFKA_FLOP", "targets.KAFKA_SCHD", "flushed every 3000 ms"},
	} {
		var b strings.Builder
		r := Result{Driver: "sqlite", Workload: workload, Database: "x.db", Messages: 10, Clients: 2, Rate: 500, ProcessedPerS: 100,
			LatencyRatePerS: 500, SentObserved: "commit", SchdFlushPeriodMs: 3000, Targets: map[string]TargetLatency{
				"KAFKA_FLOP": {Messages: 9, P50Ms: 1, P99Ms: 2, P999Ms: 3}, "KAFKA_SCHD": {Messages: 9, P50Ms: 700, P99Ms: 2900, P999Ms: 3000}}}
		if err := WriteTable(&b, r); err != nil {
			t.Fatal(err)
		}
		for _, k := range append([]string{"workload " + workload, "floor_commits_per_s", "floor_batched_rows_per_s", "accepted_per_s", "processed_per_s",
			"accept_to_sent_p50_ms", "accept_to_sent_p99_ms", "snapshot_s", "peak_heap_mb", "backlog grew"}, extra...) {
			if !strings.Contains(b.String(), k) {
				t.Errorf("%s: table without %s:\n%s", workload, k, b.String())
			}
		}
	}
}
