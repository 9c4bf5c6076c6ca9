// Package api is msgx's operations API: the routes under /api/v1 (messages, replay, status,
// reference data, jobs, flights, events, dead letters, the streams), the health routes
// (/healthz, /livez, /readyz) and the access control (Auth) that wraps them and the inbox
// (internal/inbox), which the wiring hands in. Every error answers one JSON shape:
// {"error": "...", "code": "..."} (client.ErrorBody).
package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"msgx/client"
	"msgx/internal/api/reply"
	"msgx/internal/jobs/jobkind"
	"msgx/internal/metrics"
	"msgx/internal/pipeline"
	"msgx/internal/secret"
	"msgx/internal/sis"
	"msgx/internal/store"
	"msgx/internal/suggest"
)

// Store is what the HTTP API reads and changes in the database: messages, their raw text and
// their replay, what operators do (store.Operator: history, audit, pauses, parking,
// searches), the outbox (store.Events), reference data, jobs, who holds the pump lease, and
// whether the database answers.
type Store interface {
	store.Messages
	store.Operator
	store.Events
	store.Reference
	store.Jobs
	store.Health
	store.DeadLetters
	// Head and Raw are the pump's (store.Processing): the lowest unfinished message, and the
	// raw text of a message, live or archived.
	Head(ctx context.Context) (*store.Message, error)
	Raw(ctx context.Context, id int64) (raw string, ok bool, err error)
	LeaseHolder(ctx context.Context, name string) (string, time.Time, error)
}

// Deps is what the API is built from (New): the database, the inbox it mounts, the access
// control and the instruments, the parts of msgx that run elsewhere seen through small
// interfaces (the pump, the lease, the dispatcher, the jobs, the data requests, phase A's
// Redis, the message counter), the routes other packages add, and the bounds it serves by.
// Optional parts may be nil.
type Deps struct {
	DB Store
	// Inbox, when set, serves POST /cminmsgs/send: the inbox (internal/inbox), behind the same
	// access control as the API.
	Inbox http.Handler
	Clock pipeline.Clock
	Log   *slog.Logger
	// Auth is the access control (auth.go); nil: no tokens, loopback clients only.
	Auth *Auth
	// Metrics, when set, counts the operator actions (msgx_operator_actions_total).
	Metrics *metrics.Metrics
	// Health, when set, is the database check /readyz answers from (Health.Run keeps it
	// fresh): the request reads memory only. Nil: /readyz checks the database itself.
	Health *Health

	// Pump, when set, is this process's pump: woken after a replay, a park, a resume or an
	// enqueued job, asked what a message would do (a replay's dry run), read for /readyz.
	Pump Pump
	// Lease, when set, says at each request whether the pump runs in this process and, when
	// it does not, why (standby behind another instance's lease, paused while the database
	// does not answer). It overrides PumpRunning.
	Lease Lease
	// Dispatcher, when set, is the delivery loop, kicked after an event replay or a resume.
	Dispatcher Dispatcher
	// Jobs, when set, is the job runner: the jobs' answers show the progress of the job in
	// hand; GET /api/v1/jobs/kinds lists the kinds and POST /api/v1/jobs refuses one that
	// cannot run (409 job_cannot_run). Nil: no job in hand, every kind taken to run.
	Jobs Jobs
	// Redis, when set, is phase A's Redis as /readyz reports its persistence.
	Redis Redis
	// Counts, when set, counts the messages per state for GET /api/v1/status (a
	// store.StateCounter, which does not read every PROC_STATE row); nil: DB.CountByState.
	Counts metrics.StateCounter
	// ConfigView, when set, is the configuration GET /api/v1/config shows admins (redacted).
	ConfigView func() (map[string]any, error)
	// Extra lets other parts (flights, events) add their routes.
	Extra []func(mux *http.ServeMux)
	// StatusExtra adds sections to GET /api/v1/status.
	StatusExtra map[string]func(ctx context.Context) (any, error)

	// PumpRunning says whether this process runs the pump (status shows it) when Lease is nil.
	PumpRunning bool
	// Loc is the airport's zone (sis.timezone): GET /api/v1/me names it, so that the console
	// shows airport time whatever the browser's zone (nil: UTC).
	Loc *time.Location
	// Instance is this process's name as a pump lease holder; /readyz says whether the
	// instance holding the lease is this one.
	Instance string
	// PumpStepStale is how long a pump may go without a step before /readyz calls it stuck
	// (default DefaultPumpStepStale).
	PumpStepStale time.Duration
	// Targets are the delivery targets' names (pause, resume and replay refuse others);
	// empty: the targets the handlers emit to.
	Targets []string
	// Families maps each delivery target to the family of its payload, as the dispatcher's
	// (dispatch.Options.Families): the events listing, its stream and an event's payload show
	// a stored canonical event rendered for it, as it is delivered. Nil: canonical events are
	// shown as stored.
	Families map[string]string
	// StreamPoll is how often a list's stream (GET /api/v1/messages/stream, …) reads the
	// store (default DefaultStreamPoll); StreamHeartbeat how often it sends a comment line when
	// idle (default DefaultStreamHeartbeat).
	StreamPoll, StreamHeartbeat time.Duration
	// MaxStreams bounds the streams open at once (http.max-streams; 0: DefaultMaxStreams) and
	// MaxStreamsPerToken those of one token (http.max-streams-per-token; 0:
	// DefaultMaxStreamsPerToken): beyond them a stream is answered 429 with Retry-After.
	MaxStreams, MaxStreamsPerToken int
}

