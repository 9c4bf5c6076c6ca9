package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"msgx/internal/pipeline"
	"msgx/internal/secret"
)

// Message is one inbound message with its processing state, as the API shows it.
type Message struct {
	ID            int64
	State         pipeline.ProcStatus
	ErrorClass    *string
	Attempts      int
	LastError     *string
	TypeTag       *string
	Identity      *string
	ReceivedAt    *time.Time
	ProcessedAt   *time.Time
	NextAttemptAt *time.Time
	FirstFailedAt *time.Time
	// Note says what processing did ("2 FLTR before today ignored; nothing applied");
	// Warnings what it noticed and applied anyway. Both are empty until processed.
	Note     string
	Warnings []string
	// TraceID is the W3C trace id the sender passed in its traceparent header ("" when none);
	// the log lines of the message's journey carry it as trace_id.
	TraceID string
	// AnsweredRequest is the data request (REQ_TRACK) this message answered, if any; only
	// GetMessage fills it.
	AnsweredRequest *int64
}

// Class returns the error class, or "".
func (m *Message) Class() pipeline.ErrorClass {
	if m.ErrorClass == nil {
		return ""
	}
	return pipeline.ErrorClass(*m.ErrorClass)
}

// messageCols are the columns scanMessage reads. The received time comes from CMINMSGS, or
// from CMINMSGS_HST (h) once ARCHIVE has moved the message there; every query that selects
// them joins both (messageJoins).
const messageCols = `p.CMINMSGS_ID, p.STATE, p.ERROR_CLASS, p.ATTEMPTS, p.LAST_ERROR, p.TYPE_TAG, p.IDENTITY,
	COALESCE(c.CMINMSGS_DATE_RECEIVED, h.CMINMSGS_DATE_RECEIVED), p.PROCESSED_AT, p.NEXT_ATTEMPT_AT, p.FIRST_FAILED_AT, p.NOTE, p.WARNINGS, p.TRACE_ID`

// messageJoins joins a message's row in CMINMSGS (c) and, only when it has none there, in
// CMINMSGS_HST (h) to PROC_STATE p: one primary-key lookup each.
const messageJoins = ` LEFT JOIN CMINMSGS c ON c.CMINMSGS_ID = p.CMINMSGS_ID
	LEFT JOIN CMINMSGS_HST h ON c.CMINMSGS_ID IS NULL AND h.CMINMSGS_ID = p.CMINMSGS_ID`

const messageFrom = ` FROM PROC_STATE p` + messageJoins

func (p *Processor) scanMessage(row interface{ Scan(...any) error }) (*Message, error) {
	var m Message
	var class, lastErr, tag, ident, note, warnings, trace sql.NullString
	var recv, proc, next, first NullTime
	if err := row.Scan(&m.ID, &m.State, &class, &m.Attempts, &lastErr, &tag, &ident, &recv, &proc, &next, &first, &note, &warnings, &trace); err != nil {
		return nil, err
	}
	if m.TraceID = trace.String; m.TraceID != "" {
		p.traced(m.ID, m.TraceID)
	}
	m.Note, m.Warnings = note.String, decodeWarnings(warnings.String)
	m.ErrorClass, m.LastError, m.TypeTag, m.Identity = strPtr(class), redactedPtr(lastErr), strPtr(tag), strPtr(ident)
	m.ReceivedAt, m.ProcessedAt, m.NextAttemptAt, m.FirstFailedAt = p.db.Intake.LegacyTime(recv), proc.Ptr(), next.Ptr(), first.Ptr()
	return &m, nil
}

func strPtr(s sql.NullString) *string {
	if !s.Valid {
		return nil
	}
	v := s.String
	return &v
}

// redactedPtr is strPtr of a text that may quote a URL or a DSN (a last error), redacted as it
// is read: this msgx redacts such texts as it writes them, an older one did not.
func redactedPtr(s sql.NullString) *string {
	s.String = secret.Redact(s.String)
	return strPtr(s)
}

