// Package store is msgx's SQL layer and its one contract. It owns the tables of the message
// flow: CMINMSGS and CMINMSGS_HST (the legacy inbound tables, shared with the gateway),
// PROC_STATE, MSG_EVENT (the outbox: inserted in the pump's success transaction, delivered
// through Events) with MSG_EVENT_SENT (each target's count of events sent), REF_DATA,
// PUMP_JOB and PUMP_LEASE, with the embedded migrations; and, for the data requests to the
// AODB, the legacy outbound table COUTMSGS, REQ_TRACK and MSGX_COUNTER (requests.go,
// coutmsgs.go). FLIGHT_STATE belongs to the SQL flight store in internal/flight, which writes it inside the pump's
// transaction (FlightWriter).
//
// An open database (DB, from Open) is the connection: its pools, the dialect, the migrations
// and the transaction helpers. The tables are worked through their owners, one type per set
// of tables and one field of DB each (owners.go): Intake (CMINMSGS as the inbox writes it,
// adoption, the legacy columns), Processor (PROC_STATE as the pump writes it, its batches),
// Outbox (MSG_EVENT), Operations (the operators' listings, searches and actions), Triage
// (dead letters, PROBLEM_LOG), Archiver (CMINMSGS_HST, the purges), JobQueue (PUMP_JOB),
// Leases (PUMP_LEASE), RequestTracker (COUTMSGS, REQ_TRACK), RefData (REF_DATA) and Flights
// (MSG_FLIGHT). The packages that use the store take its small interfaces (iface.go and the
// owners' files: Inbox, Adoption, Processing, Batching, Messages, Operator, Events, …), never
// an owner's concrete type, and every behaviour they rely on is in the contract suite of
// package storetest, a suite per owner, run on SQLite, MySQL/MariaDB and MySQL/MariaDB on the
// legacy CMINMSGS table.
//
// Both dialects take the same queries with ? placeholders; where they differ (row locks,
// insert-or-ignore) the Dialect says how (dialect.go). Driver errors are told apart by their
// codes (errors.go), and every text written is fitted to its column. msgx's own times are
// stored in UTC with microseconds, as text "YYYY-MM-DD HH:MM:SS.ffffff" on SQLite and
// DATETIME(6) on MySQL, so both compare alike; the legacy CMINMSGS datetime columns hold
// airport local time in legacy.timezone, at the column's precision (cminmsgs.go).
package store

