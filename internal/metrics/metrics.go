// Package metrics holds msgx's Prometheus instruments. The pump, the dispatcher and the inbox
// move counters and histograms where things happen (a message received or finished, events
// sent or dead), and the state gauges (messages per state, each target's backlog and lag, the
// head's age) are read from the last Snapshot that the instance running the pump takes every
// few seconds with index-bounded queries. A scrape reads memory only: it runs no query over
// the message or event tables, however large they grow.
//
// Every method works on a nil *Metrics (it does nothing), so code that records a metric needs
// no check.
package metrics

import (
	"regexp"
	"runtime/debug"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"msgx/internal/pipeline"
)

// Metrics is the set of msgx's instruments with the registry that serves them.
type Metrics struct {
	// Registry holds every instrument below, the Go runtime's and the process's metrics.
	Registry *prometheus.Registry

	clock pipeline.Clock

	received        *prometheus.CounterVec
	finished        *prometheus.CounterVec
	processing      prometheus.Histogram
	acceptToFinish  prometheus.Histogram
	eventsSent      *prometheus.CounterVec
	eventsDead      *prometheus.CounterVec
	deliveryLatency *prometheus.HistogramVec
	pumpStep        prometheus.Gauge
	dispatchStep    prometheus.Gauge
	leaseHeld       prometheus.Gauge
	inboxTimeouts   prometheus.Counter
	dbConflicts     *prometheus.CounterVec
	actions         *prometheus.CounterVec
	pauseWarn       prometheus.Gauge
	doors           doors // doors.go

	lastPumpStep atomic.Int64 // unix nanoseconds of the pump's last step; 0: never

	collectors []prometheus.Collector // msgx's own, for Names

	mu   sync.Mutex
	snap *Snapshot // the last state sample; nil when this instance takes none
}

// Snapshot is the queue's state as the pump's instance last read it (Metrics.SetSnapshot).
type Snapshot struct {
	At       time.Time                   // when it was read
	Messages map[pipeline.ProcStatus]int // messages per processing state
	// Head is the lowest unfinished message; nil when there is none.
	Head    *HeadSample
	Targets []TargetSample
	// PumpPaused says an operator paused the pump (msgx pause), since PumpPausedAt.
	PumpPaused   bool
	PumpPausedAt time.Time
	// Dead are the dead letters per kind ("message", "event"): how many, and how many of
	// them an operator acknowledged; nil when not sampled.
	Dead map[string]DeadSample
}

// DeadSample is the dead letters of one kind.
type DeadSample struct{ Dead, Acknowledged int }

// HeadSample is the head message as sampled.
type HeadSample struct {
	MsgID         int64
	Attempts      int
	ReceivedAt    time.Time // zero when unknown
	FirstFailedAt time.Time // zero while it has not failed
}

// TargetSample is one delivery target as sampled.
type TargetSample struct {
	Target              string
	Pending, Dead, Sent int64
	OldestPendingAt     time.Time // zero when nothing is pending
	BlockedSince        time.Time // the failing head's first failure; zero when not blocked
	Paused              bool      // an operator paused it (msgx pause --target)
	PausedAt            time.Time // since when it is paused; zero when it is not
	Rejecting           bool      // its latest deliveries all went DEAD (dispatch.TargetStats)
}

// Histogram buckets, in seconds: processing takes milliseconds (a batch shares its commit),
// accept→finish and delivery add the queue's wait, up to minutes in a backlog or an outage.
var (
	processingBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}
	latencyBuckets    = []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600}
)

