// Package storetest opens throw-away msgx databases for tests: a SQLite file in the test's
// temporary directory and, when MariaDB answers on 127.0.0.1:3306 (or MSGX_TEST_MYSQL_DSN),
// a fresh MySQL database dropped at the end. Each runs a test body once per dialect, so every
// repository passes the same contract on both.
package storetest

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	mysqldrv "github.com/go-sql-driver/mysql"

	"msgx/internal/store"
	"msgx/internal/testkit"
)

// RequireServices is testkit.RequireServices, for the tests that have not moved to testkit yet.
func RequireServices() bool { return testkit.RequireServices() }

// MySQLServerDSN is the DSN of the MariaDB server tests use, without a database name.
func MySQLServerDSN() string {
	if dsn := os.Getenv("MSGX_TEST_MYSQL_DSN"); dsn != "" {
		return dsn
	}
	return "root@tcp(127.0.0.1:3306)/"
}

// SQLite opens a migrated SQLite database in t's temporary directory.
func SQLite(t testing.TB) *store.DB {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, "sqlite", filepath.Join(t.TempDir(), "msgx.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return db
}

// MySQLDSN creates an empty database on the MariaDB server and returns its DSN; the database
// is dropped when t ends. It skips t (or fails it, under RequireServices) when the server is
// absent.
func MySQLDSN(t testing.TB) string {
	t.Helper()
	server := MySQLServerDSN()
	cfg, err := mysqldrv.ParseDSN(server)
	if err != nil {
		t.Fatalf("MSGX_TEST_MYSQL_DSN: %v", err)
	}
	admin, err := sql.Open("mysql", server)
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		err = admin.PingContext(ctx)
		cancel()
	}
	if err != nil {
		testkit.RequireService(t, "MariaDB at "+cfg.Addr, err)
	}
	name := fmt.Sprintf("msgx_test_%d_%d", time.Now().UnixNano()%1e9, rand.IntN(1e6))
	if _, err := admin.Exec("CREATE DATABASE " + name + " CHARACTER SET utf8mb4"); err != nil {
		admin.Close()
		t.Fatalf("create database %s: %v", name, err)
	}
	t.Cleanup(func() {
		admin.Exec("DROP DATABASE " + name)
		admin.Close()
	})
	cfg.DBName = name
	return cfg.FormatDSN()
}

// MySQL opens a migrated, empty MySQL database (see MySQLDSN).
func MySQL(t testing.TB) *store.DB { return mySQLAfter(t) }

// MySQLLegacy opens a MySQL database that held the legacy CMINMSGS and CMINMSGS_HST tables
// (LegacyCMINMSGS) and the legacy COUTMSGS (LegacyCOUTMSGS) before msgx migrated it.
func MySQLLegacy(t testing.TB) *store.DB {
	return mySQLAfter(t, LegacyCMINMSGSFor(store.MySQL, "CMINMSGS"), LegacyCMINMSGSFor(store.MySQL, "CMINMSGS_HST"), LegacyCOUTMSGS)
}

// mySQLAfter opens a fresh MySQL database (see MySQLDSN), runs the statements of before in
// it, then migrates it.
func mySQLAfter(t testing.TB, before ...string) *store.DB {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, "mysql", MySQLDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	Exec(t, db, before...)
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return db
}

// The legacy CMINMSGS in parts: the id column and table options differ between the dialects,
// the other columns are the same text on both.
const (
	legacyIDMySQL  = "CMINMSGS_ID BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY"
	legacyIDSQLite = "CMINMSGS_ID INTEGER PRIMARY KEY AUTOINCREMENT"
	legacyColumns  = `
  CMINMSGS_CLOB_MSG MEDIUMTEXT NOT NULL,
  CMINMSGS_DATE_RECEIVED DATETIME NULL,
  CMINMSGS_DATE_PROCESSED DATETIME NULL,
  CMINMSGS_SUBSYSTEM_NAME VARCHAR(4) NULL,
  CMINMSGS_SUBSYSTEM_SEQUENCE MEDIUMINT NULL,
  CMINMSGS_SUBSYSTEM_DATE_SENT DATETIME NULL,
  CMINMSGS_SUBSYSTEM_SUBTYPE VARCHAR(4) NULL,
  CMINMSGS_SUBSYSTEM_TYPE VARCHAR(4) NULL,
  CMINMSGS_STATUS VARCHAR(20) NULL`
	legacyOptionsMySQL = " ENGINE=InnoDB DEFAULT CHARSET=utf8mb4"
)

