package bench

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	mysqldrv "github.com/go-sql-driver/mysql"

	"msgx/internal/config"
	"msgx/internal/store"
	"msgx/internal/store/storetest"
)

func TestSQLiteScratchNeverTheConfiguredFile(t *testing.T) {
	ctx := context.Background()
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.Database.DSN = filepath.Join(cfg.DataDir, "msgx.db")
	if _, err := OpenScratch(ctx, cfg, ScratchOptions{SQLitePath: cfg.Database.DSN, WorkDir: t.TempDir()}); err == nil {
		t.Fatal("the configured file was accepted as the bench's")
	}
	existing := filepath.Join(t.TempDir(), "old.db")
	os.WriteFile(existing, nil, 0o644)
	if _, err := OpenScratch(ctx, cfg, ScratchOptions{SQLitePath: existing, WorkDir: t.TempDir()}); err == nil {
		t.Fatal("an existing file was accepted as the bench's")
	}
	if _, err := OpenScratch(ctx, cfg, ScratchOptions{Database: "x", WorkDir: t.TempDir()}); err == nil {
		t.Fatal("--database accepted on SQLite")
	}
	work := t.TempDir()
	s, err := OpenScratch(ctx, cfg, ScratchOptions{WorkDir: work})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if filepath.Dir(s.Where) != work {
		t.Errorf("bench file %s, want it in the work directory %s", s.Where, work)
	}
	if _, err := os.Stat(cfg.Database.DSN); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the configured file was created: %v", err)
	}
	if got := BaseDir(cfg); got != cfg.DataDir {
		t.Errorf("BaseDir = %s, want beside the configured file, %s", got, cfg.DataDir)
	}
}

// mysqlConfig configures msgx on the test MariaDB server with the database name prod (which
// need not exist: the bench never uses it).
func mysqlConfig(t *testing.T, prod string) (config.Config, *sql.DB) {
	t.Helper()
	dsn := storetest.MySQLDSN(t) // skips, or fails under MSGX_TEST_REQUIRE_SERVICES, without a server
	mc, err := mysqldrv.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	mc.DBName = ""
	admin, err := sql.Open("mysql", mc.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	mc.DBName = prod
	cfg := config.Default()
	cfg.Database.Driver = "mysql"
	cfg.Database.DSN = mc.FormatDSN()
	return cfg, admin
}

func schemaExists(t *testing.T, admin *sql.DB, name string) bool {
	t.Helper()
	var n int
	if err := admin.QueryRow(`SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?`, name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n > 0
}

func TestMySQLScratchCreatedAndDropped(t *testing.T) {
	ctx := context.Background()
	cfg, admin := mysqlConfig(t, "msgx_prod_absent")
	name := "msgx_bench_unit_" + strings.ReplaceAll(t.Name(), "/", "_")[:8]
	admin.Exec("DROP DATABASE IF EXISTS " + name)
	t.Cleanup(func() { admin.Exec("DROP DATABASE IF EXISTS " + name) })

	s, err := OpenScratch(ctx, cfg, ScratchOptions{Database: name})
	if err != nil {
		t.Fatal(err)
	}
	if s.DB.SQLDialect() != store.MySQL || !schemaExists(t, admin, name) {
		t.Fatalf("scratch database %s not created", name)
	}
	// One left behind by an interrupted run is the bench's own: it is made afresh.
	if _, err := s.DB.SQLDB().Exec(`CREATE TABLE LEFTOVER (X INT)`); err != nil {
		t.Fatal(err)
	}
	s.DB.Close()
	s2, err := OpenScratch(ctx, cfg, ScratchOptions{Database: name})
	if err != nil {
		t.Fatalf("a leftover scratch database was refused: %v", err)
	}
	var left int
	s2.DB.SQLDB().QueryRow(`SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'LEFTOVER'`).Scan(&left)
	if left != 0 {
		t.Error("the leftover scratch database was reused, not made afresh")
	}
	if err := s2.Close(); err != nil {
		t.Fatal(err)
	}
	if schemaExists(t, admin, name) {
		t.Errorf("scratch database %s not dropped", name)
	}
	if schemaExists(t, admin, "msgx_prod_absent") {
		t.Error("the configured database was created")
	}
}

func TestMySQLScratchRefusesForeignDatabases(t *testing.T) {
	ctx := context.Background()
	cfg, admin := mysqlConfig(t, "msgx_bench_unit_prod")
	if _, err := OpenScratch(ctx, cfg, ScratchOptions{Database: "msgx_bench_unit_prod"}); err == nil {
		t.Fatal("the configured database was accepted as the scratch one")
	}
	if _, err := OpenScratch(ctx, cfg, ScratchOptions{Database: "bad-name; DROP"}); err == nil {
		t.Fatal("a database name with punctuation was accepted")
	}
	if _, err := OpenScratch(ctx, cfg, ScratchOptions{SQLitePath: "x.db"}); err == nil {
		t.Fatal("--dsn accepted on MySQL")
	}
	foreign := "msgx_bench_unit_foreign"
	if _, err := admin.Exec("CREATE DATABASE IF NOT EXISTS " + foreign); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Exec("DROP DATABASE IF EXISTS " + foreign) })
	if _, err := admin.Exec("CREATE TABLE IF NOT EXISTS " + foreign + ".KEEP (X INT)"); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenScratch(ctx, cfg, ScratchOptions{Database: foreign}); err == nil || !strings.Contains(err.Error(), "not created by msgx bench") {
		t.Fatalf("a database the bench did not create was taken: %v", err)
	}
	if !schemaExists(t, admin, foreign) {
		t.Fatal("the foreign database was dropped")
	}
}

func TestMySQLScratchUnreachable(t *testing.T) {
	cfg := config.Default()
	cfg.Database.Driver = "mysql"
	cfg.Database.DSN = "root@tcp(127.0.0.1:1)/msgx"
	_, err := OpenScratch(context.Background(), cfg, ScratchOptions{})
	if !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("err %v, want store.ErrUnavailable", err)
	}
}

// The file sinks write to memory when the system has a memory-backed directory (they stand
// in for remote services, whose acknowledgement costs the database's disk nothing), else
// beside the bench's database.
func TestSinkDirDefaultsToMemory(t *testing.T) {
	work := t.TempDir()
	dir, err := sinkDir("", work)
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	want := work
	if fi, err := os.Stat(MemoryDir); err == nil && fi.IsDir() {
		want = MemoryDir
	}
	if filepath.Dir(dir) != want {
		t.Errorf("the sinks' directory %s is not in %s", dir, want)
	}
	own := t.TempDir()
	if dir, err := sinkDir(own, work); err != nil || filepath.Dir(dir) != own {
		t.Errorf("sinkDir(%s) = %s, %v; want a directory in it", own, dir, err)
	}
}
