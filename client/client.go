// Package client is msgx's HTTP API (docs/api.md, docs/openapi/openapi.json) as Go calls:
// the request and answer types and a typed Client, for programs that script msgx — list the
// dead letters, replay a class, follow a job, read the board — and for the msgx command's own
// client subcommands. It imports nothing but the standard library.
//
// Every call takes a context first; an answer other than 2xx is an *Error carrying the API's
// error code:
//
//	c := client.New("http://msgx.example:8080", os.Getenv("MSGX_TOKEN"))
//	dead, err := c.Messages(ctx, url.Values{"state": {"DEAD"}})
//	...
//	res, err := c.Replay(ctx, []string{"ORPHAN"}, nil, false)
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Client talks to one msgx server.
type Client struct {
	URL   string // http://host:port, no trailing slash (ServerURL)
	Token string // the bearer token sent with every call but the inbox's; "" sends none
	HTTP  *http.Client
}

// New returns a client of the server at url (a URL, host:port or :port) with token.
func New(url, token string) *Client {
	return &Client{URL: NormalizeServer(url), Token: token, HTTP: &http.Client{Timeout: 60 * time.Second}}
}

// AddrURL is the URL a client on this host reaches a listen address (http.addr) at: an
// address that listens on every interface (":8080", "0.0.0.0:8080", "[::]:8080") is reached
// at 127.0.0.1.
func AddrURL(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://127.0.0.1:8080"
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// NormalizeServer turns host:port or :port into a URL and drops a trailing slash.
func NormalizeServer(s string) string {
	s = strings.TrimSuffix(strings.TrimSpace(s), "/")
	if !strings.Contains(s, "://") {
		if strings.HasPrefix(s, ":") {
			s = "127.0.0.1" + s
		}
		s = "http://" + s
	}
	return s
}

// Error is an answer other than 2xx: the API's {"error", "code"} when it sent one.
type Error struct {
	Status  int    // the HTTP status code
	Text    string // the status line ("404 Not Found")
	Message string // the API's error, "" when the body was not one
	Code    string // the API's error code
	Body    string // the body, trimmed
}

func (e *Error) Error() string {
	if e.Message != "" {
		return fmt.Sprintf("%s (%d %s)", e.Message, e.Status, e.Code)
	}
	return fmt.Sprintf("%s: %s", e.Text, e.Body)
}

// Do sends one request to path (with its query) and decodes a JSON answer into out (nil: the
// answer is dropped).
func (c *Client) Do(ctx context.Context, method, path string, body []byte, contentType string, out any) error {
	b, err := c.send(ctx, method, path, body, contentType, true)
	if err != nil || out == nil {
		return err
	}
	return json.Unmarshal(b, out)
}

// Get GETs path and decodes the JSON answer into out.
func (c *Client) Get(ctx context.Context, path string, out any) error {
	return c.Do(ctx, "GET", path, nil, "", out)
}

// get GETs path and returns its JSON answer decoded as a T: what every typed read of one
// route does. The answer is returned with the error, as far as it decoded.
func get[T any](ctx context.Context, c *Client, path string) (T, error) {
	var out T
	err := c.Get(ctx, path, &out)
	return out, err
}

// PostJSON POSTs in as JSON to path and decodes the JSON answer into out.
func (c *Client) PostJSON(ctx context.Context, path string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	return c.Do(ctx, "POST", path, body, "application/json", out)
}

// Raw GETs path and returns the body as it is (raw texts, payloads). An error answer without
// an API error says only its status.
func (c *Client) Raw(ctx context.Context, path string) ([]byte, error) {
	b, err := c.send(ctx, "GET", path, nil, "", false)
	if e, ok := err.(*Error); ok && e.Message == "" {
		return nil, fmt.Errorf("%s", e.Text)
	}
	return b, err
}

func (c *Client) send(ctx context.Context, method, path string, body []byte, contentType string, asJSON bool) ([]byte, error) {
	u := c.URL + path
	req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if asJSON {
		req.Header.Set("Accept", "application/json")
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return nil, fmt.Errorf("cannot reach msgx at %s: %w", u, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		e := &Error{Status: resp.StatusCode, Text: resp.Status, Body: strings.TrimSpace(string(b))}
		var api struct{ Error, Code string }
		if json.Unmarshal(b, &api) == nil && api.Error != "" {
			e.Message, e.Code = api.Error, api.Code
		}
		return nil, e
	}
	return b, nil
}

// Send posts one SIS message to the inbox and returns the id it is stored under (the inbox
// answered that it is durable).
func (c *Client) Send(ctx context.Context, body []byte) (int64, error) {
	var res struct {
		ID int64 `json:"id"`
	}
	err := c.Do(ctx, "POST", "/cminmsgs/send", body, "application/xml; charset=utf-8", &res)
	return res.ID, err
}

// SendRetrying is Send as the AODB gateway sends: a 503 (busy, database down) or a connection
// error is tried again, after Retry-After or a second, for up to a minute.
func (c *Client) SendRetrying(ctx context.Context, body []byte) (int64, error) {
	deadline := time.Now().Add(time.Minute)
	for {
		id, retry, err := c.sendOnce(ctx, body)
		if err == nil || retry == 0 || time.Now().Add(retry).After(deadline) {
			return id, err
		}
		if !sleep(ctx, retry) {
			return 0, ctx.Err()
		}
	}
}

// sendOnce posts body once; retry is how long to wait before trying again (0: do not).
func (c *Client) sendOnce(ctx context.Context, body []byte) (id int64, retry time.Duration, err error) {
	u := c.URL + "/cminmsgs/send"
	req, err := http.NewRequestWithContext(ctx, "POST", u, bytes.NewReader(body))
	if err != nil {
		return 0, 0, err
	}
	req.Header.Set("Content-Type", "application/xml; charset=utf-8")
	req.Header.Set("Accept", "application/json")
	resp, err := c.HTTP.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return 0, 0, ctx.Err()
		}
		return 0, time.Second, fmt.Errorf("cannot reach msgx at %s: %w", u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusServiceUnavailable {
		retry = time.Second
		if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
			retry = time.Duration(s) * time.Second
		}
		return 0, retry, fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(b)))
	}
	if resp.StatusCode != http.StatusOK {
		return 0, 0, fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(b)))
	}
	var res struct {
		ID int64 `json:"id"`
	}
	if err := json.Unmarshal(b, &res); err != nil {
		return 0, 0, fmt.Errorf("the inbox answered %q, not an id", b)
	}
	return res.ID, 0, nil
}