// LegacyCMINMSGS is the legacy inbound table exactly as docs/sis-format.md §4.1 gives its column types
// (MEDIUMTEXT message, DATETIME without fraction, MEDIUMINT sequence, VARCHAR(4) subsystem
// columns), as the legacy database has it before msgx first migrates: a MySQL CREATE TABLE
// with %s for the table's name. LegacyCMINMSGSFor gives it for either dialect.
const LegacyCMINMSGS = "CREATE TABLE %s (\n  " + legacyIDMySQL + "," + legacyColumns + "\n)" + legacyOptionsMySQL

// LegacyCMINMSGSFor is LegacyCMINMSGS for dialect, creating table: on SQLite the same columns,
// with an INTEGER PRIMARY KEY AUTOINCREMENT id and no table options. Each of constraints is
// added as a table constraint (a CHECK the legacy database might have and msgx cannot know).
func LegacyCMINMSGSFor(dialect store.Dialect, table string, constraints ...string) string {
	id, options := legacyIDMySQL, legacyOptionsMySQL
	if dialect == store.SQLite {
		id, options = legacyIDSQLite, ""
	}
	cols := legacyColumns
	for _, c := range constraints {
		cols += ",\n  " + c
	}
	return "CREATE TABLE " + table + " (\n  " + id + "," + cols + "\n)" + options
}

// Dialect is one database the contract runs on.
type Dialect struct {
	Name string
	Open func(t *testing.T) *store.DB
}

// Dialects lists the databases every store must pass the contract on: SQLite, MySQL/MariaDB
// with msgx's own tables, and MySQL/MariaDB on the legacy CMINMSGS table.
func Dialects() []Dialect {
	return []Dialect{
		{"sqlite", func(t *testing.T) *store.DB { return SQLite(t) }},
		{"mysql", func(t *testing.T) *store.DB { return MySQL(t) }},
		{"mysql-legacy", func(t *testing.T) *store.DB { return MySQLLegacy(t) }},
	}
}

// Each runs fn as a subtest on a fresh SQLite database and on a fresh MySQL database.
func Each(t *testing.T, fn func(t *testing.T, db *store.DB)) {
	t.Helper()
	t.Run("sqlite", func(t *testing.T) { fn(t, SQLite(t)) })
	t.Run("mysql", func(t *testing.T) { fn(t, MySQL(t)) })
}

// Exec runs statements on db, failing t on error; for test set-up.
func Exec(t testing.TB, db store.SQLHandle, stmts ...string) {
	t.Helper()
	for _, s := range stmts {
		if _, err := db.SQLDB().Exec(s); err != nil {
			t.Fatalf("%s: %v", strings.TrimSpace(s), err)
		}
	}
}

// EventWriter is what TakeEventIDs needs: a database or a transaction.
type EventWriter interface {
	Exec(query string, args ...any) (sql.Result, error)
	QueryRow(query string, args ...any) *sql.Row
}

// TakeEventIDs takes n ids from the outbox's sequence (the MSGX_COUNTER row EVENT_ID, from
// which the pump's inserts take theirs) and returns the first: a test that writes MSG_EVENT
// rows itself gives them these.
func TakeEventIDs(q EventWriter, n int) (int64, error) {
	if _, err := q.Exec(`UPDATE MSGX_COUNTER SET VALUE = VALUE + ? WHERE NAME = 'EVENT_ID'`, n); err != nil {
		return 0, err
	}
	var last int64
	if err := q.QueryRow(`SELECT VALUE FROM MSGX_COUNTER WHERE NAME = 'EVENT_ID'`).Scan(&last); err != nil {
		return 0, err
	}
	return last - int64(n) + 1, nil
}