// Head returns the lowest unfinished message (PENDING or FAILED), or nil when none: the only
// message the pump may work on (I1).
func (p *Processor) Head(ctx context.Context) (*Message, error) {
	// One MIN per state, each a single seek on IDX_PROC_HEAD (STATE, CMINMSGS_ID): a MIN over
	// STATE IN (…) reads every PENDING row of the range, so its cost grew with the backlog.
	row := p.db.SQL.QueryRowContext(ctx, `SELECT `+messageCols+messageFrom+`
		WHERE p.CMINMSGS_ID = (SELECT MIN(h.ID) FROM (
			SELECT MIN(CMINMSGS_ID) AS ID FROM PROC_STATE WHERE STATE = ?
			UNION ALL SELECT MIN(CMINMSGS_ID) FROM PROC_STATE WHERE STATE = ?) h)`,
		pipeline.Pending, pipeline.Failed)
	m, err := p.scanMessage(row)
	if err == sql.ErrNoRows {
		return nil, nil
	}
	if err != nil {
		return nil, Unavailable(fmt.Errorf("head message: %w", err))
	}
	return m, nil
}

// GetMessage returns message id, or nil when there is none.
func (ops *Operations) GetMessage(ctx context.Context, id int64) (*Message, error) {
	m, err := ops.db.Processor.scanMessage(ops.db.SQL.QueryRowContext(ctx, `SELECT `+messageCols+messageFrom+` WHERE p.CMINMSGS_ID = ?`, id))
	if err == sql.ErrNoRows {
		return nil, nil
	}
	if err != nil {
		return nil, Unavailable(err)
	}
	if req, ok, err := ops.db.RequestTracker.AnsweredBy(ctx, id); err != nil {
		return nil, err
	} else if ok {
		m.AnsweredRequest = &req
	}
	return m, nil
}

// MessageFilter selects messages for ListMessages; zero fields match all.
type MessageFilter struct {
	State   pipeline.ProcStatus
	Class   pipeline.ErrorClass
	AfterID int64 // only ids above it (paging)
	Limit   int   // default 100, at most 1000
}

