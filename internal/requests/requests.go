// Package requests asks the AODB for data (docs/sis-format.md §2.6, §4.3; seed U19): a reference
// re-download (RQRD, STYP one of the 23 reference TYPEs) or a schedule window (RQFD, STYP
// NONE, STDB/STDE). It validates what an operator asks for, writes the request's XML (SNDR
// VIEW, the next SEQN of the durable counter, DTTM local now) for the legacy gateway to send
// (COUTMSGS, through the store), and runs the loop that follows each request in REQ_TRACK:
// SENT once the gateway sent it, re-sent when no answer came within the timeout of the
// gateway's send (COUTMSGS_DATE_SENT), EXPIRED once the re-sends are used up. A request the
// gateway has not sent yet waits for it, however long: it is never re-sent, and the wait is
// shown (Show, the metrics of Collectors). The answer itself (a RESP of the requested TYPE, or SCHD) is
// matched by the store in the RESP's success transaction (store/requests.go).
package requests

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"msgx/client"
	"msgx/internal/pipeline"
	"msgx/internal/sis"
	"msgx/internal/store"
)

// Spec is what an operator asks for: the body of POST /api/v1/requests.
type Spec = client.RequestSpec

// Invalid says what is wrong with a Spec; the API answers it with 400.
type Invalid struct {
	Field string // the field at fault: type, ref_type, from, to
	Msg   string
}

func (e *Invalid) Error() string { return e.Field + ": " + e.Msg }

// Is makes an Invalid a store.ErrBadRequest: nothing was written, and the request must change
// before it can succeed (the API answers both 400 invalid_request).
func (e *Invalid) Is(target error) bool { return target == store.ErrBadRequest }

// Validated is a Spec checked and put the way the request carries it.
type Validated struct {
	store.NewRequest
}

// Validate checks s and returns the request to write: the TYPE must be one of the 23
// reference TYPEs; a schedule window needs both ends, each a time, the end not before the
// start. A SIS time is written as given; any other accepted form as ddMMMyyHHmm in loc.
func Validate(s Spec, loc *time.Location) (Validated, error) {
	switch strings.ToUpper(strings.TrimSpace(s.Type)) {
	case store.ReqReference, "REF", "REFERENCE":
		typ := strings.ToUpper(strings.TrimSpace(s.RefType))
		if typ == "" {
			return Validated{}, &Invalid{"ref_type", "missing: name one of the 23 reference TYPEs (" + strings.Join(sis.RefTypes, " ") + ")"}
		}
		if !sis.IsRefType(typ) {
			return Validated{}, &Invalid{"ref_type", fmt.Sprintf("%q is not a reference TYPE (one of %s)", s.RefType, strings.Join(sis.RefTypes, " "))}
		}
		return Validated{store.NewRequest{Type: store.ReqReference, STYP: typ, AnswerType: typ, Routing: store.RoutingReference}}, nil
	case store.ReqSchedule, "SCHEDULE":
		if strings.TrimSpace(s.From) == "" {
			return Validated{}, &Invalid{"from", "missing: a schedule request needs the start of its window (STDB)"}
		}
		if strings.TrimSpace(s.To) == "" {
			return Validated{}, &Invalid{"to", "missing: a schedule request needs the end of its window (STDE)"}
		}
		from, stdb, err := windowTime(s.From, loc)
		if err != nil {
			return Validated{}, &Invalid{"from", err.Error()}
		}
		to, stde, err := windowTime(s.To, loc)
		if err != nil {
			return Validated{}, &Invalid{"to", err.Error()}
		}
		if to.Before(from) {
			return Validated{}, &Invalid{"to", fmt.Sprintf("the window ends (%s) before it starts (%s)", stde, stdb)}
		}
		return Validated{store.NewRequest{Type: store.ReqSchedule, STYP: "NONE", STDB: stdb, STDE: stde, AnswerType: "SCHD", Routing: store.RoutingSchedule}}, nil
	case "":
		return Validated{}, &Invalid{"type", "missing: RQRD (reference data) or RQFD (schedule window)"}
	}
	return Validated{}, &Invalid{"type", fmt.Sprintf("%q is not RQRD (reference data) or RQFD (schedule window)", s.Type)}
}