// Pump is this process's pump as the API drives and reads it.
type Pump interface {
	// Wake ends the pump's idle wait: there is something to do.
	Wake()
	// Foresee says what message id would do if applied now.
	Foresee(ctx context.Context, id int64) (Foresight, error)
	// LastStep is when the pump last stepped (zero: never); /readyz answers 503 when this
	// instance holds the lease but its pump has not stepped for PumpStepStale.
	LastStep() time.Time
	// Halted says why the pump applies nothing although it runs ("" when it applies): phase
	// A with a Redis that lost data. /readyz answers 503 with it.
	Halted() string
}

// Lease says whether the pump runs in this process and, when it does not, why
// (*lease.Keeper).
type Lease interface {
	State() (running bool, note string)
}

// Dispatcher is the delivery loop (*dispatch.Dispatcher): Kick ends its idle waits.
type Dispatcher interface {
	Kick()
}

// Jobs is the job runner (*jobs.Runner) as the jobs' answers read it.
type Jobs interface {
	// Current is the job the pump runs now, nil when none.
	Current() *client.JobProgress
	// Kinds says of every job kind whether this configuration runs it and why not.
	Kinds() []client.JobKind
}

// Redis is phase A's Redis as /readyz reports it: its persistence as last read ("not
// checked", "persistent", "volatile", …) and why the instance is not ready because of it
// ("" when that is fine).
type Redis interface {
	Persistence() (state, notReady string)
}

// Server serves the ops API (New).
type Server struct {
	Deps

	streamsOnce, stopOnce sync.Once
	streamsDone           chan struct{} // closed by StopStreams
	doors                 doorState     // the streams and failed log-ins counted (doors.go)
}

// New returns the API served from d.
func New(d Deps) *Server { return &Server{Deps: d} }

// DefaultPumpStepStale is Server.PumpStepStale's default: an idle pump steps every poll
// interval, a busy one at least every batch (a few seconds at most); only a long job (ARCHIVE
// of a large backlog) keeps it longer.
const DefaultPumpStepStale = 2 * time.Minute

// LeaseName is the name of the pump lease (the PUMP_LEASE row) that /readyz reads.
const LeaseName = store.PumpLease

// Handler returns the HTTP handler of every route.
func (s *Server) Handler() http.Handler { return s.Auth.Wrap(s.mux()) }

