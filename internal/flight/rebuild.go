package flight

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"msgx/internal/store"
)

// RebuildChunk is how many flights one transaction of the phase-A rebuild writes: a day is
// rebuilt in chunks of this many flights, so that no transaction holds FLIGHT_STATE for long.
const RebuildChunk = 250

// RebuildFrom makes FLIGHT_STATE's flights of days exactly those of src (the authoritative
// store of phase A). For each day it reads src's flights and writes them in chunks of
// RebuildChunk, one transaction each: the chunk's rows are deleted wherever they are and
// inserted with src's versions, records and messages; a last transaction deletes the rows
// FLIGHT_STATE holds on the day that src does not. The pump runs it as the job
// PROJECTION_REBUILD, in the message order, so no message writes in between; a rebuild cut
// short leaves each chunk either done or not, and running it again finishes it. progress is
// told after every chunk: the day and how many of its flights are done.
func (s *Store) RebuildFrom(ctx context.Context, src Reader, days []string, now time.Time, progress func(day string, done int)) (written, deleted int, err error) {
	for _, day := range days {
		es, err := src.Day(ctx, day)
		if err != nil {
			return written, deleted, err
		}
		keep := make(map[int64]bool, len(es))
		for start := 0; start < len(es); start += RebuildChunk {
			part := es[start:min(start+RebuildChunk, len(es))]
			n, err := s.rebuildChunk(ctx, day, part, now)
			if err != nil {
				return written, deleted, err
			}
			for _, e := range part {
				keep[e.FLID] = true
			}
			written += len(part)
			deleted += n
			if progress != nil {
				progress(day, start+len(part))
			}
		}
		n, err := s.dropOthers(ctx, day, keep)
		if err != nil {
			return written, deleted, err
		}
		deleted += n
		if progress != nil && (n > 0 || len(es) == 0) {
			progress(day, len(es))
		}
	}
	return written, deleted, nil
}

// rebuildChunk replaces the rows of the flights of part (wherever they are) by part, in one
// transaction, and returns how many rows it deleted.
func (s *Store) rebuildChunk(ctx context.Context, day string, part []Entry, now time.Time) (deleted int, err error) {
	err = s.db.Tx(ctx, func(tx *sql.Tx) error {
		args := make([]any, len(part))
		for i, e := range part {
			args[i] = e.FLID
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM FLIGHT_STATE WHERE FLID IN (`+marks(len(part))+`)`, args...)
		if err != nil {
			return store.Unavailable(fmt.Errorf("rebuild %s: %w", day, err))
		}
		k, _ := res.RowsAffected()
		deleted = int(k)
		var q strings.Builder
		q.WriteString(`INSERT INTO FLIGHT_STATE (FDAY, FLID, RECORD, VERSION, CMINMSGS_ID, UPDATED_AT, MAID) VALUES `)
		args = args[:0]
		for i, e := range part {
			if i > 0 {
				q.WriteByte(',')
			}
			q.WriteString(`(?, ?, ?, ?, ?, ?, ?)`)
			maid, err := checkWrite(writeOf(e))
			if err != nil {
				return err
			}
			args = append(args, day, e.FLID, string(e.Record), e.Version, e.MsgID, store.T(now), maid)
		}
		if _, err := tx.ExecContext(ctx, q.String(), args...); err != nil {
			return store.Unavailable(fmt.Errorf("rebuild %s: %w", day, err))
		}
		return nil
	})
	return deleted, err
}

// dropOthers deletes, in one transaction, the rows of day whose flight is not in keep.
func (s *Store) dropOthers(ctx context.Context, day string, keep map[int64]bool) (int, error) {
	deleted := 0
	err := s.db.Tx(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT FLID FROM FLIGHT_STATE WHERE FDAY = ?`, day)
		if err != nil {
			return store.Unavailable(fmt.Errorf("rebuild %s: %w", day, err))
		}
		var drop []any
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return store.Unavailable(fmt.Errorf("rebuild %s: %w", day, err))
			}
			if !keep[id] {
				drop = append(drop, id)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return store.Unavailable(fmt.Errorf("rebuild %s: %w", day, err))
		}
		for start := 0; start < len(drop); start += batchRows {
			part := drop[start:min(start+batchRows, len(drop))]
			res, err := tx.ExecContext(ctx, `DELETE FROM FLIGHT_STATE WHERE FDAY = ? AND FLID IN (`+marks(len(part))+`)`, append([]any{day}, part...)...)
			if err != nil {
				return store.Unavailable(fmt.Errorf("rebuild %s: %w", day, err))
			}
			k, _ := res.RowsAffected()
			deleted += int(k)
		}
		return nil
	})
	return deleted, err
}
