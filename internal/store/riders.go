package store

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"sync"
)

// Riders: on SQLite one transaction writes at a time (the write gate, stmtcache.go), and each
// commit costs an fsync. The inbox's insert and the dispatcher's SENT marks are short writes
// that used to queue for a transaction of their own behind the pump's batch; now they ride:
// a write queued as a rider is done inside whichever transaction holds the gate when it is
// about to commit (the pump's batch at Commit, or another rider's), under a savepoint of its
// own, and shares that commit. A rider that gets the gate before any host came leads: its own
// transaction carries every rider queued by then.
//
// Riders run last, just before COMMIT, so nothing of the host's own work can be rolled back
// after them. A rider whose write fails is rolled back to its savepoint and run again alone,
// in a transaction of its own, so its caller sees the error that write gives alone; when the
// commit fails, every rider it carried runs again alone (nothing of it is durable).

// riders is the queue of writes waiting to ride; nil on MySQL (each write commits alone).
type riders struct {
	mu    sync.Mutex
	queue []*rider
}

type rider struct {
	fn     func(*sql.Tx) error
	cancel context.CancelFunc // ends its own wait for the gate once a host took it
	taken  bool               // a host (or itself, leading) took it; under riders.mu
	failed bool               // its write failed in the host: it runs again alone
	done   chan bool          // buffered 1: true once its write is durable, false: run alone
}

// ride runs fn, a short write, in the transaction that holds the write gate next (SQLite) and
// returns once that transaction has committed; on MySQL in a transaction of its own. Either
// way the outcome is RetryTx's: nil when fn's writes are durable, else fn's error or the
// database's. fn may run more than once (a failed ride is done again alone).
func (p *Processor) ride(ctx context.Context, op string, fn func(*sql.Tx) error) error {
	if p.riders == nil {
		return p.db.RetryTx(ctx, op, fn)
	}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	r := &rider{fn: fn, cancel: cancel, done: make(chan bool, 1)}
	q := p.riders
	q.mu.Lock()
	q.queue = append(q.queue, r)
	q.mu.Unlock()

	// Queued for the gate too: a host that takes r first cancels the wait.
	tx, err := p.db.SQL.BeginTx(rctx, nil)
	q.mu.Lock()
	switch {
	case r.taken: // a host carries r: give the gate back if it came all the same
		q.mu.Unlock()
		if tx != nil {
			tx.Rollback()
		}
	case err != nil:
		q.queue = slices.DeleteFunc(q.queue, func(x *rider) bool { return x == r })
		q.mu.Unlock()
		return Unavailable(fmt.Errorf("store: begin: %w", err))
	default: // r leads: its transaction carries every rider queued
		group := q.takeLocked(r)
		q.mu.Unlock()
		err = carry(ctx, tx, group)
		if err == nil {
			err = tx.Commit()
		} else {
			tx.Rollback()
		}
		settle(group, err == nil)
	}
	if <-r.done {
		return nil
	}
	return p.db.RetryTx(ctx, op, fn)
}

// take takes every rider queued, for a host about to commit; nil on MySQL.
func (q *riders) take() []*rider {
	if q == nil {
		return nil
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.takeLocked(nil)
}

// takeLocked empties the queue (q.mu held) and stops the wait for the gate of every rider in
// it but self (the leader, which holds the gate).
func (q *riders) takeLocked(self *rider) []*rider {
	group := q.queue
	q.queue = nil
	for _, r := range group {
		r.taken = true
		if r != self {
			r.cancel()
		}
	}
	return group
}

// carry runs the riders of group in tx, each under a savepoint: a rider whose write fails is
// rolled back to it and marked to run again alone. An error says tx must not be committed (a
// savepoint could not be made or restored).
func carry(ctx context.Context, tx *sql.Tx, group []*rider) error {
	for _, r := range group {
		if _, err := tx.ExecContext(ctx, `SAVEPOINT msgx_ride`); err != nil {
			return fmt.Errorf("rider savepoint: %w", err)
		}
		if r.fn(tx) != nil {
			r.failed = true
			if _, err := tx.ExecContext(ctx, `ROLLBACK TO SAVEPOINT msgx_ride`); err != nil {
				return fmt.Errorf("rollback to the rider savepoint: %w", err)
			}
		}
		if _, err := tx.ExecContext(ctx, `RELEASE SAVEPOINT msgx_ride`); err != nil {
			return fmt.Errorf("release the rider savepoint: %w", err)
		}
	}
	return nil
}

// settle tells each rider of group its outcome once its host has committed (committed) or
// failed: a rider whose write failed, or whose host failed, runs again alone.
func settle(group []*rider, committed bool) {
	for _, r := range group {
		r.done <- committed && !r.failed
	}
}