// mux registers every route (the OpenAPI route test reads it: openapi_routes_test.go).
func (s *Server) mux() *http.ServeMux {
	mux := http.NewServeMux()
	if s.Inbox != nil {
		mux.Handle("/cminmsgs/send", s.Inbox)
	}
	mux.HandleFunc("GET /healthz", s.healthz)
	mux.HandleFunc("GET /livez", s.livez)
	mux.HandleFunc("GET /readyz", s.readyz)
	mux.HandleFunc("GET /api/v1/messages/{id}", s.getMessage)
	mux.HandleFunc("GET /api/v1/messages/stream", s.streamMessages)
	s.authRoutes(mux)
	mux.HandleFunc("GET /api/v1/messages", s.searchMessages)
	s.operatorRoutes(mux)
	s.eventRoutes(mux)
	s.deadRoutes(mux)
	if s.ConfigView != nil {
		mux.HandleFunc("GET /api/v1/config", func(w http.ResponseWriter, r *http.Request) {
			v, err := s.ConfigView()
			if err != nil {
				writeError(w, http.StatusInternalServerError, "internal", err.Error())
				return
			}
			writeJSON(w, http.StatusOK, v)
		})
	}
	mux.HandleFunc("POST /api/v1/replay", s.replay)
	mux.HandleFunc("GET /api/v1/status", s.status)
	mux.HandleFunc("GET /api/v1/ref/{type}", s.refList)
	mux.HandleFunc("GET /api/v1/ref/{type}/{key}", s.refGet)
	mux.HandleFunc("POST /api/v1/jobs", s.enqueueJob)
	mux.HandleFunc("GET /api/v1/jobs", s.listJobs)
	mux.HandleFunc("GET /api/v1/jobs/stream", s.streamJobs)
	mux.HandleFunc("GET /api/v1/jobs/kinds", s.jobKinds)
	mux.HandleFunc("GET /api/v1/jobs/{id}", s.getJob)
	openAPIRoute(mux)
	for _, add := range s.Extra {
		add(mux)
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("no route for %s %q", r.Method, r.URL.Path))
	})
	return mux
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := s.DB.Ping(ctx); err != nil {
		writeError(w, http.StatusServiceUnavailable, "database_unavailable", err.Error())
		return
	}
	running, _ := s.pumpState()
	// An operator's pause stops the pump as surely as a missing one: pump_running says
	// whether this process processes messages now, pump_paused whether an operator paused it.
	p, err := s.DB.Pause(ctx, store.PumpPause)
	if err != nil {
		writeStoreError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "pump_running": running && p == nil, "pump_paused": p != nil})
}

// livez answers 200 while the process serves HTTP; it reads nothing, so a database outage
// never makes an orchestrator restart msgx.
func (s *Server) livez(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"status": "alive"})
}

// readyz answers 200 when the database answers and some instance (this one or another) holds
// an unexpired pump lease, so messages accepted here will be processed; when this instance is
// the holder, its pump must also have stepped within PumpStepStale. Otherwise 503 with the
// reason. The holder renews its lease every few seconds, so an unexpired lease means the
// holder is alive; a node that stands by can see from it where the pump runs. It answers
// from the background check (Health): a check that last succeeded more than Health.Stale ago
// is a database that does not answer.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	rd := client.Readiness{Database: "up"}
	notReady := func(reason string) {
		rd.Reason = secret.Redact(reason)
		writeJSON(w, http.StatusServiceUnavailable, rd)
	}
	h := s.Health
	if h == nil {
		h = NewHealth(s.DB, s.Clock)
		h.Check(r.Context())
	}
	c := h.Last()
	now := s.Clock.Now()
	age := h.okAge()
	rd.DatabaseCheckAge = age.Seconds()
	if !c.At.IsZero() {
		at := c.At.UTC()
		rd.DatabaseCheckedAt = &at
	}
	var redisWhy string
	if s.Redis != nil {
		rd.RedisPersistence, redisWhy = s.Redis.Persistence()
	}
	switch {
	case c.At.IsZero():
		rd.Database = "not checked"
		notReady("the database has not been checked yet (msgx is starting)")
		return
	case c.Err != nil:
		rd.Database = "down"
		notReady(fmt.Sprintf("database unreachable: %s (last answered %s ago)", c.Err.Error(), ageText(c.OKAt, age)))
		return
	case age > h.stale():
		rd.Database = "down"
		notReady(fmt.Sprintf("the database has not answered a check for %s (more than %s): it does not answer", age.Round(time.Second), h.stale()))
		return
	}
	holder, until := c.Holder, c.Until
	rd.Pump = &client.PumpWhere{Holder: holder, ThisInstance: holder != "" && holder == s.Instance}
	if holder != "" {
		u := until.UTC()
		rd.Pump.ExpiresAt = &u
	}
	switch {
	case holder == "":
		notReady("no instance holds the pump lease: messages are accepted but processed nowhere")
		return
	case !until.After(now):
		notReady(fmt.Sprintf("the pump lease of %s expired at %s: its pump is not running and no instance has taken over yet", holder, until.UTC().Format(time.RFC3339)))
		return
	}
	if rd.Pump.ThisInstance && s.Pump != nil {
		stale := s.PumpStepStale
		if stale <= 0 {
			stale = DefaultPumpStepStale
		}
		last := s.Pump.LastStep()
		if !last.IsZero() {
			l := last.UTC()
			rd.Pump.LastStepAt = &l
		}
		// A pump that has not stepped yet may just have started; one that stepped long ago is stuck.
		if !last.IsZero() && now.Sub(last) > stale {
			notReady(fmt.Sprintf("this instance holds the pump lease but its pump has not stepped since %s (more than %s)", last.UTC().Format(time.RFC3339), stale))
			return
		}
	}
	if s.Pump != nil && rd.Pump.ThisInstance {
		if why := s.Pump.Halted(); why != "" {
			notReady("the pump applies nothing: " + why)
			return
		}
	}
	if redisWhy != "" {
		notReady(redisWhy)
		return
	}
	rd.Ready = true
	writeJSON(w, http.StatusOK, rd)
}