// New returns the instruments, registered with a new registry together with the Go runtime's
// and the process's collectors and msgx_build_info{version,commit}. clock tells the ages of
// the state gauges at a scrape; up, when set, says at each scrape whether the database
// answers (msgx_database_up; it must answer from memory: api.Health.Up).
func New(clock pipeline.Clock, version string, up func() bool) *Metrics {
	if clock == nil {
		clock = pipeline.SystemClock{}
	}
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		clock:    clock,
		received: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "msgx_messages_received_total",
			Help: "Messages made durable: by the inbox (source=inbox) or adopted from rows the gateway inserted into CMINMSGS (source=gateway).",
		}, []string{"source"}),
		finished: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "msgx_messages_finished_total",
			Help: "Messages that reached a final state (SUCCEEDED, SKIPPED, DEAD), by state, error class (empty unless DEAD) and type tag (other: a tag no handler knows).",
		}, []string{"state", "class", "type_tag"}),
		processing: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "msgx_processing_duration_seconds",
			Help:    "From the pump taking a message to its final outcome being committed (in a batch: including the batch's commit).",
			Buckets: processingBuckets,
		}),
		acceptToFinish: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "msgx_accept_to_finish_seconds",
			Help:    "From a message's receipt to its final outcome being committed.",
			Buckets: latencyBuckets,
		}),
		eventsSent: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "msgx_events_sent_total",
			Help: "Events delivered and marked SENT, by target.",
		}, []string{"target"}),
		eventsDead: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "msgx_events_dead_total",
			Help: "Events that went DEAD (rejected, malformed, or past the delivery deadline), by target.",
		}, []string{"target"}),
		deliveryLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "msgx_delivery_latency_seconds",
			Help:    "From an event's creation (its message's commit) to its SENT commit, by target.",
			Buckets: latencyBuckets,
		}, []string{"target"}),
		pumpStep: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "msgx_pump_last_step_timestamp_seconds",
			Help: "Unix time of the pump's last step in this instance (0 when the pump never ran here). An idle pump steps every poll interval.",
		}),
		dispatchStep: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "msgx_dispatcher_last_step_timestamp_seconds",
			Help: "Unix time of the dispatcher's last step (any target) in this instance (0 when it never ran here).",
		}),
		leaseHeld: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "msgx_lease_held",
			Help: "1 while this instance holds the pump lease (runs the pump and the dispatcher), else 0.",
		}),
		inboxTimeouts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "msgx_inbox_deadline_exceeded_total",
			Help: "Inbox posts answered 503 because the database did not store the message within http.inbox-deadline (not acknowledged; the sender retries).",
		}),
		dbConflicts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "msgx_db_conflict_retries_total",
			Help: "Transactions redone after a deadlock, lock wait timeout or Galera certification conflict, by operation.",
		}, []string{"op"}),
		pauseWarn: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "msgx_pause_warn_seconds",
			Help: "alerts.pause-warn in seconds: MsgxPausedTooLong fires when msgx_paused_seconds exceeds it.",
		}),
		actions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "msgx_operator_actions_total",
			Help: "Operator actions this instance's API took (each one is also in the audit log), by action: pump.pause, target.resume, message.park, message.replay, events.replay, job.enqueue, …",
		}, []string{"action"}),
	}
	m.registerAll(version, up)
	m.doors = newDoors()
	m.Register(m.doors.collectors()...)
	return m
}

// registerAll registers the instruments, msgx_build_info, the runtime's and the process's
// collectors and, when up is set, msgx_database_up.
func (m *Metrics) registerAll(version string, up func() bool) {
	build := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "msgx_build_info",
		Help:        "Always 1; the labels say which msgx this is (commit: the VCS revision the binary was built from, unknown when not recorded).",
		ConstLabels: prometheus.Labels{"version": version, "commit": Commit()},
	})
	build.Set(1)
	m.pauseWarn.Set(DefaultPauseWarn.Seconds())
	m.Register(m.received, m.finished, m.processing, m.acceptToFinish, m.eventsSent, m.eventsDead,
		m.deliveryLatency, m.pumpStep, m.dispatchStep, m.leaseHeld, m.inboxTimeouts, m.dbConflicts, m.actions, m.pauseWarn, build, &stateCollector{m: m})
	m.Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if up != nil {
		m.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "msgx_database_up",
			Help: "1 when the last database check (a ping every second, in the background) succeeded and is at most 10 s old, else 0; msgx_sample_age_seconds{sample=\"database\"} says how old it is.",
		}, func() float64 {
			if up() {
				return 1
			}
			return 0
		}))
	}
}

// Commit returns the VCS revision the binary was built from, "unknown" when not recorded.
func Commit() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && s.Value != "" {
				return s.Value
			}
		}
	}
	return "unknown"
}

// Register adds more collectors (the pump's own gauges) to the registry.
func (m *Metrics) Register(cs ...prometheus.Collector) {
	if m == nil {
		return
	}
	m.Registry.MustRegister(cs...)
	m.collectors = append(m.collectors, cs...)
}

var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

