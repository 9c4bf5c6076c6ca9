package store

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"msgx/client"
	"msgx/internal/event"
	"msgx/internal/pipeline"
	"msgx/internal/secret"
)

// The outbox: the MSG_EVENT table is the store's alone. The pump inserts a message's events in
// its success transaction (Succeed); the dispatcher reads each target's head and records
// deliveries through Events; operators list, count and replay through it too.

// Events is the outbox's contract.
type Events interface {
	// PendingEvents returns up to limit PENDING events of target in EVENT_ID order, for
	// delivery: their Raw payloads, which the dispatcher checks as it sends them, and no Payload.
	PendingEvents(ctx context.Context, target string, limit int) ([]Event, error)
	// PendingAtLeast reports whether target has at least n PENDING events.
	PendingAtLeast(ctx context.Context, target string, n int) (bool, error)
	// EventTx runs fn in one transaction over the outbox.
	EventTx(ctx context.Context, fn func(EventTx) error) error
	// ReplayEvents moves DEAD events back to PENDING.
	ReplayEvents(ctx context.Context, target string, ids []int64) (moved, skipped int, err error)
	// ListEvents returns the events f selects.
	ListEvents(ctx context.Context, f EventFilter) ([]Event, error)
	// EventCounts counts events per target and state, with the oldest one's creation time.
	EventCounts(ctx context.Context) ([]EventCount, error)
}

var _ Events = (*Outbox)(nil)

// Event is one MSG_EVENT row. Columns that are NULL are nil (the API answers them as null).
type Event struct {
	EventID       int64
	MsgID         int64
	TypeTag       string
	Target        string
	Kind          string
	FlightKey     *string
	State         pipeline.EventStatus
	Attempts      int
	ErrorClass    *string
	LastError     *string
	CreatedAt     time.Time
	SentAt        *time.Time
	NextAttemptAt *time.Time
	FirstFailedAt *time.Time
	// Payload is the stored body. A body that is not valid JSON (a bug upstream) is shown as a
	// JSON string, so one bad row never breaks a listing.
	Payload json.RawMessage

	// Raw is PAYLOAD exactly as stored (what a sink is given).
	Raw []byte
}

// Wire is e as the API answers an outbox event's row: in the events listing and its stream,
// and as a target's head in the status's targets section (the one mapping both use).
func (e *Event) Wire() client.EventRow {
	return client.EventRow{EventID: e.EventID, MsgID: e.MsgID, TypeTag: e.TypeTag, Target: e.Target, Kind: e.Kind,
		FlightKey: e.FlightKey, State: string(e.State), Attempts: e.Attempts, ErrorClass: e.ErrorClass, LastError: e.LastError,
		CreatedAt: e.CreatedAt, SentAt: e.SentAt, NextAttemptAt: e.NextAttemptAt, FirstFailedAt: e.FirstFailedAt, Payload: e.Payload}
}

// Render sets e as the operator's view shows it: a stored canonical event (kind
// event.KindChange) with the kind and payload its target is delivered (event.Stored, with the
// family families gives its target), every other event as stored. An elided payload (nil)
// stays elided with its stored kind, and one that does not render is shown as stored (its
// delivery goes DEAD as MALFORMED, saying why).
func (e *Event) Render(families map[string]string) {
	if e.Kind != event.KindChange || e.Payload == nil {
		return
	}
	if kind, p, err := event.Stored(families[e.Target], e.Kind, e.Payload); err == nil {
		e.Kind, e.Payload = kind, p
	}
}

// Key returns the flight key, "" when there is none.
func (e *Event) Key() string {
	if e.FlightKey == nil {
		return ""
	}
	return *e.FlightKey
}

// NextAttempt returns NEXT_ATTEMPT_AT, zero when NULL (due at once).
func (e *Event) NextAttempt() time.Time {
	if e.NextAttemptAt == nil {
		return time.Time{}
	}
	return *e.NextAttemptAt
}

// FirstFailed returns FIRST_FAILED_AT, zero when the event never failed.
func (e *Event) FirstFailed() time.Time {
	if e.FirstFailedAt == nil {
		return time.Time{}
	}
	return *e.FirstFailedAt
}

// LastErrorText returns LAST_ERROR, "" when NULL.
func (e *Event) LastErrorText() string {
	if e.LastError == nil {
		return ""
	}
	return *e.LastError
}

// Due reports whether the event may be attempted at now.
func (e *Event) Due(now time.Time) bool { return !e.NextAttempt().After(now) }

