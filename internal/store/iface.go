package store

import (
	"context"
	"database/sql"
	"time"

	"msgx/internal/pipeline"
)

// The store's contract, one small interface per concern. The packages that use the store
// (pump, dispatch, api, jobs) take these, never an owner's concrete type, so what they may do
// is visible in their signatures; every implementation passes the shared contract suite of
// package storetest on every dialect. The table owners (owners.go) implement them on SQLite
// and MySQL/MariaDB, each the interfaces of its tables; DB itself is the SQLHandle and Health.

// Inbox stores raw messages durably (CMINMSGS with their PENDING PROC_STATE).
type Inbox interface {
	// InsertMessages stores raws in one transaction and returns their ids in order; on
	// return without error they are durable.
	InsertMessages(ctx context.Context, raws []string, now time.Time) ([]int64, error)
}

// Adoption brings rows another program (the legacy gateway) inserted straight into CMINMSGS
// into the order.
type Adoption interface {
	// Heads returns the highest CMINMSGS id, the highest id with a processing state and how
	// many ids in (after, msgs] have one.
	Heads(ctx context.Context, after int64) (msgs, states, stated int64, err error)
	// AdoptLegacy gives a PENDING state to the adoptable rows with ids in (afterID, upTo].
	AdoptLegacy(ctx context.Context, afterID, upTo int64, now time.Time) (int, error)
	// Backlog counts the rows waiting to be adopted and when the oldest was received.
	Backlog(ctx context.Context) (n int, oldest *time.Time, err error)
	// Unstated returns the ids in (after, upTo] that have no processing state, and those
	// that have a CMINMSGS row or a processing state.
	Unstated(ctx context.Context, after, upTo int64) (missing, present []int64, err error)
	// IDStep returns how far apart the ids one server gives out are (1 but on Galera).
	IDStep(ctx context.Context) (int64, error)
	// Visible returns those of ids committed in CMINMSGS and, of them, the adoptable ones.
	Visible(ctx context.Context, ids []int64) (visible, adoptable []int64, err error)
	// AdoptIDs adopts the adoptable ones of ids and returns those with a state afterwards.
	AdoptIDs(ctx context.Context, ids []int64, now time.Time) (stated []int64, err error)
}

// Processing is the pump's side of PROC_STATE: the head, the raw text, identity binding and
// the outcome of each message.
type Processing interface {
	// Head returns the lowest unfinished message, or nil.
	Head(ctx context.Context) (*Message, error)
	// Raw returns the raw text of a message, live or archived.
	Raw(ctx context.Context, id int64) (raw string, ok bool, err error)
	// BoundTo returns the message holding identity, if any.
	BoundTo(ctx context.Context, identity string) (int64, bool, error)
	// Record writes an outcome; ErrChanged when the row is no longer as read.
	Record(ctx context.Context, id int64, o Outcome, now time.Time) error
	// Succeed commits an applied message with its effects; ErrIdentityTaken or ErrChanged
	// when it must not.
	Succeed(ctx context.Context, id int64, s Success, flights FlightWriter, now time.Time) (events, refChanged int, err error)
	// AppliedAfter returns the SUCCEEDED messages after one that may have set something of
	// the flights and reference TYPEs given (nothing goes backwards, I6).
	AppliedAfter(ctx context.Context, after int64, flids []int64, refTypes []string) ([]int64, error)
	// LastApplied returns the highest SUCCEEDED message id, 0 when none.
	LastApplied(ctx context.Context) (int64, error)
}

// Messages is what operators read of messages and how they move them.
type Messages interface {
	GetMessage(ctx context.Context, id int64) (*Message, error)
	ListMessages(ctx context.Context, f MessageFilter) ([]*Message, error)
	CountByState(ctx context.Context) (map[pipeline.ProcStatus]int, error)
	// Replay moves FAILED/DEAD rows back to PENDING (never MALFORMED ones).
	Replay(ctx context.Context, classes []pipeline.ErrorClass, ids []int64, now time.Time) (ReplayResult, error)
}

// Reference reads the stored reference data (REF_DATA); the pump writes it through Succeed.
type Reference interface {
	RefList(ctx context.Context, typ string) ([]RefEntry, error)
	RefGet(ctx context.Context, typ, key string) (*RefEntry, error)
}

// Jobs is the PUMP_JOB queue, ordered with the messages.
type Jobs interface {
	EnqueueJob(ctx context.Context, kind, params string, now time.Time) (*Job, error)
	HeadJob(ctx context.Context) (*Job, error)
	ListJobs(ctx context.Context, limit int) ([]*Job, error)
	// GetJob returns one job; ErrNotFound when there is none of that id.
	GetJob(ctx context.Context, id int64) (*Job, error)
	FinishJob(ctx context.Context, id int64, o JobOutcome, now time.Time) error
}

// Archive moves finished messages to CMINMSGS_HST.
type Archive interface {
	Archive(ctx context.Context, maxID int64, before, now time.Time, progress func(moved int)) (int, error)
}

// Lease is the one-pump-per-database lease (PUMP_LEASE).
type Lease interface {
	AcquireLease(ctx context.Context, name, holder string, ttl time.Duration, now time.Time) error
	TakeOverLease(ctx context.Context, c LeaseClaim, dead string, now time.Time) error
	RenewLease(ctx context.Context, name, holder string, ttl time.Duration, now time.Time) error
	ReleaseLease(ctx context.Context, name, holder string) error
	LeaseHolder(ctx context.Context, name string) (string, time.Time, error)
}

// SQLHandle is the database's own SQL handle, for the packages that own tables in it and run
// their statements on them themselves (the SQL flight store's FLIGHT_STATE) and for the
// bench's scratch tables.
type SQLHandle interface {
	// SQLDB returns the database's handle.
	SQLDB() *sql.DB
	// Tx runs fn in one transaction, committed when fn returns nil and rolled back otherwise.
	Tx(ctx context.Context, fn func(*sql.Tx) error) error
}

// SQLDB returns the database's handle (SQLHandle).
func (d *DB) SQLDB() *sql.DB { return d.SQL }

// SQLDialect returns the database's dialect, for code that runs its own statements on it.
func (d *DB) SQLDialect() Dialect { return d.Dialect }

// Health tells whether the database answers.
type Health interface {
	Ping(ctx context.Context) error
}

// Ping checks that the database answers.
func (d *DB) Ping(ctx context.Context) error {
	if err := d.SQL.PingContext(ctx); err != nil {
		return Unavailable(err)
	}
	return nil
}

var (
	_ Inbox      = (*Intake)(nil)
	_ Adoption   = (*Intake)(nil)
	_ Processing = (*Processor)(nil)
	_ Messages   = (*Operations)(nil)
	_ Reference  = (*RefData)(nil)
	_ Jobs       = (*JobQueue)(nil)
	_ Archive    = (*Archiver)(nil)
	_ Lease      = (*Leases)(nil)
	_ Health     = (*DB)(nil)
	_ SQLHandle  = (*DB)(nil)
)
