package store

// This file owns REQ_TRACK, the data requests msgx sends to the AODB (docs/sis-format.md §4.3; seed §2
// REQ_TRACK, U19), and the durable SEQN counter in MSGX_COUNTER. The request's XML goes into
// the legacy COUTMSGS (coutmsgs.go) in the same transaction as its REQ_TRACK row.
//
// A request moves REGISTERED (its COUTMSGS row is written) → SENT (the gateway set
// COUTMSGS_DATE_SENT) → DONE (the answering RESP was processed) or, without an answer by its
// deadline, is re-sent as a new COUTMSGS row (back to REGISTERED, RESENDS + 1) or, once the
// re-sends are used up, EXPIRED. The deadline runs from the gateway's COUTMSGS_DATE_SENT, not
// from msgx's insert: a REGISTERED request has none, waits for the gateway however long it
// takes, and is never re-sent or expired (a second row queued behind an unsent one would only
// make the AODB answer twice).
//
// The answer is matched in the success transaction of the RESP itself (succeedTx calls
// matchAnswer): the match commits with the message's SUCCEEDED or not at all, so a crash can
// neither lose it nor make it twice, and RESPs are matched in the message order the pump keeps.
// Every other write of a request is conditional on the state (and re-send count) it was read
// in, so the request loop of an instance that is losing the pump lease and the one of its
// successor cannot both re-send a request: the second write finds the row changed and rolls
// back its COUTMSGS row with it.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Request states (REQ_TRACK.STATE).
const (
	ReqRegistered = "REGISTERED"
	ReqSent       = "SENT"
	ReqDone       = "DONE"
	ReqExpired    = "EXPIRED"
)

// Request kinds (REQ_TRACK.REQ_TYPE, the META TYPE of the request) and their COUTMSGS
// ROUTINGIDs (docs/sis-format.md §2.6).
const (
	ReqReference = "RQRD"
	ReqSchedule  = "RQFD"

	RoutingReference = "VIEWRQRD"
	RoutingSchedule  = "VIEWRQFD"
)

// Widths of the REQ_TRACK columns a request's values go into.
const (
	ReqTypeWidth   = 8
	ReqWindowWidth = 32
)

// SeqnCounter is the MSGX_COUNTER row of the request SEQN.
const SeqnCounter = "request.seqn"

// ErrBadRequest marks a request the store refuses for its values (a TYPE longer than its
// column, a kind it does not know); nothing was written.
var ErrBadRequest = errors.New("bad data request")

// Request is one data request to the AODB and where it stands.
type Request struct {
	ID   int64
	Type string // RQRD | RQFD
	STYP string // the reference TYPE, or NONE
	// STDB and STDE are the schedule window as written into the request (RQFD only).
	STDB       string
	STDE       string
	AnswerType string // the TYPE of the RESP that answers it
	State      string
	SEQN       string // of the latest send
	CoutmsgsID int64  // the latest send's COUTMSGS row
	Resends    int
	CreatedAt  time.Time
	UpdatedAt  time.Time
	SentAt     *time.Time // when the gateway sent the latest send (its COUTMSGS_DATE_SENT)
	DeadlineAt *time.Time // SENT: SentAt + the timeout, when it is re-sent or expires without an answer
	// QueuedAt is, while the request is REGISTERED, when its latest COUTMSGS row was written:
	// since then it waits for the gateway.
	QueuedAt   *time.Time
	FinishedAt *time.Time // DONE or EXPIRED
	AnswerID   *int64
}

// Open reports whether the request still waits for its answer.
func (r *Request) Open() bool { return r.State == ReqRegistered || r.State == ReqSent }

// NewRequest is what CreateRequest writes.
type NewRequest struct {
	Type       string // RQRD | RQFD
	STYP       string // the reference TYPE, or NONE
	STDB, STDE string // RQFD's window
	AnswerType string // the TYPE of the answering RESP
	Routing    string // the COUTMSGS ROUTINGID
}

// BuildXML returns a request's XML for its SEQN: the store takes the next SEQN in the
// request's transaction and asks for the text to write.
type BuildXML func(seqn string) (string, error)

