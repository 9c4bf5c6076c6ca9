package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
)

// BodySearch finds messages by the text of their bodies (CMINMSGS_CLOB_MSG, live or
// archived). There is no full-text index: a search reads the bodies of the newest messages
// only, and says how many it read.
type BodySearch interface {
	SearchBodies(ctx context.Context, text string, within, limit int) (BodyHits, error)
}

var _ BodySearch = (*Operations)(nil)

// DefaultBodyScan is how many of the newest messages a body search reads by default.
const DefaultBodyScan = 50000

// BodyHits is the answer of SearchBodies: the messages found, newest first, and the range of
// messages whose bodies were read.
type BodyHits struct {
	Messages []*Message
	// Scanned is how many messages' bodies were read at most: those with ids above
	// AboveID (the newest Scanned of them).
	Scanned int
	AboveID int64
	// More is true when more messages than limit matched.
	More bool
}

// bodyFloor returns the id below the newest within messages (0 when there are no more than
// within): a body search reads only the bodies of ids above it.
func (ops *Operations) bodyFloor(ctx context.Context, within int) (int64, error) {
	var floor int64
	err := ops.db.SQL.QueryRowContext(ctx, `SELECT CMINMSGS_ID FROM PROC_STATE ORDER BY CMINMSGS_ID DESC LIMIT 1 OFFSET ?`, within).Scan(&floor)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, Unavailable(fmt.Errorf("find the newest %d messages: %w", within, err))
	}
	return floor, nil
}

// bodyClause is the condition "the body holds the LIKE pattern", over the message's row in
// CMINMSGS (c) or CMINMSGS_HST (h) as messageJoins joins them.
const bodyClause = `COALESCE(c.CMINMSGS_CLOB_MSG, h.CMINMSGS_CLOB_MSG) LIKE ? ESCAPE '!'`

// SearchBodies returns up to limit (at most MaxPageLimit) of the newest within messages
// (DefaultBodyScan when within <= 0) whose body holds text, newest first. Letter case is
// ignored for ASCII letters on every dialect (SQLite's LIKE); other text matches as written.
func (ops *Operations) SearchBodies(ctx context.Context, text string, within, limit int) (BodyHits, error) {
	if within <= 0 {
		within = DefaultBodyScan
	}
	limit = clampLimit(limit)
	out := BodyHits{Messages: []*Message{}, Scanned: within}
	if text == "" {
		return out, nil
	}
	floor, err := ops.bodyFloor(ctx, within)
	if err != nil {
		return out, err
	}
	out.AboveID = floor
	q := `SELECT ` + messageCols + messageFrom + ` WHERE p.CMINMSGS_ID > ? AND ` + bodyClause +
		fmt.Sprintf(` ORDER BY p.CMINMSGS_ID DESC LIMIT %d`, limit+1)
	rows, err := ops.db.SQL.QueryContext(ctx, q, floor, "%"+likeEscape(text)+"%")
	if err != nil {
		return out, Unavailable(fmt.Errorf("search message bodies for %q: %w", text, err))
	}
	defer rows.Close()
	out.Messages, out.More, err = ops.db.Processor.scanPage(rows, limit, out.Messages)
	if err != nil {
		return out, Unavailable(fmt.Errorf("search message bodies: %w", err))
	}
	return out, nil
}

// scanPage appends to msgs the messages of rows, a page of limit and one more to tell whether
// there are more (more).
func (p *Processor) scanPage(rows *sql.Rows, limit int, msgs []*Message) (_ []*Message, more bool, err error) {
	for rows.Next() {
		m, err := p.scanMessage(rows)
		if err != nil {
			return msgs, false, err
		}
		if len(msgs) == limit {
			return msgs, true, nil
		}
		msgs = append(msgs, m)
	}
	return msgs, false, rows.Err()
}

// FlightMessages finds the messages that named any of a set of flights (MSG_FLIGHT): the
// FLOPs and schedules of the flights a flight number is, whose bodies carry only the FLID.
type FlightMessages interface {
	MessagesOfFlights(ctx context.Context, flids []int64, limit int) (FlightHits, error)
}

