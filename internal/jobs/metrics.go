package jobs

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The jobs' metrics; the app registers them in the registry /metrics serves (see Collectors).
var (
	jobRows = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "msgx_job_rows_total",
		Help: "Rows the pump's jobs wrote or deleted, by job kind and table (history: flights written to the history sink).",
	}, []string{"kind", "table"})
	jobDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "msgx_job_duration_seconds",
		Help:    "How long each run of a pump job took, by job kind.",
		Buckets: []float64{0.01, 0.1, 0.5, 1, 5, 15, 60, 300, 900, 3600},
	}, []string{"kind"})
	jobLastSuccess = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "msgx_job_last_success_timestamp_seconds",
		Help: "When a pump job of each kind last finished without error (Unix time).",
	}, []string{"kind"})
	historyFailed = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "msgx_history_sweep_failed_total",
		Help: "Flights the history sweep could not write to the history sink; they stay in the flight store for the next sweep.",
	})
)

// Collectors returns the jobs' metrics: msgx_job_rows_total{kind,table},
// msgx_job_duration_seconds{kind}, msgx_job_last_success_timestamp_seconds{kind} and
// msgx_history_sweep_failed_total.
func Collectors() []prometheus.Collector {
	return []prometheus.Collector{jobRows, jobDuration, jobLastSuccess, historyFailed}
}

// observe records one run of a job of kind: the rows per table (deletes counted as rows too),
// its duration, and, when it succeeded, the time.
func observe(kind string, rows map[string]int, d time.Duration, ok bool, now time.Time) {
	for table, n := range rows {
		if n < 0 {
			n = -n
		}
		jobRows.WithLabelValues(kind, table).Add(float64(n))
	}
	jobDuration.WithLabelValues(kind).Observe(d.Seconds())
	if ok {
		jobLastSuccess.WithLabelValues(kind).Set(float64(now.Unix()))
	}
}

// Known creates, at zero, the series of each job kind in kinds (msgx_job_duration_seconds
// and msgx_job_last_success_timestamp_seconds), and sets the last success of the kinds in
// last (from the stored jobs: a restart does not forget when a daily job last succeeded).
func Known(kinds []string, last map[string]time.Time) {
	for _, k := range kinds {
		jobDuration.WithLabelValues(k)
		jobLastSuccess.WithLabelValues(k)
	}
	for k, t := range last {
		if !t.IsZero() {
			jobLastSuccess.WithLabelValues(k).Set(float64(t.Unix()))
		}
	}
}
