package store

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"msgx/internal/pipeline"
)

// An event's state is not only its STATE column. A target's events are delivered in EVENT_ID
// order, so a delivery raises the target's delivery mark (MSG_EVENT_SENT.UPTO_EVENT_ID, with
// each raise and its time in MSG_EVENT_MARK) instead of updating each delivered row (see
// eventTx.MarkSent). The effective state of a row is:
//
//   - STATE 'PENDING' at or below its target's mark: SENT, sent at the time of the first raise
//     at or above its id (fillSentAt), with no next attempt;
//   - STATE 'RETRY' (a replayed event, ReplayEvents): PENDING whatever the mark, until its
//     delivery writes its row SENT;
//   - otherwise STATE as stored (PENDING above the mark, SENT, DEAD).
//
// The mark never moves back, and only past rows that are delivered or DEAD: a row at or below
// it is never pending again except by a replay, which stores RETRY. EventView is the one place
// that says this in SQL; every reader of MSG_EVENT's state goes through it.

// eventRetry is the stored state of a replayed event: PENDING outside the store.
const eventRetry = "RETRY"

// EventView writes the SQL of the effective state of the MSG_EVENT rows named T in a query
// (the table's name, or its alias).
type EventView struct{ T string }

// eventTable is the view of MSG_EVENT unaliased.
var eventTable = EventView{T: "MSG_EVENT"}

// MarkOf returns the SQL of the delivery mark of the target whose name is the SQL expression
// target (0 when the target has none).
func MarkOf(target string) string {
	return `COALESCE((SELECT mk.UPTO_EVENT_ID FROM MSG_EVENT_SENT mk WHERE mk.TARGET = ` + target + `), 0)`
}

func (v EventView) col(c string) string { return v.T + "." + c }

// covered is the condition that the row is SENT by its target's mark.
func (v EventView) covered() string {
	return `(` + v.col("STATE") + ` = 'PENDING' AND ` + v.col("EVENT_ID") + ` <= ` + MarkOf(v.col("TARGET")) + `)`
}

// State returns the SQL of the row's effective state (PENDING, SENT or DEAD).
func (v EventView) State() string {
	return `CASE WHEN ` + v.col("STATE") + ` = '` + eventRetry + `' THEN 'PENDING' WHEN ` + v.covered() +
		` THEN 'SENT' ELSE ` + v.col("STATE") + ` END`
}

// NextAttemptAt returns the SQL of the row's next attempt: none once SENT.
func (v EventView) NextAttemptAt() string {
	return `CASE WHEN ` + v.covered() + ` THEN NULL ELSE ` + v.col("NEXT_ATTEMPT_AT") + ` END`
}

// cols returns the columns queryEvents scans, with the effective STATE and NEXT_ATTEMPT_AT;
// the sent time of a row the mark covers is filled in by fillSentAt.
func (v EventView) cols() string {
	return v.col("EVENT_ID") + `, ` + v.col("CMINMSGS_ID") + `, ` + v.col("TYPE_TAG") + `, ` + v.col("TARGET") + `, ` +
		v.col("KIND") + `, ` + v.col("FLIGHT_KEY") + `, ` + v.State() + `, ` + v.col("ATTEMPTS") + `, ` + v.col("ERROR_CLASS") + `, ` +
		v.col("LAST_ERROR") + `, ` + v.col("CREATED_AT") + `, ` + v.col("SENT_AT") + `, ` + v.NextAttemptAt() + `, ` +
		v.col("FIRST_FAILED_AT") + `, ` + v.col("PAYLOAD")
}

// headIndex returns the hint, after MSG_EVENT in a FROM clause, that reads a target's rows
// above its mark on the (TARGET, STATE, EVENT_ID) index: MariaDB's optimizer may otherwise walk
// the primary key from the mark, through every other target's rows since then (all of them,
// for a target with few pending). SQLite's planner takes the index by itself.
func headIndex(d Dialect) string {
	if d == MySQL {
		return ` FORCE INDEX (IDX_EVT_HEAD)`
	}
	return ""
}

// eventSelect is a SELECT of MSG_EVENT rows by effective state (stateQuery).
type eventSelect struct {
	cols     string // the select list
	colsArgs []any  // its arguments
	where    []string
	args     []any
	target   string // the TARGET = ? of where, "" when there is none
	byTarget bool   // where has no condition more selective than the target's (headIndex)
	state    pipeline.EventStatus
	order    string // EVENT_ID or EVENT_ID DESC
	limit    int
}