type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// queryEvents runs a SELECT of EventView.cols (or pendingCols) and scans every row; shown says
// to fill each event's Payload, the operator's view of it (Raw is always filled).
func queryEvents(ctx context.Context, q querier, shown bool, query string, args ...any) ([]Event, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Event
	for rows.Next() {
		var (
			e                            Event
			key, class, lastErr          sql.NullString
			state                        string
			created, sent, next, firstAt NullTime
		)
		if err := rows.Scan(&e.EventID, &e.MsgID, &e.TypeTag, &e.Target, &e.Kind, &key, &state, &e.Attempts,
			&class, &lastErr, &created, &sent, &next, &firstAt, &e.Raw); err != nil {
			return nil, err
		}
		e.State = pipeline.EventStatus(state)
		e.FlightKey = strPtr(key)
		e.ErrorClass = strPtr(class)
		e.LastError = strPtr(lastErr)
		e.CreatedAt = created.Time
		e.SentAt, e.NextAttemptAt, e.FirstFailedAt = sent.Ptr(), next.Ptr(), firstAt.Ptr()
		if shown {
			e.Payload = ShownPayload(e.Raw)
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// ShownPayload is an event's stored payload as the operator's view shows it (Event.Payload): as
// it is when it is JSON, else as a JSON string, so one bad row never breaks a listing.
func ShownPayload(raw []byte) json.RawMessage {
	if json.Valid(raw) {
		return json.RawMessage(raw)
	}
	p, _ := json.Marshal(string(raw))
	return p
}

// pendingCols are EventView.cols of an own row known to be pending (a RETRY row is PENDING
// outside), sharedPendingCols those of a shared row above its target's mark (the target's
// name is their argument).
const (
	pendingCols = `EVENT_ID, CMINMSGS_ID, TYPE_TAG, TARGET, KIND, FLIGHT_KEY, 'PENDING', ATTEMPTS,
ERROR_CLASS, LAST_ERROR, CREATED_AT, SENT_AT, NEXT_ATTEMPT_AT, FIRST_FAILED_AT, PAYLOAD`
	sharedPendingCols = `e.EVENT_ID, e.CMINMSGS_ID, e.TYPE_TAG, ?, e.KIND, e.FLIGHT_KEY, 'PENDING', 0,
NULL, NULL, e.CREATED_AT, NULL, NULL, NULL, e.PAYLOAD`
)

// takes is the range of shared rows a target takes (MSG_EVENT_SENT): those above from and at
// most to, the ones above mark pending. A target without the row takes none.
type takes struct {
	mark, from, to int64
	found          bool
}

// lo is the id above which the target's shared rows are pending.
func (r takes) lo() int64 { return max(r.mark, r.from) }

// sharedAbove returns the SQL and arguments of the condition that shared row e is one target
// takes above id lo and has no row of its own for (takenBy).
func (r takes) sharedAbove(target string, lo int64) (string, []any) {
	return takenBy("?", "?", "?"), []any{lo, r.to, target}
}

// sharedAboveOf is sharedAbove with target's range read by subqueries of the statement, for
// a read outside a transaction (one round trip): a target without its MSG_EVENT_SENT row takes
// none (its lower bound is NULL).
func sharedAboveOf(target string) (string, []any) {
	return takenBy("?", rangeLo, rangeTo), []any{target, target, target}
}

// rangeLo and rangeTo are the SQL of the bounds of a target's shared rows above its mark
// (takes.lo and takes.to), their argument the target's name.
const (
	rangeLo = `(SELECT CASE WHEN mk.UPTO_EVENT_ID > mk.FROM_EVENT_ID THEN mk.UPTO_EVENT_ID ELSE mk.FROM_EVENT_ID END
FROM MSG_EVENT_SENT mk WHERE mk.TARGET = ?)`
	rangeTo = `COALESCE((SELECT mk.TO_EVENT_ID FROM MSG_EVENT_SENT mk WHERE mk.TARGET = ?), ` + noEnd + `)`
)

// readTakes reads target's range; lock locks its row until the end of the transaction on
// MySQL (see lockMark).
func readTakes(ctx context.Context, q rowQuerier, dialect Dialect, target string, lock bool) (takes, error) {
	query := `SELECT UPTO_EVENT_ID, FROM_EVENT_ID, COALESCE(TO_EVENT_ID, ` + noEnd + `) FROM MSG_EVENT_SENT WHERE TARGET = ?`
	if lock && dialect == MySQL {
		query += ` FOR UPDATE`
	}
	r := takes{found: true}
	switch err := q.QueryRowContext(ctx, query, target).Scan(&r.mark, &r.from, &r.to); {
	case errors.Is(err, sql.ErrNoRows):
		return takes{}, nil
	case err != nil:
		return takes{}, Unavailable(fmt.Errorf("read the delivery mark of %s: %w", target, err))
	}
	return r, nil
}

// PendingEvents returns up to limit PENDING events of target in EVENT_ID order: the head first.
// It reads ranges of the (TARGET, STATE, EVENT_ID) index, never the delivered rows the mark
// covers: on the happy path, when the target has no row of its own that is pending or may
// shadow a shared row (ownAbove), the shared rows of its range, read without takenBy's
// anti-join; else its own PENDING rows above its mark, its RETRY (replayed) rows, and the
// shared rows above its mark it takes, as one UNION ALL of the three, each ordered and cut.
func (o *Outbox) PendingEvents(ctx context.Context, target string, limit int) ([]Event, error) {
	taken := `SELECT ` + sharedPendingCols + ` FROM MSG_EVENT e` + headIndex(o.db.Dialect) + ` WHERE `
	check := `SELECT EVENT_ID, CMINMSGS_ID, TYPE_TAG, TARGET, KIND, FLIGHT_KEY, '` + ownFound + `', 0, NULL, NULL, CREATED_AT,
NULL, NULL, NULL, PAYLOAD ` + ownAbove(o.db.Dialect)
	args := append([]any{target, target, target, limit}, target, target)
	evs, err := queryEvents(ctx, o.db.SQL, false, unionAll(o.db.Dialect, taken+sharedRange+` ORDER BY e.EVENT_ID LIMIT ?`, check), args...)
	if err == nil && slices.ContainsFunc(evs, func(e Event) bool { return e.State == ownFound }) {
		own := `SELECT ` + pendingCols + ` FROM MSG_EVENT` + headIndex(o.db.Dialect) + ` WHERE TARGET = ? AND STATE = 'PENDING' AND EVENT_ID > ` + MarkOf("?") + `
ORDER BY EVENT_ID LIMIT ?`
		retry := `SELECT ` + pendingCols + ` FROM MSG_EVENT WHERE TARGET = ? AND STATE = '` + eventRetry + `' ORDER BY EVENT_ID LIMIT ?`
		cond, cargs := sharedAboveOf(target)
		args := append(append([]any{target, target, limit, target, limit, target}, cargs...), limit)
		evs, err = queryEvents(ctx, o.db.SQL, false, unionAll(o.db.Dialect, own, retry, taken+cond+` ORDER BY e.EVENT_ID LIMIT ?`), args...)
	}
	if err != nil {
		return nil, Unavailable(fmt.Errorf("read the head of %s: %w", target, err))
	}
	slices.SortFunc(evs, func(a, b Event) int { return cmp.Compare(a.EventID, b.EventID) })
	return evs[:min(len(evs), limit)], nil
}

// PendingAtLeast reports whether target has at least n PENDING events, reading no more than n
// index entries of each of PendingEvents' ranges (on the happy path, of the shared one only).
func (o *Outbox) PendingAtLeast(ctx context.Context, target string, n int) (bool, error) {
	hint := headIndex(o.db.Dialect)
	var got, own int
	err := o.db.SQL.QueryRowContext(ctx, `SELECT
 (SELECT COUNT(*) FROM (SELECT e.EVENT_ID FROM MSG_EVENT e`+hint+` WHERE `+sharedRange+` ORDER BY e.EVENT_ID LIMIT ?) s),
 (SELECT COUNT(*) FROM (SELECT 1 AS X `+ownAbove(o.db.Dialect)+`) o)`, target, target, n, target, target).Scan(&got, &own)
	if err == nil && own > 0 {
		cond, cargs := sharedAboveOf(target)
		err = o.db.SQL.QueryRowContext(ctx, `SELECT
 (SELECT COUNT(*) FROM (SELECT EVENT_ID FROM MSG_EVENT`+hint+` WHERE TARGET = ? AND STATE = 'PENDING' AND EVENT_ID > `+MarkOf("?")+`
   ORDER BY EVENT_ID LIMIT ?) a)
 + (SELECT COUNT(*) FROM (SELECT EVENT_ID FROM MSG_EVENT WHERE TARGET = ? AND STATE = '`+eventRetry+`' LIMIT ?) r)
 + (SELECT COUNT(*) FROM (SELECT e.EVENT_ID FROM MSG_EVENT e`+hint+` WHERE `+cond+` ORDER BY e.EVENT_ID LIMIT ?) s)`,
			append(append([]any{target, target, n, target, n}, cargs...), n)...).Scan(&got)
	}
	if err != nil {
		return false, Unavailable(fmt.Errorf("count pending events of %s: %w", target, err))
	}
	return got >= n, nil
}

// sharedRange is the condition that shared row e is in the range of a target (its name the
// two arguments) above its mark, without the anti-join (inRange).
var sharedRange = inRange(rangeLo, rangeTo)

// ownFound is the state PendingEvents' check part gives the row ownAbove finds.
const ownFound = "OWN"

// ownAbove is the FROM and WHERE clauses of a target's first row of its own that is pending
// or may shadow a shared row it takes: a RETRY row, or any row above its mark (its arguments:
// the target's name twice). Without one, the target's pending events are the shared rows of
// its range (sharedRange), and so is a run of its deliveries (readRun).
func ownAbove(d Dialect) string {
	return `FROM MSG_EVENT` + headIndex(d) + ` WHERE TARGET = ? AND (STATE = '` + eventRetry + `' OR (STATE IN (` + ownStates + `)
AND EVENT_ID > ` + MarkOf("?") + `)) LIMIT 1`
}

// EventChange is what a fenced write does to a PENDING event's row (see EventTx.Change).
type EventChange struct {
	State         pipeline.EventStatus // PENDING (back off) or DEAD
	AddAttempt    bool                 // count one more attempt
	NextAttemptAt time.Time            // when to try again; zero: NULL
	FirstFailedAt time.Time            // set when the row has none yet; zero: left as is
	Class         pipeline.ErrorClass
	LastError     string // cut to maxEventError
}

// EventTx is the outbox inside one transaction.
type EventTx interface {
	// MarkSent marks the events ids of target SENT at now, those still PENDING, and returns
	// how many; an id of another target is left alone. It adds them to target's SENT total in
	// the same transaction.
	MarkSent(target string, ids []int64, now time.Time) (int, error)
	// Change applies c to each of evs whose row is still PENDING with the attempts, error
	// class and last error that were read (the fence), and returns how many rows it changed:
	// a row another writer changed first (a replay, a delivery) is left as that writer left
	// it, never overwritten by a decision taken on a stale read.
	Change(evs []*Event, c EventChange) (int, error)
}

// EventTx runs fn in one transaction; fn's error rolls it back. A transaction that ends in a
// conflict (IsConflict) is done again from its start, a bounded number of times (RetryTx).
// On SQLite fn rides the commit of the transaction that holds the write lock next (riders.go).
func (o *Outbox) EventTx(ctx context.Context, fn func(EventTx) error) error {
	return o.db.Processor.ride(ctx, "dispatch", func(tx *sql.Tx) error { return fn(eventTx{ctx: ctx, tx: tx, dialect: o.db.Dialect}) })
}

type eventTx struct {
	ctx     context.Context
	tx      *sql.Tx
	dialect Dialect
}

// eventIDChunk bounds the ids of one UPDATE (a power of two: paddedIDArgs).
const eventIDChunk = 512

// maxEventError bounds LAST_ERROR of an event; a sink's error can quote a whole response body.
const maxEventError = 2000

func (x eventTx) MarkSent(target string, ids []int64, now time.Time) (int, error) {
	ids = slices.Clone(ids)
	slices.Sort(ids)
	ids = slices.Compact(ids) // an id twice would be counted twice in MSG_EVENT_SENT
	if len(ids) == 0 {
		return 0, nil
	}
	// The pending rows above the mark up to the run's last id: the run itself, with the rows
	// another writer moved on (DEAD) left out. The mark rises past the ones delivered here, up
	// to the first that was not (a gap: another instance's stale run).
	run, err := x.readRun(target, ids[len(ids)-1])
	if err != nil {
		return 0, err
	}
	r, above := run.takes, run.above
	mark := r.mark
	upto, marked := mark, 0
	for _, id := range above {
		if _, ok := slices.BinarySearch(ids, id); !ok {
			break
		}
		upto, marked = id, marked+1
	}
	if marked == len(above) {
		// The whole run was delivered: the mark goes on over the target's own rows that are
		// done with (SENT beyond a gap, DEAD) up to its next pending row. Left below, such a
		// row would hold its shared row, and every shared row after it, from retention
		// until the target's next delivery, and for good once its range ended.
		for _, id := range run.done {
			if id > upto && (run.next == 0 || id < run.next) {
				upto = id
			}
		}
	}
	// The rest, one row each: a replayed (RETRY) event, or one beyond a gap. An id at or below
	// the mark that is PENDING was delivered before: it is not counted again.
	var rest []int64
	j := 0
	for _, id := range ids { // ids less above[:marked], both in order
		if j < marked && above[j] == id {
			j++
			continue
		}
		rest = append(rest, id)
	}
	for chunk := range slices.Chunk(rest, eventIDChunk) {
		args := append([]any{T(now), target, upto}, paddedIDArgs(chunk)...)
		n, err := x.exec(`UPDATE MSG_EVENT SET STATE = 'SENT', SENT_AT = ?, NEXT_ATTEMPT_AT = NULL
WHERE TARGET = ? AND (STATE = '`+eventRetry+`' OR (STATE = 'PENDING' AND EVENT_ID > ?)) AND EVENT_ID IN (`+placeholders(len(args)-3)+`)`, args...)
		if err != nil {
			return 0, Unavailable(fmt.Errorf("mark events %d..%d of %s sent: %w", chunk[0], chunk[len(chunk)-1], target, err))
		}
		marked += n
		// A shared one beyond the gap gets a row of its own, SENT.
		args = append([]any{target, T(now), max(upto, r.from), r.to}, paddedIDArgs(chunk)...)
		n, err = x.exec(x.dialect.InsertIgnore()+` INTO MSG_EVENT (EVENT_ID, CMINMSGS_ID, TYPE_TAG, TARGET, KIND, FLIGHT_KEY, PAYLOAD,
STATE, ATTEMPTS, CREATED_AT, SENT_AT) SELECT e.EVENT_ID, e.CMINMSGS_ID, e.TYPE_TAG, ?, e.KIND, e.FLIGHT_KEY, e.PAYLOAD, 'SENT', 0,
e.CREATED_AT, ? FROM MSG_EVENT e WHERE e.TARGET = `+shared+` AND e.EVENT_ID > ? AND e.EVENT_ID <= ? AND e.EVENT_ID IN (`+placeholders(len(args)-4)+`)`, args...)
		if err != nil {
			return 0, Unavailable(fmt.Errorf("mark events %d..%d of %s sent: %w", chunk[0], chunk[len(chunk)-1], target, err))
		}
		marked += n
	}
	if marked == 0 { // the mark rises only past rows marked here
		return 0, nil
	}
	return marked, x.countSent(target, marked, mark, upto, now)
}

// exec runs a write in the transaction and returns how many rows it changed.
func (x eventTx) exec(q string, args ...any) (int, error) {
	res, err := x.tx.ExecContext(x.ctx, q, args...)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// runDone bounds the own rows past the mark readRun reads (run.done): there are rarely more
// than a few, and the mark goes less far when there are more.
const runDone = 64

// run is what MarkSent reads of a target before it marks a run sent (readRun).
type run struct {
	takes
	above []int64 // the pending rows above the mark up to the run's last id, in order
	next  int64   // the first pending row after the run's last id, 0 when there is none
	done  []int64 // the first runDone rows of the target's own above the mark that are SENT or DEAD
}

// readRun returns target's range with its delivery mark and, in order, the ids of its pending
// rows above the mark up to upto (its own PENDING rows and the shared rows it takes and has
// no row of its own for), the first pending one after upto, and its own rows above the mark
// that no delivery waits for. The target's MSG_EVENT_SENT row is locked first (lockMark).
//
// On the happy path the target has no row of its own that is pending or above its mark
// (ownAbove: nothing backed off, died, was replayed or sent beyond a gap since): its run is
// then the shared rows of its range up to upto, read without the anti-join of takenBy, and
// there is nothing after it to pass. One statement reads them and whether that holds; when it
// does not, a second reads the run with the target's own rows (the anti-join costs each
// shared row an index lookup, and the commit reads the run of every target of a round).
func (x eventTx) readRun(target string, upto int64) (run, error) {
	r, err := x.lockMark(target)
	if err != nil {
		return run{takes: r}, err
	}
	hint := headIndex(x.dialect)
	q := unionAll(x.dialect,
		`SELECT e.EVENT_ID, 0 FROM MSG_EVENT e`+hint+` WHERE `+inRange("?", "?"),
		`SELECT EVENT_ID, 3 `+ownAbove(x.dialect))
	out, own, err := x.scanRun(r, target, q, r.lo(), min(upto, r.to), target, target)
	if err != nil || !own {
		return out, err
	}
	cond, cargs := r.sharedAbove(target, r.lo())
	q = unionAll(x.dialect,
		`SELECT EVENT_ID, 0 FROM MSG_EVENT`+hint+` WHERE TARGET = ? AND STATE = 'PENDING' AND EVENT_ID > ? AND EVENT_ID <= ?`,
		`SELECT e.EVENT_ID, 0 FROM MSG_EVENT e`+hint+` WHERE `+cond+` AND e.EVENT_ID <= ?`,
		`SELECT EVENT_ID, 1 FROM MSG_EVENT`+hint+` WHERE TARGET = ? AND STATE = 'PENDING' AND EVENT_ID > ? ORDER BY EVENT_ID LIMIT 1`,
		`SELECT e.EVENT_ID, 1 FROM MSG_EVENT e`+hint+` WHERE `+cond+` AND e.EVENT_ID > ? ORDER BY e.EVENT_ID LIMIT 1`,
		`SELECT EVENT_ID, 2 FROM MSG_EVENT`+hint+` WHERE TARGET = ? AND STATE IN ('SENT', 'DEAD') AND EVENT_ID > ? ORDER BY EVENT_ID LIMIT `+fmt.Sprint(runDone))
	args := append(append([]any{target, r.mark, upto}, cargs...), upto, target, max(r.mark, upto))
	args = append(append(append(args, cargs...), upto, target), r.mark)
	out, _, err = x.scanRun(r, target, q, args...)
	return out, err
}

// scanRun reads a run of target, whose range is r (readRun), by the query q whose rows are
// an id and its part: 0 above, 1 next, 2 done, 3 a row ownAbove found (own).
func (x eventTx) scanRun(r takes, target, q string, args ...any) (out run, own bool, err error) {
	out.takes = r
	failed := func(err error) (run, bool, error) {
		return out, false, Unavailable(fmt.Errorf("mark events of %s sent: read the run: %w", target, err))
	}
	rows, err := x.tx.QueryContext(x.ctx, q, args...)
	if err != nil {
		return failed(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var part int
		if err := rows.Scan(&id, &part); err != nil {
			return failed(err)
		}
		switch part {
		case 0:
			out.above = append(out.above, id)
		case 1:
			if out.next == 0 || id < out.next {
				out.next = id
			}
		case 2:
			out.done = append(out.done, id)
		default:
			own = true
		}
	}
	if err := rows.Err(); err != nil {
		return failed(err)
	}
	slices.Sort(out.above)
	slices.Sort(out.done)
	return out, own, nil
}

// lockMark returns target's range and delivery mark, its MSG_EVENT_SENT row locked until the
// end of the transaction on MySQL (on SQLite the transaction holds the database's write lock),
// so that two instances' writes of the same target take turns: each reads the mark the other
// left. A target without the row gets one (addMark) and is read again, so that there is a row
// to lock.
func (x eventTx) lockMark(target string) (takes, error) {
	for range 2 {
		if r, err := readTakes(x.ctx, x.tx, x.dialect, target, true); err != nil || r.found {
			return r, err
		}
		if err := addMark(x.ctx, x.tx, x.dialect, target, false); err != nil {
			return takes{}, err
		}
	}
	return takes{}, Unavailable(fmt.Errorf("read the delivery mark of %s: no row after adding it", target))
}

// addMark adds target's MSG_EVENT_SENT row (mark 0, nothing sent) unless it has one, taking
// the shared rows written from now on (a target starts at the log's end), or with earliest
// every one still kept.
func addMark(ctx context.Context, tx execer, dialect Dialect, target string, earliest bool) error {
	from := `VALUE`
	if earliest {
		from = `0`
	}
	if _, err := tx.ExecContext(ctx, dialect.InsertIgnore()+` INTO MSG_EVENT_SENT (TARGET, SENT, UPTO_EVENT_ID, FROM_EVENT_ID)
SELECT ?, 0, 0, `+from+` FROM MSGX_COUNTER WHERE NAME = '`+eventSeq+`'`, target); err != nil {
		return Unavailable(fmt.Errorf("add the delivery mark of %s: %w", target, err))
	}
	return nil
}

// countSent adds n events just marked SENT to target's total in MSG_EVENT_SENT and raises its
// delivery mark from mark to upto, recording the raise at now in MSG_EVENT_MARK when it rose,
// in the transaction that marked them: a target's SENT count is one row's read however many
// events it has sent (EventCounts). On MySQL the two writes are one round trip (a
// multi-statement query): a round of one event per target paid a round trip more for the mark
// than the row UPDATE it replaced.
func (x eventTx) countSent(target string, n int, mark, upto int64, now time.Time) error {
	upsert := ` ON CONFLICT (TARGET) DO UPDATE SET SENT = MSG_EVENT_SENT.SENT + excluded.SENT,
UPTO_EVENT_ID = MAX(MSG_EVENT_SENT.UPTO_EVENT_ID, excluded.UPTO_EVENT_ID)`
	if x.dialect == MySQL {
		upsert = ` ON DUPLICATE KEY UPDATE SENT = SENT + VALUES(SENT), UPTO_EVENT_ID = GREATEST(UPTO_EVENT_ID, VALUES(UPTO_EVENT_ID))`
	}
	count := `INSERT INTO MSG_EVENT_SENT (TARGET, SENT, UPTO_EVENT_ID) VALUES (?, ?, ?)` + upsert
	countArgs := []any{target, n, upto}
	if upto > mark {
		const raise = `INSERT INTO MSG_EVENT_MARK (TARGET, UPTO_EVENT_ID, SENT_AT) VALUES (?, ?, ?)`
		raiseArgs := []any{target, upto, T(now)}
		if x.dialect == MySQL {
			count, countArgs = raise+`;
`+count, append(raiseArgs, countArgs...)
		} else if _, err := x.tx.ExecContext(x.ctx, raise, raiseArgs...); err != nil {
			return Unavailable(fmt.Errorf("raise the delivery mark of %s to %d: %w", target, upto, err))
		}
	}
	if _, err := x.tx.ExecContext(x.ctx, count, countArgs...); err != nil {
		return Unavailable(fmt.Errorf("count %d events of %s sent (mark %d to %d): %w", n, target, mark, upto, err))
	}
	return nil
}

// paddedIDArgs returns the ids (at least one) as query arguments, the last repeated up to
// the next power of two: an IN list then has one of a few lengths, and SQLite's statement
// cache keeps their few texts compiled instead of compiling one per length.
func paddedIDArgs(ids []int64) []any {
	n := 1
	for n < len(ids) {
		n *= 2
	}
	args := make([]any, n)
	for i := range args {
		args[i] = ids[min(i, len(ids)-1)]
	}
	return args
}

// fenced is the condition of every write that moves a PENDING event on (backoff, DEAD): the
// row is still pending (RETRY, or PENDING above its target's delivery mark, the argument
// after the target) and holds the attempts, error class and last error read before the
// decision. Whatever else changes a row changes one of them: a replay resets ATTEMPTS (and a
// row must have died, with a new last error, to be replayed), another dispatcher's failure
// bumps ATTEMPTS, a success leaves PENDING or raises the mark past it.
const fenced = `TARGET = ? AND (STATE = '` + eventRetry + `' OR (STATE = 'PENDING' AND EVENT_ID > ?))
AND ATTEMPTS = ? AND COALESCE(ERROR_CLASS, '') = ? AND COALESCE(LAST_ERROR, '') = ?`

// fenceKey is the part of an event's row that fenced compares.
type fenceKey struct {
	target    string
	attempts  int
	class     string
	lastError string
}

func fenceOf(e *Event) fenceKey {
	k := fenceKey{target: e.Target, attempts: e.Attempts, lastError: e.LastErrorText()}
	if e.ErrorClass != nil {
		k.class = *e.ErrorClass
	}
	return k
}

func (x eventTx) Change(evs []*Event, c EventChange) (int, error) {
	// A replayed (RETRY) row that backs off stays RETRY: pending whatever the mark.
	set := `STATE = ?, NEXT_ATTEMPT_AT = ?, ERROR_CLASS = ?, LAST_ERROR = ?`
	if c.State == pipeline.EventPending {
		set = `STATE = CASE WHEN STATE = '` + eventRetry + `' THEN STATE ELSE ? END, NEXT_ATTEMPT_AT = ?, ERROR_CLASS = ?, LAST_ERROR = ?`
	}
	setArgs := []any{string(c.State), T(c.NextAttemptAt), nullStr(string(c.Class)), Fit(secret.Redact(c.LastError), maxEventError)}
	if c.AddAttempt {
		set += `, ATTEMPTS = ATTEMPTS + 1`
	}
	if !c.FirstFailedAt.IsZero() {
		set += `, FIRST_FAILED_AT = COALESCE(FIRST_FAILED_AT, ?)`
		setArgs = append(setArgs, T(c.FirstFailedAt))
	}
	// Events with the same fence share a statement.
	groups := map[fenceKey][]int64{}
	var order []fenceKey
	for _, e := range evs {
		k := fenceOf(e)
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], e.EventID)
	}
	// Each target's mark is read (locked) once, in target order: a delivery of the target
	// that raced this write waits, or is waited for, and the fence sees the mark it left.
	marks := map[string]takes{}
	for _, k := range order {
		marks[k.target] = takes{}
	}
	for _, t := range slices.Sorted(maps.Keys(marks)) {
		r, err := x.lockMark(t)
		if err != nil {
			return 0, err
		}
		marks[t] = r
	}
	changed := 0
	for _, k := range order {
		r := marks[k.target]
		for ids := range slices.Chunk(groups[k], eventIDChunk) {
			args := append(append(append([]any{}, setArgs...), k.target, r.mark, k.attempts, k.class, k.lastError), idArgs(ids)...)
			n, err := x.exec(`UPDATE MSG_EVENT SET `+set+` WHERE `+fenced+` AND EVENT_ID IN (`+placeholders(len(ids))+`)`, args...)
			if err != nil {
				return changed, Unavailable(fmt.Errorf("events %d..%d: %w", ids[0], ids[len(ids)-1], err))
			}
			changed += n
			if k != (fenceKey{target: k.target}) {
				continue // a shared row has never failed
			}
			// A shared row the target has no row of its own for leaves the happy path: its
			// own row, a copy with the change, is added (the primary key fences it).
			attempts := 0
			if c.AddAttempt {
				attempts = 1
			}
			args = append([]any{k.target, string(c.State), attempts, T(c.NextAttemptAt), T(c.FirstFailedAt), nullStr(string(c.Class)),
				Fit(secret.Redact(c.LastError), maxEventError), r.lo(), r.to}, idArgs(ids)...)
			n, err = x.exec(x.dialect.InsertIgnore()+` INTO MSG_EVENT (EVENT_ID, CMINMSGS_ID, TYPE_TAG, TARGET, KIND, FLIGHT_KEY, PAYLOAD,
STATE, ATTEMPTS, NEXT_ATTEMPT_AT, FIRST_FAILED_AT, ERROR_CLASS, LAST_ERROR, CREATED_AT)
SELECT e.EVENT_ID, e.CMINMSGS_ID, e.TYPE_TAG, ?, e.KIND, e.FLIGHT_KEY, e.PAYLOAD, ?, ?, ?, ?, ?, ?, e.CREATED_AT FROM MSG_EVENT e
WHERE e.TARGET = `+shared+` AND e.EVENT_ID > ? AND e.EVENT_ID <= ? AND e.EVENT_ID IN (`+placeholders(len(ids))+`)`, args...)
			if err != nil {
				return changed, Unavailable(fmt.Errorf("events %d..%d: %w", ids[0], ids[len(ids)-1], err))
			}
			changed += n
		}
	}
	return changed, nil
}

// idArgs returns the ids as query arguments.
func idArgs(ids []int64) []any {
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	return args
}

// ReplayEvents moves DEAD events back to PENDING (stored RETRY: pending whatever the delivery
// mark, which may have passed them long ago) with ATTEMPTS 0 and NEXT_ATTEMPT_AT and
// FIRST_FAILED_AT cleared (so the head deadline counts from the next failure); ERROR_CLASS and
// LAST_ERROR are kept for audit. target "" means every target; no ids means every DEAD event
// of the target(s). An id that is not DEAD, not of target, unknown, or of class MALFORMED
// (a payload that can never be delivered) is skipped. It returns how many events moved and
// how many were skipped. Only rows that are DEAD when the UPDATE runs move, so a concurrent
// delivery or replay is never overwritten.
func (o *Outbox) ReplayEvents(ctx context.Context, target string, ids []int64) (moved, skipped int, err error) {
	const set = `UPDATE MSG_EVENT SET STATE = '` + eventRetry + `', ATTEMPTS = 0, NEXT_ATTEMPT_AT = NULL, FIRST_FAILED_AT = NULL
WHERE STATE = 'DEAD' AND (ERROR_CLASS IS NULL OR ERROR_CLASS <> 'MALFORMED')`
	var tgt string
	var targs []any
	if target != "" {
		tgt, targs = " AND TARGET = ?", []any{target}
	}
	if len(ids) == 0 {
		res, err := o.db.SQL.ExecContext(ctx, set+tgt, targs...)
		if err != nil {
			return 0, 0, Unavailable(fmt.Errorf("replay dead events of %q: %w", target, err))
		}
		n, _ := res.RowsAffected()
		var left int
		if err := o.db.SQL.QueryRowContext(ctx, `SELECT COUNT(*) FROM MSG_EVENT WHERE STATE = 'DEAD'`+tgt, targs...).Scan(&left); err != nil {
			return int(n), 0, Unavailable(fmt.Errorf("count dead events of %q: %w", target, err))
		}
		return int(n), left, nil
	}
	ids = slices.Clone(ids)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	for chunk := range slices.Chunk(ids, eventIDChunk) {
		args := append(append([]any{}, targs...), idArgs(chunk)...)
		res, err := o.db.SQL.ExecContext(ctx, set+tgt+` AND EVENT_ID IN (`+placeholders(len(chunk))+`)`, args...)
		if err != nil {
			return moved, 0, Unavailable(fmt.Errorf("replay events %d..%d: %w", chunk[0], chunk[len(chunk)-1], err))
		}
		n, _ := res.RowsAffected()
		moved += int(n)
	}
	return moved, max(0, len(ids)-moved), nil // an id may be DEAD on several targets
}

// EventFilter selects events for ListEvents. Zero fields select everything.
type EventFilter struct {
	Target  string               // one target, or "" for all
	State   pipeline.EventStatus // PENDING, SENT or DEAD, or "" for all
	AfterID int64                // only events with a larger EVENT_ID (paging in EVENT_ID order)
	Limit   int                  // at most this many (default 100, at most 1000)
	Newest  bool                 // newest first instead of delivery (EVENT_ID) order
}

// ListEvents returns the events f selects, in EVENT_ID order (newest first with f.Newest).
func (o *Outbox) ListEvents(ctx context.Context, f EventFilter) ([]Event, error) {
	sel := eventSelect{cols: EventView.cols, target: f.Target, byTarget: true, state: f.State, desc: f.Newest, limit: clampLimit(f.Limit)}
	if f.AfterID > 0 {
		sel.where, sel.args = append(sel.where, "e.EVENT_ID > ?"), append(sel.args, f.AfterID)
	}
	q, args, err := o.stateQuery(ctx, sel)
	if err != nil {
		return nil, err
	}
	evs, err := queryEvents(ctx, o.db.SQL, true, q, args...)
	if err != nil {
		return nil, Unavailable(fmt.Errorf("list events: %w", err))
	}
	ids := make([]int64, len(evs))
	for i := range evs {
		ids[i] = evs[i].EventID
	}
	evs = evs[:wholeIDs(ids, sel.limit)]
	if evs == nil {
		evs = []Event{}
	}
	ptrs := make([]*Event, len(evs))
	for i := range evs {
		ptrs[i] = &evs[i]
	}
	return evs, o.fillSentAt(ctx, ptrs)
}

// EventCount is how many events of a target are in a state, and when the oldest was created.
type EventCount struct {
	Target string
	State  pipeline.EventStatus
	Count  int64
	Oldest NullTime
}

// EventCounts counts the events per target and state, reading only index ranges that grow
// with the PENDING and DEAD events, never with the SENT ones: the targets come from a loose
// scan of the (TARGET, STATE, EVENT_ID) index (one seek per target), each target's PENDING and
// DEAD counts from its index ranges (PENDING: the rows above the delivery mark and the RETRY
// rows, as PendingEvents reads them), the oldest of each from its first row in EVENT_ID order,
// and the SENT count from MSG_EVENT_SENT (every event ever sent, including rows since
// deleted). A state with no events is left out. All are read in one snapshot (readSnapshot),
// so an event the dispatcher marks SENT meanwhile is counted once.
func (o *Outbox) EventCounts(ctx context.Context) ([]EventCount, error) {
	var out []EventCount
	err := o.db.readSnapshot(ctx, func(tx *sql.Tx) error {
		var err error
		out, err = o.eventCounts(ctx, tx)
		return err
	})
	return out, err
}

// eventCounts is EventCounts in transaction tx.
func (o *Outbox) eventCounts(ctx context.Context, tx *sql.Tx) ([]EventCount, error) {
	targets, err := eventTargets(ctx, tx)
	if err != nil {
		return nil, Unavailable(fmt.Errorf("event counts: %w", err))
	}
	var out []EventCount
	for _, t := range targets {
		r, err := readTakes(ctx, tx, o.db.Dialect, t, false)
		if err != nil {
			return nil, err
		}
		if !r.found {
			r.to = 0 // takes no shared row
		}
		var (
			pending, retry, dead, taken, shadowed          int64
			sent                                           sql.NullInt64
			oldestPend, oldestRetry, oldestDead, oldestShr NullTime
		)
		hint := headIndex(o.db.Dialect)
		above := `FROM MSG_EVENT` + hint + ` WHERE TARGET = ? AND STATE = 'PENDING' AND EVENT_ID > ?`
		cond, cargs := r.sharedAbove(t, r.lo())
		err = tx.QueryRowContext(ctx, `SELECT
 (SELECT COUNT(*) `+above+`),
 (SELECT CREATED_AT `+above+` ORDER BY EVENT_ID LIMIT 1),
 (SELECT COUNT(*) FROM MSG_EVENT WHERE TARGET = ? AND STATE = '`+eventRetry+`'),
 (SELECT CREATED_AT FROM MSG_EVENT WHERE TARGET = ? AND STATE = '`+eventRetry+`' ORDER BY EVENT_ID LIMIT 1),
 (SELECT COUNT(*) FROM MSG_EVENT WHERE TARGET = ? AND STATE = 'DEAD'),
 (SELECT CREATED_AT FROM MSG_EVENT WHERE TARGET = ? AND STATE = 'DEAD' ORDER BY EVENT_ID LIMIT 1),
 (SELECT SENT FROM MSG_EVENT_SENT WHERE TARGET = ?),
 (SELECT COUNT(*) FROM MSG_EVENT e`+hint+` WHERE `+inRange("?", "?")+`),
 (SELECT COUNT(*) FROM MSG_EVENT o`+hint+` JOIN MSG_EVENT e ON e.EVENT_ID = o.EVENT_ID AND e.TARGET = `+shared+`
   WHERE o.TARGET = ? AND o.STATE IN (`+ownStates+`) AND o.EVENT_ID > ? AND o.EVENT_ID <= ?),
 (SELECT e.CREATED_AT FROM MSG_EVENT e`+hint+` WHERE `+cond+` ORDER BY e.EVENT_ID LIMIT 1)`,
			append([]any{t, r.mark, t, r.mark, t, t, t, t, t, r.lo(), r.to, t, r.lo(), r.to}, cargs...)...).Scan(&pending, &oldestPend, &retry, &oldestRetry,
			&dead, &oldestDead, &sent, &taken, &shadowed, &oldestShr)
		if err != nil {
			return nil, Unavailable(fmt.Errorf("event counts of %s: %w", t, err))
		}
		pending += retry + taken - shadowed
		for _, o := range []NullTime{oldestRetry, oldestShr} {
			if o.Valid && (!oldestPend.Valid || o.Time.Before(oldestPend.Time)) {
				oldestPend = o
			}
		}
		if pending > 0 {
			out = append(out, EventCount{Target: t, State: pipeline.EventPending, Count: pending, Oldest: oldestPend})
		}
		if dead > 0 {
			out = append(out, EventCount{Target: t, State: pipeline.EventDead, Count: dead, Oldest: oldestDead})
		}
		if sent.Int64 > 0 {
			out = append(out, EventCount{Target: t, State: pipeline.EventSent, Count: sent.Int64})
		}
	}
	return out, nil
}

// eventTargets returns, sorted, every target that has rows of its own in MSG_EVENT or a range
// of the shared rows (MSG_EVENT_SENT), open or ended: a target whose range ended keeps what it
// had to send up to its end, pending and counted, whether it sent any before or not. A target
// with nothing to count shows no count. A recursive query seeks the index once per target (a
// loose index scan) instead of reading every row.
func eventTargets(ctx context.Context, q querier) ([]string, error) {
	rows, err := q.QueryContext(ctx, `WITH RECURSIVE t (NAME) AS (
  SELECT MIN(TARGET) FROM MSG_EVENT
  UNION ALL
  SELECT (SELECT MIN(TARGET) FROM MSG_EVENT WHERE TARGET > t.NAME) FROM t WHERE t.NAME IS NOT NULL
)
SELECT NAME FROM t WHERE NAME IS NOT NULL AND NAME <> `+shared+`
UNION
SELECT TARGET FROM MSG_EVENT_SENT`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// OpenTargets sets which targets take the shared rows from now on: configured, the delivery
// targets of this configuration. One without a MSG_EVENT_SENT row gets one at the log's end
// (it takes the shared rows written from now on, as a target added to the configuration
// always has), or at its start when it is among earliest (every shared row still kept); one whose range had ended takes them again, every one since it ended (none is
// purged past a target's mark while it has any left to send). Every other target, but the
// four a flight change is rendered for (which take every shared row, configured or not, as
// their rows waited for them before the log), has its range ended at the log's end: it keeps
// what it had to send up to there, and is no longer counted pending for what comes after.
func (o *Outbox) OpenTargets(ctx context.Context, configured, earliest []string) error {
	return o.db.Tx(ctx, func(tx *sql.Tx) error {
		for _, t := range configured {
			if err := addMark(ctx, tx, o.db.Dialect, t, slices.Contains(earliest, t)); err != nil {
				return err
			}
		}
		args := []any{}
		for _, t := range append(slices.Clone(configured), event.Families...) {
			args = append(args, t)
		}
		in := placeholders(len(args))
		if _, err := tx.ExecContext(ctx, `UPDATE MSG_EVENT_SENT SET TO_EVENT_ID = NULL WHERE TARGET IN (`+in+`)`, args...); err != nil {
			return Unavailable(fmt.Errorf("open the configured targets: %w", err))
		}
		if _, err := tx.ExecContext(ctx, `UPDATE MSG_EVENT_SENT SET TO_EVENT_ID = (SELECT VALUE FROM MSGX_COUNTER WHERE NAME = '`+eventSeq+`')
WHERE TO_EVENT_ID IS NULL AND TARGET NOT IN (`+in+`)`, args...); err != nil {
			return Unavailable(fmt.Errorf("end the targets no longer configured: %w", err))
		}
		return nil
	})
}

// LastEventID returns the highest EVENT_ID in MSG_EVENT, 0 when it holds none: every event
// still to be delivered is at or below it. PROJECTION_REBUILD marks what it rebuilds with it,
// so that no event produced before the rebuild overwrites the rebuilt flights.
func (o *Outbox) LastEventID(ctx context.Context) (int64, error) {
	var id sql.NullInt64
	if err := o.db.SQL.QueryRowContext(ctx, `SELECT MAX(EVENT_ID) FROM MSG_EVENT`).Scan(&id); err != nil {
		return 0, Unavailable(fmt.Errorf("last event id: %w", err))
	}
	return id.Int64, nil
}