// ageText says how long ago at was ("never" when zero).
func ageText(at time.Time, age time.Duration) string {
	if at.IsZero() {
		return "never since the start"
	}
	return age.Round(time.Second).String()
}

func (s *Server) getMessage(w http.ResponseWriter, r *http.Request) {
	if !allowParams(w, r) {
		return
	}
	m, ok := s.messageOf(w, r)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, message(m))
}

// messageOf reads the message the path's {id} names, answering 400 for an id that is not a
// positive integer and 404 for an unknown one (ok=false: the answer is written).
func (s *Server) messageOf(w http.ResponseWriter, r *http.Request) (*store.Message, bool) {
	id, ok := pathID(w, r, "id")
	if !ok {
		return nil, false
	}
	m, err := s.DB.GetMessage(r.Context(), id)
	if err != nil {
		writeStoreError(w, err)
		return nil, false
	}
	if m == nil {
		writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("no message %d", id))
		return nil, false
	}
	return m, true
}

// stateAndClass reads the state and class filters of a message listing (either may be
// absent), answering 400 and returning ok=false when one is not a state or class.
func stateAndClass(w http.ResponseWriter, q url.Values) (state pipeline.ProcStatus, class pipeline.ErrorClass, ok bool) {
	if st := q.Get("state"); st != "" {
		state = pipeline.ProcStatus(strings.ToUpper(st))
		if !state.Valid() {
			writeError(w, http.StatusBadRequest, "bad_state", fmt.Sprintf("state %q is not PENDING, SUCCEEDED, SKIPPED, FAILED or DEAD", st))
			return "", "", false
		}
	}
	if c := q.Get("class"); c != "" {
		cl, known := pipeline.ParseErrorClass(strings.ToUpper(c))
		if !known {
			writeError(w, http.StatusBadRequest, "bad_class", fmt.Sprintf("class %q is not an error class (%s)", c, classNames()))
			return "", "", false
		}
		class = cl
	}
	return state, class, true
}

// intParam reads a non-negative integer query parameter, def when it is absent.
func intParam(s string, def int) (int, error) {
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%q is not a non-negative integer", s)
	}
	return n, nil
}

func (s *Server) replay(w http.ResponseWriter, r *http.Request) {
	var req client.ReplayRequest
	if !readJSON(w, r, &req) {
		return
	}
	if len(req.Classes) == 0 && len(req.IDs) == 0 {
		writeError(w, http.StatusBadRequest, "bad_request", `name the classes ("classes":["INFRA",…]) or the ids ("ids":[…]) to replay`)
		return
	}
	var classes []pipeline.ErrorClass
	for _, c := range req.Classes {
		cl, ok := pipeline.ParseErrorClass(strings.ToUpper(c))
		if !ok {
			writeError(w, http.StatusBadRequest, "bad_class", fmt.Sprintf("class %q is not an error class", c))
			return
		}
		classes = append(classes, cl)
	}
	if len(req.IDs) > MaxIDs {
		writeError(w, http.StatusBadRequest, "too_many_ids", fmt.Sprintf("%d ids; one replay takes at most %d (send several, or replay by class)", len(req.IDs), MaxIDs))
		return
	}
	if req.DryRun {
		res, err := s.DB.ReplayPreview(r.Context(), classes, req.IDs)
		if err != nil {
			writeStoreError(w, err)
			return
		}
		items, err := s.messagePreview(r.Context(), res.IDs)
		if err != nil {
			writeStoreError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, client.MessageReplay{Moved: res.Moved, Skipped: res.Skipped, IDs: res.IDs, DryRun: true, Items: items})
		return
	}
	res, err := s.DB.Replay(r.Context(), classes, req.IDs, s.Clock.Now())
	if err != nil {
		writeStoreError(w, err)
		return
	}
	s.Log.Info("replay", "classes", req.Classes, "ids", req.IDs, "moved", res.Moved, "skipped", res.Skipped)
	if len(res.IDs) > 0 {
		if err := s.DB.AddHistory(r.Context(), res.IDs, store.Action{State: pipeline.Pending, Detail: "replayed", Actor: PrincipalOf(r).Name}, s.Clock.Now()); err != nil {
			s.Log.Error("history of a replay not written", "err", err.Error())
		}
	}
	detail, _ := json.Marshal(map[string]any{"classes": req.Classes, "ids": req.IDs, "moved": res.Moved, "skipped": res.Skipped})
	s.audit(r, "message.replay", fmt.Sprintf("%d message(s)", res.Moved), string(detail))
	if res.Moved > 0 {
		s.wakePump()
	}
	writeJSON(w, http.StatusOK, client.MessageReplay{Moved: res.Moved, Skipped: res.Skipped, IDs: res.IDs})
}

