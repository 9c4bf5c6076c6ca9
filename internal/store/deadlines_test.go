package store_test

import (
	"context"
	"testing"
	"time"

	"msgx/internal/store"
	"msgx/internal/store/storetest"
)

// A MySQL DSN that names no timeouts gets the default deadlines (a silent server fails a
// read after the statement deadline, 5 s, instead of holding it for ever); one that names
// them keeps its own.
func TestMySQLDeadlineDefaults(t *testing.T) {
	t.Parallel()
	dsn := storetest.MySQLDSN(t)
	ctx := context.Background()
	for _, c := range []struct {
		params            string
		dial, read, write time.Duration
	}{
		{"", store.DefaultDialTimeout, store.DefaultReadTimeout, store.DefaultWriteTimeout},
		{"readTimeout=2s&timeout=1s", time.Second, 2 * time.Second, store.DefaultWriteTimeout},
		{"readTimeout=0&writeTimeout=7s", store.DefaultDialTimeout, 0, 7 * time.Second},
	} {
		d := dsn
		if c.params != "" {
			d += "?" + c.params
		}
		db, err := store.Open(ctx, "mysql", d)
		if err != nil {
			t.Fatal(err)
		}
		dial, read, write := db.Timeouts()
		db.Close()
		if dial != c.dial || read != c.read || write != c.write {
			t.Errorf("DSN params %q: timeout=%s readTimeout=%s writeTimeout=%s, want %s %s %s",
				c.params, dial, read, write, c.dial, c.read, c.write)
		}
	}
}

// A migration runs on connections without the read deadline, so a statement that takes
// longer than readTimeout (an ALTER of a large legacy table) is not cut; the service's own
// queries keep it.
func TestMigrationNotCutByReadTimeout(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := store.Open(ctx, "mysql", storetest.MySQLDSN(t)+"?readTimeout=1s")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := db.SQL.ExecContext(ctx, `DO SLEEP(2)`); err == nil {
		t.Fatal("a 2 s statement on the service's pool with readTimeout=1s did not fail")
	}
	if err := db.MigrationExec(ctx, `DO SLEEP(2)`); err != nil {
		t.Fatalf("a 2 s statement on the migrations' pool was cut: %v", err)
	}
}

// Ordinary statements get the short deadline (OpenOptions.StatementTimeout,
// database.statement-timeout) and the long ones (the archive, the retention sweeps, the status
// counts) theirs on a pool of their own: a 2 s statement fails on the service's pool with a
// 1 s deadline and passes on the long statements' pool.
func TestLongStatementsHaveTheirOwnDeadline(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := store.OpenWith(ctx, "mysql", storetest.MySQLDSN(t), store.OpenOptions{StatementTimeout: time.Second, LongStatementTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, read, write := db.Timeouts(); read != time.Second || write != time.Second {
		t.Errorf("the service's pool: readTimeout %s writeTimeout %s, want 1s", read, write)
	}
	if read, write := db.LongTimeouts(); read != 10*time.Second || write != 10*time.Second {
		t.Errorf("the long statements' pool: readTimeout %s writeTimeout %s, want 10s", read, write)
	}
	if _, err := db.SQL.ExecContext(ctx, `DO SLEEP(2)`); err == nil {
		t.Error("a 2 s statement on the service's pool with a 1 s statement deadline did not fail")
	}
	if err := db.LongExec(ctx, `DO SLEEP(2)`); err != nil {
		t.Errorf("a 2 s statement on the long statements' pool was cut: %v", err)
	}
}