import (
	"cmp"
	"context"
	"database/sql"
	"database/sql/driver"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	mysqldrv "github.com/go-sql-driver/mysql"
	"github.com/pressly/goose/v3"
	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// Dialect names a SQL dialect.
type Dialect string

// Supported dialects.
const (
	SQLite Dialect = "sqlite"
	MySQL  Dialect = "mysql"
)

// DB is an open msgx database: the connection (its pools, and on MySQL the node it uses),
// the dialect, the migrations and the transaction helpers. What is done with the tables is
// done through their owners, one field each, built by Open over the same connection.
type DB struct {
	SQL     *sql.DB
	Dialect Dialect

	my *mysqlConn // MySQL: the nodes, the session, the long statements' pool; nil on SQLite

	conflictHook func(op string) // set by SetConflictHook (conflict.go)
	// writes holds the counter of writes, if one is installed (CountWrites, writecount.go);
	// the connections read it.
	writes *atomic.Pointer[WriteCounter]

	// The table owners.
	Intake         *Intake         // CMINMSGS: the inbox's inserts, adoption, the legacy columns
	Processor      *Processor      // PROC_STATE: the pump's head, outcomes and batches
	Outbox         *Outbox         // MSG_EVENT: the events and their delivery
	Operations     *Operations     // what operators list, search, replay, park and pause
	Triage         *Triage         // dead letters' acknowledgements and PROBLEM_LOG
	Archiver       *Archiver       // CMINMSGS_HST and the retention purges
	JobQueue       *JobQueue       // PUMP_JOB
	Leases         *Leases         // PUMP_LEASE and the fence of the pump's writes
	RequestTracker *RequestTracker // COUTMSGS, REQ_TRACK, MSGX_COUNTER
	RefData        *RefData        // REF_DATA
	Flights        *Flights        // MSG_FLIGHT and the as-of reads of applied messages
}

//go:embed migrations
var migrations embed.FS

// TimeLayout is how times are written to the database: UTC, microseconds.
const TimeLayout = "2006-01-02 15:04:05.000000"

// T formats t for a query argument (UTC, microseconds). A zero time is NULL.
func T(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Format(TimeLayout)
}

// NullTime scans a time column of either dialect; Valid is false for NULL.
type NullTime struct {
	Time  time.Time
	Valid bool
}

// Scan implements sql.Scanner for text, bytes and time.Time values.
func (n *NullTime) Scan(v any) error {
	n.Time, n.Valid = time.Time{}, false
	switch x := v.(type) {
	case nil:
		return nil
	case time.Time:
		n.Time, n.Valid = x.UTC(), true
		return nil
	case []byte:
		return n.parse(string(x))
	case string:
		return n.parse(x)
	}
	return fmt.Errorf("store: cannot scan %T as a time", v)
}

func (n *NullTime) parse(s string) error {
	for _, layout := range []string{TimeLayout, "2006-01-02 15:04:05", time.RFC3339Nano} {
		if t, err := time.ParseInLocation(layout, s, time.UTC); err == nil {
			n.Time, n.Valid = t.UTC(), true
			return nil
		}
	}
	return fmt.Errorf("store: cannot parse time %q", s)
}

// Ptr returns the time or nil, for JSON.
func (n NullTime) Ptr() *time.Time {
	if !n.Valid {
		return nil
	}
	t := n.Time
	return &t
}

// sqliteBusyTimeout is how long a SQLite transaction waits for the write lock.
const sqliteBusyTimeout = 10 * time.Second

// Open opens the database of driver ("sqlite" or "mysql") at dsn. For SQLite, dsn is a file
// path (its directory is created) and the connection runs in WAL mode with
// synchronous=FULL, so a commit is on disk before it returns.
func Open(ctx context.Context, driver, dsn string) (*DB, error) {
	return OpenWith(ctx, driver, dsn, OpenOptions{})
}

// OpenOptions are Open's settings beyond the driver and the DSN.
type OpenOptions struct {
	// Hosts are the nodes (host:port) of a MySQL/MariaDB Galera cluster, tried in order
	// (database.hosts); the DSN's address is then unused. Empty: the DSN's address.
	Hosts []string
	// Log receives a line each time msgx moves to another node; nil: not logged.
	Log *slog.Logger
	// StatementTimeout is the deadline of ordinary statements on MySQL, the connections'
	// readTimeout and writeTimeout unless the DSN names them (database.statement-timeout;
	// 0: DefaultStatementTimeout). LongStatementTimeout is the long statements' (the
	// archive, the retention sweeps, the status counts; database.long-statement-timeout; 0:
	// DefaultLongTimeout). Migrations have none.
	StatementTimeout, LongStatementTimeout time.Duration
	// ProbeEvery and ProbeTimeout set the probe of the current node when there are several
	// Hosts (probe.go): how often, and how long it may go unanswered before the node is
	// marked down (0: DefaultProbeEvery, DefaultProbeTimeout; ProbeTimeout < 0: no probe).
	ProbeEvery, ProbeTimeout time.Duration
}

// OpenWith is Open with options: for MySQL, several nodes of which it uses one at a time,
// moving to the next that answers and is synced when the current one fails (failover.go).
func OpenWith(ctx context.Context, driver, dsn string, o OpenOptions) (*DB, error) {
	switch Dialect(driver) {
	case SQLite:
		if len(o.Hosts) > 0 {
			return nil, errors.New("store: several hosts are for mysql only")
		}
		return openSQLite(ctx, dsn)
	case MySQL:
		return openMySQL(ctx, dsn, o)
	}
	return nil, fmt.Errorf("store: unknown driver %q (want sqlite or mysql)", driver)
}

// openSQLite is Open of a SQLite file.
func openSQLite(ctx context.Context, dsn string) (*DB, error) {
	if dsn == "" {
		return nil, errors.New("store: empty sqlite path")
	}
	path := dsn
	if !strings.HasPrefix(dsn, "file:") && dsn != ":memory:" {
		if dir := filepath.Dir(dsn); dir != "" {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return nil, fmt.Errorf("store: create %s: %w", dir, err)
			}
		}
		path = "file:" + dsn
	}
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	// temp_store(MEMORY): the statement and savepoint journals (a multi-row UPDATE such as the
	// dispatcher's SENT marks keeps one) stay in memory instead of a temporary file written
	// page by page; the durable journal is the WAL.
	path += sep + "_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=busy_timeout(" + strconv.Itoa(int(sqliteBusyTimeout/time.Millisecond)) + ")&_pragma=foreign_keys(ON)&_pragma=temp_store(MEMORY)&_txlock=immediate"
	// The registered driver, its connections with a statement cache (stmtcache.go).
	plain, err := sql.Open("sqlite", path)
	if err != nil {
		return nil, fmt.Errorf("store: open sqlite %s: %w", dsn, err)
	}
	writes := new(atomic.Pointer[WriteCounter])
	connector := cachingConnector{drv: plain.Driver(), dsn: path, gate: newWriteGate(sqliteBusyTimeout), writes: writes}
	db := sql.OpenDB(connector)
	plain.Close()
	// Every connection stays open once opened (database/sql keeps 2 idle by default): the
	// pump, the inbox and each delivery target use one at the same time, and one closed on
	// its return was opened again for the next read, its schema parsed, its statements
	// compiled and its page cache filled anew.
	db.SetMaxOpenConns(8)
	db.SetMaxIdleConns(8)
	d := newDB(db, SQLite, leasePool(connector), nil)
	d.writes = writes
	if err := db.PingContext(ctx); err != nil {
		d.Close()
		return nil, Unavailable(fmt.Errorf("store: open sqlite %s: %w", dsn, err))
	}
	if _, err := d.Intake.columns(ctx, db); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

// openMySQL is Open of a MySQL/MariaDB database.
func openMySQL(ctx context.Context, dsn string, o OpenOptions) (*DB, error) {
	cfg, err := mysqldrv.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("store: mysql dsn: %w", err)
	}
	cfg.ParseTime = false
	cfg.MultiStatements = true
	// Without it every query with arguments is a prepare, an execute and a close: three
	// round trips where one does. Safe with the utf8mb4 connection charset.
	cfg.InterpolateParams = true
	// RowsAffected counts the rows a conditional UPDATE matched, not only those whose values
	// changed, so "0 rows" always means "the row was not in the state we read".
	cfg.ClientFoundRows = true
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	cfg.Params["time_zone"] = "'+00:00'"
	cfg.Loc = time.UTC
	applyDeadlines(cfg, dsn, o.StatementTimeout)
	// Every session runs at an explicit isolation level (READ COMMITTED unless the DSN
	// names one with transaction_isolation=REPEATABLE-READ) and waits at most
	// innodb_lock_wait_timeout (10 s unless the DSN says otherwise) for a row lock, so
	// the inbox never hangs behind another program's open transaction.
	session, err := sessionSetup(cfg)
	if err != nil {
		return nil, err
	}
	nodes, err := newNodeConnector(cfg, o.Hosts, session, o.Log)
	if err != nil {
		return nil, fmt.Errorf("store: open mysql: %w", err)
	}
	nodes.writes = new(atomic.Pointer[WriteCounter])
	db := sql.OpenDB(nodes)
	// As on SQLite, connections stay open (up to their lifetime) rather than be closed beyond
	// database/sql's 2 idle and dialled again, with their session set-up, for the next query.
	db.SetMaxOpenConns(16)
	db.SetMaxIdleConns(16)
	db.SetConnMaxLifetime(5 * time.Minute)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, Unavailable(fmt.Errorf("store: connect mysql %s@%s: %w", cfg.User, strings.Join(nodes.All(), ","), err))
	}
	d := newDB(db, MySQL, leasePool(nodes), &mysqlConn{nodes: nodes, cfg: cfg, session: session, hosts: o.Hosts})
	d.writes = nodes.writes
	if err := d.openLong(dsn, o.LongStatementTimeout); err != nil {
		d.Close()
		return nil, err
	}
	if len(o.Hosts) > 1 && o.ProbeTimeout >= 0 {
		every, timeout := cmp.Or(o.ProbeEvery, DefaultProbeEvery), cmp.Or(o.ProbeTimeout, DefaultProbeTimeout)
		nodes.attempt = timeout
		if ln, ok := d.longNodes(); ok {
			ln.attempt = timeout
		}
		pctx, stop := context.WithCancel(context.Background())
		go nodes.runProbe(pctx, every, timeout)
		d.my.stopProbe = stop
	}
	if err := db.QueryRowContext(ctx, `SELECT @@max_allowed_packet`).Scan(&d.Intake.maxPacket); err != nil {
		d.Close()
		return nil, Unavailable(fmt.Errorf("store: read max_allowed_packet: %w", err))
	}
	if _, err := d.Intake.columns(ctx, db); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

