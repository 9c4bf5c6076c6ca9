package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// The answers of the ops API (docs/api.md) as the msgx command reads them: each type has the
// fields it prints.

// Readiness is the answer of GET /readyz.
type Readiness struct {
	Ready    bool   `json:"ready"`
	Database string `json:"database"` // up, down, not checked
	// DatabaseCheckedAt is when the database check this answer comes from ended, and
	// DatabaseCheckAge how many seconds ago a check last succeeded (since the start when
	// none has): the check runs in the background, never in the request.
	DatabaseCheckedAt *time.Time `json:"database_checked_at,omitempty"`
	DatabaseCheckAge  float64    `json:"database_check_age_seconds"`
	// RedisPersistence is phase A's Redis persistence as last read ("not checked" until Redis
	// answers); empty in phase B.
	RedisPersistence string `json:"redis_persistence,omitempty"`
	// Reason says why the instance is not ready; empty when it is.
	Reason string `json:"reason,omitempty"`
	// Pump says where the pump runs, from the lease row; nil when the database did not answer.
	Pump *PumpWhere `json:"pump,omitempty"`
}

// PumpWhere is who holds the pump lease, as /readyz reads it.
type PumpWhere struct {
	Holder       string     `json:"holder"` // "" when nobody holds it
	ExpiresAt    *time.Time `json:"expires_at,omitempty"`
	ThisInstance bool       `json:"this_instance"`
	// LastStepAt is when this instance's pump last stepped (only when it holds the lease).
	LastStepAt *time.Time `json:"last_step_at,omitempty"`
}

// Session is the answer of GET /api/v1/me and POST /api/v1/login: who the caller is, and the
// airport's zone (sis.timezone), in which the console shows times.
type Session struct {
	Name string `json:"name"`
	Role string `json:"role"`
	Via  string `json:"via"` // bearer, cookie or loopback
	// CSRF is the session's CSRF token (cookie sessions only): send it as X-CSRF-Token.
	CSRF     string `json:"csrf_token,omitempty"`
	Timezone string `json:"timezone"`
}

// ReplayRequest is the body of POST /api/v1/replay.
type ReplayRequest struct {
	Classes []string `json:"classes"`
	IDs     []int64  `json:"ids"`
	// DryRun answers what would move, moving nothing.
	DryRun bool `json:"dry_run"`
}

// AckRequest is the body of POST /api/v1/dead/ack.
type AckRequest struct {
	Kind string  `json:"kind"` // "message" or "event"
	IDs  []int64 `json:"ids"`
	Note string  `json:"note"`
}

// ReasonRequest is the body of POST /api/v1/messages/{id}/park (the reason is required) and
// of the pause and resume routes (optional there, as the whole body): why, for the audit log.
type ReasonRequest struct {
	Reason string `json:"reason"`
}

// LoginRequest is the body of POST /api/v1/login.
type LoginRequest struct {
	Token string `json:"token"`
}

// EventReplayRequest is the body of POST /api/v1/events/replay: the DEAD events of a target
// ("" for all), or those ids, back to PENDING; with DryRun what would move, moving nothing.
type EventReplayRequest struct {
	Target string  `json:"target"`
	IDs    []int64 `json:"ids"`
	DryRun bool    `json:"dry_run"`
}

// JobRequest is the body of POST /api/v1/jobs: a job kind and its parameters.
type JobRequest struct {
	Kind   string `json:"kind"`
	Params string `json:"params"`
}

// JobKinds is the answer of GET /api/v1/jobs/kinds: every job kind an operator may enqueue,
// whether this server's configuration can run it, and why not.
type JobKinds struct {
	Kinds []JobKind `json:"kinds"`
}

// ErrorBody is the one shape of every error answer.
type ErrorBody struct {
	Error string `json:"error"`
	Code  string `json:"code"`
}

// Status is GET /api/v1/status's answer. Extra's sections are left raw: RecentNote,
// TargetStatus and PumpTrouble read the ones the command prints in its own way.
type Status struct {
	Counts      map[string]int `json:"counts"` // by processing state
	Head        *Head          `json:"head"`
	PumpRunning bool           `json:"pump_running"`
	PumpState   string         `json:"pump_state,omitempty"` // why the pump does not run here ("standby: …"), "" when it does
	LeaseHolder string         `json:"lease_holder,omitempty"`
	// PumpPause is the operator's pause of the pump (who, why, since when); nil when it runs.
	// Paused lists every pause, the pump's and the targets' ("target:<NAME>").
	PumpPause *Pause                     `json:"pump_paused"`
	Paused    []Pause                    `json:"paused"`
	Extra     map[string]json.RawMessage `json:"extra,omitempty"`
}