// stateQuery returns the SQL of s and its arguments. A state that is two stored states
// (PENDING: RETRY, or PENDING above the mark; SENT: SENT, or PENDING at or below it) is a
// UNION ALL of one SELECT per stored state, each ordered and cut on its own index range of
// (TARGET, STATE, EVENT_ID), then ordered and cut as a whole: an OR of the two would have the
// database walk every row of the other state in EVENT_ID order (a listing of a target's
// newest SENT event through all its pending ones). With a target, its mark is read first.
func (o *Outbox) stateQuery(ctx context.Context, s eventSelect) (string, []any, error) {
	mark, markArgs, hint := MarkOf("MSG_EVENT.TARGET"), []any(nil), ""
	if s.target != "" {
		var m int64
		err := o.db.SQL.QueryRowContext(ctx, `SELECT COALESCE(MAX(UPTO_EVENT_ID), 0) FROM MSG_EVENT_SENT WHERE TARGET = ?`, s.target).Scan(&m)
		if err != nil {
			return "", nil, Unavailable(fmt.Errorf("read the delivery mark of %s: %w", s.target, err))
		}
		mark, markArgs = "?", []any{m}
		if s.byTarget {
			hint = headIndex(o.db.Dialect)
		}
	}
	type branch struct {
		cond string
		args []any
	}
	var branches []branch
	switch s.state {
	case "":
		branches = []branch{{}}
	case pipeline.EventPending:
		branches = []branch{{`STATE = '` + eventRetry + `'`, nil}, {`STATE = 'PENDING' AND EVENT_ID > ` + mark, markArgs}}
	case pipeline.EventSent:
		branches = []branch{{`STATE = 'SENT'`, nil}, {`STATE = 'PENDING' AND EVENT_ID <= ` + mark, markArgs}}
	default:
		branches = []branch{{`STATE = ?`, []any{string(s.state)}}}
	}
	if len(branches) == 1 {
		hint = "" // the hint is for a target's range of one stored state
	}
	var parts []string
	var args []any
	for _, b := range branches {
		where := s.where
		if b.cond != "" {
			where = append(where[:len(where):len(where)], b.cond)
		}
		q := `SELECT ` + s.cols + ` FROM MSG_EVENT` + hint
		if len(where) > 0 {
			q += ` WHERE ` + strings.Join(where, " AND ")
		}
		parts = append(parts, q+` ORDER BY `+s.order+` LIMIT ?`)
		args = append(append(append(append(args, s.colsArgs...), s.args...), b.args...), s.limit)
	}
	if len(parts) == 1 {
		return parts[0], args, nil
	}
	q := unionAll(o.db.Dialect, parts...)
	return q + ` ORDER BY ` + s.order + ` LIMIT ?`, append(args, s.limit), nil
}

// fillSentAt sets the sent time of the events of evs that the delivery mark made SENT (stored
// PENDING, without SENT_AT): the time of the first raise of their target's mark at or above
// each. It reads MSG_EVENT_MARK in primary key ranges, each from the lowest id still without
// one: a correlated subquery per row would have MariaDB read every raise of the target below
// the row (it looks a dependent subquery up by TARGET alone, not by a range).
func (o *Outbox) fillSentAt(ctx context.Context, evs []*Event) error {
	byTarget := map[string][]*Event{}
	for _, e := range evs {
		if e.State == pipeline.EventSent && e.SentAt == nil {
			byTarget[e.Target] = append(byTarget[e.Target], e)
		}
	}
	for target, es := range byTarget {
		slices.SortFunc(es, func(a, b *Event) int { return cmp.Compare(a.EventID, b.EventID) })
		for len(es) > 0 {
			rows, err := o.db.SQL.QueryContext(ctx, `SELECT UPTO_EVENT_ID, SENT_AT FROM MSG_EVENT_MARK
WHERE TARGET = ? AND UPTO_EVENT_ID >= ? ORDER BY UPTO_EVENT_ID LIMIT ?`, target, es[0].EventID, min(len(es), 256))
			if err != nil {
				return Unavailable(fmt.Errorf("sent times of %s's events: %w", target, err))
			}
			read := 0
			for rows.Next() {
				var upto int64
				var at NullTime
				if err := rows.Scan(&upto, &at); err != nil {
					rows.Close()
					return Unavailable(fmt.Errorf("sent times of %s's events: %w", target, err))
				}
				read++
				for len(es) > 0 && es[0].EventID <= upto {
					es[0].SentAt, es = at.Ptr(), es[1:]
				}
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return Unavailable(fmt.Errorf("sent times of %s's events: %w", target, err))
			}
			if read == 0 {
				break // no raise at or above them (none is deleted while it covers a row)
			}
		}
	}
	return nil
}

// unionAll joins SELECTs that are each ordered and limited by a UNION ALL: MySQL takes them in
// parentheses, SQLite only as subqueries.
func unionAll(dialect Dialect, parts ...string) string {
	if dialect == SQLite {
		return `SELECT * FROM (` + strings.Join(parts, `) UNION ALL SELECT * FROM (`) + `)`
	}
	return `(` + strings.Join(parts, `) UNION ALL (`) + `)`
}
