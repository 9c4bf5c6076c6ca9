package store

import "msgx/internal/pipeline"

// An event's state is not only its STATE column. A target's events are delivered in EVENT_ID
// order, so a delivery raises the target's delivery mark (MSG_EVENT_SENT.UPTO_EVENT_ID, with
// each raise and its time in MSG_EVENT_MARK) instead of updating each delivered row (see
// eventTx.MarkSent). The effective state of a row is:
//
//   - STATE 'PENDING' at or below its target's mark: SENT, sent at the time of the first raise
//     at or above its id, with no next attempt;
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

// SentAt returns the SQL of the row's delivery time: SENT_AT, or for a row the mark covers
// the time of the first raise at or above it.
func (v EventView) SentAt() string {
	return `CASE WHEN ` + v.covered() + ` THEN (SELECT mr.SENT_AT FROM MSG_EVENT_MARK mr WHERE mr.TARGET = ` + v.col("TARGET") +
		` AND mr.UPTO_EVENT_ID >= ` + v.col("EVENT_ID") + ` ORDER BY mr.UPTO_EVENT_ID LIMIT 1) ELSE ` + v.col("SENT_AT") + ` END`
}

// NextAttemptAt returns the SQL of the row's next attempt: none once SENT.
func (v EventView) NextAttemptAt() string {
	return `CASE WHEN ` + v.covered() + ` THEN NULL ELSE ` + v.col("NEXT_ATTEMPT_AT") + ` END`
}

// Is returns the SQL condition (and its arguments) that the row's effective state is st,
// written so that a query with TARGET = ? reads index ranges of (TARGET, STATE, EVENT_ID): a
// PENDING row above the mark or a RETRY row; a SENT row or a PENDING row at or below the
// mark; another state as stored.
func (v EventView) Is(st pipeline.EventStatus) (string, []any) {
	switch st {
	case pipeline.EventPending:
		return `(` + v.col("STATE") + ` = '` + eventRetry + `' OR (` + v.col("STATE") + ` = 'PENDING' AND ` +
			v.col("EVENT_ID") + ` > ` + MarkOf(v.col("TARGET")) + `))`, nil
	case pipeline.EventSent:
		return `(` + v.col("STATE") + ` = 'SENT' OR ` + v.covered() + `)`, nil
	}
	return v.col("STATE") + ` = ?`, []any{string(st)}
}

// cols returns the columns queryEvents scans, with the effective STATE, SENT_AT and
// NEXT_ATTEMPT_AT.
func (v EventView) cols() string {
	return v.col("EVENT_ID") + `, ` + v.col("CMINMSGS_ID") + `, ` + v.col("TYPE_TAG") + `, ` + v.col("TARGET") + `, ` +
		v.col("KIND") + `, ` + v.col("FLIGHT_KEY") + `, ` + v.State() + `, ` + v.col("ATTEMPTS") + `, ` + v.col("ERROR_CLASS") + `, ` +
		v.col("LAST_ERROR") + `, ` + v.col("CREATED_AT") + `, ` + v.SentAt() + `, ` + v.NextAttemptAt() + `, ` +
		v.col("FIRST_FAILED_AT") + `, ` + v.col("PAYLOAD")
}
