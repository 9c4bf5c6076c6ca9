package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// PumpLease is the name of the pump lease (the PUMP_LEASE row): the instance that holds it
// runs the pump and the dispatcher; /readyz and the status read who does.
const PumpLease = "pump"

// LeaseHeldError says another instance holds the pump lease.
type LeaseHeldError struct {
	Holder string
	Until  time.Time
}

func (e *LeaseHeldError) Error() string {
	return fmt.Sprintf("another msgx instance (%s) holds the pump lease on this database until %s; only one pump may run per database",
		e.Holder, e.Until.UTC().Format(time.RFC3339))
}

// AcquireLease takes the lease name for holder until now+ttl, unless another holder has it
// and it has not expired (then *LeaseHeldError). Taking a lease one already holds renews it.
func (l *Leases) AcquireLease(ctx context.Context, name, holder string, ttl time.Duration, now time.Time) error {
	acquire := func(tx *sql.Tx) error {
		var cur string
		var exp NullTime
		q := `SELECT HOLDER, EXPIRES_AT FROM PUMP_LEASE WHERE NAME = ?` + l.db.Dialect.ForUpdate()
		err := tx.QueryRowContext(ctx, q, name).Scan(&cur, &exp)
		switch {
		case err == sql.ErrNoRows:
			_, err = tx.ExecContext(ctx, `INSERT INTO PUMP_LEASE (NAME, HOLDER, EXPIRES_AT, ACQUIRED_AT) VALUES (?, ?, ?, ?)`,
				name, holder, T(now.Add(ttl)), T(now))
			if err != nil && IsUniqueViolation(err) {
				return &LeaseHeldError{Holder: "unknown", Until: now.Add(ttl)}
			}
			return err
		case err != nil:
			return Unavailable(err)
		}
		if cur != holder && exp.Time.After(now) {
			return &LeaseHeldError{Holder: cur, Until: exp.Time}
		}
		_, err = tx.ExecContext(ctx, `UPDATE PUMP_LEASE SET HOLDER = ?, EXPIRES_AT = ?, ACQUIRED_AT = ? WHERE NAME = ?`,
			holder, T(now.Add(ttl)), T(now), name)
		return err
	}
	return l.db.retryConflicts(ctx, "lease", func() error { return l.leaseTx(ctx, acquire) })
}

// LeaseClaim is a claim to a lease: its name, who claims it and for how long.
type LeaseClaim struct {
	Name   string
	Holder string
	TTL    time.Duration
}

