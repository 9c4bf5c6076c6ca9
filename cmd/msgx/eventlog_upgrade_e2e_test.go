package main_test

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pressly/goose/v3"

	"msgx/internal/event"
	"msgx/internal/store"
	"msgx/internal/store/storetest"
)

// The upgrade of the outbox to a log (migration 00018) runs when msgx serve starts. On a large
// outbox it takes a while, and a service manager or an operator may kill msgx in the middle:
// SQLite undoes the migration's transaction, MySQL keeps each DDL statement it finished (or
// finishes it after the client is gone) and the next start runs the migration again from its
// first statement. Either way no event may be lost or doubled.

// upgradeRows is how many per-target events the old outbox holds: enough that the migration
// lasts long enough to be killed in the middle several times.
const upgradeRows = 150_000

// upgradeTail is how many of each target's events at the end of the outbox are still to be
// delivered; the others were delivered (covered by the target's mark, or SENT) or are DEAD.
const upgradeTail = 25

// oldLog is what buildOldOutbox wrote: how many rows, a checksum of their (EVENT_ID, TARGET,
// STATE, PAYLOAD) in (EVENT_ID, TARGET) order, and each target's events still to deliver.
type oldLog struct {
	rows    int
	sum     string
	pending map[string][]int64
}

// upgradeTargets are the four targets the old pump wrote an event for per flight change,
// taking turns.
var upgradeTargets = []string{event.TargetFlop, event.TargetSchd, event.TargetNotify, event.TargetES}

// upgradeKinds are the payload kinds of the old rows, per target.
var upgradeKinds = map[string]string{event.TargetFlop: event.KindFlop, event.TargetSchd: event.KindSchd,
	event.TargetNotify: event.KindNotify, event.TargetES: event.KindESUpsert}

