package store

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"msgx/internal/event"
	"msgx/internal/pipeline"
)

// An event's state is not only its STATE column. A target's events are delivered in EVENT_ID
// order, so a delivery raises the target's delivery mark (MSG_EVENT_SENT.UPTO_EVENT_ID, with
// each raise and its time in MSG_EVENT_MARK) instead of updating each delivered row (see
// eventTx.MarkSent).
//
// The rows are of two sorts (migration 00018). A shared row (TARGET event.Shared) is a flight
// change every target takes, written once by the pump: target T takes it when its id is in T's
// range (above MSG_EVENT_SENT.FROM_EVENT_ID, and at most TO_EVENT_ID while T is not
// configured) and T has no row of its own for it; T's state of it is SENT at or below T's
// mark, else PENDING. A target's own row (EVENT_ID, TARGET) is a row written per target before
// the upgrade, or an event that left the happy path for T (backed off, DEAD, replayed, sent out
// of order: a copy of the shared row with T's state, written by the change that took it off).
// Its effective state is:
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

// eventPurged is the stored state of a target's own row of a shared event whose DEAD (or SENT
// beyond its mark) row retention purged: it keeps the target from taking the shared row again,
// shows nowhere, and goes with the shared row (purgeShared).
const eventPurged = "PURGED"

// ownStates lists every stored state of a target's own row, as SQL: a condition on them all
// reads a range of the (TARGET, STATE, EVENT_ID) index per state.
const ownStates = `'PENDING', 'SENT', 'DEAD', '` + eventRetry + `', '` + eventPurged + `'`

// shared is the SQL literal of a shared row's TARGET.
const shared = `'` + event.Shared + `'`

// EventView writes the SQL of the effective state of the MSG_EVENT rows named T in a query
// (the table's name, or its alias): a target's own rows, or with S (the alias of the target's
// MSG_EVENT_SENT row, joined by sharedFrom) the shared rows as that target takes them.
type EventView struct{ T, S string }

// eventTable is the view of own rows aliased e, sharedView that of shared rows (sharedFrom).
var (
	eventTable = EventView{T: "e"}
	sharedView = EventView{T: "e", S: "s"}
)

// sharedFrom is the FROM clause of sharedView with hint after MSG_EVENT: every shared row
// joined with each target that takes it, less those the target has a row of its own for.
func sharedFrom(hint string) string {
	return `MSG_EVENT e` + hint + ` JOIN MSG_EVENT_SENT s ON ` + takenBy("s.TARGET", "s.FROM_EVENT_ID", "COALESCE(s.TO_EVENT_ID, "+noEnd+")")
}

// noEnd is the SQL of the end of a range that has not ended (TO_EVENT_ID NULL).
const noEnd = "9223372036854775807"

// takenBy is the one condition that shared row e is one the target named by the SQL
// expression target takes: above the id lo and at most to (SQL expressions), and not one the
// target has a row of its own for. Its arguments are lo's, to's and target's, in that order.
func takenBy(target, lo, to string) string {
	return inRange(lo, to) + ` AND NOT EXISTS (SELECT 1 FROM MSG_EVENT x WHERE x.EVENT_ID = e.EVENT_ID AND x.TARGET = ` + target + `)`
}

// inRange is the condition that shared row e is above the id lo and at most to (SQL
// expressions): takenBy without the anti-join, all a target with no row of its own that may
// shadow a shared row needs (ownAbove).
func inRange(lo, to string) string {
	return `e.TARGET = ` + shared + ` AND e.STATE = 'PENDING' AND e.EVENT_ID > ` + lo + ` AND e.EVENT_ID <= ` + to
}

// MarkOf returns the SQL of the delivery mark of the target whose name is the SQL expression
// target (0 when the target has none).
func MarkOf(target string) string {
	return `COALESCE((SELECT mk.UPTO_EVENT_ID FROM MSG_EVENT_SENT mk WHERE mk.TARGET = ` + target + `), 0)`
}

