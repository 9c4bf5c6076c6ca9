package store_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	mysqldrv "github.com/go-sql-driver/mysql"

	"msgx/internal/store"
)

// galeraDSNs returns two nodes of a Galera cluster from MSGX_TEST_GALERA ("dsn1,dsn2", as
// `scripts/galera-cluster.sh dsns` prints them, without a database), or skips t.
func galeraDSNs(t *testing.T) (string, string) {
	t.Helper()
	v := os.Getenv("MSGX_TEST_GALERA")
	parts := strings.Split(v, ",")
	if len(parts) < 2 {
		t.Skip("MSGX_TEST_GALERA (two node DSNs, comma-separated; scripts/galera-cluster.sh up) not set: no Galera cluster to test against")
	}
	return strings.TrimSpace(parts[0]), strings.TrimSpace(parts[1])
}

// withDB returns dsn naming database name.
func withDB(t *testing.T, dsn, name string) string {
	t.Helper()
	cfg, err := mysqldrv.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.DBName = name
	return cfg.FormatDSN()
}

// A certification conflict for real: two Galera nodes change the same row in two
// transactions; the one on node 1 commits first, so the one on node 2 fails with error 1213
// (its commit, or its next statement once node 1's write set aborted it). RetryTx does the
// transaction on node 2 again and it commits: both changes are there, each once.
func TestRetryTxRedoesAGaleraCertificationConflict(t *testing.T) {
	t.Parallel()
	dsn1, dsn2 := galeraDSNs(t)
	ctx := context.Background()
	name := fmt.Sprintf("msgx_cert_%d", time.Now().UnixNano()%1e9)
	admin, err := sql.Open("mysql", dsn1)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	for _, q := range []string{"CREATE DATABASE " + name, "CREATE TABLE " + name + ".T_CERT (ID INT PRIMARY KEY, V INT NOT NULL)",
		"INSERT INTO " + name + ".T_CERT VALUES (1, 0)"} {
		if _, err := admin.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	defer admin.Exec("DROP DATABASE " + name)
	node1, err := sql.Open("mysql", withDB(t, dsn1, name))
	if err != nil {
		t.Fatal(err)
	}
	defer node1.Close()
	db, err := store.Open(ctx, "mysql", withDB(t, dsn2, name)+"?wsrep_sync_wait=1")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var retried []string
	db.SetConflictHook(func(op string) { retried = append(retried, op) })

	tries := 0
	var firstErr error
	err = db.RetryTx(ctx, "test", func(tx *sql.Tx) error {
		tries++
		if _, err := tx.Exec("UPDATE T_CERT SET V = V + 100 WHERE ID = 1"); err != nil {
			firstErr = err
			return err
		}
		if tries == 1 {
			// Node 1 changes the row and commits while this transaction is open on node 2.
			if _, err := node1.ExecContext(ctx, "UPDATE T_CERT SET V = V + 1 WHERE ID = 1"); err != nil {
				t.Errorf("node 1: %v", err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("RetryTx after a certification conflict: %v", err)
	}
	if tries != 2 || len(retried) != 1 {
		t.Fatalf("%d tries, %d retries reported (first error %v): want 2 tries, the first ending in 1213", tries, len(retried), firstErr)
	}
	var v int
	if err := db.SQL.QueryRow("SELECT V FROM T_CERT WHERE ID = 1").Scan(&v); err != nil {
		t.Fatal(err)
	}
	if v != 101 {
		t.Fatalf("V = %d, want 101 (each change once)", v)
	}
}