// Requests is the store's side of data requests.
type Requests interface {
	// CreateRequest takes the next SEQN, writes the request's XML into COUTMSGS and its
	// REGISTERED REQ_TRACK row, in one transaction.
	CreateRequest(ctx context.Context, r NewRequest, build BuildXML, now time.Time) (*Request, error)
	GetRequest(ctx context.Context, id int64) (*Request, error)
	ListRequests(ctx context.Context, f RequestFilter) ([]*Request, error)
	// MarkSent moves the REGISTERED requests whose COUTMSGS row the gateway sent to SENT,
	// with the deadline timeout after the gateway's send.
	MarkSent(ctx context.Context, timeout time.Duration, now time.Time) (int, error)
	// Overdue returns the SENT requests whose deadline has passed.
	Overdue(ctx context.Context, now time.Time) ([]*Request, error)
	// WaitingForGateway counts the REGISTERED requests (queued, not sent by the gateway yet)
	// and returns when the longest-waiting one was queued.
	WaitingForGateway(ctx context.Context) (n int, oldest *time.Time, err error)
	// Resend writes a new COUTMSGS row for a SENT request; ErrChanged when it is no longer
	// as read.
	Resend(ctx context.Context, r *Request, build BuildXML, now time.Time) (*Request, error)
	// Expire ends a SENT request without an answer; ErrChanged when it is no longer as read.
	Expire(ctx context.Context, r *Request, now time.Time) error
	// AnsweredBy returns the request that message id answered, if any.
	AnsweredBy(ctx context.Context, msgID int64) (int64, bool, error)
}

var _ Requests = (*RequestTracker)(nil)

// RequestFilter selects requests for ListRequests; zero fields match all.
type RequestFilter struct {
	State string
	// AfterID, BeforeID: only ids above / below them (0: no bound); Newest: newest first.
	AfterID, BeforeID int64
	Newest            bool
	Limit             int // default 100, at most 1000
}

const requestCols = `REQ_ID, REQ_TYPE, REQ_STYP, STDB, STDE, ANSWER_TYPE, STATE, SEQN, COUTMSGS_ID, RESENDS,
	CREATED_AT, UPDATED_AT, SENT_AT, DEADLINE_AT, FINISHED_AT, ANSWER_MSG_ID`

func scanRequest(row interface{ Scan(...any) error }) (*Request, error) {
	var r Request
	var stdb, stde, answerType, seqn sql.NullString
	var cout, answer sql.NullInt64
	var created, updated, sent, deadline, finished NullTime
	if err := row.Scan(&r.ID, &r.Type, &r.STYP, &stdb, &stde, &answerType, &r.State, &seqn, &cout, &r.Resends,
		&created, &updated, &sent, &deadline, &finished, &answer); err != nil {
		return nil, err
	}
	r.STDB, r.STDE, r.AnswerType, r.SEQN, r.CoutmsgsID = stdb.String, stde.String, answerType.String, seqn.String, cout.Int64
	r.CreatedAt, r.UpdatedAt = created.Time, updated.Time
	r.SentAt, r.DeadlineAt, r.FinishedAt = sent.Ptr(), deadline.Ptr(), finished.Ptr()
	if r.State == ReqRegistered {
		// Every write that leaves a request REGISTERED is one that queues a COUTMSGS row.
		r.QueuedAt = updated.Ptr()
	}
	if answer.Valid {
		v := answer.Int64
		r.AnswerID = &v
	}
	return &r, nil
}

// checkNewRequest refuses values REQ_TRACK cannot hold whole: a request is never stored cut.
func checkNewRequest(r NewRequest) error {
	if r.Type != ReqReference && r.Type != ReqSchedule {
		return fmt.Errorf("%w: kind %q is not %s or %s", ErrBadRequest, r.Type, ReqReference, ReqSchedule)
	}
	for _, f := range []struct {
		name, v string
		width   int
	}{{"STYP", r.STYP, ReqTypeWidth}, {"answer TYPE", r.AnswerType, ReqTypeWidth}, {"STDB", r.STDB, ReqWindowWidth}, {"STDE", r.STDE, ReqWindowWidth}} {
		if utf8.RuneCountInString(f.v) > f.width {
			return fmt.Errorf("%w: %s %q is longer than %d characters", ErrBadRequest, f.name, f.v, f.width)
		}
	}
	if r.STYP == "" || r.AnswerType == "" || r.Routing == "" {
		return fmt.Errorf("%w: STYP, answer TYPE and routing are required", ErrBadRequest)
	}
	return nil
}