// windowTime reads one end of a schedule window and returns it with the text the request
// carries.
func windowTime(s string, loc *time.Location) (time.Time, string, error) {
	s = strings.TrimSpace(s)
	up := strings.ToUpper(s)
	if len(up) == 7 {
		if t, err := sis.ParseDate(up, loc); err == nil {
			return t, up, nil
		}
	}
	if len(up) == 11 {
		if t, err := sis.ParseDateTime(up, loc); err == nil {
			return t, up, nil
		}
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, sis.FormatDateTime(t, loc), nil
	}
	for _, layout := range []string{"2006-01-02 15:04", "2006-01-02T15:04", time.DateTime, "2006-01-02T15:04:05", time.DateOnly} {
		if t, err := time.ParseInLocation(layout, s, loc); err == nil {
			return t, sis.FormatDateTime(t, loc), nil
		}
	}
	return time.Time{}, "", fmt.Errorf("%q is not a time: use 03DEC26, 03DEC261200, 2026-12-03, 2026-12-03 12:00 or RFC 3339", s)
}

// XML returns the request's SIS text for seqn, built at now (DTTM: local time in loc).
func XML(r store.NewRequest, seqn string, now time.Time, loc *time.Location) string {
	var b strings.Builder
	esc := func(s string) string {
		var e strings.Builder
		xml.EscapeText(&e, []byte(s))
		return e.String()
	}
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	b.WriteString(`<MSG xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:noNamespaceSchemaLocation="unisysaodbsis.xsd">` + "\n")
	fmt.Fprintf(&b, "  <META><SNDR>VIEW</SNDR><SEQN>%s</SEQN><DTTM>%s</DTTM><TYPE>%s</TYPE><STYP>%s</STYP></META>\n",
		esc(seqn), now.In(loc).Format("20060102150405"), esc(r.Type), esc(r.STYP))
	if r.Type == store.ReqSchedule {
		fmt.Fprintf(&b, "  <RQFD><STDB>%s</STDB><STDE>%s</STDE></RQFD>\n", esc(r.STDB), esc(r.STDE))
	} else {
		fmt.Fprintf(&b, "  <RQRD><RTYP>%s</RTYP></RQRD>\n", esc(r.STYP))
	}
	b.WriteString("</MSG>\n")
	return b.String()
}

// Options configure a Service.
type Options struct {
	Clock pipeline.Clock
	// Location is the zone of the request's DTTM and of a window given without one: the
	// airport's (sis.timezone).
	Location *time.Location
	// Timeout is how long a request may wait for its answer, from the gateway's send, before
	// it is re-sent or expires (requests.timeout); default 10 minutes.
	Timeout time.Duration
	// MaxResends is how many times a request without an answer is sent again
	// (requests.max-resends).
	MaxResends int
	// PollInterval is how often Run looks at the open requests; default 1s.
	PollInterval time.Duration
	Logger       *slog.Logger
}

// Service creates data requests and follows them.
type Service struct {
	db  store.Requests
	opt Options

	mu      sync.Mutex
	waiting int        // REGISTERED requests at the last Step
	oldest  *time.Time // when the longest-waiting of them was queued
	warned  bool       // the oldest wait past the timeout was logged
}

// New returns a Service over db.
func New(db store.Requests, opt Options) *Service {
	if opt.Clock == nil {
		opt.Clock = pipeline.SystemClock{}
	}
	if opt.Location == nil {
		opt.Location = time.UTC
	}
	if opt.Timeout <= 0 {
		opt.Timeout = 10 * time.Minute
	}
	opt.PollInterval = pipeline.OrDefault(opt.PollInterval, time.Second)
	if opt.Logger == nil {
		opt.Logger = slog.Default()
	}
	return &Service{db: db, opt: opt}
}

// Create validates s, writes the request into COUTMSGS and tracks it (REGISTERED). A bad s
// is an *Invalid; in shadow mode it fails with store.ErrShadow.
func (s *Service) Create(ctx context.Context, spec Spec) (*store.Request, error) {
	v, err := Validate(spec, s.opt.Location)
	if err != nil {
		return nil, err
	}
	now := s.opt.Clock.Now()
	r, err := s.db.CreateRequest(ctx, v.NewRequest, s.build(v.NewRequest, now), now)
	if err != nil {
		return nil, err
	}
	s.opt.Logger.Info("data request REGISTERED", "req_id", r.ID, "type", r.Type, "styp", r.STYP, "seqn", r.SEQN, "coutmsgs_id", r.CoutmsgsID)
	return r, nil
}

func (s *Service) build(r store.NewRequest, now time.Time) store.BuildXML {
	return func(seqn string) (string, error) { return XML(r, seqn, now, s.opt.Location), nil }
}

