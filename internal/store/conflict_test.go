package store_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"msgx/internal/store"
	"msgx/internal/store/storetest"
)

// A real deadlock on MariaDB (two transactions locking two rows in opposite order; InnoDB
// rolls back the lighter one, which is RetryTx's) is a conflict: RetryTx does its transaction
// again, the second try commits, and the retry is reported to the conflict hook. The
// transaction that won commits too: both writes are there, each once.
func TestRetryTxRedoesADeadlockedTransaction(t *testing.T) {
	t.Parallel()
	db := storetest.MySQL(t)
	ctx := context.Background()
	rows := []string{"CREATE TABLE T_CONFLICT (ID INT PRIMARY KEY, V INT NOT NULL)", "INSERT INTO T_CONFLICT VALUES (1, 0), (2, 0)"}
	var heavy strings.Builder
	heavy.WriteString("INSERT INTO T_CONFLICT VALUES ")
	for i := 100; i < 300; i++ {
		fmt.Fprintf(&heavy, "(%d, 0),", i)
	}
	rows = append(rows, strings.TrimSuffix(heavy.String(), ","))
	storetest.Exec(t, db, rows...)

	var mu sync.Mutex
	var retried []string
	db.SetConflictHook(func(op string) {
		mu.Lock()
		retried = append(retried, op)
		mu.Unlock()
	})
	// The other transaction: heavy (200 rows changed), so InnoDB picks RetryTx's as the victim.
	other, err := db.SQL.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Rollback()
	for _, q := range []string{"UPDATE T_CONFLICT SET V = V + 1 WHERE ID >= 100", "UPDATE T_CONFLICT SET V = V + 10 WHERE ID = 2"} {
		if _, err := other.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	lockedOne := make(chan struct{})
	otherDone := make(chan error, 1)
	tries := 0
	var firstErr error
	err = db.RetryTx(ctx, "test", func(tx *sql.Tx) error {
		tries++
		if _, err := tx.Exec("UPDATE T_CONFLICT SET V = V + 100 WHERE ID = 1"); err != nil {
			return err
		}
		if tries == 1 {
			close(lockedOne)
			go func() {
				<-lockedOne
				// Closes the cycle (or waits on row 1 until RetryTx's statement on row 2 does).
				_, err := other.Exec("UPDATE T_CONFLICT SET V = V + 10 WHERE ID = 1")
				if err == nil {
					err = other.Commit()
				}
				otherDone <- err
			}()
		}
		_, err := tx.Exec("UPDATE T_CONFLICT SET V = V + 100 WHERE ID = 2")
		if tries == 1 {
			firstErr = err
		}
		return err
	})
	if err != nil {
		t.Fatalf("RetryTx after a deadlock: %v (first try's error: %v)", err, firstErr)
	}
	if !store.IsConflict(firstErr) {
		t.Fatalf("the first try ended in %v, want a deadlock (1213)", firstErr)
	}
	select {
	case err := <-otherDone:
		if err != nil {
			t.Fatalf("the other transaction: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the other transaction did not end")
	}
	if tries != 2 {
		t.Errorf("%d tries, want 2", tries)
	}
	mu.Lock()
	if len(retried) != 1 || retried[0] != "test" {
		t.Errorf("conflict hook told %v, want [test]", retried)
	}
	mu.Unlock()
	for id, want := range map[int]int{1: 110, 2: 110} {
		var v int
		if err := db.SQL.QueryRow("SELECT V FROM T_CONFLICT WHERE ID = ?", id).Scan(&v); err != nil {
			t.Fatal(err)
		}
		if v != want {
			t.Errorf("row %d = %d, want %d (each write once)", id, v, want)
		}
	}
}

// A conflict that persists is given up after ConflictPolicy.MaxAttempts tries, and errors that
// are not conflicts are not retried at all.
func TestRetryTxIsBounded(t *testing.T) {
	t.Parallel()
	db := storetest.MySQL(t)
	storetest.Exec(t, db, "CREATE TABLE T_CONFLICT (ID INT PRIMARY KEY, V INT NOT NULL)", "INSERT INTO T_CONFLICT VALUES (1, 0)")
	ctx := context.Background()
	hold, err := db.SQL.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Rollback()
	if _, err := hold.Exec("UPDATE T_CONFLICT SET V = 1 WHERE ID = 1"); err != nil {
		t.Fatal(err)
	}
	tries := 0
	err = db.RetryTx(ctx, "test", func(tx *sql.Tx) error {
		tries++
		if _, err := tx.Exec("SET SESSION innodb_lock_wait_timeout = 1"); err != nil {
			return err
		}
		_, err := tx.Exec("UPDATE T_CONFLICT SET V = 2 WHERE ID = 1")
		return err
	})
	if !store.IsConflict(err) || tries != store.ConflictPolicy.MaxAttempts {
		t.Fatalf("a lock held throughout: %d tries, err %v; want %d tries ending in a lock wait timeout",
			tries, err, store.ConflictPolicy.MaxAttempts)
	}
	tries = 0
	plain := errors.New("not a conflict")
	if err := db.RetryTx(ctx, "test", func(*sql.Tx) error { tries++; return plain }); !errors.Is(err, plain) || tries != 1 {
		t.Fatalf("a plain error: %d tries, err %v; want 1 try", tries, err)
	}
}