// MaxMessageBytes returns the largest message the inbox can store, 0 when the database sets
// no limit (SQLite). On MySQL it is max_allowed_packet less an eighth (what the statement's
// escaping of quotes, backslashes and line ends may add to the text) and 4 KiB (the rest of
// the statement), and no more than the CMINMSGS_CLOB_MSG column holds: a body over it could
// only be refused by the database. A message under it with unusually many characters to
// escape is still refused before it is sent (ErrTooLarge), never by the server.
func (in *Intake) MaxMessageBytes(ctx context.Context) (int64, error) {
	if in.maxPacket <= 0 {
		return 0, nil
	}
	limit := int64(in.maxPacket - in.maxPacket/8 - packetSlack)
	cols, err := in.columns(ctx, in.db.SQL)
	if err != nil {
		return 0, err
	}
	if c := cols[colClob]; c.bytes > 0 && int64(c.bytes) < limit {
		limit = int64(c.bytes)
	}
	return max(limit, 1), nil
}

// Nodes tells which MySQL node msgx uses and how often it moved to another; nil on SQLite.
func (d *DB) Nodes() Nodes {
	if d.my == nil {
		return nil
	}
	return d.my.nodes
}

// Close closes the database.
func (d *DB) Close() error {
	if d.my != nil {
		if d.my.stopProbe != nil {
			d.my.stopProbe()
		}
		if d.my.long != nil {
			d.my.long.Close()
		}
	}
	if d.Leases.sql != nil {
		d.Leases.sql.Close()
	}
	return d.SQL.Close()
}