// Head is the status's head message (the lowest one not finished) and why it waits.
type Head struct {
	Message
	Why string `json:"why"`
}

// MessageHistory is GET /api/v1/messages/{id}/history's answer: the message and every
// attempt, park, replay and acknowledgement of it, oldest first.
type MessageHistory struct {
	ID      int64          `json:"id"`
	Message *Message       `json:"message"`
	History []HistoryEntry `json:"history"`
}

// RecentNote is one entry of the recent problems (the status's "recent" section, GET
// /api/v1/problems): a message recently parked, dead or applied with warnings (kind
// "outcome"), or an operator's action (kind "action": actor and subject).
type RecentNote struct {
	ID      int64     `json:"id"`
	At      time.Time `json:"at"`
	Kind    string    `json:"kind"`
	MsgID   int64     `json:"msg_id,omitempty"`
	TypeTag string    `json:"type_tag,omitempty"`
	State   string    `json:"state,omitempty"`
	Class   string    `json:"error_class,omitempty"`
	Actor   string    `json:"actor,omitempty"`
	Subject string    `json:"subject,omitempty"`
	Note    string    `json:"note,omitempty"`
}

// DeadCount is the dead letters of one kind in the status's "dead" section.
type DeadCount struct {
	Dead           int `json:"dead"`
	Acknowledged   int `json:"acknowledged"`
	Unacknowledged int `json:"unacknowledged"`
}

// DeadCounts is the status's "dead" section.
type DeadCounts struct {
	Messages DeadCount `json:"messages"`
	Events   DeadCount `json:"events"`
}

// AckResult is POST /api/v1/dead/ack's answer.
type AckResult struct {
	Acked   []int64 `json:"acked"`
	Already []int64 `json:"already"`
	NotDead []int64 `json:"not_dead"`
}

// AckDead acknowledges the DEAD messages or events (kind "message" or "event") ids, with a note.
func (c *Client) AckDead(ctx context.Context, kind string, ids []int64, note string) (AckResult, error) {
	var out AckResult
	err := c.PostJSON(ctx, "/api/v1/dead/ack", map[string]any{"kind": kind, "ids": ids, "note": note}, &out)
	return out, err
}

// TargetStatus is one entry of the status's "targets" section: a delivery target's events.
type TargetStatus struct {
	Target  string `json:"target"`
	Pending int64  `json:"pending"`
	Dead    int64  `json:"dead"`
	// Sent counts every event of the target ever marked SENT, including rows deleted since.
	Sent int64 `json:"sent"`
	// OldestPendingAt is when the oldest PENDING event was created; nil when none is pending.
	OldestPendingAt *time.Time `json:"oldest_pending_at"`
	// Head is the target's lowest PENDING event, with its attempts and last error; nil when
	// none is pending.
	Head *EventRow `json:"head"`
	// While the head event fails: since when, its class, last error and next attempt (nil
	// otherwise).
	BlockedSince *time.Time `json:"blocked_since"`
	ErrorClass   *string    `json:"error_class"`
	LastError    *string    `json:"last_error"`
	NextAttempt  *time.Time `json:"next_attempt_at"`
	// Rejecting: its latest deliveries all went DEAD (at least 3 since its last success).
	Rejecting bool `json:"rejecting"`
	// AgeSeconds is how long the oldest PENDING event has waited, BlockedFor how long the
	// target has been blocked (nil when it is not), both in seconds.
	AgeSeconds float64  `json:"oldest_pending_age_s"`
	BlockedFor *float64 `json:"blocked_for_s"`
}

// PumpTrouble is the status's "pump_trouble" section: the pump cannot record an outcome.
type PumpTrouble struct {
	MsgID     int64     `json:"msg_id"`
	Failures  int       `json:"failures"`
	LastError string    `json:"last_error"`
	Since     time.Time `json:"since"`
	Next      time.Time `json:"next_attempt_at"`
}

// TargetNames returns the delivery targets the server's status lists (nil when the status
// cannot be read or lists none yet).
func (c *Client) TargetNames(ctx context.Context) []string {
	var st struct {
		Extra struct {
			Targets []struct {
				Target string `json:"target"`
			} `json:"targets"`
		} `json:"extra"`
	}
	if c.Get(ctx, "/api/v1/status", &st) != nil {
		return nil
	}
	var names []string
	for _, t := range st.Extra.Targets {
		names = append(names, t.Target)
	}
	return names
}

