package store

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"time"

	"msgx/internal/pipeline"
)

// StateCounter counts messages per processing state for `msgx status` and the metrics without
// reading every PROC_STATE row at each call (a million rows take most of a second on SQLite).
//
// PENDING, FAILED and DEAD are counted each call over their index ranges: they cost what the
// backlog and the dead rows are. SUCCEEDED and SKIPPED are final (a replay moves only FAILED
// and DEAD rows), so every row below the head (the lowest unfinished message) keeps its
// finished state: they are counted once, below the head of that moment (the base), and each
// call adds those at or above that head, a range of the primary key that grows only with the
// messages since the base. The base is counted again in the background once it is older than
// Every, which also takes in what changes the rows below the head: finished rows deleted by
// retention, and a gateway row adopted late below the head. Between two bases those two can
// make the finished counts differ from the rows by what happened meanwhile; everything else
// is exact. A call reads all its counts in one snapshot (and a refresh its head and its base),
// so a batch the pump commits meanwhile is counted once, in its old states or its new.
type StateCounter struct {
	db *DB
	// Every is how old the base may get before a call counts it again in the background
	// (default a minute).
	Every time.Duration
	// BetweenReads, if set, runs in each call between its count of the unfinished states and
	// that of the finished ones: a test's seam, to commit a batch there.
	BetweenReads func()

	mu         sync.Mutex
	base       map[pipeline.ProcStatus]int // SUCCEEDED and SKIPPED below `below`
	below      int64
	at         time.Time // when the base was counted
	refreshing bool
	refresh    sync.WaitGroup // the background recount, joined by Wait
}

// NewStateCounter returns a StateCounter over the database.
func (ops *Operations) NewStateCounter() *StateCounter {
	return &StateCounter{db: ops.db, Every: time.Minute}
}

// Wait returns once the background recount a call started, if any, has ended: the owner's
// shutdown joins it before it closes the database.
func (c *StateCounter) Wait() { c.refresh.Wait() }

// finishedStates are the states counted through the base.
var finishedStates = []pipeline.ProcStatus{pipeline.Succeeded, pipeline.Skipped}

// Counts returns the number of messages in each state (every state present, 0 if none), as
// CountByState does. The first call counts the base itself; a later one whose base is older
// than Every at now starts counting a new one in the background and answers from the old.
func (c *StateCounter) Counts(ctx context.Context, now time.Time) (map[pipeline.ProcStatus]int, error) {
	c.mu.Lock()
	base, below, at := c.base, c.below, c.at
	stale := base != nil && (now.Sub(at) >= c.every() || now.Before(at)) && !c.refreshing
	if stale {
		c.refreshing = true
	}
	c.mu.Unlock()
	if base == nil {
		if err := c.Refresh(ctx, now); err != nil {
			return nil, err
		}
		c.mu.Lock()
		base, below = c.base, c.below
		c.mu.Unlock()
	}
	if stale {
		c.refresh.Go(func() {
			rctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			c.Refresh(rctx, now) // a failure keeps the old base; the next call tries again
			c.mu.Lock()
			c.refreshing = false
			c.mu.Unlock()
		})
	}
	var out, above map[pipeline.ProcStatus]int
	err := c.db.readSnapshotOn(ctx, c.db.long(), func(tx *sql.Tx) error {
		var err error
		if out, err = countStates(ctx, tx, pipeline.Pending, pipeline.Failed, pipeline.Dead); err != nil {
			return err
		}
		if c.BetweenReads != nil {
			c.BetweenReads()
		}
		above, err = countFinished(ctx, tx, `CMINMSGS_ID >= ?`, below)
		return err
	})
	if err != nil {
		return nil, err
	}
	for _, st := range finishedStates {
		out[st] = base[st] + above[st]
	}
	return out, nil
}

// Refresh counts the base again: the finished messages below the current head.
func (c *StateCounter) Refresh(ctx context.Context, now time.Time) error {
	var (
		head sql.NullInt64
		base map[pipeline.ProcStatus]int
	)
	err := c.db.readSnapshotOn(ctx, c.db.long(), func(tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, `SELECT MIN(ID) FROM (
  SELECT MIN(CMINMSGS_ID) AS ID FROM PROC_STATE WHERE STATE = 'PENDING'
  UNION ALL SELECT MIN(CMINMSGS_ID) FROM PROC_STATE WHERE STATE = 'FAILED'
  UNION ALL SELECT MAX(CMINMSGS_ID) + 1 FROM PROC_STATE) h`).Scan(&head)
		if err != nil {
			return Unavailable(fmt.Errorf("count messages: find the head: %w", err))
		}
		base, err = countFinished(ctx, tx, `CMINMSGS_ID < ?`, head.Int64)
		return err
	})
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.base, c.below, c.at = base, head.Int64, now
	c.mu.Unlock()
	return nil
}

func (c *StateCounter) every() time.Duration {
	if c.Every <= 0 {
		return time.Minute
	}
	return c.Every
}

// countFinished counts on q the SUCCEEDED and SKIPPED messages whose id meets cond (one ? for
// id), each over its range of the (STATE, CMINMSGS_ID) index.
func countFinished(ctx context.Context, q rowQuerier, cond string, id int64) (map[pipeline.ProcStatus]int, error) {
	out := map[pipeline.ProcStatus]int{}
	for _, st := range finishedStates {
		var n int
		if err := q.QueryRowContext(ctx, `SELECT COUNT(*) FROM PROC_STATE WHERE STATE = ? AND `+cond, string(st), id).Scan(&n); err != nil {
			return nil, Unavailable(fmt.Errorf("count %s messages: %w", st, err))
		}
		out[st] = n
	}
	return out, nil
}
