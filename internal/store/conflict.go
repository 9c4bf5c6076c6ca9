package store

import (
	"context"
	"database/sql"
	"time"

	"msgx/internal/pipeline"
)

// MySQL errors that end a transaction which, done again, may well succeed.
const (
	myLockDeadlock    = 1213 // ER_LOCK_DEADLOCK: a deadlock, or a Galera certification failure at commit
	myLockWaitTimeout = 1205 // ER_LOCK_WAIT_TIMEOUT: a row lock held elsewhere past innodb_lock_wait_timeout
)

// IsConflict reports whether err is a transaction conflict: a deadlock InnoDB broke by rolling
// this transaction back, a certification conflict of a MariaDB Galera cluster (the same error
// 1213, raised at COMMIT when another node committed a change to the same rows first), or a
// lock wait timeout. The transaction wrote nothing; done again from its start, it is expected
// to succeed.
func IsConflict(err error) bool { return isMySQLError(err, myLockDeadlock, myLockWaitTimeout) }

// ConflictPolicy bounds the redoing of a transaction that ended in a conflict: at most
// MaxAttempts tries in all, with a short pause (Delay) between them so the other transaction
// can finish. Past it the conflict is an error like any other (the database is unavailable).
var ConflictPolicy = pipeline.RetryPolicy{
	MaxAttempts: 3,
	Steps:       []time.Duration{20 * time.Millisecond, 100 * time.Millisecond},
}

// SetConflictHook sets a function told the operation ("inbox", "lease", "dispatch") each time
// one of its transactions is done again after a conflict (the conflict-retries metric). Call it
// before use.
func (d *DB) SetConflictHook(fn func(op string)) { d.conflictHook = fn }

// ConflictRetried tells the conflict hook that a transaction of op is done again (the pump
// redoes its batches itself and reports them here).
func (d *DB) ConflictRetried(op string) {
	if d.conflictHook != nil {
		d.conflictHook(op)
	}
}

// RetryTx is Tx, done again from its start when it ends in a conflict (IsConflict), up to
// ConflictPolicy.MaxAttempts tries, while ctx lasts. fn must be safe to run again: it may
// not keep anything of a try that was rolled back.
func (d *DB) RetryTx(ctx context.Context, op string, fn func(*sql.Tx) error) error {
	return d.retryConflicts(ctx, op, func() error { return d.Tx(ctx, fn) })
}

// retryConflicts runs do, again after a conflict, as RetryTx says.
func (d *DB) retryConflicts(ctx context.Context, op string, do func() error) error {
	for attempt := 1; ; attempt++ {
		err := do()
		if err == nil || !IsConflict(err) || attempt >= ConflictPolicy.MaxAttempts {
			return err
		}
		d.ConflictRetried(op)
		if !pipeline.Sleep(ctx, ConflictPolicy.Delay(attempt)) {
			return err
		}
	}
}
