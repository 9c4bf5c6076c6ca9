package bench

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"msgx/internal/pipeline"
	"msgx/internal/store"
)

// floorTable is the scratch table of the floor measurement, in the bench database only.
const floorTable = "BENCH_FLOOR"

// floorRowBytes is the size of one floor row, about a SIS message.
const floorRowBytes = 2048

// Floor is what the machine and the database do without msgx: durable commits on one
// connection, the way msgx's writers commit (same driver, same pragmas or session settings).
type Floor struct {
	CommitsPerS     float64 // one ~2 KB row per commit
	BatchedRowsPerS float64 // 100 such rows per commit
}

// MeasureFloor inserts ~2 KB rows into a scratch table of db, on one connection, first one row
// per commit and then 100 rows per commit, each for about d, and drops the table.
func MeasureFloor(ctx context.Context, db DB, clock pipeline.Clock, d time.Duration) (Floor, error) {
	var f Floor
	conn, err := db.SQLDB().Conn(ctx)
	if err != nil {
		return f, store.Unavailable(fmt.Errorf("floor: connect: %w", err))
	}
	defer conn.Close()
	if err := createFloorTable(ctx, conn, db.SQLDialect()); err != nil {
		return f, err
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), "DROP TABLE "+floorTable)
	payload := floorPayload()
	commits, elapsed, err := commitFor(ctx, conn, clock, d, 1, payload)
	if err != nil {
		return f, err
	}
	f.CommitsPerS = PerSecond(commits, elapsed)
	commits, elapsed, err = commitFor(ctx, conn, clock, d, 100, payload)
	if err != nil {
		return f, err
	}
	f.BatchedRowsPerS = PerSecond(commits*100, elapsed)
	return f, nil
}

func createFloorTable(ctx context.Context, conn *sql.Conn, dialect store.Dialect) error {
	ddl := `CREATE TABLE ` + floorTable + ` (ID INTEGER PRIMARY KEY AUTOINCREMENT, PAYLOAD TEXT NOT NULL)`
	if dialect == store.MySQL {
		ddl = `CREATE TABLE ` + floorTable + ` (ID BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY, PAYLOAD MEDIUMTEXT NOT NULL) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`
	}
	if _, err := conn.ExecContext(ctx, ddl); err != nil {
		return fmt.Errorf("floor: create the scratch table %s: %w", floorTable, err)
	}
	return nil
}

// floorPayload is ~2 KB of text that does not compress to nothing.
func floorPayload() string {
	b := make([]byte, floorRowBytes/2)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// commitFor commits transactions of rows rows each, one after the other, until d has passed
// (at least one), and returns how many it committed and how long they took.
func commitFor(ctx context.Context, conn *sql.Conn, clock pipeline.Clock, d time.Duration, rows int, payload string) (int, time.Duration, error) {
	insert := "INSERT INTO " + floorTable + " (PAYLOAD) VALUES " + strings.TrimSuffix(strings.Repeat("(?),", rows), ",")
	args := make([]any, rows)
	for i := range args {
		args[i] = payload
	}
	start := clock.Now()
	n := 0
	for n == 0 || clock.Now().Sub(start) < d {
		if err := commitOnce(ctx, conn, insert, args); err != nil {
			return n, 0, err
		}
		n++
	}
	return n, clock.Now().Sub(start), nil
}

func commitOnce(ctx context.Context, conn *sql.Conn, insert string, args []any) error {
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return store.Unavailable(fmt.Errorf("floor: begin: %w", err))
	}
	if _, err := tx.ExecContext(ctx, insert, args...); err != nil {
		tx.Rollback()
		return fmt.Errorf("floor: insert: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return store.Unavailable(fmt.Errorf("floor: commit: %w", err))
	}
	return nil
}
