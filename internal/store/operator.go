package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"msgx/internal/event"
	"msgx/internal/pipeline"
	"msgx/internal/secret"
)

// What operators read and do beside the queue itself (migration 00010): a message's history
// (MSG_HISTORY), the audit log of their actions (AUDIT_LOG), the pause switches of the pump and
// of each target (PAUSE_STATE), parking a message, and the searches by flight (messages
// through MSG_FLIGHT, migration 00012; events through their FLIGHT_KEY, index IDX_EVT_FLIGHT).

// Operator is the contract of this file; *Operations implements it on every dialect.
type Operator interface {
	MessageHistory(ctx context.Context, id int64) ([]HistoryEntry, error)
	AddHistory(ctx context.Context, ids []int64, a Action, now time.Time) error
	Park(ctx context.Context, id int64, reason, actor string, now time.Time) (ParkResult, error)
	AddAudit(ctx context.Context, a AuditEntry) error
	ListAudit(ctx context.Context, q AuditQuery) ([]AuditEntry, error)
	SetPause(ctx context.Context, name, by, reason string, now time.Time) error
	ClearPause(ctx context.Context, name string) (bool, error)
	Pause(ctx context.Context, name string) (*Pause, error)
	Pauses(ctx context.Context) ([]Pause, error)
	SearchMessages(ctx context.Context, q MessageQuery) ([]*Message, error)
	SearchEvents(ctx context.Context, q EventQuery) ([]EventBrief, error)
	EventPayload(ctx context.Context, id int64, target string, families map[string]string) ([]byte, bool, error)
	FlightHistory(ctx context.Context, flid int64, target string, afterID int64, limit int) ([]FlightChange, error)
	ReplayPreview(ctx context.Context, classes []pipeline.ErrorClass, ids []int64) (ReplayResult, error)
}

var _ Operator = (*Operations)(nil)

// Widths of the operator tables' text columns.
const (
	ActorWidth   = 64   // MSG_HISTORY.ACTOR, AUDIT_LOG.ACTOR, PAUSE_STATE.PAUSED_BY
	SubjectWidth = 128  // AUDIT_LOG.SUBJECT
	DetailWidth  = 4000 // MSG_HISTORY.DETAIL, AUDIT_LOG.DETAIL, PAUSE_STATE.REASON
	PauseWidth   = 80   // PAUSE_STATE.NAME
)

// MaxPageLimit bounds every operator listing.
const MaxPageLimit = 1000

// clampLimit is the number of rows a listing asked for n rows reads: 100 for none (0 or
// less), at most MaxPageLimit.
func clampLimit(n int) int {
	if n <= 0 {
		return 100
	}
	return min(n, MaxPageLimit)
}

// HistoryEntry is one step of a message's history: an outcome the pump recorded (a failed
// attempt, DEAD, SKIPPED; Actor empty) or an operator's action (park, replay; Actor names the
// token).
type HistoryEntry struct {
	At       time.Time
	State    string
	Class    *string
	Attempts int
	Detail   string
	Actor    string
}

// insertHistory adds one history row inside tx.
func insertHistory(ctx context.Context, tx *sql.Tx, id int64, state pipeline.ProcStatus, class pipeline.ErrorClass, attempts int, detail, actor string, now time.Time) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO MSG_HISTORY (CMINMSGS_ID, HAPPENED_AT, STATE, ERROR_CLASS, ATTEMPTS, DETAIL, ACTOR) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		id, T(now), string(state), nullStr(string(class)), attempts, nullStr(Fit(secret.Redact(detail), DetailWidth)), nullStr(Fit(actor, ActorWidth)))
	return err
}

