package dispatch

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"msgx/internal/pipeline"
	"msgx/internal/store"
)

// Event is one MSG_EVENT row as the ops API shows it. Columns that are NULL are nil, so they
// encode as JSON null.
type Event struct {
	EventID       int64                `json:"event_id"`
	MsgID         int64                `json:"msg_id"`
	TypeTag       string               `json:"type_tag"`
	Target        string               `json:"target"`
	Kind          string               `json:"kind"`
	FlightKey     *string              `json:"flight_key"`
	State         pipeline.EventStatus `json:"state"`
	Attempts      int                  `json:"attempts"`
	ErrorClass    *string              `json:"error_class"`
	LastError     *string              `json:"last_error"`
	CreatedAt     time.Time            `json:"created_at"`
	SentAt        *time.Time           `json:"sent_at"`
	NextAttemptAt *time.Time           `json:"next_attempt_at"`
	FirstFailedAt *time.Time           `json:"first_failed_at"`
	// Payload is the stored body. A body that is not valid JSON (a bug upstream) is shown as a
	// JSON string, so one bad row never breaks a listing.
	Payload json.RawMessage `json:"payload"`

	raw []byte // PAYLOAD exactly as stored
}

// key returns the flight key, "" when there is none.
func (e *Event) key() string {
	if e.FlightKey == nil {
		return ""
	}
	return *e.FlightKey
}

// nextAttempt returns NEXT_ATTEMPT_AT, zero when NULL (due at once).
func (e *Event) nextAttempt() time.Time {
	if e.NextAttemptAt == nil {
		return time.Time{}
	}
	return *e.NextAttemptAt
}

// firstFailed returns FIRST_FAILED_AT, zero when the event never failed.
func (e *Event) firstFailed() time.Time {
	if e.FirstFailedAt == nil {
		return time.Time{}
	}
	return *e.FirstFailedAt
}

// lastError returns LAST_ERROR, "" when NULL.
func (e *Event) lastError() string {
	if e.LastError == nil {
		return ""
	}
	return *e.LastError
}

// due reports whether the event may be attempted at now.
func (e *Event) due(now time.Time) bool { return !e.nextAttempt().After(now) }

const eventCols = `EVENT_ID, CMINMSGS_ID, TYPE_TAG, TARGET, KIND, FLIGHT_KEY, STATE, ATTEMPTS,
ERROR_CLASS, LAST_ERROR, CREATED_AT, SENT_AT, NEXT_ATTEMPT_AT, FIRST_FAILED_AT, PAYLOAD`