// Run follows the open requests until ctx ends: each PollInterval one Step. serve runs it
// only while this instance holds the pump lease, so one instance re-sends.
func (s *Service) Run(ctx context.Context) {
	t := time.NewTicker(s.opt.PollInterval)
	defer t.Stop()
	for {
		if err := s.Step(ctx); err != nil && ctx.Err() == nil {
			s.opt.Logger.Warn("data requests: step failed; trying again", "err", err.Error())
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Step moves the requests the gateway sent to SENT (deadline: the gateway's send plus the
// timeout), then re-sends each SENT request whose deadline passed (a new COUTMSGS row with
// the next SEQN) while it has re-sends left, and expires it otherwise. A REGISTERED request
// is left to the gateway; Step counts them and how long the oldest has waited.
func (s *Service) Step(ctx context.Context) error {
	now := s.opt.Clock.Now()
	if n, err := s.db.MarkSent(ctx, s.opt.Timeout, now); err != nil {
		return err
	} else if n > 0 {
		s.opt.Logger.Info("data requests SENT by the gateway", "count", n)
	}
	due, err := s.db.Overdue(ctx, now)
	if err != nil {
		return err
	}
	for _, r := range due {
		if r.Resends < s.opt.MaxResends {
			nr := store.NewRequest{Type: r.Type, STYP: r.STYP, STDB: r.STDB, STDE: r.STDE}
			got, err := s.db.Resend(ctx, r, s.build(nr, now), now)
			if errors.Is(err, store.ErrChanged) {
				continue // answered or re-sent meanwhile
			}
			if err != nil {
				return err
			}
			s.opt.Logger.Warn("data request not answered in time; sent again", "req_id", r.ID, "type", r.Type, "styp", r.STYP,
				"resends", got.Resends, "seqn", got.SEQN, "coutmsgs_id", got.CoutmsgsID)
			continue
		}
		if err := s.db.Expire(ctx, r, now); errors.Is(err, store.ErrChanged) {
			continue
		} else if err != nil {
			return err
		}
		s.opt.Logger.Warn("data request EXPIRED: no answer after its re-sends", "req_id", r.ID, "type", r.Type, "styp", r.STYP,
			"resends", r.Resends, "seqn", r.SEQN)
	}
	return s.sampleWaiting(ctx, now)
}

// sampleWaiting records the requests waiting for the gateway, and logs once when the oldest
// has waited longer than the timeout (the gateway may be down).
func (s *Service) sampleWaiting(ctx context.Context, now time.Time) error {
	n, oldest, err := s.db.WaitingForGateway(ctx)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.waiting, s.oldest = n, oldest
	late := oldest != nil && now.Sub(*oldest) > s.opt.Timeout
	if late && !s.warned {
		s.opt.Logger.Warn("data requests waiting for the gateway: it has not sent them (COUTMSGS_DATE_SENT unset); they are not re-sent",
			"count", n, "oldest_queued_at", oldest.UTC().Format(time.RFC3339), "waited", now.Sub(*oldest).Round(time.Second).String())
	}
	s.warned = late
	return nil
}

// Show returns r as the API answers it: while the gateway has not sent it (REGISTERED), with
// how long it has waited for the gateway, in seconds, at the service's clock.
func (s *Service) Show(r *store.Request) client.Request {
	out := client.Request{ID: r.ID, Type: r.Type, STYP: r.STYP, STDB: r.STDB, STDE: r.STDE, AnswerType: r.AnswerType,
		State: r.State, SEQN: r.SEQN, CoutmsgsID: r.CoutmsgsID, Resends: r.Resends, CreatedAt: r.CreatedAt,
		UpdatedAt: r.UpdatedAt, SentAt: r.SentAt, DeadlineAt: r.DeadlineAt, QueuedAt: r.QueuedAt, FinishedAt: r.FinishedAt,
		AnswerID: r.AnswerID}
	if r.State == store.ReqRegistered && r.QueuedAt != nil {
		w := max(0, s.opt.Clock.Now().Sub(*r.QueuedAt).Round(time.Millisecond).Seconds())
		out.WaitingForGateway = &w
	}
	return out
}

// Collectors returns the gauges of the requests waiting for the gateway, as the last Step
// saw them (0 on an instance that does not follow the requests):
// msgx_requests_waiting_for_gateway and msgx_requests_waiting_for_gateway_oldest_age_seconds
// (taken at the scrape).
func (s *Service) Collectors() []prometheus.Collector {
	return []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "msgx_requests_waiting_for_gateway",
			Help: "Data requests written into COUTMSGS that the gateway has not sent yet (REGISTERED; never re-sent while so), as the request loop last saw them.",
		}, func() float64 {
			s.mu.Lock()
			defer s.mu.Unlock()
			return float64(s.waiting)
		}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "msgx_requests_waiting_for_gateway_oldest_age_seconds",
			Help: "How long the data request that has waited longest for the gateway to send it has waited (0 when none waits).",
		}, func() float64 {
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.oldest == nil {
				return 0
			}
			return max(0, s.opt.Clock.Now().Sub(*s.oldest).Seconds())
		}),
	}
}
