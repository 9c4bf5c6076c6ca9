package api

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"msgx/internal/metrics"
)

// MetricsRoute adds GET /metrics (Prometheus text format) serving m's registry. A scrape
// reads memory only: the counters and histograms the pump, the dispatcher and the inbox move,
// the last state sample (metrics.Sampler, run by the instance running the pump) and the last
// database check (Health, msgx_database_up), so it answers at once whatever the database
// does; msgx_sample_age_seconds says how old the samples are.
func MetricsRoute(m *metrics.Metrics) func(*http.ServeMux) {
	h := promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{})
	return func(mux *http.ServeMux) { mux.Handle("GET /metrics", h) }
}

// DatabaseUp returns the check behind msgx_database_up: h's last check, from memory.
func DatabaseUp(h *Health) func() bool { return h.Up }