func (s *Server) status(w http.ResponseWriter, r *http.Request) {
	if !allowParams(w, r) {
		return
	}
	ctx := r.Context()
	var counts map[pipeline.ProcStatus]int
	var err error
	if s.Counts != nil {
		counts, err = s.Counts.Counts(ctx, s.Clock.Now())
	} else {
		counts, err = s.DB.CountByState(ctx)
	}
	if err != nil {
		writeStoreError(w, err)
		return
	}
	st := client.Status{Paused: []client.Pause{}}
	if counts != nil {
		st.Counts = make(map[string]int, len(counts))
		for state, n := range counts {
			st.Counts[string(state)] = n
		}
	}
	st.PumpRunning, st.PumpState = s.pumpState()
	if ps, err := s.DB.Pauses(ctx); err == nil {
		st.Paused = pauses(ps)
		for i := range st.Paused {
			if st.Paused[i].Name == store.PumpPause {
				st.PumpPause = &st.Paused[i]
			}
		}
	}
	if h, _, err := s.DB.LeaseHolder(ctx, LeaseName); err == nil {
		st.LeaseHolder = h
	}
	head, err := s.DB.Head(ctx)
	if err != nil {
		writeStoreError(w, err)
		return
	}
	if head != nil {
		st.Head = &client.Head{Message: message(head), Why: s.why(head)}
		if p := st.PumpPause; p != nil {
			st.Head.Why = fmt.Sprintf("the pump is paused by %s since %s (%s); nothing is processed until POST /api/v1/pump/resume (msgx resume)",
				p.By, p.At.Format(time.RFC3339), or(p.Reason, "no reason given"))
		}
	}
	for name, fn := range s.StatusExtra {
		v, err := fn(ctx)
		if err != nil {
			v = map[string]string{"error": secret.Redact(err.Error())}
		}
		// Each section is encoded here, as the answer would encode it, so that the answer
		// carries the client's type (whose sections the reader decodes one by one).
		b, err := json.Marshal(v)
		if err != nil {
			writeError(w, http.StatusInternalServerError, "internal", "cannot encode the answer")
			return
		}
		if st.Extra == nil {
			st.Extra = map[string]json.RawMessage{}
		}
		st.Extra[name] = b
	}
	writeJSON(w, http.StatusOK, st)
}

// pumpState says whether the pump runs in this process, and a note on why not.
func (s *Server) pumpState() (bool, string) {
	if s.Lease != nil {
		return s.Lease.State()
	}
	if !s.PumpRunning {
		return false, "off: pipeline.autostart is false"
	}
	return true, ""
}

func (s *Server) why(m *store.Message) string {
	if running, note := s.pumpState(); !running {
		return "the pump is not running in this process (" + note + ")"
	}
	if m.State == pipeline.Failed {
		next := "now"
		if m.NextAttemptAt != nil {
			next = m.NextAttemptAt.Format(time.RFC3339)
		}
		last := ""
		if m.LastError != nil {
			last = *m.LastError
		}
		return fmt.Sprintf("FAILED %s after %d attempt(s), next attempt %s: %s; everything behind it waits", m.Class(), m.Attempts, next, last)
	}
	return "PENDING: next to be processed"
}