// newDB returns the database over pool with its table owners; lease is the lease's own pool,
// my what MySQL keeps beside the pool (nil on SQLite).
func newDB(pool *sql.DB, dialect Dialect, lease *sql.DB, my *mysqlConn) *DB {
	d := &DB{SQL: pool, Dialect: dialect, my: my}
	var rs *riders
	if dialect == SQLite {
		rs = &riders{}
	}
	d.Intake = &Intake{db: d, legacy: &legacyState{}}
	d.Processor = &Processor{db: d, riders: rs}
	d.Outbox = &Outbox{db: d}
	d.Operations = &Operations{db: d}
	d.Triage = &Triage{db: d}
	d.Archiver = &Archiver{db: d}
	d.JobQueue = &JobQueue{db: d}
	d.Leases = &Leases{db: d, sql: lease}
	d.RequestTracker = &RequestTracker{db: d}
	d.RefData = &RefData{db: d}
	d.Flights = &Flights{db: d}
	return d
}

// leasePool opens the lease's own pool over connector: two connections at most, kept open, so
// the lease keeper never queues behind the pool the pump, the dispatcher and the inbox share.
func leasePool(connector driver.Connector) *sql.DB {
	db := sql.OpenDB(connector)
	db.SetMaxOpenConns(2)
	db.SetMaxIdleConns(2)
	db.SetConnMaxLifetime(5 * time.Minute)
	return db
}