// MessageHistory returns the recorded steps of message id, oldest first.
func (ops *Operations) MessageHistory(ctx context.Context, id int64) ([]HistoryEntry, error) {
	rows, err := ops.db.SQL.QueryContext(ctx, `SELECT HAPPENED_AT, STATE, ERROR_CLASS, ATTEMPTS, DETAIL, ACTOR FROM MSG_HISTORY
WHERE CMINMSGS_ID = ? ORDER BY HIST_ID LIMIT 1000`, id)
	if err != nil {
		return nil, Unavailable(fmt.Errorf("history of message %d: %w", id, err))
	}
	defer rows.Close()
	out := []HistoryEntry{}
	for rows.Next() {
		var h HistoryEntry
		var at NullTime
		var class, detail, actor sql.NullString
		if err := rows.Scan(&at, &h.State, &class, &h.Attempts, &detail, &actor); err != nil {
			return nil, Unavailable(fmt.Errorf("history of message %d: %w", id, err))
		}
		h.At, h.Class, h.Detail, h.Actor = at.Time, strPtr(class), detail.String, actor.String
		out = append(out, h)
	}
	if err := rows.Err(); err != nil {
		return nil, Unavailable(fmt.Errorf("history of message %d: %w", id, err))
	}
	return out, nil
}

// Action is an operator's action on messages as their history keeps it: the state it left
// them in, what was done and who did it.
type Action struct {
	State  pipeline.ProcStatus
	Detail string
	Actor  string
}

// AddHistory records an operator's action a on messages ids (a replay), one row each.
func (ops *Operations) AddHistory(ctx context.Context, ids []int64, a Action, now time.Time) error {
	if len(ids) == 0 {
		return nil
	}
	return ops.db.Tx(ctx, func(tx *sql.Tx) error {
		for _, id := range ids {
			if err := insertHistory(ctx, tx, id, a.State, "", 0, a.Detail, a.Actor, now); err != nil {
				return Unavailable(fmt.Errorf("history of message %d: %w", id, err))
			}
		}
		return nil
	})
}

// ErrNotFound is returned when the row an action names does not exist.
var ErrNotFound = errors.New("not found")

// ParkRefused is Park's error for a message that is finished (SUCCEEDED or SKIPPED).
type ParkRefused struct{ State pipeline.ProcStatus }

func (e ParkRefused) Error() string {
	return fmt.Sprintf("the message is %s: only PENDING, FAILED or DEAD messages can be parked", e.State)
}

// ParkResult says what Park did.
type ParkResult struct {
	ID    int64
	From  pipeline.ProcStatus
	State pipeline.ProcStatus
	Class pipeline.ErrorClass
}

// Park sets message id aside: DEAD with class PARKED (replayable), its last error saying who
// parked it and why (the previous last error kept after it). Only a PENDING, FAILED or DEAD
// message moves; a finished one is refused with ParkRefused, an unknown id with ErrNotFound.
// The UPDATE is conditional on the state it read, so a pump that worked on the message at the
// same time finds its row changed and leaves it parked.
func (ops *Operations) Park(ctx context.Context, id int64, reason, actor string, now time.Time) (ParkResult, error) {
	res := ParkResult{ID: id, State: pipeline.Dead, Class: pipeline.Parked}
	err := ops.db.Tx(ctx, func(tx *sql.Tx) error {
		var st string
		var last sql.NullString
		var attempts int
		err := tx.QueryRowContext(ctx, `SELECT STATE, LAST_ERROR, ATTEMPTS FROM PROC_STATE WHERE CMINMSGS_ID = ?`, id).Scan(&st, &last, &attempts)
		if err == sql.ErrNoRows {
			return ErrNotFound
		}
		if err != nil {
			return Unavailable(fmt.Errorf("read message %d: %w", id, err))
		}
		res.From = pipeline.ProcStatus(st)
		switch res.From {
		case pipeline.Pending, pipeline.Failed, pipeline.Dead:
		default:
			return ParkRefused{State: res.From}
		}
		text := fmt.Sprintf("parked by %s: %s", actor, reason)
		if last.String != "" {
			text += "; before: " + last.String
		}
		r, err := tx.ExecContext(ctx, `UPDATE PROC_STATE SET STATE = ?, ERROR_CLASS = ?, LAST_ERROR = ?, NEXT_ATTEMPT_AT = NULL,
UPDATED_AT = ?, PROCESSED_AT = ? WHERE CMINMSGS_ID = ? AND STATE = ?`,
			pipeline.Dead, pipeline.Parked, Fit(secret.Redact(text), LastErrorWidth), T(now), T(now), id, st)
		if err != nil {
			return Unavailable(fmt.Errorf("park message %d: %w", id, err))
		}
		if n, _ := r.RowsAffected(); n != 1 {
			return ErrChanged
		}
		if err := insertHistory(ctx, tx, id, pipeline.Dead, pipeline.Parked, attempts, "parked: "+reason, actor, now); err != nil {
			return Unavailable(fmt.Errorf("history of message %d: %w", id, err))
		}
		return nil
	})
	return res, err
}