func (s *Server) refList(w http.ResponseWriter, r *http.Request) {
	typ := strings.ToUpper(r.PathValue("type"))
	if !sis.IsRefType(typ) {
		writeError(w, http.StatusNotFound, "unknown_type", fmt.Sprintf("%q is not a reference TYPE (one of %s)", typ, strings.Join(sis.RefTypes, " ")))
		return
	}
	list, err := s.DB.RefList(r.Context(), typ)
	if err != nil {
		writeStoreError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"type": typ, "records": refEntries(list)})
}

func (s *Server) refGet(w http.ResponseWriter, r *http.Request) {
	typ := strings.ToUpper(r.PathValue("type"))
	if !sis.IsRefType(typ) {
		writeError(w, http.StatusNotFound, "unknown_type", fmt.Sprintf("%q is not a reference TYPE", typ))
		return
	}
	e, err := s.DB.RefGet(r.Context(), typ, r.PathValue("key"))
	if err != nil {
		writeStoreError(w, err)
		return
	}
	if e == nil {
		writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("no %s record %q", typ, r.PathValue("key")))
		return
	}
	writeJSON(w, http.StatusOK, refEntry(e))
}

func (s *Server) enqueueJob(w http.ResponseWriter, r *http.Request) {
	var req client.JobRequest
	if !readJSON(w, r, &req) {
		return
	}
	if !slices.Contains(jobkind.Kinds, req.Kind) {
		writeError(w, http.StatusBadRequest, "bad_kind", fmt.Sprintf("job kind %q is not known%s (%s)",
			req.Kind, suggest.DidYouMean(strings.ToUpper(req.Kind), jobkind.Kinds), strings.Join(jobkind.Kinds, ", ")))
		return
	}
	if s.cannotRun(w, req.Kind) {
		return
	}
	j, err := s.DB.EnqueueJob(r.Context(), req.Kind, req.Params, s.Clock.Now())
	if err != nil {
		writeStoreError(w, err)
		return
	}
	s.audit(r, "job.enqueue", fmt.Sprintf("job %d", j.ID), req.Kind+" "+req.Params)
	s.wakePump()
	writeJSON(w, http.StatusOK, jobRow(j))
}

func (s *Server) listJobs(w http.ResponseWriter, r *http.Request) {
	if !allowParams(w, r) {
		return
	}
	jobs, err := s.DB.ListJobs(r.Context(), 100)
	if err != nil {
		writeStoreError(w, err)
		return
	}
	cur := s.jobInHand()
	out := make([]client.Job, len(jobs))
	for i, j := range jobs {
		out[i] = jobInfo(j, cur)
	}
	writeJSON(w, http.StatusOK, map[string]any{"jobs": out, "running": cur})
}

func (s *Server) jobInHand() *client.JobProgress {
	if s.Jobs == nil {
		return nil
	}
	return s.Jobs.Current()
}

// wakePump wakes the pump when it runs here.
func (s *Server) wakePump() {
	if s.Pump != nil {
		s.Pump.Wake()
	}
}

// kickDispatcher ends the dispatcher's idle wait when it runs here.
func (s *Server) kickDispatcher() {
	if s.Dispatcher != nil {
		s.Dispatcher.Kick()
	}
}

func (s *Server) getJob(w http.ResponseWriter, r *http.Request) {
	if !allowParams(w, r) {
		return
	}
	id, ok := pathID(w, r, "id")
	if !ok {
		return
	}
	j, err := s.DB.GetJob(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("no job %d", id))
		return
	}
	if err != nil {
		writeStoreError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, jobInfo(j, s.jobInHand()))
}

// writeError writes the one error shape (reply.Error).
func writeError(w http.ResponseWriter, status int, code, msg string) {
	reply.Error(w, status, code, msg)
}

// writeStoreError answers a store error: the database refusing the request's input is the
// caller's 400 bad_input (the same request fails the same way every time), an unavailable
// database 503 with Retry-After, anything else 500.
func writeStoreError(w http.ResponseWriter, err error) {
	if inputError(err) {
		writeError(w, http.StatusBadRequest, "bad_input", "the database refused the request's input: "+err.Error())
		return
	}
	if errors.Is(err, store.ErrUnavailable) {
		w.Header().Set("Retry-After", "5")
		writeError(w, http.StatusServiceUnavailable, "database_unavailable", err.Error())
		return
	}
	writeError(w, http.StatusInternalServerError, "internal", err.Error())
}

func writeJSON(w http.ResponseWriter, status int, v any) { reply.JSON(w, status, v) }

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func readJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		writeError(w, http.StatusBadRequest, "bad_json", "the body is not the expected JSON: "+err.Error())
		return false
	}
	return true
}