// Message is one message with its processing state, as GET /api/v1/messages/{id}, the
// listings and the streams answer it.
type Message struct {
	ID            int64      `json:"id"`
	State         string     `json:"state"` // PENDING, SUCCEEDED, SKIPPED, FAILED or DEAD
	ErrorClass    *string    `json:"error_class"`
	Attempts      int        `json:"attempts"`
	LastError     *string    `json:"last_error"`
	TypeTag       *string    `json:"type_tag"`
	Identity      *string    `json:"identity"`
	ReceivedAt    *time.Time `json:"received_at"`
	ProcessedAt   *time.Time `json:"processed_at"`
	NextAttemptAt *time.Time `json:"next_attempt_at"`
	FirstFailedAt *time.Time `json:"first_failed_at"`
	// Note says what processing did ("2 FLTR before today ignored; nothing applied");
	// Warnings what it noticed and applied anyway. Both are empty until processed.
	Note     string   `json:"note"`
	Warnings []string `json:"warnings"`
	// TraceID is the W3C trace id the sender passed in its traceparent header ("" when none).
	TraceID string `json:"trace_id,omitempty"`
	// AnsweredRequest is the data request this message (a RESP) answered (GET
	// /api/v1/messages/{id} only).
	AnsweredRequest *int64 `json:"answered_request,omitempty"`
}

// Class is the message's error class, "" when it has none.
func (m Message) Class() string {
	if m.ErrorClass == nil {
		return ""
	}
	return *m.ErrorClass
}

// Message returns message id.
func (c *Client) Message(ctx context.Context, id int64) (Message, error) {
	return get[Message](ctx, c, fmt.Sprintf("/api/v1/messages/%d", id))
}