var _ FlightMessages = (*Flights)(nil)

// MaxFlightsSearched is how many FLIDs one MessagesOfFlights takes at most.
const MaxFlightsSearched = MaxPageLimit

// FlightHits is the answer of MessagesOfFlights: the messages, newest first, and whether more
// than the limit matched.
type FlightHits struct {
	Messages []*Message
	// Named says, by message id, which of the flights asked each message named, in FLID order.
	Named map[int64][]int64
	More  bool
}

// MessagesOfFlights returns up to limit (100 for 0, at most MaxPageLimit) of the messages that
// named any of flids (MSG_FLIGHT, whatever their outcome), newest first, each once however
// many of the flights it named. FLIDs that are not positive name no message (no FLID is 0) and
// repeated ones count once; more than MaxFlightsSearched distinct FLIDs is an error. It reads
// the flights' ranges of MSG_FLIGHT's primary key (FLID, CMINMSGS_ID), then each message by
// its primary key.
func (fl *Flights) MessagesOfFlights(ctx context.Context, flids []int64, limit int) (FlightHits, error) {
	limit = clampLimit(limit)
	out := FlightHits{Messages: []*Message{}, Named: map[int64][]int64{}}
	seen := map[int64]bool{}
	var args []any
	for _, f := range flids {
		if f > 0 && !seen[f] {
			seen[f] = true
			args = append(args, f)
		}
	}
	if len(args) == 0 {
		return out, nil
	}
	if len(args) > MaxFlightsSearched {
		return out, fmt.Errorf("the messages of %d flights: at most %d at a time", len(args), MaxFlightsSearched)
	}
	marks := strings.TrimSuffix(strings.Repeat("?,", len(args)), ",")
	q := `SELECT ` + messageCols + ` FROM (SELECT DISTINCT f.CMINMSGS_ID FROM MSG_FLIGHT f WHERE f.FLID IN (` + marks + `)` +
		fmt.Sprintf(` ORDER BY f.CMINMSGS_ID DESC LIMIT %d) x`, limit+1) +
		` JOIN PROC_STATE p ON p.CMINMSGS_ID = x.CMINMSGS_ID` + messageJoins + ` ORDER BY p.CMINMSGS_ID DESC`
	rows, err := fl.db.SQL.QueryContext(ctx, q, args...)
	if err != nil {
		return out, Unavailable(fmt.Errorf("the messages of flights %v: %w", args, err))
	}
	defer rows.Close()
	out.Messages, out.More, err = fl.db.Processor.scanPage(rows, limit, out.Messages)
	if err != nil {
		return out, Unavailable(fmt.Errorf("the messages of flights: %w", err))
	}
	if len(out.Messages) == 0 {
		return out, nil
	}
	rows.Close()
	return out, fl.namedFlights(ctx, args, marks, &out)
}

// namedFlights fills out.Named: which of the FLIDs flids (placeholders marks) each of
// out.Messages named.
func (fl *Flights) namedFlights(ctx context.Context, flids []any, marks string, out *FlightHits) error {
	args := append([]any{}, flids...)
	for _, m := range out.Messages {
		args = append(args, m.ID)
	}
	msgMarks := strings.TrimSuffix(strings.Repeat("?,", len(out.Messages)), ",")
	rows, err := fl.db.SQL.QueryContext(ctx, `SELECT CMINMSGS_ID, FLID FROM MSG_FLIGHT WHERE FLID IN (`+marks+`) AND CMINMSGS_ID IN (`+msgMarks+`) ORDER BY CMINMSGS_ID, FLID`, args...)
	if err != nil {
		return Unavailable(fmt.Errorf("the flights the messages named: %w", err))
	}
	defer rows.Close()
	for rows.Next() {
		var id, flid int64
		if err := rows.Scan(&id, &flid); err != nil {
			return Unavailable(fmt.Errorf("the flights the messages named: %w", err))
		}
		out.Named[id] = append(out.Named[id], flid)
	}
	return Unavailable(rows.Err())
}
