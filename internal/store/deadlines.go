package store

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"strings"
	"time"

	mysqldrv "github.com/go-sql-driver/mysql"
)

// The deadlines of a MySQL connection when its DSN does not set them (the driver's timeout,
// readTimeout and writeTimeout parameters). Without them a server that accepts connections
// and answers nothing (a Galera node cut off from its cluster, a frozen network path) holds
// every caller for as long as it stays silent; with them a read or write that hears nothing
// for that long fails, the connection is dropped, and the caller treats the database as
// unavailable.
//
// Ordinary statements (the inbox's insert, the pump's reads and commits, the dispatcher's
// marks: each a few milliseconds) get a short deadline, DefaultStatementTimeout
// (database.statement-timeout), which is the readTimeout and writeTimeout of the service's
// pools. The long ones get their own pool with DefaultLongTimeout
// (database.long-statement-timeout): the archive, the retention sweeps and the status counts
// (DB.long); migrations run without a read deadline at all (migrationDB).
const (
	DefaultDialTimeout      = 5 * time.Second
	DefaultStatementTimeout = 5 * time.Second
	DefaultLongTimeout      = 5 * time.Minute

	// DefaultReadTimeout and DefaultWriteTimeout are the service pools' readTimeout and
	// writeTimeout when the DSN and OpenOptions.StatementTimeout name none.
	DefaultReadTimeout  = DefaultStatementTimeout
	DefaultWriteTimeout = DefaultStatementTimeout
)

// applyDeadlines gives cfg the dial timeout and the statement deadline (readTimeout and
// writeTimeout) where dsn does not name them (a DSN that names one keeps its value, 0
// included: no timeout). stmt is the statement deadline, 0: DefaultStatementTimeout.
func applyDeadlines(cfg *mysqldrv.Config, dsn string, stmt time.Duration) {
	if stmt <= 0 {
		stmt = DefaultStatementTimeout
	}
	set := dsnParams(dsn)
	if _, ok := set["timeout"]; !ok {
		cfg.Timeout = DefaultDialTimeout
	}
	if _, ok := set["readTimeout"]; !ok {
		cfg.ReadTimeout = stmt
	}
	if _, ok := set["writeTimeout"]; !ok {
		cfg.WriteTimeout = stmt
	}
}

// mysqlConn is what the connection keeps of a MySQL/MariaDB database beside its pool: the
// node(s) connections go to, their configuration and session, the long statements' pool and
// the probe of the current node.
type mysqlConn struct {
	nodes   *nodeConnector   // the node(s) connections go to (failover.go)
	cfg     *mysqldrv.Config // the connections' configuration
	session []string         // the statements each new connection runs first
	hosts   []string         // database.hosts, the nodes in order (failover.go)

	long      *sql.DB          // the long statements' pool
	longCfg   *mysqldrv.Config // its connections' configuration
	longNodes *nodeConnector   // its connector

	stopProbe func() // with several nodes: ends the probe of the current node (probe.go)
}

// openLong opens the long statements' pool (MySQL): the service's connections with the long
// deadline as readTimeout and writeTimeout (unless the DSN names its own), on nodes of their
// own that follow the service pool's current node. limit 0: DefaultLongTimeout.
func (d *DB) openLong(dsn string, limit time.Duration) error {
	if limit <= 0 {
		limit = DefaultLongTimeout
	}
	cfg := d.my.cfg.Clone()
	set := dsnParams(dsn)
	if _, ok := set["readTimeout"]; !ok {
		cfg.ReadTimeout = limit
	}
	if _, ok := set["writeTimeout"]; !ok {
		cfg.WriteTimeout = limit
	}
	nodes, err := newNodeConnector(cfg, d.my.hosts, d.my.session, nil)
	if err != nil {
		return fmt.Errorf("store: open mysql for long statements: %w", err)
	}
	nodes.share(d.my.nodes)
	db := sql.OpenDB(nodes)
	db.SetMaxOpenConns(4)
	db.SetMaxIdleConns(2)
	db.SetConnMaxLifetime(5 * time.Minute)
	d.my.long, d.my.longCfg, d.my.longNodes = db, cfg, nodes
	return nil
}

// longNodes is the long statements' pool's connector (MySQL).
func (d *DB) longNodes() (*nodeConnector, bool) {
	if d.my == nil || d.my.longNodes == nil {
		return nil, false
	}
	return d.my.longNodes, true
}

// long is the pool of long statements: the archive, the retention sweeps, the status
// counts. It is the service's pool on SQLite.
func (d *DB) long() *sql.DB {
	if d.my != nil && d.my.long != nil {
		return d.my.long
	}
	return d.SQL
}

// longTx is Tx on the long statements' pool.
func (d *DB) longTx(ctx context.Context, fn func(*sql.Tx) error) error {
	return txOn(ctx, d.long(), fn)
}

// LongTimeouts returns the read and write timeouts of the long statements' pool (0 on
// SQLite).
func (d *DB) LongTimeouts() (read, write time.Duration) {
	if d.my == nil || d.my.longCfg == nil {
		return 0, 0
	}
	return d.my.longCfg.ReadTimeout, d.my.longCfg.WriteTimeout
}

// LongExec runs one statement on the long statements' pool (tests show its deadline).
func (d *DB) LongExec(ctx context.Context, q string) error {
	_, err := d.long().ExecContext(ctx, q)
	return err
}

// dsnParams returns the parameters after the DSN's "?" (none when it has none or they do
// not parse; the driver has parsed them already and would have refused them).
func dsnParams(dsn string) url.Values {
	i := strings.LastIndex(dsn, "?")
	if i < 0 {
		return nil
	}
	v, err := url.ParseQuery(dsn[i+1:])
	if err != nil {
		return nil
	}
	return v
}

// migrationDB returns the connection pool migrations run on and a function that closes it.
// On MySQL it is a pool of its own without read and write timeouts: a migration that alters
// a large table may run for minutes without a byte on the wire, and must not be cut by the
// deadlines that guard the service's queries. The dial timeout stays.
func (d *DB) migrationDB() (*sql.DB, func(), error) {
	if d.my == nil {
		return d.SQL, func() {}, nil
	}
	cfg := d.my.cfg.Clone()
	cfg.ReadTimeout, cfg.WriteTimeout = 0, 0
	nodes, err := newNodeConnector(cfg, d.my.hosts, d.my.session, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("store: open mysql for migrations: %w", err)
	}
	db := sql.OpenDB(nodes)
	db.SetMaxOpenConns(2)
	return db, func() { db.Close() }, nil
}

// Timeouts returns the dial, read and write timeouts of the database's connections (all 0
// on SQLite).
func (d *DB) Timeouts() (dial, read, write time.Duration) {
	if d.my == nil {
		return 0, 0, 0
	}
	return d.my.cfg.Timeout, d.my.cfg.ReadTimeout, d.my.cfg.WriteTimeout
}

// MigrationExec runs one statement on a pool like the one migrations run on (tests show it is
// not cut by the read deadline).
func (d *DB) MigrationExec(ctx context.Context, q string) error {
	db, done, err := d.migrationDB()
	if err != nil {
		return err
	}
	defer done()
	_, err = db.ExecContext(ctx, q)
	return err
}