// Event is one outbox event as GET /api/v1/events and its stream list it: the row, with its
// payload only when it is small (PayloadElided says it was left out; PayloadBytes is its size).
type Event struct {
	EventRow
	PayloadBytes  int64 `json:"payload_bytes"`
	PayloadElided bool  `json:"payload_elided"`
}

// EventRow is one outbox event's row. Columns that are NULL are nil, so they encode as JSON
// null.
type EventRow struct {
	EventID       int64      `json:"event_id"`
	MsgID         int64      `json:"msg_id"`
	TypeTag       string     `json:"type_tag"`
	Target        string     `json:"target"`
	Kind          string     `json:"kind"`
	FlightKey     *string    `json:"flight_key"`
	State         string     `json:"state"` // PENDING, SENT or DEAD
	Attempts      int        `json:"attempts"`
	ErrorClass    *string    `json:"error_class"`
	LastError     *string    `json:"last_error"`
	CreatedAt     time.Time  `json:"created_at"`
	SentAt        *time.Time `json:"sent_at"`
	NextAttemptAt *time.Time `json:"next_attempt_at"`
	FirstFailedAt *time.Time `json:"first_failed_at"`
	// Payload is the stored body; a body that is not valid JSON is shown as a JSON string.
	Payload json.RawMessage `json:"payload"`
}

// Events lists the outbox events filters select, one page (GET /api/v1/events): target,
// state, msg_id, limit, order, before and after as docs/api.md lists them. The answer's Next
// and Prev are the query of the pages beside it.
func (c *Client) Events(ctx context.Context, filters url.Values) (EventList, error) {
	return get[EventList](ctx, c, "/api/v1/events?"+filters.Encode())
}

// Job is a pump job as GET /api/v1/jobs and /api/v1/jobs/{id} answer it: its row (state,
// attempts, result or last error) and, while it runs, its progress (nil otherwise).
type Job struct {
	JobRow
	// Progress is, while the job runs, what it is doing and for how long; nil otherwise.
	Progress *JobProgress `json:"progress"`
}

// JobRow is a pump job's row, as POST /api/v1/jobs answers it and the status's last jobs
// list it. A job runs in the message order: after every message up to AfterMsgID is
// finished and before any later message.
type JobRow struct {
	ID            int64      `json:"id"`
	Kind          string     `json:"kind"`
	AfterMsgID    int64      `json:"after_msg_id"`
	Params        string     `json:"params,omitempty"`
	State         string     `json:"state"` // PENDING, FAILED, DONE or DEAD
	Attempts      int        `json:"attempts"`
	NextAttemptAt *time.Time `json:"next_attempt_at"`
	FirstFailedAt *time.Time `json:"first_failed_at"`
	LastError     *string    `json:"last_error"`
	Result        *string    `json:"result"`
	CreatedAt     time.Time  `json:"created_at"`
	FinishedAt    *time.Time `json:"finished_at"`
	// ScheduleKey is the scheduler's key (kind/local day) of a job it enqueued; "" for one
	// enqueued by hand.
	ScheduleKey string `json:"schedule_key,omitempty"`
}

// JobProgress is a running job's progress: what it is doing, since when, for how long.
type JobProgress struct {
	JobID     int64     `json:"job_id"`
	Kind      string    `json:"kind"`
	Doing     string    `json:"doing"`
	StartedAt time.Time `json:"started_at"`
	// RunningFor is how long it has run, at the time of the read.
	RunningFor string `json:"running_for"`
	// RunningSeconds is RunningFor in seconds.
	RunningSeconds float64 `json:"running_seconds"`
}

// Job returns one job (GET /api/v1/jobs/{id}) with its progress while it runs.
func (c *Client) Job(ctx context.Context, id int64) (Job, error) {
	return get[Job](ctx, c, fmt.Sprintf("/api/v1/jobs/%d", id))
}

// JobList is GET /api/v1/jobs's answer.
type JobList struct {
	Jobs []Job `json:"jobs"`
}