type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// queryEvents runs a SELECT of eventCols and scans every row.
func queryEvents(ctx context.Context, q querier, query string, args ...any) ([]Event, error) {
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
			created, sent, next, firstAt store.NullTime
		)
		if err := rows.Scan(&e.EventID, &e.MsgID, &e.TypeTag, &e.Target, &e.Kind, &key, &state, &e.Attempts,
			&class, &lastErr, &created, &sent, &next, &firstAt, &e.raw); err != nil {
			return nil, err
		}
		e.State = pipeline.EventStatus(state)
		e.FlightKey = strPtr(key)
		e.ErrorClass = strPtr(class)
		e.LastError = strPtr(lastErr)
		e.CreatedAt = created.Time
		e.SentAt, e.NextAttemptAt, e.FirstFailedAt = sent.Ptr(), next.Ptr(), firstAt.Ptr()
		if json.Valid(e.raw) {
			e.Payload = json.RawMessage(e.raw)
		} else {
			e.Payload, _ = json.Marshal(string(e.raw))
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

func strPtr(s sql.NullString) *string {
	if !s.Valid {
		return nil
	}
	v := s.String
	return &v
}

// pendingHead returns up to limit PENDING events of target in EVENT_ID order: the head first.
func pendingHead(ctx context.Context, db *store.DB, target string, limit int) ([]Event, error) {
	evs, err := queryEvents(ctx, db.SQL, `SELECT `+eventCols+` FROM MSG_EVENT
WHERE TARGET = ? AND STATE = 'PENDING' ORDER BY EVENT_ID LIMIT ?`, target, limit)
	if err != nil {
		return nil, store.Unavailable(fmt.Errorf("dispatch: read head of %s: %w", target, err))
	}
	return evs, nil
}

// placeholders returns "?,?,…" for n arguments.
func placeholders(n int) string { return strings.TrimSuffix(strings.Repeat("?,", n), ",") }

// idArgs returns the ids as query arguments.
func idArgs(ids []int64) []any {
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	return args
}

type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// markSent marks the events ids SENT at now, those that are still PENDING: an event the sink
// has delivered is delivered, whatever else happened to its row meanwhile, but a row another
// writer has already moved on (SENT, or DEAD) is left as that writer left it. It returns how
// many rows it marked.
func markSent(ctx context.Context, ex execer, ids []int64, now time.Time) (int, error) {
	marked := 0
	for chunk := range slices.Chunk(ids, replayChunk) {
		args := append([]any{store.T(now)}, idArgs(chunk)...)
		res, err := ex.ExecContext(ctx, `UPDATE MSG_EVENT SET STATE = 'SENT', SENT_AT = ?, NEXT_ATTEMPT_AT = NULL
WHERE STATE = 'PENDING' AND EVENT_ID IN (`+placeholders(len(chunk))+`)`, args...)
		if err != nil {
			return marked, err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return marked, err
		}
		marked += int(n)
	}
	return marked, nil
}

// fenced is the condition of every dispatcher write that moves a PENDING event on (backoff,
// DEAD): the row is still PENDING and holds the attempts, error class and last error the
// dispatcher read before it decided. Whatever else changes a row changes one of them: a
// replay resets ATTEMPTS (and a row must have died, with a new last error, to be replayed),
// another dispatcher's failure bumps ATTEMPTS, a success leaves PENDING. The write of a
// decision taken on a stale read then matches no row and is dropped: the caller re-reads
// instead of overwriting (a lost update).
const fenced = `STATE = 'PENDING' AND ATTEMPTS = ? AND COALESCE(ERROR_CLASS, '') = ? AND COALESCE(LAST_ERROR, '') = ?`

// fence returns the arguments of fenced for e as it was read.
func (e *Event) fence() fenceKey {
	k := fenceKey{attempts: e.Attempts, lastError: e.lastError()}
	if e.ErrorClass != nil {
		k.class = *e.ErrorClass
	}
	return k
}

// fenceKey is the part of an event's row that fenced compares.
type fenceKey struct {
	attempts  int
	class     string
	lastError string
}

func (k fenceKey) args() []any { return []any{k.attempts, k.class, k.lastError} }

// updateFenced applies set (the SET clause of an UPDATE MSG_EVENT, with its arguments) to
// each of evs whose row still holds what was read (fenced); events with the same fence share
// a statement. It returns how many rows it changed: fewer than len(evs) means another writer
// changed the others first, and they are left as that writer left them.
func updateFenced(ctx context.Context, ex execer, set string, setArgs []any, evs []*Event) (int, error) {
	groups := map[fenceKey][]int64{}
	var order []fenceKey
	for _, e := range evs {
		k := e.fence()
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], e.EventID)
	}
	changed := 0
	for _, k := range order {
		for ids := range slices.Chunk(groups[k], replayChunk) {
			args := append(append(append([]any{}, setArgs...), k.args()...), idArgs(ids)...)
			res, err := ex.ExecContext(ctx, `UPDATE MSG_EVENT SET `+set+` WHERE `+fenced+
				` AND EVENT_ID IN (`+placeholders(len(ids))+`)`, args...)
			if err != nil {
				return changed, fmt.Errorf("events %d..%d: %w", ids[0], ids[len(ids)-1], err)
			}
			n, err := res.RowsAffected()
			if err != nil {
				return changed, fmt.Errorf("events %d..%d: %w", ids[0], ids[len(ids)-1], err)
			}
			changed += int(n)
		}
	}
	return changed, nil
}

// maxErrorLen bounds LAST_ERROR; a sink's error can quote a whole response body.
const maxErrorLen = 2000

// clip shortens s to at most maxErrorLen bytes without splitting a UTF-8 sequence.
func clip(s string) string {
	if len(s) <= maxErrorLen {
		return s
	}
	cut := maxErrorLen
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}
