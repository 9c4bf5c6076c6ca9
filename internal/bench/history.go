package bench

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"msgx/internal/pipeline"
	"msgx/internal/store"
)

// Rows per statement and per transaction when filling the history.
const (
	historyRowsPerStatement = 500
	historyRowsPerTx        = 20000
)

// FillHistory inserts n finished messages (CMINMSGS rows and their SUCCEEDED PROC_STATE rows,
// each with its own identity) into a freshly migrated bench database, with ids 1..n, so the
// phases after it run over that much history: issue 13 asks that processing cost per message
// stays flat from 10,000 to 1,000,000 finished rows. Run the bench with --history 10000 and
// --history 1000000 and compare processed_per_s.
func FillHistory(ctx context.Context, db store.SQLHandle, n int, now time.Time) error {
	for start := 1; start <= n; start += historyRowsPerTx {
		end := min(start+historyRowsPerTx, n+1)
		err := db.Tx(ctx, func(tx *sql.Tx) error {
			for lo := start; lo < end; lo += historyRowsPerStatement {
				hi := min(lo+historyRowsPerStatement, end)
				if err := historyChunk(ctx, tx, lo, hi, now); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("fill the history (rows %d..%d): %w", start, end-1, err)
		}
	}
	return nil
}

func historyChunk(ctx context.Context, tx *sql.Tx, lo, hi int, now time.Time) error {
	k := hi - lo
	msgs := make([]any, 0, 5*k)
	states := make([]any, 0, 9*k)
	at := store.T(now)
	for id := lo; id < hi; id++ {
		msgs = append(msgs, id, fmt.Sprintf("<MSG><!-- history %d --></MSG>", id), at, store.StatusValid, at)
		ident := fmt.Sprintf("BENCH|HIST|ADD|%d", id)
		states = append(states, id, pipeline.Succeeded, "STTS-ADD", ident, store.IdentityKey(ident), at, at, at, 1)
	}
	// Taken, as msgx marks every row it inserts (CMINMSGS_DATE_PROCESSED).
	q := `INSERT INTO CMINMSGS (CMINMSGS_ID, CMINMSGS_CLOB_MSG, CMINMSGS_DATE_RECEIVED, CMINMSGS_STATUS, CMINMSGS_DATE_PROCESSED) VALUES ` +
		strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?, ?),", k), ",")
	if _, err := tx.ExecContext(ctx, q, msgs...); err != nil {
		return err
	}
	q = `INSERT INTO PROC_STATE (CMINMSGS_ID, STATE, TYPE_TAG, IDENTITY, IDENTITY_KEY, CREATED_AT, UPDATED_AT, PROCESSED_AT, ATTEMPTS) VALUES ` +
		strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?, ?, ?, ?, ?, ?),", k), ",")
	_, err := tx.ExecContext(ctx, q, states...)
	return err
}
