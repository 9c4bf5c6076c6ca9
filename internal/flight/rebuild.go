package flight

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"msgx/internal/store"
)

// RebuildFrom makes FLIGHT_STATE's flights of days exactly those of src (the authoritative
// store of phase A): for each day, in one transaction, it deletes the day's rows and the rows
// of src's flights (wherever they are), and inserts src's flights with src's versions, records
// and messages. The pump runs it as the job PROJECTION_REBUILD, in the message order, so no
// message writes in between. progress is told each day done.
func (s *Store) RebuildFrom(ctx context.Context, src Reader, days []string, now time.Time, progress func(day string, written int)) (written, deleted int, err error) {
	for _, day := range days {
		es, err := src.Day(ctx, day)
		if err != nil {
			return written, deleted, err
		}
		n := 0
		err = s.db.Tx(ctx, func(tx *sql.Tx) error {
			res, err := tx.ExecContext(ctx, `DELETE FROM FLIGHT_STATE WHERE FDAY = ?`, day)
			if err != nil {
				return store.Unavailable(fmt.Errorf("rebuild %s: %w", day, err))
			}
			k, _ := res.RowsAffected()
			n = int(k)
			for start := 0; start < len(es); start += batchRows {
				part := es[start:min(start+batchRows, len(es))]
				args := make([]any, len(part))
				for i, e := range part {
					args[i] = e.FLID
				}
				res, err := tx.ExecContext(ctx, `DELETE FROM FLIGHT_STATE WHERE FLID IN (`+marks(len(part))+`)`, args...)
				if err != nil {
					return store.Unavailable(fmt.Errorf("rebuild %s: %w", day, err))
				}
				k, _ := res.RowsAffected()
				n += int(k)
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
			}
			return nil
		})
		if err != nil {
			return written, deleted, err
		}
		written += len(es)
		deleted += n
		if progress != nil {
			progress(day, len(es))
		}
	}
	return written, deleted, nil
}
