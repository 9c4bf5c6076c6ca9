package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"msgx/internal/pipeline"
)

// Raw returns the raw text of message id, from CMINMSGS or, once ARCHIVE has moved it, from
// CMINMSGS_HST (a replayed message is read from there); ok is false when it is in neither.
func (p *Processor) Raw(ctx context.Context, id int64) (raw string, ok bool, err error) {
	for _, table := range []string{"CMINMSGS", "CMINMSGS_HST"} {
		err = p.db.SQL.QueryRowContext(ctx, `SELECT CMINMSGS_CLOB_MSG FROM `+table+` WHERE CMINMSGS_ID = ?`, id).Scan(&raw)
		if err == nil {
			return raw, true, nil
		}
		if err != sql.ErrNoRows {
			return "", false, Unavailable(fmt.Errorf("read message %d from %s: %w", id, table, err))
		}
	}
	return "", false, nil
}

// ArchiveChunk is how many messages one archive transaction moves at most, and
// ArchiveChunkBytes how many bytes of message text (at least one message, however large): a
// table of millions of rows, or of schedules of megabytes each, is archived in many short
// transactions, never one that holds the database (or a Galera write set) for long.
const (
	ArchiveChunk      = 500
	ArchiveChunkBytes = 8 << 20
)

// Archive moves the messages that finished for good (SUCCEEDED or SKIPPED) with ids up to
// maxID and processed before `before` from CMINMSGS to CMINMSGS_HST, ArchiveChunk rows per
// transaction, and returns how many it moved. DEAD and unfinished rows stay where the pump and
// replay find them. Their PROC_STATE rows stay, so the API still tells what happened to them.
// It stops between chunks when ctx ends, keeping what it moved. Each moved message's
// PROC_STATE row records now as its ARCHIVED_AT, from which retention.archive counts.
// progress, when set, is told the running total after each chunk that moved rows.
func (a *Archiver) Archive(ctx context.Context, maxID int64, before, now time.Time, progress func(moved int)) (int, error) {
	if a.db.Intake.Shadow() {
		// Moving rows would delete them from the legacy's CMINMSGS: in shadow mode ARCHIVE
		// moves nothing, and the job is done (it must not block the message order).
		a.db.Intake.legacyOpts().Logger.Warn("shadow mode: ARCHIVE moves nothing; CMINMSGS is the legacy's")
		return 0, nil
	}
	total := 0
	var after int64
	for ctx.Err() == nil {
		n, last, err := a.archiveChunk(ctx, after, maxID, before, now)
		total += n
		if err != nil {
			return total, err
		}
		if n > 0 && progress != nil {
			progress(total)
		}
		if last == 0 {
			break
		}
		after = last
	}
	return total, ctx.Err()
}

// queryIDs runs a query whose rows are one id each and returns the ids as statement
// arguments (for an IN list); a failure is Unavailable, named by what.
func queryIDs(ctx context.Context, tx querier, what, query string, args ...any) ([]any, error) {
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, Unavailable(fmt.Errorf("%s: select: %w", what, err))
	}
	defer rows.Close()
	var ids []any
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, Unavailable(fmt.Errorf("%s: %w", what, err))
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, Unavailable(fmt.Errorf("%s: %w", what, err))
	}
	return ids, nil
}

// archiveChunk moves up to ArchiveChunk archivable rows, and ArchiveChunkBytes of their text,
// with ids in (after, maxID] and returns how many it moved and the highest id it took (0 when
// there was none).
func (a *Archiver) archiveChunk(ctx context.Context, after, maxID int64, before, now time.Time) (moved int, last int64, err error) {
	err = a.db.longTx(ctx, func(tx *sql.Tx) error {
		moved, last = 0, 0
		ids, err := archivable(ctx, tx, after, maxID, before)
		if err != nil || len(ids) == 0 {
			return err
		}
		last = ids[len(ids)-1].(int64)
		in := `(` + placeholders(len(ids)) + `)`
		const cols = `CMINMSGS_ID, CMINMSGS_CLOB_MSG, CMINMSGS_DATE_RECEIVED, CMINMSGS_DATE_PROCESSED, CMINMSGS_SUBSYSTEM_NAME,
			CMINMSGS_SUBSYSTEM_SEQUENCE, CMINMSGS_SUBSYSTEM_DATE_SENT, CMINMSGS_SUBSYSTEM_SUBTYPE, CMINMSGS_SUBSYSTEM_TYPE, CMINMSGS_STATUS`
		// A plain INSERT: an id the history already holds fails the job (visible, retried)
		// rather than letting the delete below lose a row.
		if _, err := tx.ExecContext(ctx, `INSERT INTO CMINMSGS_HST (`+cols+`) SELECT `+cols+` FROM CMINMSGS WHERE CMINMSGS_ID IN `+in, ids...); err != nil {
			return classifyWrite(fmt.Sprintf("archive: copy %d rows from id %v", len(ids), ids[0]), err)
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM CMINMSGS WHERE CMINMSGS_ID IN `+in, ids...)
		if err != nil {
			return Unavailable(fmt.Errorf("archive: delete %d rows: %w", len(ids), err))
		}
		n, _ := res.RowsAffected()
		moved = int(n)
		if _, err := tx.ExecContext(ctx, `UPDATE PROC_STATE SET ARCHIVED_AT = ? WHERE CMINMSGS_ID IN `+in, append([]any{T(now)}, ids...)...); err != nil {
			return Unavailable(fmt.Errorf("archive: mark %d rows archived: %w", len(ids), err))
		}
		return nil
	})
	return moved, last, err
}

// archivable returns the ids of the next chunk to archive after `after`: in id order, up to
// ArchiveChunk of them and as many as fit ArchiveChunkBytes of text, at least one.
func archivable(ctx context.Context, tx *sql.Tx, after, maxID int64, before time.Time) ([]any, error) {
	rows, err := tx.QueryContext(ctx, `SELECT c.CMINMSGS_ID, OCTET_LENGTH(c.CMINMSGS_CLOB_MSG) FROM CMINMSGS c
		JOIN PROC_STATE p ON p.CMINMSGS_ID = c.CMINMSGS_ID
		WHERE c.CMINMSGS_ID > ? AND c.CMINMSGS_ID <= ? AND p.STATE IN (?, ?) AND p.PROCESSED_AT < ?
		ORDER BY c.CMINMSGS_ID LIMIT ?`, after, maxID, pipeline.Succeeded, pipeline.Skipped, T(before), ArchiveChunk)
	if err != nil {
		return nil, Unavailable(fmt.Errorf("archive: select: %w", err))
	}
	defer rows.Close()
	var (
		ids   []any
		bytes int64
	)
	for rows.Next() {
		var (
			id int64
			n  sql.NullInt64
		)
		if err := rows.Scan(&id, &n); err != nil {
			return nil, Unavailable(fmt.Errorf("archive: %w", err))
		}
		if bytes += n.Int64; len(ids) > 0 && bytes > ArchiveChunkBytes {
			break
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, Unavailable(fmt.Errorf("archive: %w", err))
	}
	return ids, nil
}
