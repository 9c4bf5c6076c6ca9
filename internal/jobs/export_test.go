package jobs

import "github.com/prometheus/client_golang/prometheus"

// RowsMetric is msgx_job_rows_total{kind,table}, for tests.
func RowsMetric(job, table string) prometheus.Counter { return jobRows.WithLabelValues(job, table) }

// FailedMetric is msgx_history_sweep_failed_total, for tests.
func FailedMetric() prometheus.Counter { return historyFailed }