// MessageList is GET /api/v1/messages's answer.
type MessageList struct {
	Messages []Message `json:"messages"`
	Page
}

// Messages lists the messages filters select, one page (GET /api/v1/messages): state=DEAD,
// class=ORPHAN, flid=…, q=TEXT, limit, order, before and after as docs/api.md lists them.
// The answer's Next and Prev are the query of the pages beside it.
func (c *Client) Messages(ctx context.Context, filters url.Values) (MessageList, error) {
	return get[MessageList](ctx, c, "/api/v1/messages?"+filters.Encode())
}

// Page is the paging every listing answers with (docs/api.md, Listings), after its items:
// Next and Prev are the query parameters of the pages beside this one ("before=41"), nil
// when nothing is there; NextAfter (oldest first) is the last item's id when more may follow.
type Page struct {
	Count     int     `json:"count"` // the items on this page
	Limit     int     `json:"limit"`
	Order     string  `json:"order"`
	Truncated bool    `json:"truncated"`
	Next      *string `json:"next"`
	Prev      *string `json:"prev"`
	NextAfter *int64  `json:"next_after"`
}

// HistoryEntry is one attempt, park or replay of a message.
type HistoryEntry struct {
	At       time.Time `json:"at"`
	State    string    `json:"state"`
	Class    *string   `json:"error_class"`
	Attempts int       `json:"attempts"`
	Detail   string    `json:"detail"`
	Actor    string    `json:"actor,omitempty"`
}

// MessageHistory returns message id's history.
func (c *Client) MessageHistory(ctx context.Context, id int64) ([]HistoryEntry, error) {
	h, err := get[MessageHistory](ctx, c, fmt.Sprintf("/api/v1/messages/%d/history", id))
	return h.History, err
}

// EventList is GET /api/v1/events's answer.
type EventList struct {
	Events []Event `json:"events"`
	Page
}

// FlightChange is one change of a flight: the event that carried it (of the changed-fields
// target), the message that made it, and each changed field's old and new value as stored
// ({"FIELD":{"Old":…,"New":…}}; Fields decodes them).
type FlightChange struct {
	EventID int64           `json:"event_id"`
	MsgID   int64           `json:"msg_id"`
	TypeTag string          `json:"type_tag"`
	At      time.Time       `json:"at"`
	Op      string          `json:"op"`
	Changes json.RawMessage `json:"changes"`
}

// FieldChange is one field's old and new value, as JSON (null where it had none).
type FieldChange struct{ Old, New json.RawMessage }

// Fields decodes the change's fields, by name.
func (c FlightChange) Fields() (map[string]FieldChange, error) {
	var out map[string]FieldChange
	if err := json.Unmarshal(c.Changes, &out); err != nil {
		return nil, fmt.Errorf("changes of event %d: %w", c.EventID, err)
	}
	return out, nil
}

// FlightHistory calls each with every change of flight flid, oldest first, a page at a time.
func (c *Client) FlightHistory(ctx context.Context, flid int64, each func(FlightChange)) error {
	after := int64(0)
	for {
		var out struct {
			Changes []FlightChange `json:"changes"`
			Page
		}
		if err := c.Get(ctx, fmt.Sprintf("/api/v1/flights/%d/history?limit=1000&after=%d", flid, after), &out); err != nil {
			return err
		}
		for _, ch := range out.Changes {
			// A change whose fields do not decode fails the history, as it did when they
			// were decoded with the page.
			if _, err := ch.Fields(); err != nil {
				return err
			}
			each(ch)
		}
		if out.NextAfter == nil {
			return nil
		}
		after = *out.NextAfter
	}
}

// ReplayAnswer is the answer of POST /api/v1/replay and /api/v1/events/replay.
type ReplayAnswer struct {
	Moved   int     `json:"moved"`
	Skipped int     `json:"skipped"`
	IDs     []int64 `json:"ids"`
	Note    string  `json:"note"`
	// Items describes (dry run) the first of what would move.
	Items []ReplayItem `json:"items"`
}

// MessageReplay is POST /api/v1/replay's answer as the server writes it (ReplayAnswer reads
// it and the event replay's answer alike).
type MessageReplay struct {
	Moved   int     `json:"moved"`
	Skipped int     `json:"skipped"`
	IDs     []int64 `json:"ids"`
	DryRun  bool    `json:"dry_run"`
	// Items describes (dry run only) the first of what would move; the server caps them.
	Items []ReplayItem `json:"items,omitempty"`
}

