package store_test

import (
	"context"
	"database/sql"
	"testing"

	"msgx/internal/store"
	"msgx/internal/store/storetest"
)

// TestCountWrites runs a known set of statements (through the pool, in a transaction, and on
// MySQL several in one query) and expects the rows and b-tree writes they make, by table, on
// both databases: what msgx bench reports as writes per message.
func TestCountWrites(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		t.Parallel()
		ctx := context.Background()
		my := db.Dialect == store.MySQL
		if my {
			storetest.Exec(t, db,
				`CREATE TABLE W_T (ID BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY, A INT, B INT, C VARCHAR(8), D VARCHAR(8))`,
				`CREATE INDEX IX_WA ON W_T (A)`, `CREATE INDEX IX_WBC ON W_T (B, C)`,
				`CREATE TABLE W_K (K VARCHAR(16) NOT NULL PRIMARY KEY, N INT NOT NULL)`)
		} else {
			storetest.Exec(t, db,
				`CREATE TABLE W_T (ID INTEGER PRIMARY KEY AUTOINCREMENT, A INT, B INT, C VARCHAR(8), D VARCHAR(8))`,
				`CREATE INDEX IX_WA ON W_T (A)`, `CREATE INDEX IX_WBC ON W_T (B, C)`,
				`CREATE TABLE W_K (K VARCHAR(16) NOT NULL PRIMARY KEY, N INT NOT NULL)`)
		}
		exec := func(q string, args ...any) {
			t.Helper()
			if _, err := db.SQL.ExecContext(ctx, q, args...); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		exec(`INSERT INTO W_T (A, B, C) VALUES (0, 0, 'before')`) // before counting: not counted
		w, err := db.CountWrites(ctx)
		if err != nil {
			t.Fatal(err)
		}
		exec(`INSERT INTO W_T (A, B, C) VALUES (?, ?, ?), (?, ?, ?), (?, ?, ?)`, 1, 1, "a", 2, 2, "b", 3, 3, "c") // 3 rows × 3 b-trees
		exec(`UPDATE W_T SET A = A + 1 WHERE ID BETWEEN 2 AND 3`)                                                 // 2 rows × (1 + IX_WA)
		exec(`UPDATE W_T SET C = 'x;y' WHERE ID = 4`)                                                             // 1 row × (1 + IX_WBC)
		exec(`UPDATE W_T SET D = 'y' WHERE ID > 1`)                                                               // 3 rows × 1
		exec(`DELETE FROM W_T WHERE ID = 2`)                                                                      // 1 row × 3
		exec(`DELETE FROM W_T WHERE ID = 99`)                                                                     // nothing
		var n int
		if err := db.SQL.QueryRowContext(ctx, `SELECT COUNT(*) FROM W_T`).Scan(&n); err != nil { // a read: nothing
			t.Fatal(err)
		}
		ignore, upsert := `INSERT OR IGNORE INTO W_K (K, N) VALUES (?, ?)`, `INSERT INTO W_K (K, N) VALUES (?, ?) ON CONFLICT (K) DO UPDATE SET N = W_K.N + excluded.N`
		if my {
			ignore, upsert = `INSERT IGNORE INTO W_K (K, N) VALUES (?, ?)`, `INSERT INTO W_K (K, N) VALUES (?, ?) ON DUPLICATE KEY UPDATE N = N + VALUES(N)`
		}
		exec(ignore, "k", 1)
		exec(ignore, "k", 2) // ignored: nothing
		// In a transaction (SQLite: the statement cache's path), an upsert of a row that exists.
		if err := db.Tx(ctx, func(tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, upsert, "k", 5)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		// A write run for its rows (RETURNING): counted by the rows it returned.
		rows, err := db.SQL.QueryContext(ctx, `INSERT INTO W_T (A, B, C) VALUES (5, 5, 'r'), (6, 6, 's') RETURNING ID`)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
		}
		if err := rows.Close(); err != nil {
			t.Fatal(err)
		}
		wantT := store.TableWrites{Inserted: 3 + 2, Updated: 2 + 1 + 3, Deleted: 1, BTree: 9 + 4 + 2 + 3 + 3 + 6}
		if my {
			// Several statements in one query, each counted with its own rows.
			exec(`SAVEPOINT s1; UPDATE W_T SET B = 7 WHERE ID = 3; DELETE FROM W_T WHERE ID = 4; UPDATE W_T SET D = 'z' WHERE ID = 99`)
			wantT.Updated++
			wantT.Deleted++
			wantT.BTree += 2 + 3
		}
		// A text primary key is a b-tree of its own on SQLite (its rowid table's index), the
		// clustered index itself on InnoDB.
		wantK := store.TableWrites{Inserted: 1, Updated: 1, BTree: 2 + 1}
		if my {
			wantK.BTree = 1 + 1
		}
		db.StopCountingWrites()
		exec(`DELETE FROM W_T`) // after: not counted
		got := w.Counts()
		if got["W_T"] != wantT || got["W_K"] != wantK || len(got) != 2 {
			t.Fatalf("counted %+v,\nwant W_T %+v and W_K %+v", got, wantT, wantK)
		}
		if r := got["W_T"].Rows(); r != wantT.Inserted+wantT.Updated+wantT.Deleted {
			t.Fatalf("rows %d", r)
		}
	})
}