// nextSeqn advances the request SEQN counter in tx and returns the new SEQN: six digits,
// 000001 … 999999, then 000000 and on (docs/sis-format.md §4.3: the legacy's counter, zero-padded,
// cycling). The counter row is locked until tx ends, so two requests never share a SEQN.
func (rt *RequestTracker) nextSeqn(ctx context.Context, tx *sql.Tx, now time.Time) (string, error) {
	// The UPDATE takes the row's write lock at once: reading the row first (or an INSERT
	// IGNORE in the same transaction) takes a shared lock that two transactions then both try
	// to raise, a deadlock on MySQL. The row exists: ensureCounter made it beforehand.
	res, err := tx.ExecContext(ctx, `UPDATE MSGX_COUNTER SET VALUE = MOD(VALUE + 1, 1000000), UPDATED_AT = ? WHERE NAME = ?`, T(now), SeqnCounter)
	if err != nil {
		return "", Unavailable(fmt.Errorf("request SEQN counter: %w", err))
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return "", Unavailable(fmt.Errorf("request SEQN counter: no %s row", SeqnCounter))
	}
	var v int64
	if err := tx.QueryRowContext(ctx, `SELECT VALUE FROM MSGX_COUNTER WHERE NAME = ?`, SeqnCounter).Scan(&v); err != nil {
		return "", Unavailable(fmt.Errorf("request SEQN counter: %w", err))
	}
	return fmt.Sprintf("%06d", v), nil
}

// ensureCounter creates the SEQN counter row at 0 unless it exists, in a statement of its own
// (outside the request's transaction, so it holds no lock there).
func (rt *RequestTracker) ensureCounter(ctx context.Context, now time.Time) error {
	if _, err := rt.db.SQL.ExecContext(ctx, rt.db.Dialect.InsertIgnore()+` INTO MSGX_COUNTER (NAME, VALUE, UPDATED_AT) VALUES (?, 0, ?)`, SeqnCounter, T(now)); err != nil {
		return Unavailable(fmt.Errorf("request SEQN counter: %w", err))
	}
	return nil
}

// send takes the next SEQN, builds the XML and writes it into COUTMSGS, in tx.
func (rt *RequestTracker) send(ctx context.Context, tx *sql.Tx, routing string, build BuildXML, now time.Time) (seqn string, coutID int64, err error) {
	seqn, err = rt.nextSeqn(ctx, tx, now)
	if err != nil {
		return "", 0, err
	}
	xml, err := build(seqn)
	if err != nil {
		return "", 0, err
	}
	coutID, err = rt.insertCoutmsgs(ctx, tx, xml, routing, now)
	return seqn, coutID, err
}

