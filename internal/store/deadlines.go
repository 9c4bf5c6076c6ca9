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
const (
	DefaultDialTimeout  = 5 * time.Second
	DefaultReadTimeout  = 30 * time.Second
	DefaultWriteTimeout = 30 * time.Second
)

// applyDeadlines gives cfg the default dial, read and write timeouts where dsn does not name
// them (a DSN that names one keeps its value, 0 included: no timeout).
func applyDeadlines(cfg *mysqldrv.Config, dsn string) {
	set := dsnParams(dsn)
	if _, ok := set["timeout"]; !ok {
		cfg.Timeout = DefaultDialTimeout
	}
	if _, ok := set["readTimeout"]; !ok {
		cfg.ReadTimeout = DefaultReadTimeout
	}
	if _, ok := set["writeTimeout"]; !ok {
		cfg.WriteTimeout = DefaultWriteTimeout
	}
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
	if d.Dialect != MySQL || d.myCfg == nil {
		return d.SQL, func() {}, nil
	}
	cfg := d.myCfg.Clone()
	cfg.ReadTimeout, cfg.WriteTimeout = 0, 0
	nodes, err := newNodeConnector(cfg, d.myHosts, d.mySession, nil)
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
	if d.myCfg == nil {
		return 0, 0, 0
	}
	return d.myCfg.Timeout, d.myCfg.ReadTimeout, d.myCfg.WriteTimeout
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