// ReplayItem is one message or event a replay's dry run says would move.
type ReplayItem struct {
	ID int64 `json:"id"`
	// Tag is the message's type tag (FLOP-STND…), or the event's.
	Tag string `json:"tag"`
	// Target is the event's delivery target ("" for a message).
	Target string `json:"target,omitempty"`
	Class  string `json:"error_class"`
	// Since is when the message was received or the event created; AgeSeconds is how long
	// ago that was by the server's clock.
	Since      *time.Time `json:"since"`
	AgeSeconds float64    `json:"age_seconds"`
	// Sets, Leaves and Fails (messages, when the server can foresee them) say what the message
	// would do if applied now: the fields and records it would set, what it would leave as a
	// later message set it (nothing goes backwards), or the error it would fail with.
	Sets   []string `json:"sets,omitempty"`
	Leaves []string `json:"leaves,omitempty"`
	Fails  string   `json:"fails,omitempty"`
}

// ParkAnswer is the answer of POST /api/v1/messages/{id}/park: the state the message left
// and the one it is in now.
type ParkAnswer struct {
	ID    int64  `json:"id"`
	From  string `json:"from_state"`
	State string `json:"state"`
	Class string `json:"error_class"`
}

// AuditPage is GET /api/v1/audit's answer.
type AuditPage struct {
	Audit []AuditEntry `json:"audit"`
	Page
}

// AuditEntry is one operator action in the audit log: who (token name and role), what, on
// what, from where.
type AuditEntry struct {
	ID      int64     `json:"id"`
	At      time.Time `json:"at"`
	Actor   string    `json:"actor"`
	Role    string    `json:"role"`
	Action  string    `json:"action"`
	Subject string    `json:"subject"`
	Detail  string    `json:"detail"`
	Remote  string    `json:"remote"`
}

// RefEntry is one reference record (GET /api/v1/ref/{type}/{key}): its fields as stored,
// its version and where it came from.
type RefEntry struct {
	Type      string          `json:"type"`
	Key       string          `json:"key"`
	Fields    json.RawMessage `json:"fields"`
	Version   int64           `json:"version"`
	Source    string          `json:"source"`
	MsgID     *int64          `json:"msg_id"`
	UpdatedAt time.Time       `json:"updated_at"`
}

// Ack is an operator's acknowledgement of a dead letter (GET /api/v1/dead).
type Ack struct {
	Kind  string    `json:"kind"` // message or event
	ID    int64     `json:"id"`
	By    string    `json:"acked_by"`
	At    time.Time `json:"acked_at"`
	Note  string    `json:"note"`
	State string    `json:"state"` // the row's state now: DEAD, or another after a replay
}

// DeadSummary is GET /api/v1/dead's answer: the dead letters of each kind and the latest
// acknowledgements.
type DeadSummary struct {
	DeadCounts
	Acks []Ack `json:"acks"`
}

// Request is a data request (RQRD, RQFD) as the API answers it.
type Request struct {
	ID   int64  `json:"id"`
	Type string `json:"type"` // RQRD | RQFD
	STYP string `json:"styp"` // the reference TYPE, or NONE
	// STDB and STDE are the schedule window as written into the request (RQFD only).
	STDB       string     `json:"stdb,omitempty"`
	STDE       string     `json:"stde,omitempty"`
	AnswerType string     `json:"answer_type"` // the TYPE of the RESP that answers it
	State      string     `json:"state"`
	SEQN       string     `json:"seqn"`        // of the latest send
	CoutmsgsID int64      `json:"coutmsgs_id"` // the latest send's COUTMSGS row
	Resends    int        `json:"resends"`
	CreatedAt  time.Time  `json:"created_at"`
	UpdatedAt  time.Time  `json:"updated_at"`
	SentAt     *time.Time `json:"sent_at"`     // when the gateway sent the latest send
	DeadlineAt *time.Time `json:"deadline_at"` // SENT: when it is re-sent or expires without an answer
	// QueuedAt is, while the request is REGISTERED, when its latest send was queued: since
	// then it waits for the gateway.
	QueuedAt   *time.Time `json:"waiting_for_gateway_since,omitempty"`
	FinishedAt *time.Time `json:"finished_at"` // DONE or EXPIRED
	AnswerID   *int64     `json:"answer_msg_id"`
	// WaitingForGateway is, while REGISTERED, how long it has waited for the gateway to send
	// it (seconds).
	WaitingForGateway *float64 `json:"waiting_for_gateway_s,omitempty"`
}