// CreateRequest takes the next SEQN, has build write the XML, inserts it into COUTMSGS with
// r.Routing and the legacy flags, and inserts the REGISTERED REQ_TRACK row, in one
// transaction: a request is either queued for the gateway and tracked, or not at all. It has
// no deadline until the gateway sends it (MarkSent).
// Values REQ_TRACK cannot hold whole are refused with ErrBadRequest before anything is
// written. It refuses in shadow mode (ErrShadow): COUTMSGS is the legacy's.
func (rt *RequestTracker) CreateRequest(ctx context.Context, r NewRequest, build BuildXML, now time.Time) (*Request, error) {
	if rt.db.Intake.Shadow() {
		return nil, fmt.Errorf("%w: data requests write the legacy COUTMSGS", ErrShadow)
	}
	if err := checkNewRequest(r); err != nil {
		return nil, err
	}
	if err := rt.ensureCounter(ctx, now); err != nil {
		return nil, err
	}
	var id int64
	err := rt.db.Tx(ctx, func(tx *sql.Tx) error {
		seqn, coutID, err := rt.send(ctx, tx, r.Routing, build, now)
		if err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `INSERT INTO REQ_TRACK (COUTMSGS_ID, REQ_TYPE, REQ_STYP, STDB, STDE, ANSWER_TYPE, SEQN, STATE, RESENDS,
			CREATED_AT, UPDATED_AT, DEADLINE_AT) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, NULL) RETURNING REQ_ID`,
			coutID, r.Type, r.STYP, nullStr(r.STDB), nullStr(r.STDE), r.AnswerType, seqn, ReqRegistered, T(now), T(now))
		if err != nil {
			return classifyWrite("insert REQ_TRACK", err)
		}
		defer rows.Close()
		if !rows.Next() {
			return Unavailable(fmt.Errorf("insert REQ_TRACK: no id returned: %v", rows.Err()))
		}
		return rows.Scan(&id)
	})
	if err != nil {
		return nil, err
	}
	return rt.GetRequest(ctx, id)
}

// GetRequest returns request id, or nil when there is none.
func (rt *RequestTracker) GetRequest(ctx context.Context, id int64) (*Request, error) {
	r, err := scanRequest(rt.db.SQL.QueryRowContext(ctx, `SELECT `+requestCols+` FROM REQ_TRACK WHERE REQ_ID = ?`, id))
	if err == sql.ErrNoRows {
		return nil, nil
	}
	if err != nil {
		return nil, Unavailable(fmt.Errorf("read request %d: %w", id, err))
	}
	return r, nil
}

// ListRequests returns the requests matching f in id order (newest first with f.Newest).
func (rt *RequestTracker) ListRequests(ctx context.Context, f RequestFilter) ([]*Request, error) {
	cond, args, order, reverse := idRange("REQ_ID", f.AfterID, f.BeforeID, f.Newest)
	q := `SELECT ` + requestCols + ` FROM REQ_TRACK WHERE ` + cond
	if f.State != "" {
		q += ` AND STATE = ?`
		args = append(args, f.State)
	}
	q += ` ORDER BY ` + order + ` LIMIT ` + strconv.Itoa(clampLimit(f.Limit))
	out, err := rt.queryRequests(ctx, q, args...)
	if reverse {
		slices.Reverse(out)
	}
	return out, err
}

func (rt *RequestTracker) queryRequests(ctx context.Context, q string, args ...any) ([]*Request, error) {
	rows, err := rt.db.SQL.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, Unavailable(fmt.Errorf("read requests: %w", err))
	}
	defer rows.Close()
	out := []*Request{}
	for rows.Next() {
		r, err := scanRequest(rows)
		if err != nil {
			return nil, Unavailable(fmt.Errorf("read requests: %w", err))
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, Unavailable(fmt.Errorf("read requests: %w", err))
	}
	return out, nil
}

// MarkSent moves each REGISTERED request whose latest COUTMSGS row has COUTMSGS_DATE_SENT set
// (the gateway transmitted it) to SENT, with SENT_AT the gateway's time (legacy local time,
// read in legacy.timezone) and the deadline timeout after it. It returns how many it moved.
func (rt *RequestTracker) MarkSent(ctx context.Context, timeout time.Duration, now time.Time) (int, error) {
	rows, err := rt.db.SQL.QueryContext(ctx, `SELECT r.REQ_ID, c.COUTMSGS_DATE_SENT FROM REQ_TRACK r
		JOIN COUTMSGS c ON c.COUTMSGS_ID = r.COUTMSGS_ID
		WHERE r.STATE = ? AND c.COUTMSGS_DATE_SENT IS NOT NULL ORDER BY r.REQ_ID`, ReqRegistered)
	if err != nil {
		return 0, Unavailable(fmt.Errorf("look for sent requests: %w", err))
	}
	type sent struct {
		id int64
		at time.Time
	}
	var list []sent
	for rows.Next() {
		var s sent
		var at NullTime
		if err := rows.Scan(&s.id, &at); err != nil {
			rows.Close()
			return 0, Unavailable(fmt.Errorf("look for sent requests: %w", err))
		}
		s.at = now
		if t := rt.db.Intake.LegacyTime(at); t != nil {
			s.at = *t
		}
		list = append(list, s)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, Unavailable(fmt.Errorf("look for sent requests: %w", err))
	}
	n := 0
	for _, s := range list {
		res, err := rt.db.SQL.ExecContext(ctx, `UPDATE REQ_TRACK SET STATE = ?, SENT_AT = ?, DEADLINE_AT = ?, UPDATED_AT = ? WHERE REQ_ID = ? AND STATE = ?`,
			ReqSent, T(s.at), T(s.at.Add(timeout)), T(now), s.id, ReqRegistered)
		if err != nil {
			return n, Unavailable(fmt.Errorf("mark request %d sent: %w", s.id, err))
		}
		if k, _ := res.RowsAffected(); k == 1 {
			n++
		}
	}
	return n, nil
}

