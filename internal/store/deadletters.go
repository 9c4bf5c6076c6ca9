package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"msgx/internal/pipeline"
	"msgx/internal/secret"
)

// Dead letters as a work queue and the recent problems (migration 00016): an operator
// acknowledges a DEAD message or event (DEAD_ACK), which keeps it for audit but leaves it out
// of the counts that call for attention; RETENTION purges acknowledged DEAD events and
// messages (PurgeAckedMessages, retention.go) after retention.dead-letters; PROBLEM_LOG keeps the recent problems (outcomes and operator
// actions) across restarts.

// DeadLetters is the contract of this file; *Triage implements it on every dialect.
type DeadLetters interface {
	AckDead(ctx context.Context, kind string, ids []int64, by, note string, now time.Time) (AckResult, error)
	DeadCounts(ctx context.Context) (DeadCounts, error)
	ListAcks(ctx context.Context, kind string, limit int) ([]Ack, error)
	PurgeAckedEvents(ctx context.Context, before time.Time, progress func(deleted int)) (int, error)
	PurgeAckedMessages(ctx context.Context, before time.Time, progress func(deleted int)) (PurgeResult, error)
	AddProblem(ctx context.Context, p Problem) error
	RecentProblems(ctx context.Context, limit int) ([]Problem, error)
	ProblemsAfter(ctx context.Context, after int64, limit int) ([]Problem, error)
}

var _ DeadLetters = (*Triage)(nil)

// The kinds of dead letter.
const (
	DeadMessage = "message"
	DeadEvent   = "event"
)

// ProblemKeep is how many recent problems PROBLEM_LOG keeps; older ones go as new ones come.
const ProblemKeep = 1000

// AckResult is what an acknowledgement did: the ids acknowledged now, those that already
// were, and those that are not DEAD (unknown, or replayed meanwhile), which it left alone.
type AckResult struct {
	Acked   []int64
	Already []int64
	NotDead []int64
}

// Ack is one acknowledged dead letter.
type Ack struct {
	Kind  string
	ID    int64
	By    string
	At    time.Time
	Note  string
	State string // the row's state now: DEAD, or another after a replay
}

// DeadCount is the dead letters of one kind: DEAD rows, of which acknowledged.
type DeadCount struct {
	Dead           int
	Acknowledged   int
	Unacknowledged int
}

// DeadCounts are the dead messages and events.
type DeadCounts struct {
	Messages DeadCount
	Events   DeadCount
}

// deadSource is the table and state column of a kind of dead letter.
func deadSource(kind string) (table, id string, err error) {
	switch kind {
	case DeadMessage:
		return "PROC_STATE", "CMINMSGS_ID", nil
	case DeadEvent:
		return "MSG_EVENT", "EVENT_ID", nil
	}
	return "", "", fmt.Errorf("dead letter kind %q: want %s or %s", kind, DeadMessage, DeadEvent)
}

// AckDead acknowledges the DEAD rows among ids of kind (DeadMessage or DeadEvent) in one
// transaction, by by with note (both cut to their columns).
func (tr *Triage) AckDead(ctx context.Context, kind string, ids []int64, by, note string, now time.Time) (AckResult, error) {
	res := AckResult{Acked: []int64{}, Already: []int64{}, NotDead: []int64{}}
	table, idCol, err := deadSource(kind)
	if err != nil {
		return res, err
	}
	err = tr.db.Tx(ctx, func(tx *sql.Tx) error {
		res = AckResult{Acked: []int64{}, Already: []int64{}, NotDead: []int64{}}
		for _, id := range ids {
			var st string
			// An event's id is the rows of every target that has its own (and the shared row):
			// it is DEAD when one of them is, and the acknowledgement covers each.
			err := tx.QueryRowContext(ctx, `SELECT STATE FROM `+table+` WHERE `+idCol+` = ?
ORDER BY CASE WHEN STATE = 'DEAD' THEN 0 ELSE 1 END LIMIT 1`, id).Scan(&st)
			if err == sql.ErrNoRows || (err == nil && st != string(pipeline.Dead)) {
				res.NotDead = append(res.NotDead, id)
				continue
			}
			if err != nil {
				return Unavailable(fmt.Errorf("acknowledge %s %d: %w", kind, id, err))
			}
			var n int
			if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM DEAD_ACK WHERE KIND = ? AND REF_ID = ?`, kind, id).Scan(&n); err != nil {
				return Unavailable(fmt.Errorf("acknowledge %s %d: %w", kind, id, err))
			}
			if n > 0 {
				res.Already = append(res.Already, id)
				continue
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO DEAD_ACK (KIND, REF_ID, ACKED_BY, ACKED_AT, NOTE) VALUES (?, ?, ?, ?, ?)`,
				kind, id, Fit(by, ActorWidth), T(now), nullStr(Fit(secret.Redact(note), DetailWidth))); err != nil {
				return Unavailable(fmt.Errorf("acknowledge %s %d: %w", kind, id, err))
			}
			res.Acked = append(res.Acked, id)
		}
		return nil
	})
	return res, err
}