// RequestSpec is the body of POST /api/v1/requests: what an operator asks for.
type RequestSpec struct {
	// Type is RQRD (a reference TYPE) or RQFD (a schedule window).
	Type string `json:"type"`
	// RefType is the reference TYPE an RQRD asks for (AIRL, …).
	RefType string `json:"ref_type,omitempty"`
	// From and To are the window of an RQFD: SIS times (03DEC26, 03DEC261200) or
	// 2026-12-03, 2026-12-03 12:00, 2026-12-03T12:00 (airport local time), or RFC 3339.
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
}

// FollowJob polls job id every 250 ms until it is DONE or DEAD (done is then true) or until
// timeout has passed, telling doing what the job says it is doing whenever that changes, and
// failed each new error of an attempt that will be retried.
func (c *Client) FollowJob(ctx context.Context, id int64, timeout time.Duration, doing func(string), failed func(attempt int, err string)) (j Job, done bool, err error) {
	deadline := time.Now().Add(timeout)
	lastDoing, lastErr := "", ""
	for {
		x, err := c.Job(ctx, id)
		if err != nil {
			return Job{}, false, err
		}
		switch x.State {
		case "DONE", "DEAD":
			return x, true, nil
		case "FAILED":
			if e := deref(x.LastError); e != lastErr {
				failed(x.Attempts, e)
				lastErr = e
			}
		}
		if x.Progress != nil && x.Progress.Doing != lastDoing {
			lastDoing = x.Progress.Doing
			doing(lastDoing)
		}
		if time.Now().After(deadline) {
			return Job{}, false, nil
		}
		if !sleep(ctx, 250*time.Millisecond) {
			return Job{}, false, ctx.Err()
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// Halt is why the pump applies nothing (phase A: Redis lost data; the status's section
// "pump_halted"), and since when.
type Halt struct {
	Reason string    `json:"reason"`
	Since  time.Time `json:"since"`
}

// Halted returns the pump's halt, or nil when it is not halted (or the server has no such
// section: phase B).
func (st Status) Halted() *Halt {
	var h *Halt
	if raw, ok := st.Extra["pump_halted"]; ok && json.Unmarshal(raw, &h) == nil && h != nil && h.Reason != "" {
		return h
	}
	return nil
}

// PumpPaused reports whether an operator paused the pump.
func (st Status) PumpPaused() bool {
	for _, p := range st.Paused {
		if p.Name == "pump" {
			return true
		}
	}
	return false
}

// TargetsPaused is how many delivery targets an operator paused.
func (st Status) TargetsPaused() int {
	n := 0
	for _, p := range st.Paused {
		if strings.HasPrefix(p.Name, "target:") {
			n++
		}
	}
	return n
}

// JobInHand is the job the pump runs, as the status names it.
type JobInHand struct {
	JobID      int64  `json:"job_id"`
	Kind       string `json:"kind"`
	Doing      string `json:"doing"`
	RunningFor string `json:"running_for"`
}

// MessageInHand is the message the pump works on, as the status's "in_hand" section names
// it: a 3,000-flight snapshot or a large batch takes long enough for an operator to ask.
type MessageInHand struct {
	MsgID int64  `json:"msg_id"`
	Tag   string `json:"tag,omitempty"` // the type tag, once the message is decoded
	// Doing is the stage: "decoding", "deciding" (the handler), "writing" (its effects), or
	// "committing a batch of N messages".
	Doing string    `json:"doing"`
	Since time.Time `json:"since"` // when the pump took the message (or the batch its commit)
	// RunningFor is how long it has been in hand, rounded; RunningSeconds the same in seconds.
	RunningFor     string  `json:"running_for"`
	RunningSeconds float64 `json:"running_seconds"`
}

// DecodedMessage is GET /api/v1/console/messages/{id}/decoded's answer: the message as the
// pump's decoder reads it, or why it cannot (Error and Class, as processing would record
// them).
type DecodedMessage struct {
	ID      int64  `json:"id"`
	Decoded any    `json:"decoded,omitempty"`
	Error   string `json:"error,omitempty"`
	Class   string `json:"class,omitempty"`
}

// Throughput is GET /api/v1/console/throughput's answer: the messages finished in each
// minute of the hour before Until.
type Throughput struct {
	// Until is the end of the last minute bucket (now); PerMinute[59] is the minute up to it.
	Until     time.Time `json:"until"`
	PerMinute []int     `json:"per_minute"`
	Total     int       `json:"total"`
	// Partial is always false: every message finished in the hour is counted (it was true
	// when only the newest 5,000 messages were read; kept so clients that read it still work).
	Partial bool `json:"partial"`
}