// Overdue returns the SENT requests whose deadline is at or before now, in id order. A
// REGISTERED one is never overdue: the gateway has not sent it yet.
func (rt *RequestTracker) Overdue(ctx context.Context, now time.Time) ([]*Request, error) {
	return rt.queryRequests(ctx, `SELECT `+requestCols+` FROM REQ_TRACK WHERE STATE = ? AND DEADLINE_AT <= ? ORDER BY REQ_ID`,
		ReqSent, T(now))
}

// WaitingForGateway counts the REGISTERED requests and returns when the longest-waiting one
// was queued (nil when there is none).
func (rt *RequestTracker) WaitingForGateway(ctx context.Context) (int, *time.Time, error) {
	var n int
	var oldest NullTime
	if err := rt.db.SQL.QueryRowContext(ctx, `SELECT COUNT(*), MIN(UPDATED_AT) FROM REQ_TRACK WHERE STATE = ?`, ReqRegistered).Scan(&n, &oldest); err != nil {
		return 0, nil, Unavailable(fmt.Errorf("count requests waiting for the gateway: %w", err))
	}
	return n, oldest.Ptr(), nil
}

// Resend sends SENT request r again: the next SEQN, a new COUTMSGS row that replaces the sent
// one as the request's, and r back to REGISTERED with RESENDS + 1 and no deadline until the
// gateway sends it, in one transaction conditional on r being SENT with the re-send count as
// read (ErrChanged, nothing written, otherwise: answered meanwhile, re-sent by another
// instance, or its latest row not sent yet, which a second row would only queue behind). It
// refuses in shadow mode.
func (rt *RequestTracker) Resend(ctx context.Context, r *Request, build BuildXML, now time.Time) (*Request, error) {
	if rt.db.Intake.Shadow() {
		return nil, fmt.Errorf("%w: data requests write the legacy COUTMSGS", ErrShadow)
	}
	routing := RoutingReference
	if r.Type == ReqSchedule {
		routing = RoutingSchedule
	}
	if err := rt.ensureCounter(ctx, now); err != nil {
		return nil, err
	}
	err := rt.db.Tx(ctx, func(tx *sql.Tx) error {
		seqn, coutID, err := rt.send(ctx, tx, routing, build, now)
		if err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `UPDATE REQ_TRACK SET STATE = ?, SEQN = ?, COUTMSGS_ID = ?, RESENDS = RESENDS + 1, SENT_AT = NULL,
			DEADLINE_AT = NULL, UPDATED_AT = ? WHERE REQ_ID = ? AND STATE = ? AND RESENDS = ?`,
			ReqRegistered, seqn, coutID, T(now), r.ID, ReqSent, r.Resends)
		if err != nil {
			return classifyWrite(fmt.Sprintf("re-send request %d", r.ID), err)
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return ErrChanged
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return rt.GetRequest(ctx, r.ID)
}

// Expire ends SENT request r as EXPIRED, conditional on it being SENT with the re-send count
// as read (ErrChanged otherwise: a request the gateway has not sent never expires).
func (rt *RequestTracker) Expire(ctx context.Context, r *Request, now time.Time) error {
	res, err := rt.db.SQL.ExecContext(ctx, `UPDATE REQ_TRACK SET STATE = ?, FINISHED_AT = ?, UPDATED_AT = ? WHERE REQ_ID = ? AND STATE = ? AND RESENDS = ?`,
		ReqExpired, T(now), T(now), r.ID, ReqSent, r.Resends)
	if err != nil {
		return Unavailable(fmt.Errorf("expire request %d: %w", r.ID, err))
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return ErrChanged
	}
	return nil
}

// AnsweredBy returns the request message msgID answered, if any.
func (rt *RequestTracker) AnsweredBy(ctx context.Context, msgID int64) (int64, bool, error) {
	var id int64
	err := rt.db.SQL.QueryRowContext(ctx, `SELECT REQ_ID FROM REQ_TRACK WHERE ANSWER_MSG_ID = ? ORDER BY REQ_ID LIMIT 1`, msgID).Scan(&id)
	if err == sql.ErrNoRows {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, Unavailable(err)
	}
	return id, true, nil
}

// matchAnswer marks the request that processed message msgID answers as DONE, in the
// message's success transaction tx. Only a RESP answers (docs/sis-format.md §4.3): TYPE the requested
// reference TYPE, or SCHD for a schedule request. Of the open requests (REGISTERED or SENT)
// waiting for that TYPE and registered before the message reached msgx, the one whose SEQN the
// RESP echoes is taken when there is one; otherwise the oldest (the AODB answers in order, so
// the first RESP processed answers the first request). It returns the request's id (0: none).
func (rt *RequestTracker) matchAnswer(ctx context.Context, tx *sql.Tx, msgID int64, meta Backfill, now time.Time) (int64, error) {
	if !strings.EqualFold(meta.STYP, "RESP") || meta.TYPE == "" || utf8.RuneCountInString(meta.TYPE) > ReqTypeWidth {
		return 0, nil
	}
	rows, err := tx.QueryContext(ctx, `SELECT r.REQ_ID, r.SEQN FROM REQ_TRACK r WHERE r.STATE IN (?, ?) AND r.ANSWER_TYPE = ?
		AND r.CREATED_AT <= COALESCE((SELECT p.CREATED_AT FROM PROC_STATE p WHERE p.CMINMSGS_ID = ?), r.CREATED_AT)
		ORDER BY r.REQ_ID LIMIT 1000`, ReqRegistered, ReqSent, strings.ToUpper(meta.TYPE), msgID)
	if err != nil {
		return 0, Unavailable(fmt.Errorf("match RESP %d to a request: %w", msgID, err))
	}
	var pick int64
	echo := normalSeqn(meta.SEQN)
	for rows.Next() {
		var id int64
		var seqn sql.NullString
		if err := rows.Scan(&id, &seqn); err != nil {
			rows.Close()
			return 0, Unavailable(err)
		}
		if pick == 0 {
			pick = id
		}
		if echo != "" && seqn.String == echo {
			pick = id
			break
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, Unavailable(fmt.Errorf("match RESP %d to a request: %w", msgID, err))
	}
	if pick == 0 {
		return 0, nil
	}
	res, err := tx.ExecContext(ctx, `UPDATE REQ_TRACK SET STATE = ?, ANSWER_MSG_ID = ?, FINISHED_AT = ?, UPDATED_AT = ? WHERE REQ_ID = ? AND STATE IN (?, ?)`,
		ReqDone, msgID, T(now), T(now), pick, ReqRegistered, ReqSent)
	if err != nil {
		return 0, Unavailable(fmt.Errorf("mark request %d answered by %d: %w", pick, msgID, err))
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return 0, nil
	}
	return pick, nil
}

// normalSeqn returns a SEQN as the requests carry it (six digits) when it is a number below a
// million, else "" (it can then match no request's SEQN).
func normalSeqn(s string) string {
	n, err := parseSeq(strings.TrimSpace(s))
	if err != nil || n > 999999 {
		return ""
	}
	return fmt.Sprintf("%06d", n)
}
