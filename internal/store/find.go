package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// BodySearch finds messages by the text of their bodies (CMINMSGS_CLOB_MSG, live or
// archived). There is no full-text index: a search reads the bodies of the newest messages
// only, and says how many it read.
type BodySearch interface {
	SearchBodies(ctx context.Context, text string, within, limit int) (BodyHits, error)
}

var _ BodySearch = (*DB)(nil)

// DefaultBodyScan is how many of the newest messages a body search reads by default.
const DefaultBodyScan = 50000

// BodyHits is the answer of SearchBodies: the messages found, newest first, and the range of
// messages whose bodies were read.
type BodyHits struct {
	Messages []*Message `json:"messages"`
	// Scanned is how many messages' bodies were read at most: those with ids above
	// AboveID (the newest Scanned of them).
	Scanned int   `json:"scanned"`
	AboveID int64 `json:"above_id"`
	// More is true when more messages than limit matched.
	More bool `json:"more"`
}

// bodyFloor returns the id below the newest within messages (0 when there are no more than
// within): a body search reads only the bodies of ids above it.
func (d *DB) bodyFloor(ctx context.Context, within int) (int64, error) {
	var floor int64
	err := d.SQL.QueryRowContext(ctx, `SELECT CMINMSGS_ID FROM PROC_STATE ORDER BY CMINMSGS_ID DESC LIMIT 1 OFFSET ?`, within).Scan(&floor)
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
func (d *DB) SearchBodies(ctx context.Context, text string, within, limit int) (BodyHits, error) {
	if within <= 0 {
		within = DefaultBodyScan
	}
	limit = clampLimit(limit)
	out := BodyHits{Messages: []*Message{}, Scanned: within}
	if text == "" {
		return out, nil
	}
	floor, err := d.bodyFloor(ctx, within)
	if err != nil {
		return out, err
	}
	out.AboveID = floor
	q := `SELECT ` + messageCols + messageFrom + ` WHERE p.CMINMSGS_ID > ? AND ` + bodyClause +
		fmt.Sprintf(` ORDER BY p.CMINMSGS_ID DESC LIMIT %d`, limit+1)
	rows, err := d.SQL.QueryContext(ctx, q, floor, "%"+likeEscape(text)+"%")
	if err != nil {
		return out, Unavailable(fmt.Errorf("search message bodies for %q: %w", text, err))
	}
	defer rows.Close()
	for rows.Next() {
		m, err := d.scanMessage(rows)
		if err != nil {
			return out, Unavailable(fmt.Errorf("search message bodies: %w", err))
		}
		if len(out.Messages) == limit {
			out.More = true
			break
		}
		out.Messages = append(out.Messages, m)
	}
	return out, Unavailable(rows.Err())
}