// col returns the SQL of column c: a shared row has its target's name, and none of the
// columns of a failed delivery.
func (v EventView) col(c string) string {
	if v.S != "" {
		switch c {
		case "TARGET":
			return v.S + ".TARGET"
		case "ATTEMPTS":
			return "0"
		case "ERROR_CLASS", "LAST_ERROR", "SENT_AT", "NEXT_ATTEMPT_AT", "FIRST_FAILED_AT":
			return "NULL"
		}
	}
	return v.T + "." + c
}

// covered is the condition that the row is SENT by its target's mark.
func (v EventView) covered() string {
	if v.S != "" {
		return `(` + v.T + `.EVENT_ID <= ` + v.S + `.UPTO_EVENT_ID)`
	}
	return `(` + v.col("STATE") + ` = 'PENDING' AND ` + v.col("EVENT_ID") + ` <= ` + MarkOf(v.col("TARGET")) + `)`
}

// State returns the SQL of the row's effective state (PENDING, SENT or DEAD).
func (v EventView) State() string {
	if v.S != "" {
		return `CASE WHEN ` + v.covered() + ` THEN 'SENT' ELSE 'PENDING' END`
	}
	return `CASE WHEN ` + v.col("STATE") + ` = '` + eventRetry + `' THEN 'PENDING' WHEN ` + v.covered() +
		` THEN 'SENT' ELSE ` + v.col("STATE") + ` END`
}

// NextAttemptAt returns the SQL of the row's next attempt: none once SENT.
func (v EventView) NextAttemptAt() string {
	if v.S != "" {
		return "NULL"
	}
	return `CASE WHEN ` + v.covered() + ` THEN NULL ELSE ` + v.col("NEXT_ATTEMPT_AT") + ` END`
}

// cols returns the columns queryEvents scans, with the effective STATE and NEXT_ATTEMPT_AT;
// the sent time of a row the mark covers is filled in by fillSentAt.
func (v EventView) cols() string {
	return v.head() + `, ` + v.col("PAYLOAD")
}

// head is cols without the payload.
func (v EventView) head() string {
	return v.col("EVENT_ID") + `, ` + v.col("CMINMSGS_ID") + `, ` + v.col("TYPE_TAG") + `, ` + v.col("TARGET") + `, ` +
		v.col("KIND") + `, ` + v.col("FLIGHT_KEY") + `, ` + v.State() + `, ` + v.col("ATTEMPTS") + `, ` + v.col("ERROR_CLASS") + `, ` +
		v.col("LAST_ERROR") + `, ` + v.col("CREATED_AT") + `, ` + v.col("SENT_AT") + `, ` + v.NextAttemptAt() + `, ` +
		v.col("FIRST_FAILED_AT")
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
	cols     func(v EventView) string // the select list of a view's rows (aliases e, s)
	colsArgs []any                    // its arguments
	where    []string                 // conditions on e's columns other than TARGET
	args     []any
	target   string // one target, "" for all
	byTarget bool   // where has no condition more selective than the target's (headIndex)
	state    pipeline.EventStatus
	desc     bool // newest first
	limit    int
}