// DeadCounts counts the DEAD messages and events and, of them, the acknowledged ones (an
// acknowledgement of a row replayed since does not count). It reads the DEAD index ranges (of
// the events, target by target) and the acknowledgements.
func (tr *Triage) DeadCounts(ctx context.Context) (DeadCounts, error) {
	// The DEAD events target by target (IDX_EVT_HEAD), as the status counts them.
	counts, err := tr.db.Outbox.EventCounts(ctx)
	if err != nil {
		return DeadCounts{}, err
	}
	return tr.DeadCountsWith(ctx, counts)
}

// DeadCountsWith is DeadCounts with the outbox's counts already read (EventCounts), so the
// metrics' sampler reads them once for these and for the targets.
func (tr *Triage) DeadCountsWith(ctx context.Context, counts []EventCount) (DeadCounts, error) {
	var out DeadCounts
	if err := tr.db.SQL.QueryRowContext(ctx, `SELECT COUNT(*) FROM PROC_STATE WHERE STATE = ?`, pipeline.Dead).Scan(&out.Messages.Dead); err != nil {
		return out, Unavailable(fmt.Errorf("dead messages: %w", err))
	}
	for _, c := range counts {
		if c.State == pipeline.EventDead {
			out.Events.Dead += int(c.Count)
		}
	}
	for _, k := range []struct {
		kind string
		c    *DeadCount
	}{{DeadMessage, &out.Messages}, {DeadEvent, &out.Events}} {
		table, idCol, _ := deadSource(k.kind)
		if err := tr.db.SQL.QueryRowContext(ctx, `SELECT COUNT(*) FROM DEAD_ACK a JOIN `+table+` t ON t.`+idCol+` = a.REF_ID
			WHERE a.KIND = ? AND t.STATE = ?`, k.kind, pipeline.Dead).Scan(&k.c.Acknowledged); err != nil {
			return out, Unavailable(fmt.Errorf("acknowledged dead %ss: %w", k.kind, err))
		}
		k.c.Unacknowledged = k.c.Dead - k.c.Acknowledged
	}
	return out, nil
}

// ListAcks returns the newest acknowledgements of kind ("" for both), with each row's state
// now; at most limit (clamped as every listing).
func (tr *Triage) ListAcks(ctx context.Context, kind string, limit int) ([]Ack, error) {
	// An event's state is that of its targets' own rows, DEAD when one of them is (the
	// acknowledgement covers each): one row per acknowledgement however many targets have one.
	q := `SELECT a.KIND, a.REF_ID, a.ACKED_BY, a.ACKED_AT, a.NOTE, COALESCE(p.STATE, (SELECT ` + EventView{T: "e"}.State() + `
		FROM MSG_EVENT e WHERE a.KIND = 'event' AND e.EVENT_ID = a.REF_ID AND e.TARGET <> ` + shared + `
		ORDER BY CASE WHEN e.STATE = 'DEAD' THEN 0 ELSE 1 END LIMIT 1), '')
		FROM DEAD_ACK a
		LEFT JOIN PROC_STATE p ON a.KIND = 'message' AND p.CMINMSGS_ID = a.REF_ID`
	args := []any{}
	if kind != "" {
		if _, _, err := deadSource(kind); err != nil {
			return nil, err
		}
		q += ` WHERE a.KIND = ?`
		args = append(args, kind)
	}
	q += ` ORDER BY a.ACKED_AT DESC, a.REF_ID DESC LIMIT ?`
	rows, err := tr.db.SQL.QueryContext(ctx, q, append(args, clampLimit(limit))...)
	if err != nil {
		return nil, Unavailable(fmt.Errorf("acknowledgements: %w", err))
	}
	defer rows.Close()
	out := []Ack{}
	for rows.Next() {
		var a Ack
		var at NullTime
		var note sql.NullString
		if err := rows.Scan(&a.Kind, &a.ID, &a.By, &at, &note, &a.State); err != nil {
			return nil, Unavailable(fmt.Errorf("acknowledgements: %w", err))
		}
		a.At, a.Note = at.Time, secret.Redact(note.String)
		out = append(out, a)
	}
	return out, Unavailable(rows.Err())
}