// TakeOverLease gives lease c.Name to c.Holder for c.TTL, taking it from dead, a holder known
// to have died (its process is gone), without waiting for it to expire. It fails when the
// lease is no longer dead's.
func (l *Leases) TakeOverLease(ctx context.Context, c LeaseClaim, dead string, now time.Time) error {
	res, err := l.lease().ExecContext(ctx, `UPDATE PUMP_LEASE SET HOLDER = ?, EXPIRES_AT = ?, ACQUIRED_AT = ? WHERE NAME = ? AND HOLDER = ?`,
		c.Holder, T(now.Add(c.TTL)), T(now), c.Name, dead)
	if err != nil {
		return Unavailable(err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return fmt.Errorf("pump lease %q is no longer held by %s", c.Name, dead)
	}
	return nil
}

type fence struct{ name, holder string }

// ErrFenced is returned by the pump's writes when this instance no longer holds the lease.
var ErrFenced = errors.New("this instance no longer holds the pump lease")

// SetFence makes every processing write of the pump (Succeed, Record) check, inside its
// transaction, that holder still holds lease name, so a pump that was paused past its lease
// (and replaced by another instance) cannot commit anything. Call it before the pump starts.
func (l *Leases) SetFence(name, holder string) { l.fence = &fence{name: name, holder: holder} }

// checkFence verifies the lease inside tx (SQLite transactions are serial already). On MySQL
// it writes the lease row: a take-over waits for this transaction rather than overlapping it,
// and on a Galera cluster, where a row lock is local to its node, a take-over committed on
// another node conflicts with this transaction at certification instead of passing unseen.
func (l *Leases) checkFence(ctx context.Context, tx *sql.Tx) error {
	if l.fence == nil {
		return nil
	}
	if l.db.Dialect == MySQL {
		res, err := tx.ExecContext(ctx, fenceUpdate, l.fence.name, l.fence.holder)
		if err != nil {
			return Unavailable(fmt.Errorf("check the pump lease: %w", err))
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return ErrFenced
		}
		return nil
	}
	q := `SELECT 1 FROM PUMP_LEASE WHERE NAME = ? AND HOLDER = ?`
	var one int
	err := tx.QueryRowContext(ctx, q, l.fence.name, l.fence.holder).Scan(&one)
	if err == sql.ErrNoRows {
		return ErrFenced
	}
	if err != nil {
		return Unavailable(fmt.Errorf("check the pump lease: %w", err))
	}
	return nil
}

// fenceUpdate is the lease check on MySQL: it changes one row while the lease is the holder's.
const fenceUpdate = `UPDATE PUMP_LEASE SET FENCE_CHECKS = FENCE_CHECKS + 1 WHERE NAME = ? AND HOLDER = ?`

// RenewLease extends a lease holder holds; it fails when the lease was lost. An update that
// ends in a conflict (the pump's batch holds the row, a Galera node certified another change
// first) is done again (RetryTx).
func (l *Leases) RenewLease(ctx context.Context, name, holder string, ttl time.Duration, now time.Time) error {
	var res sql.Result
	err := l.db.retryConflicts(ctx, "lease", func() (err error) {
		res, err = l.lease().ExecContext(ctx, `UPDATE PUMP_LEASE SET EXPIRES_AT = ? WHERE NAME = ? AND HOLDER = ?`, T(now.Add(ttl)), name, holder)
		return err
	})
	if err != nil {
		return Unavailable(err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return fmt.Errorf("pump lease %q is no longer held by %s", name, holder)
	}
	return nil
}

// ReleaseLease gives the lease up so another instance may start at once.
func (l *Leases) ReleaseLease(ctx context.Context, name, holder string) error {
	_, err := l.lease().ExecContext(ctx, `DELETE FROM PUMP_LEASE WHERE NAME = ? AND HOLDER = ?`, name, holder)
	return err
}

// LeaseHolder returns who holds the lease and until when ("" when free).
func (l *Leases) LeaseHolder(ctx context.Context, name string) (string, time.Time, error) {
	var h string
	var exp NullTime
	err := l.lease().QueryRowContext(ctx, `SELECT HOLDER, EXPIRES_AT FROM PUMP_LEASE WHERE NAME = ?`, name).Scan(&h, &exp)
	if err == sql.ErrNoRows {
		return "", time.Time{}, nil
	}
	return h, exp.Time, err
}

// lease is the pool the lease's statements use: its own (leasePool), so that renewing the
// lease never waits for a connection behind the pump, the dispatcher or the inbox. On MySQL
// nothing else locks the lease row but a batch's commit (Batch.Commit); SQLite has one writer
// per file, so there a renewal still waits for the write transaction in hand, which phase A
// keeps short by bounding every Redis call (redis.timeout).
func (l *Leases) lease() *sql.DB {
	if l.sql != nil {
		return l.sql
	}
	return l.db.SQL
}

// leaseTx runs fn in a transaction of the lease's pool.
func (l *Leases) leaseTx(ctx context.Context, fn func(*sql.Tx) error) error {
	return txOn(ctx, l.lease(), fn)
}

// PingLease checks that the database answers on the lease's own pool (the lease keeper's
// check between renewals).
func (l *Leases) PingLease(ctx context.Context) error {
	if err := l.lease().PingContext(ctx); err != nil {
		return Unavailable(err)
	}
	return nil
}