// buildOldOutbox migrates d's database to schema 17, the last before the log, and writes n
// events over the four targets as the old pump and dispatcher left them: most delivered
// (PENDING under the target's delivery mark, some SENT on their own), some DEAD, and
// upgradeTail per target still to deliver. It writes them in multi-row INSERTs in one
// transaction, which takes a second or two where the old pump took days.
func buildOldOutbox(t *testing.T, d dbEnv, n int) oldLog {
	t.Helper()
	ctx := context.Background()
	db := d.open(t)
	dialect := goose.DialectSQLite3
	if db.Dialect == store.MySQL {
		dialect = goose.DialectMySQL
	}
	p, err := goose.NewProvider(dialect, db.SQL, os.DirFS("../../internal/store/migrations/"+string(db.Dialect)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(ctx, 17); err != nil {
		t.Fatalf("migrate %s to 17: %v", d.Name, err)
	}
	const cols = 14
	const chunk = 500
	row := "(" + strings.TrimSuffix(strings.Repeat("?, ", cols), ", ") + ")"
	perTarget := n / len(upgradeTargets)
	created := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	out := oldLog{rows: n, pending: map[string][]int64{}}
	marks, sent := map[string]int64{}, map[string]int{}
	h := sha256.New()
	err = db.Tx(ctx, func(tx *sql.Tx) error {
		args := make([]any, 0, chunk*cols)
		flush := func() error {
			if len(args) == 0 {
				return nil
			}
			q := `INSERT INTO MSG_EVENT (EVENT_ID, CMINMSGS_ID, TYPE_TAG, TARGET, KIND, FLIGHT_KEY, PAYLOAD, STATE, ATTEMPTS,
FIRST_FAILED_AT, ERROR_CLASS, LAST_ERROR, CREATED_AT, SENT_AT) VALUES ` + strings.TrimSuffix(strings.Repeat(row+", ", len(args)/cols), ", ")
			_, err := tx.ExecContext(ctx, q, args...)
			args = args[:0]
			return err
		}
		for i := range n {
			id := int64(i + 1)
			target, j := upgradeTargets[i%len(upgradeTargets)], i/len(upgradeTargets)
			at := created.Add(time.Duration(i) * time.Second)
			state, attempts := "PENDING", 0
			var first, class, lastErr, sentAt any
			switch {
			case j >= perTarget-upgradeTail:
				out.pending[target] = append(out.pending[target], id)
			case j%20 == 7:
				state, attempts, first, class, lastErr = "DEAD", 5, store.T(at.Add(time.Second)), "REJECTED", "the broker refused the record"
			case j%7 == 3:
				state, sentAt = "SENT", store.T(at.Add(time.Minute))
				sent[target]++
			default:
				marks[target] = id
				sent[target]++
			}
			flid := 700000 + i%5000
			payload := fmt.Sprintf(`{"FLID":%d,"op":"update","changes":{"REMC":{"old":"备注 %d","new":"备注 %d ✈"}},"seq":%d}`, flid, j, j+1, i)
			fmt.Fprintf(h, "%d|%s|%s|%s\n", id, target, state, payload)
			args = append(args, id, 1+i/50, "FLOP-REMC", target, upgradeKinds[target], fmt.Sprint(flid), payload, state, attempts,
				first, class, lastErr, store.T(at), sentAt)
			if len(args) == chunk*cols {
				if err := flush(); err != nil {
					return err
				}
			}
		}
		if err := flush(); err != nil {
			return err
		}
		for _, target := range upgradeTargets {
			if _, err := tx.ExecContext(ctx, `INSERT INTO MSG_EVENT_SENT (TARGET, SENT, UPTO_EVENT_ID) VALUES (?, ?, ?)`,
				target, sent[target], marks[target]); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO MSG_EVENT_MARK (TARGET, UPTO_EVENT_ID, SENT_AT) VALUES (?, ?, ?)`,
				target, marks[target], store.T(created.Add(time.Duration(n)*time.Second))); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("write the old outbox on %s: %v", d.Name, err)
	}
	out.sum = hex.EncodeToString(h.Sum(nil))
	return out
}

// outboxSum returns how many MSG_EVENT rows db holds and the checksum buildOldOutbox computes
// of them.
func outboxSum(t *testing.T, db *store.DB) (int, string) {
	t.Helper()
	rows, err := db.SQL.Query(`SELECT EVENT_ID, TARGET, STATE, PAYLOAD FROM MSG_EVENT ORDER BY EVENT_ID, TARGET`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	h := sha256.New()
	n := 0
	for rows.Next() {
		var (
			id                     int64
			target, state, payload string
		)
		if err := rows.Scan(&id, &target, &state, &payload); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(h, "%d|%s|%s|%s\n", id, target, state, payload)
		n++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return n, hex.EncodeToString(h.Sum(nil))
}

// schemaVersion returns the last migration goose recorded on db.
func schemaVersion(t *testing.T, db *store.DB) int64 {
	t.Helper()
	var v int64
	if err := db.SQL.QueryRow(`SELECT MAX(version_id) FROM goose_db_version`).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// twin returns a fresh database of the same dialect as d, with a data directory of its own.
func twin(t *testing.T, d dbEnv) dbEnv {
	t.Helper()
	tw := dbEnv{Name: d.Name + "-twin", Driver: d.Driver, DataDir: t.TempDir()}
	if d.Driver == "mysql" {
		tw.DSN = storetest.MySQLDSN(t)
		for _, e := range d.Env {
			if strings.HasPrefix(e, "MSGX_DATABASE_DSN=") {
				e = "MSGX_DATABASE_DSN=" + tw.DSN
			}
			tw.Env = append(tw.Env, e)
		}
	} else {
		tw.DSN = filepath.Join(tw.DataDir, "msgx.db")
	}
	return tw
}

// TestKillNineDuringTheEventLogUpgrade starts msgx serve on a database of schema 17 whose
// outbox holds 150,000 per-target events, so that migration 00018 runs at the start and
// takes a while, and kills it with SIGKILL after a random delay, several times, the delays
// spread over the time the migration takes (measured first on a twin database). Then msgx
// starts normally: it answers /readyz, the schema is at 18, every row is there once with its
// state and payload as written, the sequence is above every old id, and the events the old
// outbox had still to deliver reach the file outboxes. It runs on SQLite and on MariaDB.
func TestKillNineDuringTheEventLogUpgrade(t *testing.T) {
	t.Parallel()
	eachDB(t, testKillNineDuringTheEventLogUpgrade)
}

func testKillNineDuringTheEventLogUpgrade(t *testing.T, d dbEnv) {
	began := time.Now()
	// How long the upgrade takes from a start of the binary, on a twin of the database: the
	// time of msgx migrate, and of msgx migrate with nothing left to do (the start around it).
	tw := twin(t, d)
	buildOldOutbox(t, tw, upgradeRows)
	built := time.Since(began)
	migrate := func() time.Duration {
		t.Helper()
		start := time.Now()
		if out, err := tw.command(t, "migrate").CombinedOutput(); err != nil || !strings.Contains(string(out), "schema at version 18") {
			t.Fatalf("msgx migrate on the twin: %v\n%s", err, out)
		}
		return time.Since(start)
	}
	took, idle := migrate(), migrate()

	old := buildOldOutbox(t, d, upgradeRows)
	const rounds = 6
	for i := range rounds {
		// Round i is killed in the i-th sixth of the upgrade, at a random point of it.
		delay := idle + time.Duration((float64(i)+rand.Float64())/rounds*float64(max(took-idle, 0)))
		cmd := d.command(t, "serve")
		cmd.Env = append(cmd.Env, "MSGX_JOBS_ARCHIVE_AT=off", "MSGX_JOBS_HISTORY_SWEEP_AT=off", "MSGX_JOBS_RETENTION_AT=off")
		logs := &syncBuffer{}
		cmd.Stdout, cmd.Stderr = logs, logs
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			t.Fatalf("round %d: msgx serve ended by itself before the kill at %s: %v\n%s", i, delay, err, logs)
		case <-time.After(delay):
		}
		cmd.Process.Kill() // SIGKILL: no rollback but the database's own
		<-done
		t.Logf("%s: round %d killed after %s; %s; last logged: %q", d.Name, i, delay.Round(time.Millisecond),
			upgradeState(t, d), lastMigrationLine(logs.String()))
	}

	s := d.start(t, "MSGX_SCHD_FLUSH_PERIOD=200ms")
	deadline := time.Now().Add(30 * time.Second)
	for r := s.readyz(); r.code != 200; r = s.readyz() {
		if time.Now().After(deadline) {
			t.Fatalf("/readyz after the upgrade: %+v\n%s", r, s.logs)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The events the old outbox had still to deliver are delivered, each to its target's file:
	// a line is an event's envelope, which names it, or on KAFKA_SCHD a batch of payloads,
	// which name theirs by "seq" (the event's id less one).
	for len(s.events("state=PENDING")) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("events still pending after the upgrade: %+v\n%s", s.events("state=PENDING"), s.logs)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, target := range upgradeTargets {
		got := map[int64]bool{}
		for _, line := range readLines(t, d.outbox(target)) {
			var err error
			if target == event.TargetSchd {
				var batch []struct {
					Seq int64 `json:"seq"`
				}
				err = json.Unmarshal(line, &batch)
				for _, p := range batch {
					got[p.Seq+1] = true
				}
			} else {
				var env struct {
					EventID int64 `json:"event_id"`
				}
				err = json.Unmarshal(line, &env)
				got[env.EventID] = true
			}
			if err != nil {
				t.Fatalf("%s outbox line %.200q: %v", target, line, err)
			}
		}
		for _, id := range old.pending[target] {
			if !got[id] {
				t.Errorf("%s: event %d, left to deliver before the upgrade, is not in the outbox", target, id)
			}
		}
		if len(got) != len(old.pending[target]) {
			t.Errorf("%s's outbox holds %d events, want the %d left to deliver before the upgrade", target, len(got), len(old.pending[target]))
		}
	}
	if err := s.stop(); err != nil {
		t.Fatal(err)
	}
	db := d.open(t)
	if v := schemaVersion(t, db); v != 18 {
		t.Errorf("schema at %d after the upgrade, want 18", v)
	}
	if n, sum := outboxSum(t, db); n != old.rows || sum != old.sum {
		t.Errorf("after the upgrade MSG_EVENT holds %d rows with checksum %s; written %d with checksum %s", n, sum, old.rows, old.sum)
	}
	var seq int64
	if err := db.SQL.QueryRow(`SELECT VALUE FROM MSGX_COUNTER WHERE NAME = 'EVENT_ID'`).Scan(&seq); err != nil || seq < int64(old.rows) {
		t.Errorf("the outbox's sequence is at %d (%v), below the old ids (up to %d)", seq, err, old.rows)
	}
	t.Logf("%s: %d rows built in %s (twin); msgx migrate took %s, %s of it the start; %d kills; all in %s",
		d.Name, upgradeRows, built.Round(time.Millisecond), took.Round(time.Millisecond), idle.Round(time.Millisecond), rounds,
		time.Since(began).Round(time.Millisecond))
}

// upgradeState says how far the upgrade of d's database went: the schema version goose
// recorded, whether the sequence's row is there, MSG_EVENT's primary key and, on MySQL, how
// many statements of the killed msgx the server is still running.
func upgradeState(t *testing.T, d dbEnv) string {
	t.Helper()
	db, err := store.Open(context.Background(), d.Driver, d.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var seq int
	if err := db.SQL.QueryRow(`SELECT COUNT(*) FROM MSGX_COUNTER WHERE NAME = 'EVENT_ID'`).Scan(&seq); err != nil {
		t.Fatal(err)
	}
	key := "(EVENT_ID)"
	var running int
	if d.Driver == "mysql" {
		var cols string
		if err := db.SQL.QueryRow(`SELECT GROUP_CONCAT(COLUMN_NAME ORDER BY SEQ_IN_INDEX) FROM information_schema.STATISTICS
WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'MSG_EVENT' AND INDEX_NAME = 'PRIMARY'`).Scan(&cols); err != nil {
			t.Fatal(err)
		}
		key = "(" + cols + ")"
		if err := db.SQL.QueryRow(`SELECT COUNT(*) FROM information_schema.PROCESSLIST
WHERE DB = DATABASE() AND COMMAND = 'Query' AND ID <> CONNECTION_ID()`).Scan(&running); err != nil {
			t.Fatal(err)
		}
	} else {
		var ddl string
		if err := db.SQL.QueryRow(`SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'MSG_EVENT'`).Scan(&ddl); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(ddl, "PRIMARY KEY (EVENT_ID, TARGET)") {
			key = "(EVENT_ID,TARGET)"
		}
	}
	return fmt.Sprintf("schema %d, sequence row %d, key %s, %d statements still running", schemaVersion(t, db), seq, key, running)
}

// lastMigrationLine returns the message of the last line of logs that speaks of the database
// or the migration, "" when none does.
func lastMigrationLine(logs string) string {
	last := ""
	for line := range strings.Lines(logs) {
		var l struct {
			Msg string `json:"msg"`
		}
		if json.Unmarshal([]byte(line), &l) != nil {
			l.Msg = strings.TrimSpace(line) // goose's own lines are not JSON
		}
		if strings.Contains(l.Msg, "database") || strings.Contains(l.Msg, "migrat") || strings.Contains(l.Msg, "goose") {
			last = l.Msg
		}
	}
	return last
}
