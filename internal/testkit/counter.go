package testkit

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// Counter is the value of the counter name in what g gathers, summed over its labels (0 when
// it has not counted yet).
func Counter(t testing.TB, g prometheus.Gatherer, name string) float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, mt := range mf.GetMetric() {
				sum += mt.GetCounter().GetValue()
			}
		}
	}
	return sum
}