// Names returns, sorted, the name of every msgx metric m serves (those of New and Register;
// not the Go runtime's and the process's), whether or not it has a value yet. A histogram's
// series add _bucket, _sum and _count to its name. The deploy/ rules and dashboard are checked
// against it.
func (m *Metrics) Names() []string {
	ch := make(chan *prometheus.Desc, 64)
	go func() {
		for _, c := range m.collectors {
			c.Describe(ch)
		}
		close(ch)
	}()
	var out []string
	for d := range ch {
		if sm := fqName.FindStringSubmatch(d.String()); sm != nil {
			out = append(out, sm[1])
		}
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// Known creates, at zero, the labelled series of the label values known at the start, so that
// each exists (and increase() over it sees its first event) before that first event: the
// inbox's and the gateway's received counters; the operator actions; each target's sent and dead counters and its
// latency histogram; the finished counter of each type tag as SUCCEEDED and SKIPPED, and as
// DEAD in each error class.
func (m *Metrics) Known(targets, tags []string) {
	if m == nil {
		return
	}
	for _, src := range []string{"inbox", "gateway"} {
		m.received.WithLabelValues(src)
	}
	for _, a := range Actions {
		m.actions.WithLabelValues(a)
	}
	for _, t := range targets {
		m.eventsSent.WithLabelValues(t)
		m.eventsDead.WithLabelValues(t)
		m.deliveryLatency.WithLabelValues(t)
	}
	for _, tag := range tags {
		m.finished.WithLabelValues(string(pipeline.Succeeded), "", tag)
		m.finished.WithLabelValues(string(pipeline.Skipped), "", tag)
		for _, c := range pipeline.Classes {
			m.finished.WithLabelValues(string(pipeline.Dead), string(c), tag)
		}
	}
}

// Actions are the operator actions the API audits, created at zero by Known.
var Actions = []string{"pump.pause", "pump.resume", "target.pause", "target.resume", "message.park",
	"message.replay", "events.replay", "job.enqueue", "dead.ack"}

// OperatorAction counts one operator action (audited by the API).
func (m *Metrics) OperatorAction(action string) {
	if m == nil {
		return
	}
	m.actions.WithLabelValues(action).Inc()
}

// DefaultPauseWarn is alerts.pause-warn's default, msgx_pause_warn_seconds until SetPauseWarn.
const DefaultPauseWarn = time.Hour

// SetPauseWarn sets msgx_pause_warn_seconds, the pause MsgxPausedTooLong tolerates
// (alerts.pause-warn): the rule compares msgx_paused_seconds with it, so the configuration
// sets the threshold of a rules file that names no number.
func (m *Metrics) SetPauseWarn(d time.Duration) {
	if m == nil {
		return
	}
	m.pauseWarn.Set(d.Seconds())
}

// Received counts n messages made durable from source ("inbox" or "gateway").
func (m *Metrics) Received(source string, n int) {
	if m == nil || n <= 0 {
		return
	}
	m.received.WithLabelValues(source).Add(float64(n))
}

// Finished counts a message whose final outcome (state SUCCEEDED, SKIPPED or DEAD) was just
// committed, and observes its processing time (since started, when the pump took it) and its
// time since receivedAt (skipped when zero).
func (m *Metrics) Finished(state pipeline.ProcStatus, class pipeline.ErrorClass, typeTag string, started, receivedAt time.Time) {
	if m == nil {
		return
	}
	now := m.clock.Now()
	m.finished.WithLabelValues(string(state), string(class), typeTag).Inc()
	if !started.IsZero() {
		m.processing.Observe(max(0, now.Sub(started).Seconds()))
	}
	if !receivedAt.IsZero() {
		m.acceptToFinish.Observe(max(0, now.Sub(receivedAt).Seconds()))
	}
}

// Sent counts events of target just committed SENT at sentAt, observing each one's delivery
// latency from its creation time.
func (m *Metrics) Sent(target string, created []time.Time, sentAt time.Time) {
	if m == nil || len(created) == 0 {
		return
	}
	m.eventsSent.WithLabelValues(target).Add(float64(len(created)))
	h := m.deliveryLatency.WithLabelValues(target)
	for _, c := range created {
		if !c.IsZero() {
			h.Observe(max(0, sentAt.Sub(c).Seconds()))
		}
	}
}

// Dead counts n events of target just committed DEAD.
func (m *Metrics) Dead(target string, n int) {
	if m == nil || n <= 0 {
		return
	}
	m.eventsDead.WithLabelValues(target).Add(float64(n))
}

// InboxTimedOut counts a post answered 503 because the database missed http.inbox-deadline.
func (m *Metrics) InboxTimedOut() {
	if m == nil {
		return
	}
	m.inboxTimeouts.Inc()
}

// ConflictRetried counts a transaction of op redone after a conflict (store.IsConflict).
func (m *Metrics) ConflictRetried(op string) {
	if m == nil {
		return
	}
	m.dbConflicts.WithLabelValues(op).Inc()
}

// PumpStepped records that the pump finished a step now.
func (m *Metrics) PumpStepped() {
	if m == nil {
		return
	}
	now := m.clock.Now()
	m.lastPumpStep.Store(now.UnixNano())
	m.pumpStep.Set(unix(now))
}

// DispatcherStepped records that a dispatcher loop finished a step now.
func (m *Metrics) DispatcherStepped() {
	if m == nil {
		return
	}
	m.dispatchStep.Set(unix(m.clock.Now()))
}

// LastPumpStep returns when the pump last stepped in this instance; zero when never.
func (m *Metrics) LastPumpStep() time.Time {
	if m == nil {
		return time.Time{}
	}
	ns := m.lastPumpStep.Load()
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// SetLeaseHeld says whether this instance holds the pump lease.
func (m *Metrics) SetLeaseHeld(held bool) {
	if m == nil {
		return
	}
	v := 0.0
	if held {
		v = 1
	}
	m.leaseHeld.Set(v)
}

// SetSnapshot replaces the state sample the gauges show; nil removes them.
func (m *Metrics) SetSnapshot(s *Snapshot) {
	if m == nil {
		return
	}
	m.mu.Lock()
	m.snap = s
	m.mu.Unlock()
}

func (m *Metrics) snapshot() *Snapshot {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.snap
}

// SampledAt returns when the state sample the gauges show was read; zero when there is none.
func (m *Metrics) SampledAt() time.Time {
	if m == nil {
		return time.Time{}
	}
	if s := m.snapshot(); s != nil {
		return s.At
	}
	return time.Time{}
}

func flag(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func unix(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

// stateCollector turns the last Snapshot into gauges at a scrape, ages taken at the scrape's
// time. It reads memory only.
type stateCollector struct{ m *Metrics }

var (
	descMessages    = prometheus.NewDesc("msgx_messages", "Inbound messages by processing state (sampled by the instance running the pump).", []string{"state"}, nil)
	descEvents      = prometheus.NewDesc("msgx_events", "Outbox events by target and delivery state (SENT: every event ever sent; sampled by the instance running the pump).", []string{"target", "state"}, nil)
	descOldest      = prometheus.NewDesc("msgx_target_oldest_pending_age_seconds", "Age of each target's oldest PENDING event (0 when none): the target's lag.", []string{"target"}, nil)
	descOldestOld   = prometheus.NewDesc("msgx_oldest_pending_event_age_seconds", "Same as msgx_target_oldest_pending_age_seconds (the older name, kept for existing alerts).", []string{"target"}, nil)
	descBlocked     = prometheus.NewDesc("msgx_target_blocked_since_seconds", "How long each target's head event has been failing, since its first failure (0 when not blocked).", []string{"target"}, nil)
	descHeadAge     = prometheus.NewDesc("msgx_head_age_seconds", "Age of the head message (the lowest unfinished one) since its receipt (0 when there is none).", nil, nil)
	descHeadBlocked = prometheus.NewDesc("msgx_head_blocked_seconds", "How long the head message has been failing, since its first failure (0 when it is not failing); everything behind it waits.", nil, nil)
	descHeadAtt     = prometheus.NewDesc("msgx_head_message_attempts", "Failed attempts of the head message (0 when it has not failed or there is none).", nil, nil)
	descPumpPaused  = prometheus.NewDesc("msgx_pump_paused", "1 while an operator has paused the pump (msgx pause), else 0; the alerts on a blocked or lagging queue hold while it is 1.", nil, nil)
	descTgtPaused   = prometheus.NewDesc("msgx_target_paused", "1 while an operator has paused the target (msgx pause --target), else 0; its lag and blocked alerts hold while it is 1.", []string{"target"}, nil)
	descPausedAge   = prometheus.NewDesc("msgx_paused_seconds", "How long an operator has paused the pump (what=\"pump\") or a target (what=\"<TARGET>\"), 0 while it runs; MsgxPausedTooLong fires past msgx_pause_warn_seconds.", []string{"what"}, nil)
	descRejecting   = prometheus.NewDesc("msgx_target_rejecting", "1 while the target rejects what it is given: its latest deliveries (at least 3 since its last success) all went DEAD, else 0.", []string{"target"}, nil)
	descDeadLetters = prometheus.NewDesc("msgx_dead_letters", "Dead letters (DEAD messages, DEAD events) by kind, and whether an operator acknowledged them (acknowledged=\"false\": those that call for attention).", []string{"kind", "acknowledged"}, nil)
	descSampled     = prometheus.NewDesc("msgx_state_sample_timestamp_seconds", "Unix time of the state sample the msgx_messages, msgx_events, head and target gauges come from.", nil, nil)
)

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descMessages, descEvents, descOldest, descOldestOld, descBlocked, descHeadAge, descHeadBlocked, descHeadAtt,
		descPumpPaused, descTgtPaused, descPausedAge, descRejecting, descDeadLetters, descSampled} {
		ch <- d
	}
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.m.snapshot()
	if s == nil {
		return // this instance does not run the pump: it does not know the queue
	}
	now := c.m.clock.Now()
	age := func(t time.Time) float64 {
		if t.IsZero() {
			return 0
		}
		return max(0, now.Sub(t).Seconds())
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	gauge(descSampled, unix(s.At))
	states := make([]string, 0, len(s.Messages))
	for st := range s.Messages {
		states = append(states, string(st))
	}
	sort.Strings(states)
	for _, st := range states {
		gauge(descMessages, float64(s.Messages[pipeline.ProcStatus(st)]), st)
	}
	var headAge, headBlocked, attempts float64
	if h := s.Head; h != nil {
		headAge, headBlocked, attempts = age(h.ReceivedAt), age(h.FirstFailedAt), float64(h.Attempts)
	}
	gauge(descHeadAge, headAge)
	gauge(descHeadBlocked, headBlocked)
	gauge(descHeadAtt, attempts)
	gauge(descPumpPaused, flag(s.PumpPaused))
	gauge(descPausedAge, age(s.PumpPausedAt), "pump")
	for _, kind := range []string{"message", "event"} {
		if d, ok := s.Dead[kind]; ok {
			gauge(descDeadLetters, float64(d.Dead-d.Acknowledged), kind, "false")
			gauge(descDeadLetters, float64(d.Acknowledged), kind, "true")
		}
	}
	for _, t := range s.Targets {
		gauge(descTgtPaused, flag(t.Paused), t.Target)
		gauge(descPausedAge, age(t.PausedAt), t.Target)
		gauge(descRejecting, flag(t.Rejecting), t.Target)
		gauge(descEvents, float64(t.Pending), t.Target, string(pipeline.EventPending))
		gauge(descEvents, float64(t.Dead), t.Target, string(pipeline.EventDead))
		gauge(descEvents, float64(t.Sent), t.Target, string(pipeline.EventSent))
		gauge(descOldest, age(t.OldestPendingAt), t.Target)
		gauge(descOldestOld, age(t.OldestPendingAt), t.Target)
		gauge(descBlocked, age(t.BlockedSince), t.Target)
	}
}

// Nodes is what DatabaseNodes reads: the database nodes msgx may use (database.hosts), the
// one it uses, and how often it moved to another.
type Nodes interface {
	Current() string
	All() []string
	Failovers() map[string]int64 // by reason: start, failed, hung
}

// DatabaseNodes returns the instruments of a MySQL database's nodes:
// msgx_db_failovers_total{reason}, the moves to another node, and msgx_db_node{node}, 1 for
// the node connections go to and 0 for the others. Both are read from n at each scrape.
func DatabaseNodes(n Nodes) []prometheus.Collector {
	out := []prometheus.Collector{failovers{n}}
	for _, node := range n.All() {
		out = append(out, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "msgx_db_node",
			Help:        "1 for the database node (host:port) msgx's connections go to, 0 for the other configured nodes.",
			ConstLabels: prometheus.Labels{"node": node},
		}, func() float64 {
			if n.Current() == node {
				return 1
			}
			return 0
		}))
	}
	return out
}

var descFailovers = prometheus.NewDesc("msgx_db_failovers_total",
	"Times msgx moved to another database node (database.hosts), by reason: failed (the node in use failed or was not synced), hung (the node in use did not answer the probe within database.probe-timeout: marked down, its connections closed), start (msgx started while the first node was down: nothing failed over).",
	[]string{"reason"}, nil)

// failovers is msgx_db_failovers_total{reason}, read from Nodes at each scrape.
type failovers struct{ n Nodes }

func (f failovers) Describe(ch chan<- *prometheus.Desc) { ch <- descFailovers }

func (f failovers) Collect(ch chan<- prometheus.Metric) {
	moves := f.n.Failovers()
	reasons := make([]string, 0, len(moves))
	for r := range moves {
		reasons = append(reasons, r)
	}
	sort.Strings(reasons)
	for _, r := range reasons {
		ch <- prometheus.MustNewConstMetric(descFailovers, prometheus.CounterValue, float64(moves[r]), r)
	}
}
