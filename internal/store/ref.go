package store

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"msgx/internal/pipeline"
)

// RefSource is the SOURCE of reference records that came from the AODB.
const RefSource = "AODB"

// RefEntry is one stored reference record.
type RefEntry struct {
	Type      string
	Key       string
	Fields    json.RawMessage
	Version   int64
	Source    string
	MsgID     *int64
	UpdatedAt time.Time
}

// applyRef applies one reference change inside tx and returns how many records it changed.
// An unchanged record changes nothing (no write, no version step); every write advances VERSION
// by compare-and-set, so a concurrent writer is detected instead of overwritten.
func applyRef(ctx context.Context, tx *sql.Tx, msgID int64, ch pipeline.RefChange, now time.Time) (int, error) {
	switch ch.Op {
	case pipeline.RefUpsert:
		return upsertRef(ctx, tx, msgID, ch.Type, ch.Record, now)
	case pipeline.RefDelete:
		res, err := tx.ExecContext(ctx, `DELETE FROM REF_DATA WHERE REF_TYPE = ? AND REF_KEY = ?`, ch.Type, ch.Record.Key)
		if err != nil {
			return 0, Unavailable(err)
		}
		n, _ := res.RowsAffected()
		return int(n), nil
	case pipeline.RefReplace:
		if len(ch.Records) == 0 && !ch.AllowEmpty && len(ch.Keep) == 0 && !ch.NoDelete {
			return 0, fmt.Errorf("refusing to wipe reference TYPE %s with an empty replacement", ch.Type)
		}
		// One read of the whole TYPE instead of one per record: a DNLD of a few hundred
		// records cost a few hundred round trips more than it writes.
		stored, err := refStored(ctx, tx, ch.Type)
		if err != nil {
			return 0, err
		}
		changed := 0
		keep := map[string]bool{}
		for _, k := range ch.Keep {
			keep[k] = true
		}
		for _, r := range ch.Records {
			keep[r.Key] = true
			cur, ok := stored[r.Key]
			n, err := writeRef(ctx, tx, msgID, ch.Type, r, cur, ok, now)
			if err != nil {
				return 0, err
			}
			if n > 0 {
				stored[r.Key] = storedRef{fields: string(r.Fields), version: cur.version + 1}
			}
			changed += n
		}
		gone := make([]string, 0, len(stored))
		for k := range stored {
			if !keep[k] && !ch.NoDelete {
				gone = append(gone, k)
			}
		}
		sort.Strings(gone) // deleted in key order, as the rows are locked
		for _, k := range gone {
			if _, err := tx.ExecContext(ctx, `DELETE FROM REF_DATA WHERE REF_TYPE = ? AND REF_KEY = ?`, ch.Type, k); err != nil {
				return 0, Unavailable(err)
			}
			changed++
		}
		return changed, nil
	}
	return 0, fmt.Errorf("unknown reference operation %q", ch.Op)
}

// storedRef is what a write of a reference record needs of the stored one.
type storedRef struct {
	fields  string
	version int64
}

// refStored reads the stored records of one TYPE: key → fields and version.
func refStored(ctx context.Context, tx *sql.Tx, typ string) (map[string]storedRef, error) {
	rows, err := tx.QueryContext(ctx, `SELECT REF_KEY, FIELDS, VERSION FROM REF_DATA WHERE REF_TYPE = ?`, typ)
	if err != nil {
		return nil, Unavailable(err)
	}
	defer rows.Close()
	out := map[string]storedRef{}
	for rows.Next() {
		var k string
		var r storedRef
		if err := rows.Scan(&k, &r.fields, &r.version); err != nil {
			return nil, Unavailable(err)
		}
		out[k] = r
	}
	if err := rows.Err(); err != nil {
		return nil, Unavailable(err)
	}
	return out, nil
}

func upsertRef(ctx context.Context, tx *sql.Tx, msgID int64, typ string, r pipeline.RefRecord, now time.Time) (int, error) {
	if r.Key == "" {
		return 0, pipeline.Errorf(pipeline.CodecError, "%s record without a key", typ)
	}
	cur, found, err := refStoredOne(ctx, tx, typ, r.Key)
	if err != nil {
		return 0, err
	}
	return writeRef(ctx, tx, msgID, typ, r, cur, found, now)
}

// refStoredOne reads the stored record typ/key, if any.
func refStoredOne(ctx context.Context, tx *sql.Tx, typ, key string) (storedRef, bool, error) {
	var cur storedRef
	err := tx.QueryRowContext(ctx, `SELECT FIELDS, VERSION FROM REF_DATA WHERE REF_TYPE = ? AND REF_KEY = ?`, typ, key).Scan(&cur.fields, &cur.version)
	switch {
	case err == sql.ErrNoRows:
		return cur, false, nil
	case err != nil:
		return cur, false, Unavailable(err)
	}
	return cur, true, nil
}