// stateQuery returns the SQL of s and its arguments. A state that is two stored states of own
// rows (PENDING: RETRY, or PENDING above the mark; SENT: SENT, or PENDING at or below it) is a
// UNION ALL of one SELECT per stored state, each ordered and cut on its own index range of
// (TARGET, STATE, EVENT_ID), then ordered and cut as a whole: an OR of the two would have the
// database walk every row of the other state in EVENT_ID order (a listing of a target's
// newest SENT event through all its pending ones). The shared rows the targets take are one
// more SELECT (sharedFrom). With a target, its mark is read first. The rows come in (EVENT_ID,
// TARGET) order; without a target one id can be several targets' rows, so more than s.limit
// rows are read: wholeIDs cuts them where a page may end.
func (o *Outbox) stateQuery(ctx context.Context, s eventSelect) (string, []any, error) {
	mark, markArgs := MarkOf("e.TARGET"), []any(nil)
	limit := s.limit
	if s.target != "" {
		r, err := readTakes(ctx, o.db.SQL, o.db.Dialect, s.target, false)
		if err != nil {
			return "", nil, err
		}
		mark, markArgs = "?", []any{r.mark}
	} else {
		var n int
		if err := o.db.SQL.QueryRowContext(ctx, `SELECT COUNT(*) FROM MSG_EVENT_SENT`).Scan(&n); err != nil {
			return "", nil, Unavailable(fmt.Errorf("count the targets: %w", err))
		}
		limit += n + 1 // the most rows one id has: one per target
	}
	dir := ""
	if s.desc {
		dir = " DESC"
	}
	type branch struct {
		v    EventView
		cond string
		args []any
	}
	var branches []branch
	switch s.state {
	case "":
		branches = []branch{{eventTable, "", nil}}
	case pipeline.EventPending:
		branches = []branch{{eventTable, `e.STATE = '` + eventRetry + `'`, nil}, {eventTable, `e.STATE = 'PENDING' AND e.EVENT_ID > ` + mark, markArgs}}
	case pipeline.EventSent:
		branches = []branch{{eventTable, `e.STATE = 'SENT'`, nil}, {eventTable, `e.STATE = 'PENDING' AND e.EVENT_ID <= ` + mark, markArgs}}
	default:
		branches = []branch{{eventTable, `e.STATE = ?`, []any{string(s.state)}}}
	}
	switch s.state {
	case "":
		branches = append(branches, branch{sharedView, "", nil})
	case pipeline.EventPending:
		branches = append(branches, branch{sharedView, `e.EVENT_ID > s.UPTO_EVENT_ID`, nil})
	case pipeline.EventSent:
		branches = append(branches, branch{sharedView, `e.EVENT_ID <= s.UPTO_EVENT_ID`, nil})
	}
	var parts []string
	var args []any
	for _, b := range branches {
		where := slices.Clone(s.where)
		var targs []any
		switch {
		case s.target != "":
			where, targs = append(where, b.v.col("TARGET")+` = ?`), []any{s.target}
		case b.v.S == "":
			where = append(where, `e.TARGET <> `+shared)
		}
		if b.v.S == "" && b.cond == "" {
			where = append(where, `e.STATE <> '`+eventPurged+`'`)
		}
		if b.cond != "" {
			where = append(where, b.cond)
		}
		var q string
		if b.v.S != "" {
			hint := ""
			if s.byTarget {
				hint = headIndex(o.db.Dialect)
			}
			q = `SELECT ` + s.cols(b.v) + ` FROM ` + sharedFrom(hint)
		} else {
			hint := ""
			if s.target != "" && s.byTarget && b.cond != "" {
				hint = headIndex(o.db.Dialect) // the hint is for a target's range of one stored state
			}
			q = `SELECT ` + s.cols(b.v) + ` FROM MSG_EVENT e` + hint
		}
		if len(where) > 0 {
			q += ` WHERE ` + strings.Join(where, " AND ")
		}
		parts = append(parts, q+` ORDER BY e.EVENT_ID`+dir+`, `+b.v.col("TARGET")+dir+` LIMIT ?`)
		args = append(append(append(append(append(args, s.colsArgs...), s.args...), targs...), b.args...), limit)
	}
	if len(parts) == 1 {
		return parts[0], args, nil
	}
	q := unionAll(o.db.Dialect, parts...)
	return q + ` ORDER BY EVENT_ID` + dir + `, TARGET` + dir + ` LIMIT ?`, append(args, limit), nil
}

// wholeIDs returns how many of rows (in stateQuery's order, their EVENT_IDs ids) a page of
// limit rows keeps: limit, and the rest of the last id's rows, never cutting one id's rows
// apart (the next page starts after that id). A page is never shorter than limit while rows
// are left, which the API reads as the last page.
func wholeIDs(ids []int64, limit int) int {
	if len(ids) <= limit {
		return len(ids)
	}
	n := max(limit, 1)
	for n < len(ids) && ids[n] == ids[n-1] {
		n++
	}
	return n
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