// StartJob enqueues a pump job of kind (admin); it runs in the message order.
func (c *Client) StartJob(ctx context.Context, kind string) (Job, error) {
	var j Job
	err := c.PostJSON(ctx, "/api/v1/jobs", map[string]string{"kind": kind}, &j)
	return j, err
}

// StartJobWith enqueues a pump job of kind with its parameters (jobs.Params: "prune",
// "flid=7002", "day=2026-03-15").
func (c *Client) StartJobWith(ctx context.Context, kind, params string) (Job, error) {
	var j Job
	err := c.PostJSON(ctx, "/api/v1/jobs", map[string]string{"kind": kind, "params": params}, &j)
	return j, err
}

// JobKind is a job kind and whether the server's configuration can run it (GET
// /api/v1/jobs/kinds); Reason says why not.
type JobKind struct {
	Kind     string `json:"kind"`
	Runnable bool   `json:"runnable"`
	Reason   string `json:"reason,omitempty"`
}

// JobKinds lists every job kind an operator may enqueue, whether it can run on the server and
// why not.
func (c *Client) JobKinds(ctx context.Context) ([]JobKind, error) {
	out, err := get[JobKinds](ctx, c, "/api/v1/jobs/kinds")
	return out.Kinds, err
}

// Jobs lists the pump jobs, newest first.
func (c *Client) Jobs(ctx context.Context) ([]Job, error) {
	out, err := get[JobList](ctx, c, "/api/v1/jobs")
	return out.Jobs, err
}

// JobDoing says what job id is doing, from the status's job section ("" when it is not the
// job in hand, or the status cannot be read).
func (c *Client) JobDoing(ctx context.Context, id int64) string {
	var st struct {
		Extra struct {
			Job *struct {
				JobID int64  `json:"job_id"`
				Doing string `json:"doing"`
			} `json:"job"`
		} `json:"extra"`
	}
	if c.Get(ctx, "/api/v1/status", &st) != nil || st.Extra.Job == nil || st.Extra.Job.JobID != id {
		return ""
	}
	return st.Extra.Job.Doing
}

// Status returns the server's status (GET /api/v1/status): the messages by state, the head
// and why it waits, the pump, its pauses and the extra sections.
func (c *Client) Status(ctx context.Context) (Status, error) {
	return get[Status](ctx, c, "/api/v1/status")
}

// Section decodes the status's extra section name ("targets": []TargetStatus, "recent":
// []RecentNote, "dead": DeadCounts, "shadow", …) into v, and reports whether the status has
// it.
func (st Status) Section(name string, v any) (bool, error) {
	raw, ok := st.Extra[name]
	if !ok {
		return false, nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return true, fmt.Errorf("the status's section %s: %w", name, err)
	}
	return true, nil
}

// Health is GET /healthz's answer: the server answers and reaches its database; PumpRunning
// says whether this process processes messages now, PumpPaused whether an operator paused
// the pump.
type Health struct {
	Status      string `json:"status"`
	PumpRunning bool   `json:"pump_running"`
	PumpPaused  bool   `json:"pump_paused"`
}

// Health returns the server's health (GET /healthz); a server that cannot reach its database
// answers 503, an *Error.
func (c *Client) Health(ctx context.Context) (Health, error) {
	return get[Health](ctx, c, "/healthz")
}

// RefRecord is one reference record (GET /api/v1/ref/{type}/{key}): its fields as the SIS
// message carried them, and the message that last set it.
type RefRecord struct {
	Type      string         `json:"type"`
	Key       string         `json:"key"`
	Fields    map[string]any `json:"fields"`
	Version   int64          `json:"version"`
	Source    string         `json:"source"`
	MsgID     *int64         `json:"msg_id"`
	UpdatedAt time.Time      `json:"updated_at"`
}

// Ref returns the reference record of type typ (AIRL, STTS, …) and key; one that is not
// stored is an *Error with status 404.
func (c *Client) Ref(ctx context.Context, typ, key string) (RefRecord, error) {
	return get[RefRecord](ctx, c, "/api/v1/ref/"+url.PathEscape(typ)+"/"+url.PathEscape(key))
}

