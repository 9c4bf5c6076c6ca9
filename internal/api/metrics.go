package api

import (
	"context"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"msgx/internal/dispatch"
	"msgx/internal/pipeline"
	"msgx/internal/store"
)

// MetricsStore is what /metrics reads: message counts, the head, and the outbox's counts.
type MetricsStore interface {
	CountByState(ctx context.Context) (map[pipeline.ProcStatus]int, error)
	Head(ctx context.Context) (*store.Message, error)
	store.Events
}

// queueCollector reads the queue state from the database at each scrape, so the figures are
// those of the database, whichever instance serves them.
type queueCollector struct {
	db    MetricsStore
	clock pipeline.Clock

	messages, events, oldest, headAttempts, up *prometheus.Desc
}

func newQueueCollector(db MetricsStore, clock pipeline.Clock) *queueCollector {
	return &queueCollector{
		db: db, clock: clock,
		messages:     prometheus.NewDesc("msgx_messages", "Inbound messages by processing state.", []string{"state"}, nil),
		events:       prometheus.NewDesc("msgx_events", "Outbox events by target and delivery state.", []string{"target", "state"}, nil),
		oldest:       prometheus.NewDesc("msgx_oldest_pending_event_age_seconds", "Age of the oldest PENDING event of each target.", []string{"target"}, nil),
		headAttempts: prometheus.NewDesc("msgx_head_message_attempts", "Failed attempts of the head message (0 when it has not failed or there is none).", nil, nil),
		up:           prometheus.NewDesc("msgx_database_up", "1 when the last scrape could read the database.", nil, nil),
	}
}

func (c *queueCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.messages, c.events, c.oldest, c.headAttempts, c.up} {
		ch <- d
	}
}

func (c *queueCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	counts, err := c.db.CountByState(ctx)
	if err != nil {
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 1)
	for st, n := range counts {
		ch <- prometheus.MustNewConstMetric(c.messages, prometheus.GaugeValue, float64(n), string(st))
	}
	attempts := 0
	if head, err := c.db.Head(ctx); err == nil && head != nil {
		attempts = head.Attempts
	}
	ch <- prometheus.MustNewConstMetric(c.headAttempts, prometheus.GaugeValue, float64(attempts))
	stats, err := dispatch.Stats(ctx, c.db, c.clock.Now())
	if err != nil {
		return
	}
	for _, t := range stats {
		ch <- prometheus.MustNewConstMetric(c.events, prometheus.GaugeValue, float64(t.Pending), t.Target, string(pipeline.EventPending))
		ch <- prometheus.MustNewConstMetric(c.events, prometheus.GaugeValue, float64(t.Sent), t.Target, string(pipeline.EventSent))
		ch <- prometheus.MustNewConstMetric(c.events, prometheus.GaugeValue, float64(t.Dead), t.Target, string(pipeline.EventDead))
		ch <- prometheus.MustNewConstMetric(c.oldest, prometheus.GaugeValue, t.OldestPendingAge.Seconds(), t.Target)
	}
}

// MetricsRoute adds GET /metrics (Prometheus text format): message counts per state, event
// counts per target and state, the age of each target's oldest pending event, the head's
// attempts, and the Go runtime's own metrics, plus the extra collectors of this process (the
// pump's).
func MetricsRoute(db MetricsStore, clock pipeline.Clock, extra ...prometheus.Collector) func(*http.ServeMux) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(newQueueCollector(db, clock), collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg.MustRegister(extra...)
	h := promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	return func(mux *http.ServeMux) { mux.Handle("GET /metrics", h) }
}