// PurgeAckedEvents deletes the DEAD events acknowledged before `before`, with their
// acknowledgements, PurgeChunk per transaction, and returns how many events it deleted. An
// event replayed after its acknowledgement is not DEAD: it stays, and so does its row here
// until it is DEAD and old again. progress, when set, is told the running total.
func (tr *Triage) PurgeAckedEvents(ctx context.Context, before time.Time, progress func(int)) (int, error) {
	total := 0
	for ctx.Err() == nil {
		n, found := 0, 0
		err := tr.db.Tx(ctx, func(tx *sql.Tx) error {
			n, found = 0, 0
			ids, err := queryIDs(ctx, tx, "purge acknowledged events", `SELECT a.REF_ID FROM DEAD_ACK a JOIN MSG_EVENT e ON e.EVENT_ID = a.REF_ID
				WHERE a.KIND = ? AND a.ACKED_AT < ? AND e.STATE = ? LIMIT ?`, DeadEvent, T(before), pipeline.EventDead, PurgeChunk)
			if err != nil || len(ids) == 0 {
				return err
			}
			found = len(ids)
			in := `(` + placeholders(len(ids)) + `)`
			k, err := dropOwn(ctx, tx, "", ids, pipeline.EventDead)
			if err != nil {
				return Unavailable(fmt.Errorf("purge acknowledged events: delete %d: %w", len(ids), err))
			}
			n = k
			if _, err := tx.ExecContext(ctx, `DELETE FROM DEAD_ACK WHERE KIND = ? AND REF_ID IN `+in, append([]any{DeadEvent}, ids...)...); err != nil {
				return Unavailable(fmt.Errorf("purge acknowledged events: delete %d acknowledgements: %w", len(ids), err))
			}
			return nil
		})
		if err != nil {
			return total, err
		}
		total += n
		if n > 0 && progress != nil {
			progress(total)
		}
		if found < PurgeChunk {
			break
		}
	}
	return total, ctx.Err()
}

// Problem is one entry of the recent problems: a message parked, dead or applied with
// warnings (Kind "outcome"), or an operator action (Kind "action": Actor, Subject).
type Problem struct {
	ID      int64
	At      time.Time
	Kind    string
	MsgID   int64
	TypeTag string
	State   string
	Class   string
	Actor   string
	Subject string
	Note    string
}

// Widths of PROBLEM_LOG's columns (DETAIL: DetailWidth; ACTOR: ActorWidth).
const (
	ProblemKindWidth    = 32
	ProblemSubjectWidth = 128
)

// AddProblem records p (its ID is ignored) and drops the problems older than the newest
// ProblemKeep.
func (tr *Triage) AddProblem(ctx context.Context, p Problem) error {
	return tr.db.Tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO PROBLEM_LOG (HAPPENED_AT, KIND, MSG_ID, TYPE_TAG, STATE, ERROR_CLASS, ACTOR, SUBJECT, DETAIL)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, T(p.At), Fit(p.Kind, ProblemKindWidth), nullID(p.MsgID), nullStr(Fit(p.TypeTag, 32)),
			nullStr(Fit(p.State, 16)), nullStr(Fit(p.Class, 16)), nullStr(Fit(p.Actor, ActorWidth)),
			nullStr(Fit(p.Subject, ProblemSubjectWidth)), nullStr(Fit(secret.Redact(p.Note), DetailWidth)))
		if err != nil {
			return Unavailable(fmt.Errorf("record a problem: %w", err))
		}
		id, err := res.LastInsertId()
		if err != nil || id <= ProblemKeep {
			return nil
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM PROBLEM_LOG WHERE PROBLEM_ID <= ?`, id-ProblemKeep); err != nil {
			return Unavailable(fmt.Errorf("trim the problems: %w", err))
		}
		return nil
	})
}

func nullID(id int64) any {
	if id == 0 {
		return nil
	}
	return id
}

// RecentProblems returns the newest problems first, at most limit (clamped as every listing).
func (tr *Triage) RecentProblems(ctx context.Context, limit int) ([]Problem, error) {
	return tr.problems(ctx, `ORDER BY PROBLEM_ID DESC LIMIT ?`, clampLimit(limit))
}

// ProblemsAfter returns the problems with ids above after, oldest first, at most limit
// (clamped as every listing): what a follower of the problems has not read yet.
func (tr *Triage) ProblemsAfter(ctx context.Context, after int64, limit int) ([]Problem, error) {
	return tr.problems(ctx, `WHERE PROBLEM_ID > ? ORDER BY PROBLEM_ID LIMIT ?`, after, clampLimit(limit))
}

// problems reads the problems the statement's tail (where, order, limit) selects.
func (tr *Triage) problems(ctx context.Context, tail string, args ...any) ([]Problem, error) {
	rows, err := tr.db.SQL.QueryContext(ctx, `SELECT PROBLEM_ID, HAPPENED_AT, KIND, MSG_ID, TYPE_TAG, STATE, ERROR_CLASS, ACTOR, SUBJECT, DETAIL
		FROM PROBLEM_LOG `+tail, args...)
	if err != nil {
		return nil, Unavailable(fmt.Errorf("recent problems: %w", err))
	}
	defer rows.Close()
	out := []Problem{}
	for rows.Next() {
		var p Problem
		var at NullTime
		var msg sql.NullInt64
		var tag, st, class, actor, subj, detail sql.NullString
		if err := rows.Scan(&p.ID, &at, &p.Kind, &msg, &tag, &st, &class, &actor, &subj, &detail); err != nil {
			return nil, Unavailable(fmt.Errorf("recent problems: %w", err))
		}
		p.At, p.MsgID, p.TypeTag, p.State, p.Class = at.Time, msg.Int64, tag.String, st.String, class.String
		p.Actor, p.Subject, p.Note = actor.String, subj.String, secret.Redact(detail.String)
		out = append(out, p)
	}
	return out, Unavailable(rows.Err())
}