// AuditEntry is one operator action.
type AuditEntry struct {
	ID      int64
	At      time.Time
	Actor   string
	Role    string
	Action  string
	Subject string
	Detail  string
	Remote  string
}

// AddAudit writes a to the audit log; texts are fitted to their columns and redacted.
func (ops *Operations) AddAudit(ctx context.Context, a AuditEntry) error {
	_, err := ops.db.SQL.ExecContext(ctx, `INSERT INTO AUDIT_LOG (HAPPENED_AT, ACTOR, ACTOR_ROLE, ACTION_KIND, SUBJECT, DETAIL, REMOTE) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		T(a.At), Fit(a.Actor, ActorWidth), Fit(a.Role, 16), Fit(a.Action, 32), nullStr(Fit(a.Subject, SubjectWidth)),
		nullStr(Fit(secret.Redact(a.Detail), DetailWidth)), nullStr(Fit(a.Remote, 64)))
	if err != nil {
		return Unavailable(fmt.Errorf("audit log: %w", err))
	}
	return nil
}

// AuditQuery is a page of the audit log: ids between AfterID and BeforeID (0: no bound), at
// most Limit (default 100, at most MaxPageLimit) of them, newest first when Newest.
type AuditQuery struct {
	AfterID, BeforeID int64
	Newest            bool
	Limit             int
}

// ListAudit returns the page q of the audit log, in id order (newest first with q.Newest).
func (ops *Operations) ListAudit(ctx context.Context, q AuditQuery) ([]AuditEntry, error) {
	cond, args, order, reverse := idRange("AUDIT_ID", q.AfterID, q.BeforeID, q.Newest)
	rows, err := ops.db.SQL.QueryContext(ctx, `SELECT AUDIT_ID, HAPPENED_AT, ACTOR, ACTOR_ROLE, ACTION_KIND, SUBJECT, DETAIL, REMOTE
FROM AUDIT_LOG WHERE `+cond+` ORDER BY `+order+` LIMIT ?`, append(args, clampLimit(q.Limit))...)
	if err != nil {
		return nil, Unavailable(fmt.Errorf("audit log: %w", err))
	}
	defer rows.Close()
	out := []AuditEntry{}
	for rows.Next() {
		var a AuditEntry
		var at NullTime
		var subj, detail, remote sql.NullString
		if err := rows.Scan(&a.ID, &at, &a.Actor, &a.Role, &a.Action, &subj, &detail, &remote); err != nil {
			return nil, Unavailable(fmt.Errorf("audit log: %w", err))
		}
		a.At, a.Subject, a.Detail, a.Remote = at.Time, subj.String, detail.String, remote.String
		out = append(out, a)
	}
	if reverse {
		slices.Reverse(out)
	}
	return out, Unavailable(rows.Err())
}

// Pause is one paused part: "pump" or "target:<NAME>".
type Pause struct {
	Name   string
	By     string
	Reason string
	At     time.Time
}

// PumpPause is the pause name of the pump; TargetPause that of a delivery target.
const PumpPause = "pump"

// TargetPause returns the pause name of target.
func TargetPause(target string) string { return "target:" + target }

// SetPause pauses name (idempotent: a second pause keeps the first one's who and when).
func (ops *Operations) SetPause(ctx context.Context, name, by, reason string, now time.Time) error {
	return ops.db.Tx(ctx, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM PAUSE_STATE WHERE NAME = ?`, name).Scan(&n); err != nil {
			return Unavailable(fmt.Errorf("pause %s: %w", name, err))
		}
		if n > 0 {
			return nil
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO PAUSE_STATE (NAME, PAUSED_BY, REASON, PAUSED_AT) VALUES (?, ?, ?, ?)`,
			Fit(name, PauseWidth), Fit(by, ActorWidth), nullStr(Fit(secret.Redact(reason), DetailWidth)), T(now))
		if err != nil {
			return Unavailable(fmt.Errorf("pause %s: %w", name, err))
		}
		return nil
	})
}

// ClearPause resumes name and reports whether it was paused.
func (ops *Operations) ClearPause(ctx context.Context, name string) (bool, error) {
	r, err := ops.db.SQL.ExecContext(ctx, `DELETE FROM PAUSE_STATE WHERE NAME = ?`, name)
	if err != nil {
		return false, Unavailable(fmt.Errorf("resume %s: %w", name, err))
	}
	n, _ := r.RowsAffected()
	return n > 0, nil
}

// Pause returns the pause of name, nil when it runs.
func (ops *Operations) Pause(ctx context.Context, name string) (*Pause, error) {
	var p Pause
	var reason sql.NullString
	var at NullTime
	err := ops.db.SQL.QueryRowContext(ctx, `SELECT NAME, PAUSED_BY, REASON, PAUSED_AT FROM PAUSE_STATE WHERE NAME = ?`, name).Scan(&p.Name, &p.By, &reason, &at)
	if err == sql.ErrNoRows {
		return nil, nil
	}
	if err != nil {
		return nil, Unavailable(fmt.Errorf("pause state of %s: %w", name, err))
	}
	p.Reason, p.At = secret.Redact(reason.String), at.Time
	return &p, nil
}

// Pauses returns every paused part, by name.
func (ops *Operations) Pauses(ctx context.Context) ([]Pause, error) {
	rows, err := ops.db.SQL.QueryContext(ctx, `SELECT NAME, PAUSED_BY, REASON, PAUSED_AT FROM PAUSE_STATE ORDER BY NAME`)
	if err != nil {
		return nil, Unavailable(fmt.Errorf("pause states: %w", err))
	}
	defer rows.Close()
	out := []Pause{}
	for rows.Next() {
		var p Pause
		var reason sql.NullString
		var at NullTime
		if err := rows.Scan(&p.Name, &p.By, &reason, &at); err != nil {
			return nil, Unavailable(fmt.Errorf("pause states: %w", err))
		}
		p.Reason, p.At = secret.Redact(reason.String), at.Time
		out = append(out, p)
	}
	return out, Unavailable(rows.Err())
}

// MessageQuery selects messages for SearchMessages; zero fields match all.
type MessageQuery struct {
	State pipeline.ProcStatus
	Class pipeline.ErrorClass
	// FLID: messages that name this flight (a FLOP for it, a SCHD listing it), whatever
	// their outcome: SUCCEEDED, SKIPPED, FAILED, DEAD (a parked ORPHAN too), found through
	// MSG_FLIGHT. A message that could not be decoded names no flight and is not found;
	// messages processed before MSG_FLIGHT existed are found through the events they
	// emitted (copied by the migration). 0 (no FLID is 0) means any flight.
	FLID int64
	// Tag: a type tag (FLOP-CHOT), or a TYPE alone (FLOP) for every STYP of it.
	Tag string
	// From, To: when msgx took the message (PROC_STATE's creation, UTC), To excluded.
	From, To time.Time
	// Text: a substring of the identity, the last error or the note, or, when BodyWithin
	// is above 0, of the body of one of the newest BodyWithin messages.
	Text       string
	BodyWithin int
	// AfterID, BeforeID: only ids above / below them (0: no bound); Newest: newest first
	// (idRange says which rows a page holds).
	AfterID, BeforeID int64
	Newest            bool
	Limit             int // default 100, at most MaxPageLimit
}

// idRange is the paging of a listing by the id column col: the condition (ids above after
// and below before, 0 for no bound) with its arguments, the ORDER BY that reads the rows next
// to the cursor given first (upward from after, downward from before), and whether the rows
// read are to be reversed into the page's order (newest first when newest). So a page of
// newer rows (after=) in a newest-first listing is the rows just above the cursor, shown
// newest first, and a page of older rows (before=) in an oldest-first one the rows just below.
func idRange(col string, after, before int64, newest bool) (cond string, args []any, order string, reverse bool) {
	cond, args = col+" > ?", []any{max(after, 0)}
	if before > 0 {
		cond, args = cond+" AND "+col+" < ?", append(args, before)
	}
	desc := newest
	switch {
	case after > 0 && before <= 0:
		desc = false
	case before > 0 && after <= 0:
		desc = true
	}
	order = col
	if desc {
		order += " DESC"
	}
	return cond, args, order, desc != newest
}

// likeEscape escapes s for a LIKE pattern with ESCAPE '!'.
func likeEscape(s string) string {
	return strings.NewReplacer("!", "!!", "%", "!%", "_", "!_").Replace(s)
}

// SearchMessages returns the messages q selects, in id order (newest first with q.Newest).
func (ops *Operations) SearchMessages(ctx context.Context, q MessageQuery) ([]*Message, error) {
	from := messageFrom
	var args []any
	idCol := "p.CMINMSGS_ID"
	if q.FLID != 0 {
		// The flight's messages come from MSG_FLIGHT, which the pump writes with every
		// outcome: a range of its primary key (FLID, CMINMSGS_ID), in id order, then their
		// rows by primary key. Nothing else is searched.
		from = ` FROM MSG_FLIGHT f JOIN PROC_STATE p ON p.CMINMSGS_ID = f.CMINMSGS_ID` + messageJoins
		idCol = "f.CMINMSGS_ID"
	}
	cond, args, order, reverse := idRange(idCol, q.AfterID, q.BeforeID, q.Newest)
	sqlq := `SELECT ` + messageCols + from + ` WHERE ` + cond
	if q.FLID != 0 {
		sqlq += ` AND f.FLID = ?`
	}
	if q.FLID != 0 {
		args = append(args, q.FLID)
	}
	if q.State != "" {
		sqlq += ` AND p.STATE = ?`
		args = append(args, string(q.State))
	}
	if q.Class != "" {
		sqlq += ` AND p.ERROR_CLASS = ?`
		args = append(args, string(q.Class))
	}
	if q.Tag != "" {
		if strings.Contains(q.Tag, "-") {
			sqlq += ` AND p.TYPE_TAG = ?`
			args = append(args, q.Tag)
		} else {
			sqlq += ` AND p.TYPE_TAG LIKE ? ESCAPE '!'`
			args = append(args, likeEscape(q.Tag)+"-%")
		}
	}
	if !q.From.IsZero() {
		sqlq += ` AND p.CREATED_AT >= ?`
		args = append(args, T(q.From))
	}
	if !q.To.IsZero() {
		sqlq += ` AND p.CREATED_AT < ?`
		args = append(args, T(q.To))
	}
	if q.Text != "" {
		pat := "%" + likeEscape(q.Text) + "%"
		body := ""
		if q.BodyWithin > 0 {
			floor, err := ops.bodyFloor(ctx, q.BodyWithin)
			if err != nil {
				return nil, err
			}
			body = ` OR (p.CMINMSGS_ID > ? AND ` + bodyClause + `)`
			args = append(args, pat, pat, pat, floor, pat)
		} else {
			args = append(args, pat, pat, pat)
		}
		sqlq += ` AND (p.IDENTITY LIKE ? ESCAPE '!' OR p.LAST_ERROR LIKE ? ESCAPE '!' OR p.NOTE LIKE ? ESCAPE '!'` + body + `)`
	}
	sqlq += fmt.Sprintf(` ORDER BY %s LIMIT %d`, order, clampLimit(q.Limit))
	rows, err := ops.db.SQL.QueryContext(ctx, sqlq, args...)
	if err != nil {
		return nil, Unavailable(fmt.Errorf("search messages: %w", err))
	}
	defer rows.Close()
	out := []*Message{}
	for rows.Next() {
		m, err := ops.db.Processor.scanMessage(rows)
		if err != nil {
			return nil, Unavailable(fmt.Errorf("search messages: %w", err))
		}
		out = append(out, m)
	}
	if reverse {
		slices.Reverse(out)
	}
	return out, Unavailable(rows.Err())
}

// EventQuery selects events for SearchEvents; zero fields match all.
type EventQuery struct {
	Target string
	State  pipeline.EventStatus
	FLID   int64
	MsgID  int64
	// AfterID, BeforeID: only EVENT_IDs above / below them (0: no bound); Newest: newest
	// first (idRange says which rows a page holds).
	AfterID, BeforeID int64
	Newest            bool
	Limit             int // default 100, at most MaxPageLimit
	// InlineMax is the largest payload (bytes) returned in the listing; a larger one is left
	// out (PayloadElided) and read with EventPayload. 0: DefaultInlinePayload.
	InlineMax int
}

// DefaultInlinePayload is the largest payload a listing carries by default (16 KiB).
const DefaultInlinePayload = 16 << 10

// EventBrief is an event as a listing shows it: its payload only when it is small.
type EventBrief struct {
	Event
	PayloadBytes  int64
	PayloadElided bool
}

// SearchEvents returns the events q selects in EVENT_ID order (newest first with q.Newest), never reading a payload larger
// than q.InlineMax from the database.
func (ops *Operations) SearchEvents(ctx context.Context, q EventQuery) ([]EventBrief, error) {
	inline := q.InlineMax
	if inline <= 0 {
		inline = DefaultInlinePayload
	}
	length := `LENGTH(e.PAYLOAD)` // bytes on MySQL
	if ops.db.Dialect == SQLite {
		length = `LENGTH(CAST(e.PAYLOAD AS BLOB))`
	}
	cond, args, order, reverse := idRange("e.EVENT_ID", q.AfterID, q.BeforeID, q.Newest)
	where := []string{cond}
	if q.FLID != 0 {
		where, args = append(where, "e.FLIGHT_KEY = ?"), append(args, strconv.FormatInt(q.FLID, 10))
	}
	if q.MsgID != 0 {
		where, args = append(where, "e.CMINMSGS_ID = ?"), append(args, q.MsgID)
	}
	limit := clampLimit(q.Limit)
	sqlq, args, err := ops.db.Outbox.stateQuery(ctx, eventSelect{
		cols: func(v EventView) string {
			return v.head() + `, ` + length + `, CASE WHEN ` + length + ` <= ? THEN e.PAYLOAD END`
		},
		colsArgs: []any{inline}, where: where, args: args, target: q.Target, byTarget: q.FLID == 0 && q.MsgID == 0, state: q.State,
		desc: strings.HasSuffix(order, "DESC"), limit: limit})
	if err != nil {
		return nil, err
	}
	rows, err := ops.db.SQL.QueryContext(ctx, sqlq, args...)
	if err != nil {
		return nil, Unavailable(fmt.Errorf("search events: %w", err))
	}
	defer rows.Close()
	out := []EventBrief{}
	for rows.Next() {
		var (
			e                            EventBrief
			key, class, lastErr, payload sql.NullString
			state                        string
			created, sent, next, firstAt NullTime
		)
		if err := rows.Scan(&e.EventID, &e.MsgID, &e.TypeTag, &e.Target, &e.Kind, &key, &state, &e.Attempts,
			&class, &lastErr, &created, &sent, &next, &firstAt, &e.PayloadBytes, &payload); err != nil {
			return nil, Unavailable(fmt.Errorf("search events: %w", err))
		}
		e.State = pipeline.EventStatus(state)
		e.FlightKey, e.ErrorClass, e.LastError = strPtr(key), strPtr(class), redactedPtr(lastErr)
		e.CreatedAt = created.Time
		e.SentAt, e.NextAttemptAt, e.FirstFailedAt = sent.Ptr(), next.Ptr(), firstAt.Ptr()
		if !payload.Valid {
			e.PayloadElided = true
		} else if json.Valid([]byte(payload.String)) {
			e.Payload = json.RawMessage(payload.String)
		} else {
			e.Payload, _ = json.Marshal(payload.String)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, Unavailable(err)
	}
	rows.Close()
	ids := make([]int64, len(out))
	for i := range out {
		ids[i] = out[i].EventID
	}
	out = out[:wholeIDs(ids, limit)]
	ptrs := make([]*Event, len(out))
	for i := range out {
		ptrs[i] = &out[i].Event
	}
	if err := ops.db.Outbox.fillSentAt(ctx, ptrs); err != nil {
		return nil, err
	}
	if reverse {
		slices.Reverse(out)
	}
	return out, nil
}

// EventPayload returns the payload of event id as target is delivered it: its own row's, or
// the shared row's, exactly as stored, or for a stored canonical event (kind
// event.KindChange) rendered for the family families gives target (event.Stored); one that
// does not render is returned as stored. Without a target it is the event's shared row as
// stored (its canonical encoding), or the one row of an event written per target.
func (ops *Operations) EventPayload(ctx context.Context, id int64, target string, families map[string]string) ([]byte, bool, error) {
	q, args := `SELECT TARGET, KIND, PAYLOAD FROM MSG_EVENT WHERE EVENT_ID = ? AND STATE <> '`+eventPurged+`'`, []any{id}
	order := `CASE WHEN TARGET = ` + shared + ` THEN 0 ELSE 1 END` // without a target: the shared row
	if target != "" {
		q, args = q+` AND TARGET IN (?, `+shared+`)`, append(args, target)
		order = `CASE WHEN TARGET = ` + shared + ` THEN 1 ELSE 0 END` // the target's own row first
	}
	var stored, kind string
	var b []byte
	err := ops.db.SQL.QueryRowContext(ctx, q+` ORDER BY `+order+` LIMIT 1`, args...).Scan(&stored, &kind, &b)
	if err == sql.ErrNoRows {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, Unavailable(fmt.Errorf("payload of event %d: %w", id, err))
	}
	if target == "" {
		target = stored
	}
	if _, p, err := event.Stored(families[target], kind, b); err == nil {
		b = p
	}
	return b, true, nil
}

// FlightChange is one change of a flight: the event that carried it (of the changed-fields
// target, KAFKA_FLOP), the message that made it, and each changed field's old and new value.
type FlightChange struct {
	EventID int64
	MsgID   int64
	TypeTag string
	At      time.Time
	Op      string
	Changes json.RawMessage // {"FIELD":{"Old":…,"New":…}}, as the event carries it
}

// FlightHistory returns the changes of flight flid in order, read from the events of target
// (the changed-fields target, KAFKA_FLOP) and the shared events that carry its FLID: each holds
// {"op":…,"changes":{field:{old,new}}}, or is a canonical event (kind event.KindChange),
// read as that payload rendered for target (event.Stored).
func (ops *Operations) FlightHistory(ctx context.Context, flid int64, target string, afterID int64, limit int) ([]FlightChange, error) {
	// An event is at most two rows here (the shared one and target's own): twice the limit
	// of rows fill a page of limit changes, so that a page short of it means the last.
	limit = clampLimit(limit)
	rows, err := ops.db.SQL.QueryContext(ctx, `SELECT EVENT_ID, CMINMSGS_ID, TYPE_TAG, CREATED_AT, KIND, PAYLOAD FROM MSG_EVENT
WHERE FLIGHT_KEY = ? AND TARGET IN (?, `+shared+`) AND STATE <> '`+eventPurged+`' AND EVENT_ID > ? ORDER BY EVENT_ID LIMIT ?`, strconv.FormatInt(flid, 10), target, afterID, 2*limit)
	if err != nil {
		return nil, Unavailable(fmt.Errorf("history of flight %d: %w", flid, err))
	}
	defer rows.Close()
	out := []FlightChange{}
	for rows.Next() {
		var c FlightChange
		var at NullTime
		var kind string
		var payload []byte
		if err := rows.Scan(&c.EventID, &c.MsgID, &c.TypeTag, &at, &kind, &payload); err != nil {
			return nil, Unavailable(fmt.Errorf("history of flight %d: %w", flid, err))
		}
		if len(out) > 0 && out[len(out)-1].EventID == c.EventID {
			continue // a shared event and target's own row of it: one change
		}
		if len(out) == limit {
			break
		}
		c.At = at.Time
		if _, r, err := event.Stored(target, kind, payload); err == nil {
			payload = r
		}
		var p struct {
			Op      string          `json:"op"`
			Changes json.RawMessage `json:"changes"`
		}
		if json.Unmarshal(payload, &p) == nil {
			c.Op, c.Changes = p.Op, p.Changes
		}
		if len(c.Changes) == 0 {
			c.Changes = json.RawMessage("{}")
		}
		out = append(out, c)
	}
	return out, Unavailable(rows.Err())
}