// Migrate applies every embedded migration not yet applied and returns the schema version.
func (d *DB) Migrate(ctx context.Context) (int64, error) {
	sub, err := fs.Sub(migrations, "migrations/"+string(d.Dialect))
	if err != nil {
		return 0, err
	}
	dialect := goose.DialectSQLite3
	if d.Dialect == MySQL {
		dialect = goose.DialectMySQL
	}
	mdb, done, err := d.migrationDB()
	if err != nil {
		return 0, err
	}
	defer done()
	p, err := goose.NewProvider(dialect, mdb, sub)
	if err != nil {
		return 0, fmt.Errorf("store: migrations: %w", err)
	}
	if _, err := p.Up(ctx); err != nil {
		return 0, fmt.Errorf("store: migrate: %w", err)
	}
	v, err := p.GetDBVersion(ctx)
	if err != nil {
		return 0, fmt.Errorf("store: schema version: %w", err)
	}
	return v, nil
}

// Tx runs fn in one transaction, committed when fn returns nil and rolled back otherwise.
func (d *DB) Tx(ctx context.Context, fn func(*sql.Tx) error) error {
	return txOn(ctx, d.SQL, fn)
}

// txOn runs fn in one transaction of pool db, as Tx says.
func txOn(ctx context.Context, db *sql.DB, fn func(*sql.Tx) error) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return Unavailable(fmt.Errorf("store: begin: %w", err))
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return Unavailable(fmt.Errorf("store: commit: %w", err))
	}
	return nil
}

// readSnapshot runs fn in a read-only transaction whose reads all see the database as of its
// first read, so counts read in several statements add up even while the pump commits. On
// MySQL it is REPEATABLE READ (the sessions run READ COMMITTED, where each statement sees what
// is committed when it starts); on SQLite a deferred BEGIN, a WAL read transaction, which
// neither takes the write lock (the DSN's _txlock=immediate is for writes) nor waits for the
// write gate (stmtcache.go).
func (d *DB) readSnapshot(ctx context.Context, fn func(*sql.Tx) error) error {
	return d.readSnapshotOn(ctx, d.SQL, fn)
}

// readSnapshotOn is readSnapshot on pool db (the long statements' for the status counts).
func (d *DB) readSnapshotOn(ctx context.Context, db *sql.DB, fn func(*sql.Tx) error) error {
	opts := &sql.TxOptions{ReadOnly: true}
	if d.Dialect == MySQL {
		opts.Isolation = sql.LevelRepeatableRead
	}
	tx, err := db.BeginTx(ctx, opts)
	if err != nil {
		return Unavailable(fmt.Errorf("store: begin a read: %w", err))
	}
	defer tx.Rollback() // it wrote nothing
	return fn(tx)
}

// rowQuerier is what a count needs of a pool or a transaction.
type rowQuerier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// ErrUnavailable marks a failure to reach the database; the inbox answers 503 on it.
var ErrUnavailable = errors.New("database unavailable")

type unavailable struct{ err error }

func (u unavailable) Error() string        { return u.err.Error() }
func (u unavailable) Unwrap() []error      { return []error{u.err, ErrUnavailable} }
func (u unavailable) Is(target error) bool { return target == ErrUnavailable }

// Unavailable marks err as a database-unavailable error.
func Unavailable(err error) error {
	if err == nil {
		return nil
	}
	return unavailable{err}
}
