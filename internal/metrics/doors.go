package metrics

import "github.com/prometheus/client_golang/prometheus"

// The doors' instruments (issue 33): what the inbox, the log-in and the live-list streams
// refuse, and the streams open.

// doors are the instruments of the refusals at the doors.
type doors struct {
	inboxRefused   *prometheus.CounterVec
	loginRefused   *prometheus.CounterVec
	streamsRefused *prometheus.CounterVec
	streamsOpen    prometheus.Gauge
}

// The label values of the doors' counters, each series created at zero.
var (
	// InboxRefusals are the reasons of msgx_inbox_refused_total: origin, a browser post from
	// an origin http.inbox-origins does not list.
	InboxRefusals = []string{"origin"}
	// LoginRefusals are the reasons of msgx_login_refused_total: bad_token, a wrong token;
	// backoff, an attempt from an address with too many recent failures (429); origin, a
	// log-in from a page of another origin.
	LoginRefusals = []string{"bad_token", "backoff", "origin"}
	// StreamLimits are the limits of msgx_streams_refused_total: token
	// (http.max-streams-per-token) and server (http.max-streams).
	StreamLimits = []string{"token", "server"}
)

func newDoors() doors {
	d := doors{
		inboxRefused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "msgx_inbox_refused_total",
			Help: "Inbox posts refused before anything was read or stored, by reason (origin: a browser post from an origin http.inbox-origins does not list, 403).",
		}, []string{"reason"}),
		loginRefused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "msgx_login_refused_total",
			Help: "Log-ins refused, by reason: bad_token (401), backoff (429: too many failures from the address within a minute), origin (403: a page of another origin).",
		}, []string{"reason"}),
		streamsRefused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "msgx_streams_refused_total",
			Help: "Live-list streams refused 429, by the limit reached: token (http.max-streams-per-token) or server (http.max-streams).",
		}, []string{"limit"}),
		streamsOpen: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "msgx_streams_open",
			Help: "Live-list streams (SSE) open now.",
		}),
	}
	for _, r := range InboxRefusals {
		d.inboxRefused.WithLabelValues(r)
	}
	for _, r := range LoginRefusals {
		d.loginRefused.WithLabelValues(r)
	}
	for _, l := range StreamLimits {
		d.streamsRefused.WithLabelValues(l)
	}
	return d
}

func (d doors) collectors() []prometheus.Collector {
	return []prometheus.Collector{d.inboxRefused, d.loginRefused, d.streamsRefused, d.streamsOpen}
}

// InboxRefused counts an inbox post refused for reason (one of InboxRefusals).
func (m *Metrics) InboxRefused(reason string) {
	if m == nil {
		return
	}
	m.doors.inboxRefused.WithLabelValues(reason).Inc()
}

// LoginRefused counts a log-in refused for reason (one of LoginRefusals).
func (m *Metrics) LoginRefused(reason string) {
	if m == nil {
		return
	}
	m.doors.loginRefused.WithLabelValues(reason).Inc()
}

// StreamRefused counts a stream refused 429 at limit (one of StreamLimits).
func (m *Metrics) StreamRefused(limit string) {
	if m == nil {
		return
	}
	m.doors.streamsRefused.WithLabelValues(limit).Inc()
}

// SetStreamsOpen sets how many live-list streams are open.
func (m *Metrics) SetStreamsOpen(n int) {
	if m == nil {
		return
	}
	m.doors.streamsOpen.Set(float64(n))
}
