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

// RebuildParams say what RebuildFrom rebuilds.
type RebuildParams struct {
	// Source is the authoritative store of phase A (Redis).
	Source Reader
	// Days are the local days rebuilt (jobs.rebuild-days).
	Days []string
	// Now is the rows' update time.
	Now time.Time
	// Prune deletes the rows of the days that Source does not hold. Without it they are kept
	// and counted (RebuildResult.Kept): a flight missing from Redis is more often Redis's loss
	// (a restart without persistence, an eviction, a stray DEL) than a flight gone, and
	// REDIS_RESTORE brings it back from FLIGHT_STATE.
	Prune bool
	// Progress is told after every chunk: the day and how many of its flights are done.
	Progress func(day string, done int)
}

// RebuildResult is what RebuildFrom did to FLIGHT_STATE.
type RebuildResult struct {
	Written  int     // rows written from Source
	Replaced int     // rows of those flights deleted first (the flight's older row, on any day)
	Deleted  int     // rows of the days Source does not hold, deleted (Prune)
	Kept     int     // rows of the days Source does not hold, kept (no Prune)
	KeptIDs  []int64 // the FLIDs of the first ten kept
}

// RebuildFrom makes FLIGHT_STATE's flights of p.Days those of p.Source (the authoritative
// store of phase A). For each day it reads Source's flights and writes them in chunks of
// RebuildChunk, one transaction each: the chunk's rows are deleted wherever they are and
// inserted with Source's versions, records and messages; then the rows FLIGHT_STATE holds on
// the day that Source does not are deleted in one transaction with p.Prune, and kept and
// counted without. The pump runs it as the job PROJECTION_REBUILD, in the message order, so
// no message writes in between; a rebuild cut short leaves each chunk either done or not, and
// running it again finishes it.
func (s *Store) RebuildFrom(ctx context.Context, p RebuildParams) (RebuildResult, error) {
	var res RebuildResult
	for _, day := range p.Days {
		es, err := p.Source.Day(ctx, day)
		if err != nil {
			return res, err
		}
		keep := make(map[int64]bool, len(es))
		for start := 0; start < len(es); start += RebuildChunk {
			part := es[start:min(start+RebuildChunk, len(es))]
			n, err := s.rebuildChunk(ctx, day, part, p.Now)
			if err != nil {
				return res, err
			}
			for _, e := range part {
				keep[e.FLID] = true
			}
			res.Written += len(part)
			res.Replaced += n
			if p.Progress != nil {
				p.Progress(day, start+len(part))
			}
		}
		n, err := s.dropOthers(ctx, day, keep, p.Prune, &res)
		if err != nil {
			return res, err
		}
		if p.Progress != nil && (n > 0 || len(es) == 0) {
			p.Progress(day, len(es))
		}
	}
	return res, nil
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

// dropOthers deletes (prune), in one transaction, the rows of day whose flight is not in
// keep, or counts them as kept in res; it returns how many it found.
func (s *Store) dropOthers(ctx context.Context, day string, keep map[int64]bool, prune bool, res *RebuildResult) (int, error) {
	found := 0
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
		found = len(drop)
		if !prune {
			for _, id := range drop {
				if len(res.KeptIDs) < 10 {
					res.KeptIDs = append(res.KeptIDs, id.(int64))
				}
			}
			res.Kept += len(drop)
			return nil
		}
		for start := 0; start < len(drop); start += batchRows {
			part := drop[start:min(start+batchRows, len(drop))]
			r, err := tx.ExecContext(ctx, `DELETE FROM FLIGHT_STATE WHERE FDAY = ? AND FLID IN (`+marks(len(part))+`)`, append([]any{day}, part...)...)
			if err != nil {
				return store.Unavailable(fmt.Errorf("rebuild %s: %w", day, err))
			}
			k, _ := r.RowsAffected()
			res.Deleted += int(k)
		}
		return nil
	})
	return found, err
}
