package api

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"msgx/internal/pipeline"
)

// HealthStore is what the database check reads: a ping and the pump lease's row.
type HealthStore interface {
	Ping(ctx context.Context) error
	LeaseHolder(ctx context.Context, name string) (string, time.Time, error)
}

// Health checks the database in the background (Run) and keeps the last answer, so that
// /readyz and msgx_database_up answer at once from memory whatever the database does: a node
// that hangs (SIGSTOP, a frozen network path) makes the check old, never the request slow.
// Each answer says how old its check is; one older than Stale counts as a database that does
// not answer.
type Health struct {
	DB    HealthStore
	Clock pipeline.Clock
	// Every is how often Run checks (default DefaultHealthEvery), Timeout how long one check
	// may take (default DefaultHealthTimeout), Stale how old the last check that succeeded
	// may be before /readyz answers 503 (default DefaultHealthStale).
	Every, Timeout, Stale time.Duration

	mu      sync.Mutex
	last    HealthCheck
	started time.Time
}

// HealthCheck is one check of the database.
type HealthCheck struct {
	At  time.Time // when the check ended; zero: none yet
	Err error     // nil when the database answered
	// OKAt is when a check last succeeded (zero: never).
	OKAt time.Time
	// Holder and Until are the pump lease as the last successful check read it.
	Holder string
	Until  time.Time
}

// Defaults of Health.
const (
	DefaultHealthEvery   = time.Second
	DefaultHealthTimeout = 2 * time.Second
	DefaultHealthStale   = 10 * time.Second
)

// NewHealth returns the check of db; Run keeps it fresh.
func NewHealth(db HealthStore, clock pipeline.Clock) *Health {
	if clock == nil {
		clock = pipeline.SystemClock{}
	}
	return &Health{DB: db, Clock: clock, started: clock.Now()}
}

// Run checks the database at once and then every Every until ctx ends.
func (h *Health) Run(ctx context.Context) {
	every := pipeline.OrDefault(h.Every, DefaultHealthEvery)
	for {
		h.Check(ctx)
		if !pipeline.Sleep(ctx, every) {
			return
		}
	}
}

// Check checks the database now (a ping, then the lease's row, within Timeout) and keeps the
// answer. A check that does not return (a driver that ignores its context) leaves the last
// answer in place, growing old.
func (h *Health) Check(ctx context.Context) HealthCheck {
	timeout := h.Timeout
	if timeout <= 0 {
		timeout = DefaultHealthTimeout
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := h.DB.Ping(cctx)
	var holder string
	var until time.Time
	if err == nil {
		holder, until, err = h.DB.LeaseHolder(cctx, LeaseName)
	}
	now := h.Clock.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.last.At, h.last.Err = now, err
	if err == nil {
		h.last.OKAt, h.last.Holder, h.last.Until = now, holder, until
	}
	return h.last
}

// Last returns the last check (zero At: none has ended yet).
func (h *Health) Last() HealthCheck {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.last
}

func (h *Health) stale() time.Duration {
	if h.Stale > 0 {
		return h.Stale
	}
	return DefaultHealthStale
}

// Up says whether the last check succeeded and is younger than Stale.
func (h *Health) Up() bool {
	c := h.Last()
	return c.Err == nil && !c.OKAt.IsZero() && h.Clock.Now().Sub(c.OKAt) <= h.stale()
}

// okAge is how long ago a check last succeeded (since the start when none has).
func (h *Health) okAge() time.Duration {
	c := h.Last()
	from := c.OKAt
	if from.IsZero() {
		h.mu.Lock()
		from = h.started
		h.mu.Unlock()
	}
	return max(0, h.Clock.Now().Sub(from))
}

var descSampleAge = prometheus.NewDesc("msgx_sample_age_seconds",
	"Age of the sampled values the health routes and gauges answer from, by sample: database (the last database check that succeeded: msgx_database_up, /readyz; since the start when none has) and state (the queue's state sample, on the instance running the pump).",
	[]string{"sample"}, nil)

// SampleAges returns the collector of msgx_sample_age_seconds: the age of the database check
// that last succeeded, and of the state sample (sampledAt, when it returns a time).
func (h *Health) SampleAges(sampledAt func() time.Time) prometheus.Collector {
	return sampleAges{h: h, state: sampledAt}
}

type sampleAges struct {
	h     *Health
	state func() time.Time
}

func (s sampleAges) Describe(ch chan<- *prometheus.Desc) { ch <- descSampleAge }

func (s sampleAges) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(descSampleAge, prometheus.GaugeValue, s.h.okAge().Seconds(), "database")
	if s.state == nil {
		return
	}
	if at := s.state(); !at.IsZero() {
		ch <- prometheus.MustNewConstMetric(descSampleAge, prometheus.GaugeValue, max(0, s.h.Clock.Now().Sub(at).Seconds()), "state")
	}
}