// ListMessages returns messages matching f in id order.
func (ops *Operations) ListMessages(ctx context.Context, f MessageFilter) ([]*Message, error) {
	q := `SELECT ` + messageCols + messageFrom + ` WHERE p.CMINMSGS_ID > ?`
	args := []any{f.AfterID}
	if f.State != "" {
		q += ` AND p.STATE = ?`
		args = append(args, f.State)
	}
	if f.Class != "" {
		q += ` AND p.ERROR_CLASS = ?`
		args = append(args, f.Class)
	}
	q += fmt.Sprintf(` ORDER BY p.CMINMSGS_ID LIMIT %d`, clampLimit(f.Limit))
	rows, err := ops.db.SQL.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, Unavailable(err)
	}
	defer rows.Close()
	out := []*Message{}
	for rows.Next() {
		m, err := ops.db.Processor.scanMessage(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// CountStates returns the number of messages in each of states, each counted over its own
// range of the (STATE, CMINMSGS_ID) index: the unfinished and DEAD states cost what their rows
// are, not what the whole table is (CountByState reads every row). A state with no messages
// is 0.
func (ops *Operations) CountStates(ctx context.Context, states ...pipeline.ProcStatus) (map[pipeline.ProcStatus]int, error) {
	return countStates(ctx, ops.db.SQL, states...)
}

// countStates is CountStates on q.
func countStates(ctx context.Context, q rowQuerier, states ...pipeline.ProcStatus) (map[pipeline.ProcStatus]int, error) {
	out := make(map[pipeline.ProcStatus]int, len(states))
	for _, st := range states {
		var n int
		if err := q.QueryRowContext(ctx, `SELECT COUNT(*) FROM PROC_STATE WHERE STATE = ?`, string(st)).Scan(&n); err != nil {
			return nil, Unavailable(fmt.Errorf("count %s messages: %w", st, err))
		}
		out[st] = n
	}
	return out, nil
}

// CountByState returns the number of messages in each state (every state present, 0 if none).
func (ops *Operations) CountByState(ctx context.Context) (map[pipeline.ProcStatus]int, error) {
	out := map[pipeline.ProcStatus]int{pipeline.Pending: 0, pipeline.Succeeded: 0, pipeline.Skipped: 0, pipeline.Failed: 0, pipeline.Dead: 0}
	rows, err := ops.db.SQL.QueryContext(ctx, `SELECT STATE, COUNT(*) FROM PROC_STATE GROUP BY STATE`)
	if err != nil {
		return nil, Unavailable(err)
	}
	defer rows.Close()
	for rows.Next() {
		var s pipeline.ProcStatus
		var n int
		if err := rows.Scan(&s, &n); err != nil {
			return nil, err
		}
		out[s] = n
	}
	return out, rows.Err()
}

// Outcome is the state the pump records for a message it could not (or need not) apply.
type Outcome struct {
	State         pipeline.ProcStatus // FAILED, DEAD, SKIPPED (or SUCCEEDED for a lost answer)
	Class         pipeline.ErrorClass // "" for SKIPPED
	Attempts      int
	NextAttemptAt time.Time // FAILED only
	FirstFailedAt time.Time // kept from the first failure
	LastError     string
	TypeTag       string
	Identity      string
	Meta          *Backfill // SKIPPED: fill the CMINMSGS subsystem columns too
	Note          string    // what was done, if anything
	Warnings      []string  // what the decoder noticed (kept with a failure too)
	// Flights are the FLIDs the decoded message names (none when it could not be decoded),
	// written to MSG_FLIGHT with the outcome, whatever it is, so a search by flight finds it.
	Flights []int64

	// From is the state and attempts the pump read: the write happens only while the row is
	// still so, else Record returns ErrChanged (an operator's replay is never overwritten).
	// A zero From (no state) writes unconditionally.
	From Version
}

// Version is what the pump read of a message's row: its state and attempts.
type Version struct {
	State    pipeline.ProcStatus
	Attempts int
}

// VersionOf returns the version of m as read.
func VersionOf(m *Message) Version { return Version{State: m.State, Attempts: m.Attempts} }

// where returns the condition of a write made from version v, and its arguments.
func (v Version) where(id int64) (string, []any) {
	if v.State == "" {
		return ` WHERE CMINMSGS_ID = ?`, []any{id}
	}
	return ` WHERE CMINMSGS_ID = ? AND STATE = ? AND ATTEMPTS = ?`, []any{id, v.State, v.Attempts}
}

// Record writes an outcome for message id. Every text is fitted to its column. When the
// database still refuses a value (a data error), a minimal record (state, class, attempts,
// times and a plain last error, without type tag, identity or back-fill) is written instead, so
// no value a message carries can keep its outcome from being recorded. The error returned when
// even that fails is what the pump counts as a failed attempt to record.
func (p *Processor) Record(ctx context.Context, id int64, o Outcome, now time.Time) error {
	err := p.record(ctx, id, o, now, false)
	if err != nil && IsDataError(err) {
		first := err
		err = p.record(ctx, id, o, now, true)
		if err == nil {
			return nil
		}
		return fmt.Errorf("record %s for message %d: %v; minimal record: %w", o.State, id, first, err)
	}
	return err
}

func (p *Processor) record(ctx context.Context, id int64, o Outcome, now time.Time, minimal bool) error {
	return p.db.Tx(ctx, func(tx *sql.Tx) error {
		if err := p.db.Leases.checkFence(ctx, tx); err != nil {
			return err
		}
		return p.recordTx(ctx, tx, id, o, now, minimal)
	})
}

// recordTx writes an outcome inside tx (the fence already checked): Record's transaction,
// and one step of a batch (batch.go).
func (p *Processor) recordTx(ctx context.Context, tx *sql.Tx, id int64, o Outcome, now time.Time, minimal bool) error {
	var processed any
	if o.State.Terminal() {
		processed = T(now)
	}
	last, tag, ident := Fit(secret.Redact(o.LastError), LastErrorWidth), Fit(o.TypeTag, TypeTagWidth), Fit(o.Identity, IdentityWidth)
	note, warnings := Fit(o.Note, NoteWidth), encodeWarnings(o.Warnings)
	if minimal {
		last, tag, ident, note, warnings = Fit(secret.Redact(o.LastError), 500), "", "", "", ""
		if last != "" {
			last = "[recorded without its type tag and identity: the database refused them] " + last
		}
	}
	where, wargs := o.From.where(id)
	args := append([]any{o.State, nullStr(string(o.Class)), o.Attempts, T(o.NextAttemptAt), T(o.FirstFailedAt), nullStr(last),
		nullStr(tag), nullStr(ident), nullStr(note), nullStr(warnings), T(now), processed}, wargs...)
	res, err := tx.ExecContext(ctx, `UPDATE PROC_STATE SET STATE = ?, ERROR_CLASS = ?, ATTEMPTS = ?, NEXT_ATTEMPT_AT = ?,
		FIRST_FAILED_AT = ?, LAST_ERROR = ?, TYPE_TAG = COALESCE(?, TYPE_TAG), IDENTITY = COALESCE(?, IDENTITY),
		NOTE = ?, WARNINGS = ?, UPDATED_AT = ?, PROCESSED_AT = ?`+where, args...)
	if err != nil {
		if IsDataError(err) {
			return err // the caller retries with a minimal record
		}
		return Unavailable(fmt.Errorf("record %s for message %d: %w", o.State, id, err))
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return ErrChanged
	}
	// Each outcome that is not a success is kept in the message's history (operator.go).
	if err := insertHistory(ctx, tx, id, o.State, o.Class, o.Attempts, o.LastError, "", now); err != nil {
		return Unavailable(fmt.Errorf("history of message %d: %w", id, err))
	}
	// The flights it names, kept with a minimal record too (FLIDs are never refused).
	if err := insertFlightRows(ctx, tx, p.db.Dialect, flightRowsOf(id, o.Flights)); err != nil {
		return err
	}
	if o.Meta != nil && !minimal {
		return p.db.Intake.backfill(ctx, tx, id, *o.Meta, now)
	}
	return nil
}

func nullStr(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// Backfill is what a processed message writes back into its legacy CMINMSGS columns.
type Backfill struct {
	SNDR, TYPE, STYP string
	SEQN             string
	DTTM             time.Time
}

// BoundTo returns the message that holds identity, if any.
func (p *Processor) BoundTo(ctx context.Context, identity string) (int64, bool, error) {
	var id int64
	err := p.db.SQL.QueryRowContext(ctx, `SELECT CMINMSGS_ID FROM PROC_STATE WHERE IDENTITY_KEY = ?`, IdentityKey(identity)).Scan(&id)
	if err == sql.ErrNoRows {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, Unavailable(err)
	}
	return id, true, nil
}

// Success is what the pump commits for a message that was applied.
type Success struct {
	From     Version // the row as the pump read it (see Outcome.From)
	TypeTag  string
	Identity string
	Meta     Backfill
	Decision pipeline.Decision
	// Note and Warnings are stored with the message: what was done, and what the decoder and
	// the handler noticed and applied anyway.
	Note     string
	Warnings []string
	// Flights are the FLIDs the decoded message names, written to MSG_FLIGHT with SUCCEEDED
	// (see Outcome.Flights).
	Flights []int64
}

// FlightWriter applies a Decision's flight writes inside the success transaction; the flight
// store (internal/flight) implements it.
type FlightWriter interface {
	WriteFlights(ctx context.Context, tx *sql.Tx, msgID int64, writes []pipeline.FlightWrite, now time.Time) error
}

// FlightStatementer is a FlightWriter that can give the one statement applying a single
// flight write in tx, when it is one (a FLOP's replacement of a flight the handler's view read
// through tx, on the same day): a guarded UPDATE of one row, none when the row changed under
// us. ok is false when the write needs more (a read, an insert, a move, a check that
// fails): WriteFlights then does it. A batch on MySQL sends that statement with the
// message's identity bind, one round trip for both.
type FlightStatementer interface {
	FlightWriter
	FlightStatement(tx *sql.Tx, msgID int64, w pipeline.FlightWrite, now time.Time) (query string, args []any, ok bool)
}

// ErrIdentityTaken is returned by Succeed when another message bound the identity first.
var ErrIdentityTaken = fmt.Errorf("identity already bound")

// Succeed commits a processed message in one transaction: the identity bind, the reference
// changes, the flight writes, the MSG_EVENT rows, the CMINMSGS back-fill and SUCCEEDED. It
// returns how many events it inserted and how many reference records changed.
func (p *Processor) Succeed(ctx context.Context, id int64, s Success, flights FlightWriter, now time.Time) (events, refChanged int, err error) {
	err = p.db.Tx(ctx, func(tx *sql.Tx) error {
		if err := p.db.Leases.checkFence(ctx, tx); err != nil {
			return err
		}
		var err error
		events, refChanged, err = p.succeedTx(ctx, tx, "", id, s, flights, nil, now)
		return err
	})
	return events, refChanged, effectsError(id, err)
}

// effectsError makes a value of a message's effects that the database refuses (a reference
// key longer than its column, say) fail this message (CODEC_ERROR), not the database.
func effectsError(id int64, err error) error {
	if err != nil && IsDataError(err) && pipeline.ClassOf(err) == pipeline.Infra {
		return pipeline.Wrap(pipeline.CodecError, fmt.Errorf("the database refused a value of message %d's effects: %w", id, err))
	}
	return err
}

// succeedTx writes a processed message's effects and SUCCEEDED inside tx (the fence already
// checked): Succeed's transaction, and one step of a batch (batch.go). A non-empty lead is a
// statement sent with the first write in one round trip (a batch step's savepoint on MySQL).
//
// A non-nil later takes the message's MSG_EVENT rows and CMINMSGS back-fill instead of
// writing them: a batch writes them for all its messages at its end, many per statement
// (Batch.Flush).
func (p *Processor) succeedTx(ctx context.Context, tx *sql.Tx, lead string, id int64, s Success, flights FlightWriter, later *deferred, now time.Time) (events, refChanged int, err error) {
	err = func() error {
		// The identity bind and SUCCEEDED are one statement (one round trip): the rest of the
		// transaction either commits with it or rolls it back.
		q, args := bindSucceeded(id, s, now)
		res, err := tx.ExecContext(ctx, lead+q, args...)
		if err != nil {
			if IsUniqueViolation(err) {
				return ErrIdentityTaken
			}
			return classifyWrite("bind identity", err)
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return ErrChanged
		}
		for _, ch := range s.Decision.Ref {
			n, err := applyRef(ctx, tx, id, ch, now)
			if err != nil {
				return err
			}
			refChanged += n
		}
		if len(s.Decision.Flights) > 0 {
			if flights == nil {
				return pipeline.Errorf(pipeline.Unsupported, "no flight store configured for %d flight writes", len(s.Decision.Flights))
			}
			if err := flights.WriteFlights(ctx, tx, id, s.Decision.Flights, now); err != nil {
				return err
			}
		}
		if later != nil {
			later.add(id, s.TypeTag, s.Decision.Events, s.Meta, s.Flights, now)
			events = len(s.Decision.Events)
		} else {
			events, err = insertEvents(ctx, tx, id, s.TypeTag, s.Decision.Events, now)
			if err != nil {
				return err
			}
			if err := insertFlightRows(ctx, tx, p.db.Dialect, flightRowsOf(id, s.Flights)); err != nil {
				return err
			}
			if err := p.db.Intake.backfill(ctx, tx, id, s.Meta, now); err != nil {
				return err
			}
		}
		// A RESP answers a data request: matched here, in the RESP's own success
		// transaction, so the match commits with SUCCEEDED or not at all (requests.go).
		if _, err := p.db.RequestTracker.matchAnswer(ctx, tx, id, s.Meta, now); err != nil {
			return err
		}
		// Applied out of its order: its history names what it left as later messages set it.
		if len(s.Decision.Kept) > 0 {
			detail := "applied out of order: " + strings.Join(s.Decision.Kept, "; ")
			if err := insertHistory(ctx, tx, id, pipeline.Succeeded, "", s.From.Attempts+1, detail, "", now); err != nil {
				return classifyWrite(fmt.Sprintf("history of %d", id), err)
			}
		}
		if len(s.Decision.Ref) == 0 || refChanged > 0 || len(s.Decision.Flights) > 0 || events > 0 {
			return nil
		}
		q, args = noteUnchanged(id, s)
		_, err = tx.ExecContext(ctx, q, args...)
		return classifyWrite(fmt.Sprintf("note of %d", id), err)
	}()
	return events, refChanged, err
}

// bindSucceeded is the statement that binds a processed message's identity and records it
// SUCCEEDED, from the version the pump read: one row, or none when the row changed.
func bindSucceeded(id int64, s Success, now time.Time) (string, []any) {
	where, wargs := s.From.where(id)
	return `UPDATE PROC_STATE SET IDENTITY_KEY = ?, IDENTITY = ?, TYPE_TAG = ?, STATE = ?, ERROR_CLASS = NULL,
			LAST_ERROR = NULL, NEXT_ATTEMPT_AT = NULL, NOTE = ?, WARNINGS = ?, UPDATED_AT = ?, PROCESSED_AT = ?` + where,
		append([]any{IdentityKey(s.Identity), Fit(s.Identity, IdentityWidth), Fit(s.TypeTag, TypeTagWidth), pipeline.Succeeded,
			nullStr(Fit(s.Note, NoteWidth)), nullStr(encodeWarnings(s.Warnings)), T(now), T(now)}, wargs...)
}

// noteUnchanged is the statement that notes a reference message whose every record was
// already as sent (only the apply knows it).
func noteUnchanged(id int64, s Success) (string, []any) {
	return `UPDATE PROC_STATE SET NOTE = ? WHERE CMINMSGS_ID = ?`, []any{nullStr(Fit(unchangedNote(s.Note), NoteWidth)), id}
}

// unchangedNote is the note of a reference message whose every record was already as sent.
func unchangedNote(note string) string {
	return strings.TrimPrefix(note+"; nothing changed: every record was already as sent", "; ")
}

// eventChunk is how many MSG_EVENT rows one INSERT carries at most, eventBytes how many
// bytes of payload (well under MariaDB's default max_allowed_packet of 16 MB): a 3,000-flight
// snapshot makes 12,000 events, and one round trip per row dominated its commit on MySQL.
const (
	eventChunk = 500
	eventBytes = 4 << 20
)

// insertEvents inserts evs in order (EVENT_ID follows it) and returns how many it inserted.
func insertEvents(ctx context.Context, tx *sql.Tx, msgID int64, tag string, evs []pipeline.Event, now time.Time) (int, error) {
	rows := make([]eventRow, len(evs))
	for i, e := range evs {
		rows[i] = eventRow{msgID: msgID, tag: tag, ev: e, at: now}
	}
	return insertEventRows(ctx, tx, rows)
}

// eventRow is one MSG_EVENT row to insert: an event of message msgID.
type eventRow struct {
	msgID int64
	tag   string
	ev    pipeline.Event
	at    time.Time
}

// eventSeq is the MSGX_COUNTER row that gives out EVENT_IDs (migration 00018): one sequence
// for every row, which deletes never move back.
const eventSeq = "EVENT_ID"

// insertEventRows inserts rows in order (EVENT_ID follows it), eventChunk rows per statement,
// and returns how many it inserted. Each statement takes its ids from eventSeq, raised first
// by as many: the ids are read back by neither (a multiExec sends both in one round trip).
func insertEventRows(ctx context.Context, tx execer, rows []eventRow) (int, error) {
	const row = `((SELECT VALUE FROM MSGX_COUNTER WHERE NAME = '` + eventSeq + `') - ?, ?, ?, ?, ?, ?, ?, ?, 0, ?)`
	for start, end := 0, 0; start < len(rows); start = end {
		size := 0
		for end = start; end < len(rows) && end-start < eventChunk && (end == start || size+len(rows[end].ev.Payload) <= eventBytes); end++ {
			size += len(rows[end].ev.Payload)
		}
		chunk := rows[start:end]
		if _, err := tx.ExecContext(ctx, `UPDATE MSGX_COUNTER SET VALUE = VALUE + ?, UPDATED_AT = ? WHERE NAME = '`+eventSeq+`'`,
			len(chunk), T(chunk[0].at)); err != nil {
			return start, Unavailable(fmt.Errorf("give out %d event ids: %w", len(chunk), err))
		}
		args := make([]any, 0, 9*len(chunk))
		for i, r := range chunk {
			e := r.ev
			args = append(args, len(chunk)-1-i, r.msgID, r.tag, e.Target, e.Kind, nullStr(e.Key), string(e.Payload), pipeline.EventPending, T(r.at))
		}
		q := `INSERT INTO MSG_EVENT (EVENT_ID, CMINMSGS_ID, TYPE_TAG, TARGET, KIND, FLIGHT_KEY, PAYLOAD, STATE, ATTEMPTS, CREATED_AT) VALUES ` +
			strings.TrimSuffix(strings.Repeat(row+",", len(chunk)), ",")
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			return start, Unavailable(fmt.Errorf("insert %d events: %w", len(chunk), err))
		}
	}
	return len(rows), nil
}

// ReplayResult says what a replay did.
type ReplayResult struct {
	Moved   int
	Skipped int
	IDs     []int64
}

// Replay moves FAILED and DEAD messages of the given classes (and, when ids is not empty, only
// those ids) back to PENDING with attempts 0 and no next-attempt time, keeping their class and
// last error for audit. Classes that are not replayable (MALFORMED) are never moved: the
// messages of that class the request named count as skipped, as do named ids that are not
// FAILED or DEAD.
func (ops *Operations) Replay(ctx context.Context, classes []pipeline.ErrorClass, ids []int64, now time.Time) (ReplayResult, error) {
	return ops.replay(ctx, classes, ids, now, false)
}

// ReplayPreview answers what Replay would move (IDs, Moved) and skip, moving nothing.
func (ops *Operations) ReplayPreview(ctx context.Context, classes []pipeline.ErrorClass, ids []int64) (ReplayResult, error) {
	return ops.replay(ctx, classes, ids, time.Time{}, true)
}

func (ops *Operations) replay(ctx context.Context, classes []pipeline.ErrorClass, ids []int64, now time.Time, dry bool) (ReplayResult, error) {
	res := ReplayResult{IDs: []int64{}}
	if len(classes) == 0 {
		for _, c := range pipeline.Classes {
			if c.Replayable() {
				classes = append(classes, c)
			}
		}
	}
	var allowed []any
	for _, c := range classes {
		if c.Replayable() {
			allowed = append(allowed, string(c))
		}
	}
	err := ops.db.Tx(ctx, func(tx *sql.Tx) error {
		res = ReplayResult{IDs: []int64{}}
		q, args, ok := ops.replaySelect(classes, ids)
		if !ok {
			return nil
		}
		move, err := replayCandidates(ctx, tx, q, args, allowed, ids, &res)
		if err != nil {
			return err
		}
		if dry {
			res.Moved = len(move)
			return nil
		}
		if len(move) == 0 {
			return nil
		}
		args = append(append([]any{pipeline.Pending, T(now)}, move...), pipeline.Failed, pipeline.Dead)
		r, err := tx.ExecContext(ctx, `UPDATE PROC_STATE SET STATE = ?, ATTEMPTS = 0, NEXT_ATTEMPT_AT = NULL, FIRST_FAILED_AT = NULL,
			PROCESSED_AT = NULL, UPDATED_AT = ? WHERE CMINMSGS_ID IN (`+placeholders(len(move))+`) AND STATE IN (?, ?)`, args...)
		if err != nil {
			return Unavailable(err)
		}
		n, _ := r.RowsAffected()
		res.Moved = int(n)
		return nil
	})
	return res, err
}

// replaySelect is the locking SELECT of the rows a replay of ids (or, with none, of the
// FAILED and DEAD rows of classes) looks at; ok is false when it has none to look at.
func (ops *Operations) replaySelect(classes []pipeline.ErrorClass, ids []int64) (q string, args []any, ok bool) {
	q = `SELECT CMINMSGS_ID, STATE, ERROR_CLASS FROM PROC_STATE WHERE `
	if len(ids) > 0 {
		q += `CMINMSGS_ID IN (` + placeholders(len(ids)) + `)`
		for _, id := range ids {
			args = append(args, id)
		}
	} else {
		named := make([]any, len(classes))
		for i, c := range classes {
			named[i] = string(c)
		}
		if len(named) == 0 {
			return "", nil, false
		}
		q += `STATE IN (?, ?) AND ERROR_CLASS IN (` + placeholders(len(named)) + `)`
		args = append(append(args, pipeline.Failed, pipeline.Dead), named...)
	}
	// Locked, so the pump's concurrent write waits and then finds the row changed.
	q += ` ORDER BY CMINMSGS_ID` + ops.db.Dialect.ForUpdate()
	return q, args, true
}

// replayCandidates runs the replay's SELECT q and returns the ids to move: FAILED or DEAD
// rows of an allowed class. res gets them in IDs, and counts as skipped the other rows found
// and the ids asked for that were not found.
func replayCandidates(ctx context.Context, tx *sql.Tx, q string, args, allowed []any, ids []int64, res *ReplayResult) ([]any, error) {
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, Unavailable(err)
	}
	var move []any
	found := map[int64]bool{}
	for rows.Next() {
		var id int64
		var st pipeline.ProcStatus
		var cl sql.NullString
		if err := rows.Scan(&id, &st, &cl); err != nil {
			rows.Close()
			return nil, err
		}
		found[id] = true
		if (st == pipeline.Failed || st == pipeline.Dead) && contains(allowed, cl.String) {
			move = append(move, id)
			res.IDs = append(res.IDs, id)
		} else {
			res.Skipped++
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for _, id := range ids {
		if !found[id] {
			res.Skipped++
		}
	}
	return move, nil
}

func contains(list []any, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func placeholders(n int) string { return strings.TrimSuffix(strings.Repeat("?,", n), ",") }

// encodeWarnings returns ws as the JSON array stored in PROC_STATE.WARNINGS ("" for none):
// each warning fitted to WarningWidth, and as many as fit in WarningsWidth, the last entry
// then saying how many were left out, so the array is always whole JSON.
func encodeWarnings(ws []string) string {
	if len(ws) == 0 {
		return ""
	}
	out := make([]string, 0, len(ws))
	size := 2
	for i, w := range ws {
		w = Fit(w, WarningWidth)
		b, _ := json.Marshal(w)
		// Keep room for the closing entry that counts what was left out.
		if size+len(b)+1+60 > WarningsWidth {
			out = append(out, fmt.Sprintf("… and %d more warnings", len(ws)-i))
			break
		}
		size += len(b) + 1
		out = append(out, w)
	}
	b, _ := json.Marshal(out)
	return string(b)
}

// decodeWarnings reads PROC_STATE.WARNINGS; a value that is not a JSON array (written by hand)
// is shown as one warning rather than lost.
func decodeWarnings(s string) []string {
	if s == "" {
		return []string{}
	}
	var ws []string
	if err := json.Unmarshal([]byte(s), &ws); err != nil {
		return []string{s}
	}
	return ws
}