// Config returns the server's effective configuration (GET /api/v1/config, admin), secrets
// redacted: its sections by name, keyed as the YAML file spells them.
func (c *Client) Config(ctx context.Context) (map[string]any, error) {
	return get[map[string]any](ctx, c, "/api/v1/config")
}

// Problems returns the recent problems (GET /api/v1/problems), newest first, at most limit
// (0: the server's default): messages parked, dead or applied with warnings, and operators'
// actions. They outlive a restart and the messages they name.
func (c *Client) Problems(ctx context.Context, limit int) ([]RecentNote, error) {
	path := "/api/v1/problems"
	if limit > 0 {
		path += "?limit=" + strconv.Itoa(limit)
	}
	out, err := get[struct {
		Problems []RecentNote `json:"problems"`
	}](ctx, c, path)
	return out.Problems, err
}

// Season is one stored seasonal schedule (GET /api/v1/seasons): its key (start/end date) and
// the SCHS fields.
type Season struct {
	Key       string         `json:"key"`
	Version   int64          `json:"version"`
	MsgID     *int64         `json:"msg_id"`
	UpdatedAt time.Time      `json:"updated_at"`
	Season    map[string]any `json:"season"`
}

// StoredSeason is a season as GET /api/v1/seasons writes it, its SCHS fields as stored
// (Season reads them decoded).
type StoredSeason struct {
	Key       string          `json:"key"`
	Version   int64           `json:"version"`
	MsgID     *int64          `json:"msg_id"`
	UpdatedAt time.Time       `json:"updated_at"`
	Season    json.RawMessage `json:"season"`
}

// SeasonList is GET /api/v1/seasons's answer as the server writes it.
type SeasonList struct {
	Seasons []StoredSeason `json:"seasons"`
}

// Seasons returns the stored seasonal schedules.
func (c *Client) Seasons(ctx context.Context) ([]Season, error) {
	out, err := get[struct {
		Seasons []Season `json:"seasons"`
	}](ctx, c, "/api/v1/seasons")
	return out.Seasons, err
}

// DataRequest returns data request id (GET /api/v1/requests/{id}); one that does not exist
// is an *Error with status 404.
func (c *Client) DataRequest(ctx context.Context, id int64) (Request, error) {
	return get[Request](ctx, c, fmt.Sprintf("/api/v1/requests/%d", id))
}

// RequestList is GET /api/v1/requests's answer.
type RequestList struct {
	Requests []Request `json:"requests"`
	Page
}

// DataRequests lists the data requests filters select, one page (GET /api/v1/requests):
// state, limit, order, before and after as docs/api.md lists them.
func (c *Client) DataRequests(ctx context.Context, filters url.Values) (RequestList, error) {
	return get[RequestList](ctx, c, "/api/v1/requests?"+filters.Encode())
}

// ConsistencyReport is a comparison of the flights in Redis and in FLIGHT_STATE (POST
// /api/v1/consistency; phase A, or phase B with a REDIS_FLIGHT target).
type ConsistencyReport struct {
	CheckedAt  time.Time  `json:"checked_at"`
	Days       []string   `json:"days"`
	Checked    int        `json:"checked"`
	Mismatches []Mismatch `json:"mismatches"`
}

// Mismatch is a flight the two stores disagree on: the fields that differ, or "missing" with
// Where the store it is missing from ("authoritative" or "mirror").
type Mismatch struct {
	FLID   int64    `json:"flid"`
	Day    string   `json:"day"`
	Where  string   `json:"where,omitempty"`
	Fields []string `json:"fields"`
}

// CheckConsistency compares the flights in Redis and in FLIGHT_STATE now and returns the
// report; it repairs nothing (a rebuild does).
func (c *Client) CheckConsistency(ctx context.Context) (ConsistencyReport, error) {
	var rep ConsistencyReport
	err := c.PostJSON(ctx, "/api/v1/consistency", struct{}{}, &rep)
	return rep, err
}

// Metrics returns the server's metrics (GET /metrics) in the Prometheus text format.
func (c *Client) Metrics(ctx context.Context) (string, error) {
	b, err := c.send(ctx, "GET", "/metrics", nil, "", false)
	return string(b), err
}

// sleep waits d or until ctx ends, and says whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