// writeRef writes record r of typ over cur (found: whether one is stored): an insert, nothing
// when the fields are the same by value, or an update that advances VERSION by
// compare-and-set. It returns how many records it changed.
func writeRef(ctx context.Context, tx *sql.Tx, msgID int64, typ string, r pipeline.RefRecord, cur storedRef, found bool, now time.Time) (int, error) {
	if r.Key == "" {
		return 0, pipeline.Errorf(pipeline.CodecError, "%s record without a key", typ)
	}
	q, args := refWrite(msgID, typ, r, cur, found, now)
	switch {
	case q == "":
		return 0, nil
	case !found:
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			return 0, Unavailable(fmt.Errorf("insert %s %s: %w", typ, r.Key, err))
		}
		return 1, nil
	}
	res, err := tx.ExecContext(ctx, q, args...)
	if err != nil {
		return 0, Unavailable(fmt.Errorf("update %s %s: %w", typ, r.Key, err))
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return 0, pipeline.Errorf(pipeline.Infra, "%s %s changed under us (version %d)", typ, r.Key, cur.version)
	}
	return 1, nil
}

// refWrite is the statement that writes record r of typ over cur (found: whether one is
// stored): an insert, nothing ("") when the fields are the same by value, or an update that
// advances VERSION by compare-and-set (one row, or none when the row changed under us).
func refWrite(msgID int64, typ string, r pipeline.RefRecord, cur storedRef, found bool, now time.Time) (string, []any) {
	switch {
	case !found:
		return `INSERT INTO REF_DATA (REF_TYPE, REF_KEY, FIELDS, VERSION, SOURCE, CMINMSGS_ID, UPDATED_AT) VALUES (?, ?, ?, 1, ?, ?, ?)`,
			[]any{typ, r.Key, string(r.Fields), RefSource, msgID, T(now)}
	case sameJSON([]byte(cur.fields), r.Fields):
		return "", nil
	}
	return `UPDATE REF_DATA SET FIELDS = ?, VERSION = ?, SOURCE = ?, CMINMSGS_ID = ?, UPDATED_AT = ?
		WHERE REF_TYPE = ? AND REF_KEY = ? AND VERSION = ?`, []any{string(r.Fields), cur.version + 1, RefSource, msgID, T(now), typ, r.Key, cur.version}
}

// sameJSON compares two JSON documents by value (so formatting and key order do not count).
func sameJSON(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

// RefList returns the records of a TYPE in key order.
func (r *RefData) RefList(ctx context.Context, typ string) ([]RefEntry, error) {
	return r.refQuery(ctx, `WHERE REF_TYPE = ? ORDER BY REF_KEY`, typ)
}

// RefGet returns one record, or nil.
func (r *RefData) RefGet(ctx context.Context, typ, key string) (*RefEntry, error) {
	out, err := r.refQuery(ctx, `WHERE REF_TYPE = ? AND REF_KEY = ?`, typ, key)
	if err != nil || len(out) == 0 {
		return nil, err
	}
	return &out[0], nil
}

func (r *RefData) refQuery(ctx context.Context, where string, args ...any) ([]RefEntry, error) {
	rows, err := r.db.SQL.QueryContext(ctx, `SELECT REF_TYPE, REF_KEY, FIELDS, VERSION, SOURCE, CMINMSGS_ID, UPDATED_AT FROM REF_DATA `+where, args...)
	if err != nil {
		return nil, Unavailable(err)
	}
	defer rows.Close()
	out := []RefEntry{}
	for rows.Next() {
		var e RefEntry
		var fields string
		var msg sql.NullInt64
		var upd NullTime
		if err := rows.Scan(&e.Type, &e.Key, &fields, &e.Version, &e.Source, &msg, &upd); err != nil {
			return nil, err
		}
		e.Fields = json.RawMessage(fields)
		if msg.Valid {
			e.MsgID = &msg.Int64
		}
		e.UpdatedAt = upd.Time
		out = append(out, e)
	}
	return out, rows.Err()
}

// refKeys reads the keys of the stored records of one TYPE, in no order.
func refKeys(ctx context.Context, tx *sql.Tx, typ string) ([]string, error) {
	return column[string](ctx, tx, `SELECT REF_KEY FROM REF_DATA WHERE REF_TYPE = ?`, typ)
}
