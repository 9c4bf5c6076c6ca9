package store_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pressly/goose/v3"

	"msgx/internal/event"
	"msgx/internal/pipeline"
	"msgx/internal/store"
	"msgx/internal/store/storetest"
)

// The upgrade of the outbox to a log (migration 00018) on a database an older msgx wrote: its
// MSG_EVENT rows, one per target, must come through unchanged and be delivered before the
// shared rows the pump writes after the upgrade, and the ids the new sequence gives must be
// above every id the old table ever gave, deleted rows' included: a target's delivery mark
// covers ids, so an id given twice is an event taken for delivered.

// oldEventCols are MSG_EVENT's columns at schema 17, all of them.
const oldEventCols = `EVENT_ID, CMINMSGS_ID, TYPE_TAG, TARGET, KIND, FLIGHT_KEY, PAYLOAD, STATE, ATTEMPTS,
NEXT_ATTEMPT_AT, FIRST_FAILED_AT, ERROR_CLASS, LAST_ERROR, CREATED_AT, SENT_AT`

// oldOutbox is what writeOldOutbox wrote: what the store must read after the upgrade.
type oldOutbox struct {
	given   int64                       // the highest id the table gave out, deleted rows' included
	states  map[string]map[int64]string // each target's events and their state as the store shows it
	pending map[string][]int64          // each target's pending events, in id order
	rows    []string                    // every MSG_EVENT row, every column (eventRows)
	marks   []string                    // MSG_EVENT_SENT and MSG_EVENT_MARK (markRows)
}

// oldRow is one row of the old pump, and what the old dispatcher did with it.
type oldRow struct {
	state    string // as stored: PENDING, SENT, DEAD or RETRY
	backed   bool   // PENDING after failed attempts: attempts, a next attempt and an error
	covered  bool   // PENDING and delivered: the target's mark is raised past it
	deadline bool   // the target's mark was raised to it (a round's last event)
}

// oldScripts is, per target, the rows the old pump wrote for it in turn (the targets take
// turns, so their ids interleave). REDIS_NOTIFY never delivered anything: it has no
// MSG_EVENT_SENT row, the migration adds it.
var oldScripts = map[string][]oldRow{
	event.TargetFlop: {{state: "PENDING", covered: true}, {state: "PENDING", covered: true, deadline: true}, {state: "SENT"},
		{state: "PENDING", covered: true}, {state: "DEAD"}, {state: "PENDING", covered: true, deadline: true},
		{state: "PENDING", backed: true}, {state: "PENDING"}},
	event.TargetSchd: {{state: "PENDING", covered: true}, {state: "RETRY"}, {state: "PENDING", covered: true},
		{state: "PENDING", covered: true, deadline: true}, {state: "SENT"}, {state: "PENDING"}, {state: "PENDING", backed: true},
		{state: "PENDING"}},
	event.TargetNotify: {{state: "PENDING"}, {state: "DEAD"}, {state: "PENDING", backed: true}, {state: "PENDING"},
		{state: "PENDING"}},
}

// oldTargets are oldScripts' targets in the order they take turns.
var oldTargets = []string{event.TargetFlop, event.TargetSchd, event.TargetNotify}

// downTo takes db's schema down to version (its migrations' Down, as goose runs them) and
// returns the migrations' provider.
func downTo(t *testing.T, db *store.DB, version int64) *goose.Provider {
	t.Helper()
	dialect := goose.DialectSQLite3
	if db.Dialect == store.MySQL {
		dialect = goose.DialectMySQL
	}
	p, err := goose.NewProvider(dialect, db.SQL, os.DirFS("migrations/"+string(db.Dialect)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.DownTo(context.Background(), version); err != nil {
		t.Fatal(err)
	}
	return p
}

// at17 takes db's schema down to version 17, the last before the log.
func at17(t *testing.T, db *store.DB) *goose.Provider { return downTo(t, db, 17) }

// writeOldOutbox writes, at schema 17, the rows oldScripts gives as the old pump and
// dispatcher wrote them: INSERTs that take their ids from the table's AUTO_INCREMENT, marks
// raised in MSG_EVENT_SENT and MSG_EVENT_MARK. With dropHighest the last rows the table gave
// are deleted again (retention purged them), so the table's largest id is below the ones it
// gave.
func writeOldOutbox(t *testing.T, db *store.DB, dropHighest bool) oldOutbox {
	t.Helper()
	ctx := context.Background()
	t0 := time.Date(2026, 6, 1, 8, 0, 0, 123456_000, time.UTC)
	msgs, err := db.Intake.InsertMessages(ctx, []string{"<old-1/>", "<old-2/>"}, t0)
	if err != nil {
		t.Fatal(err)
	}
	// A database of schema 17 has a count and mark only for the targets that sent anything; the
	// way down from 18 that made this one left the upgrade's rows for the four.
	storetest.Exec(t, db, `DELETE FROM MSG_EVENT_SENT`)
	out := oldOutbox{states: map[string]map[int64]string{}, pending: map[string][]int64{}}
	marks := map[string]int64{}
	sent := map[string]int{}
	insert := func(target, state string, i int, r oldRow) int64 {
		t.Helper()
		created := t0.Add(time.Duration(i) * time.Second)
		var key, next, first, class, lastErr, sentAt any
		if i%4 != 3 {
			key = fmt.Sprint(88000 + i)
		}
		switch {
		case state == "SENT":
			sentAt = store.T(created.Add(time.Minute))
		case state == "DEAD":
			first, class, lastErr = store.T(created.Add(time.Second)), "REJECTED", "the broker refused the record: 消息太大 🛑 "+strings.Repeat("x", 1900)
		case r.backed:
			next, first, class, lastErr = store.T(created.Add(time.Hour)), store.T(created.Add(time.Second)), "INFRA", "dial tcp: connection refused"
		case state == "RETRY":
			first, class, lastErr = nil, "INFRA", "replayed after: broker down"
		}
		attempts := 0
		if state == "DEAD" {
			attempts = 2147483647
		} else if r.backed || state == "RETRY" {
			attempts = 3
		}
		payload := fmt.Sprintf(`{"FLID":%d,"op":"update","changes":{"REMC":{"old":null,"new":"登机口 %d 🛫"}},"target":%q}`, 88000+i, i, target)
		res, err := db.SQL.Exec(`INSERT INTO MSG_EVENT (CMINMSGS_ID, TYPE_TAG, TARGET, KIND, FLIGHT_KEY, PAYLOAD, STATE, ATTEMPTS,
NEXT_ATTEMPT_AT, FIRST_FAILED_AT, ERROR_CLASS, LAST_ERROR, CREATED_AT, SENT_AT) VALUES (?, 'FLOP-REMC', ?, 'flop', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			msgs[i%2], target, key, payload, state, attempts, next, first, class, lastErr, store.T(created), sentAt)
		if err != nil {
			t.Fatalf("insert an old %s event of %s: %v", state, target, err)
		}
		id, err := res.LastInsertId()
		if err != nil {
			t.Fatal(err)
		}
		out.given = max(out.given, id)
		return id
	}
	for i := 0; ; i++ {
		wrote := false
		for _, target := range oldTargets {
			script := oldScripts[target]
			if i >= len(script) {
				continue
			}
			wrote = true
			r := script[i]
			id := insert(target, r.state, i, r)
			if out.states[target] == nil {
				out.states[target] = map[int64]string{}
			}
			shown := r.state
			switch {
			case r.state == "RETRY":
				shown = "PENDING"
			case r.covered:
				shown = "SENT"
			}
			out.states[target][id] = shown
			if shown == "PENDING" {
				out.pending[target] = append(out.pending[target], id)
			}
			if r.covered || r.state == "SENT" {
				sent[target]++
			}
			if r.deadline {
				marks[target] = id
				storetest.Exec(t, db, fmt.Sprintf(`INSERT INTO MSG_EVENT_MARK (TARGET, UPTO_EVENT_ID, SENT_AT) VALUES ('%s', %d, '%s')`,
					target, id, store.T(t0.Add(time.Duration(i)*time.Second+time.Minute)).(string)))
			}
		}
		if !wrote {
			break
		}
	}
	for target, n := range sent {
		storetest.Exec(t, db, fmt.Sprintf(`INSERT INTO MSG_EVENT_SENT (TARGET, SENT, UPTO_EVENT_ID) VALUES ('%s', %d, %d)`, target, n, marks[target]))
	}
	if dropHighest {
		// ES_FLIGHT's events, delivered and purged: the ids they took are given for good.
		for i := range 3 {
			insert(event.TargetES, "SENT", 100+i, oldRow{state: "SENT"})
		}
		storetest.Exec(t, db, `DELETE FROM MSG_EVENT WHERE TARGET = '`+event.TargetES+`'`)
		if got := maxEventID(t, db); got >= out.given {
			t.Fatalf("after the purge the largest id is %d, want below %d", got, out.given)
		}
	}
	out.rows = eventRows(t, db)
	out.marks = markRows(t, db)
	return out
}

// maxEventID is MSG_EVENT's largest id.
func maxEventID(t *testing.T, db *store.DB) int64 {
	t.Helper()
	var id sql.NullInt64
	if err := db.SQL.QueryRow(`SELECT MAX(EVENT_ID) FROM MSG_EVENT`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id.Int64
}

// eventRows returns every row of MSG_EVENT but the shared ones, every column as the driver
// gives it with its Go type, in (EVENT_ID, TARGET) order: two reads are equal when every byte
// is.
func eventRows(t *testing.T, db *store.DB) []string {
	t.Helper()
	return dump(t, db, `SELECT `+oldEventCols+` FROM MSG_EVENT WHERE TARGET <> '`+event.Shared+`' ORDER BY EVENT_ID, TARGET`)
}

// markRows returns the counts and marks of the targets that sent anything (MSG_EVENT_SENT's
// columns of schema 17; the upgrade adds rows of none sent for the targets that had none) and
// every raise of a mark.
func markRows(t *testing.T, db *store.DB) []string {
	t.Helper()
	return append(dump(t, db, `SELECT TARGET, SENT, UPTO_EVENT_ID FROM MSG_EVENT_SENT WHERE SENT > 0 OR UPTO_EVENT_ID > 0 ORDER BY TARGET`),
		dump(t, db, `SELECT TARGET, UPTO_EVENT_ID, SENT_AT FROM MSG_EVENT_MARK ORDER BY TARGET, UPTO_EVENT_ID`)...)
}

// dump runs query and returns each row as text, each value with its Go type.
func dump(t *testing.T, db *store.DB, query string) []string {
	t.Helper()
	rows, err := db.SQL.Query(query)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for i, v := range vals {
			if b.Len() > 0 {
				b.WriteString(" | ")
			}
			if raw, ok := v.([]byte); ok {
				v = string(raw) // the driver's buffer is reused by the next row
			}
			fmt.Fprintf(&b, "%s=%T(%q)", cols[i], v, fmt.Sprint(v))
		}
		out = append(out, b.String())
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// rowsDiff says where got and want (dump's rows) first differ, "" when they are equal.
func rowsDiff(got, want []string) string {
	for i := range max(len(got), len(want)) {
		switch {
		case i >= len(got):
			return fmt.Sprintf("%d rows, want %d; the first missing: %s", len(got), len(want), want[i])
		case i >= len(want):
			return fmt.Sprintf("%d rows, want %d; the first extra: %s", len(got), len(want), got[i])
		case got[i] != want[i]:
			return fmt.Sprintf("row %d is\n  %s\nwant\n  %s", i, got[i], want[i])
		}
	}
	return ""
}

// sequence returns the value of the outbox's sequence: the last id given out.
func sequence(t *testing.T, db *store.DB) int64 {
	t.Helper()
	var v int64
	if err := db.SQL.QueryRow(`SELECT VALUE FROM MSGX_COUNTER WHERE NAME = 'EVENT_ID'`).Scan(&v); err != nil {
		t.Fatalf("the outbox's sequence: %v", err)
	}
	return v
}

// checkUpgraded checks what the migration must keep of old: every row and mark as written,
// each target's events in the state it had, and a sequence above every id the table gave.
func checkUpgraded(t *testing.T, db *store.DB, old oldOutbox) {
	t.Helper()
	ctx := context.Background()
	if d := rowsDiff(eventRows(t, db), old.rows); d != "" {
		t.Errorf("MSG_EVENT after the migration differs from what was written: %s", d)
	}
	if d := rowsDiff(markRows(t, db), old.marks); d != "" {
		t.Errorf("the counts and marks after the migration differ from what was written: %s", d)
	}
	if seq := sequence(t, db); seq < old.given {
		t.Errorf("the sequence is at %d after the migration, below id %d the table gave out: that id would be given twice", seq, old.given)
	}
	for _, target := range oldTargets {
		evs, err := db.Outbox.ListEvents(ctx, store.EventFilter{Target: target, Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		got := map[int64]string{}
		for _, e := range evs {
			got[e.EventID] = string(e.State)
		}
		want := old.states[target]
		if len(got) != len(want) {
			t.Errorf("%s lists %d events after the migration, want %d: %v", target, len(got), len(want), got)
		}
		for id, st := range want {
			if got[id] != st {
				t.Errorf("%s's event %d is %q after the migration, want %q", target, id, got[id], st)
			}
		}
	}
}

// writeShared writes n flight changes after the upgrade as the pump does, each once as a
// shared row every target takes, and returns their ids.
func writeShared(t *testing.T, db *store.DB, n int) []int64 {
	t.Helper()
	ctx := context.Background()
	now := time.Date(2026, 6, 2, 9, 0, 0, 0, time.UTC)
	msg, err := db.Intake.InsertMessages(ctx, []string{"<new/>"}, now)
	if err != nil {
		t.Fatal(err)
	}
	before := maxEventID(t, db)
	var evs []pipeline.Event
	for i := range n {
		flid := int64(99100 + i)
		c := event.FlightChange{FLID: flid, Op: event.Update,
			Changes: []event.Change{{Key: "REMC", Old: json.RawMessage(`"旧"`), New: json.RawMessage(fmt.Sprintf(`"新 %d 🛬"`, i))}},
			Record:  json.RawMessage(fmt.Sprintf(`{"FLID":%d,"REMC":"新 %d 🛬"}`, flid, i))}
		p, err := event.Encode(&c)
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, pipeline.Event{Target: event.Shared, Kind: event.KindChange, Key: fmt.Sprint(flid), Payload: p})
	}
	if _, _, err := db.Processor.Succeed(ctx, msg[0], store.Success{TypeTag: "FLOP-REMC", Identity: "FLOP-REMC|new",
		Decision: pipeline.Decision{Events: evs}}, nil, now); err != nil {
		t.Fatal(err)
	}
	var ids []int64
	rows, err := db.SQL.Query(`SELECT EVENT_ID FROM MSG_EVENT WHERE TARGET = ? AND EVENT_ID > ? ORDER BY EVENT_ID`, event.Shared, before)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if len(ids) != n {
		t.Fatalf("%d shared rows written, want %d", len(ids), n)
	}
	return ids
}

// deliverAll delivers every target's pending events through the store as the dispatcher does, a
// few at a time (PendingEvents, then MarkSent), and checks each target is given its old
// pending events once each, in id order, then every shared one.
func deliverAll(t *testing.T, db *store.DB, old oldOutbox, shared []int64) {
	t.Helper()
	ctx := context.Background()
	now := time.Date(2026, 6, 2, 10, 0, 0, 0, time.UTC)
	for _, target := range oldTargets {
		var got []int64
		for round := 0; ; round++ {
			if round > 100 {
				t.Fatalf("%s still has events pending after 100 rounds: given %v", target, got)
			}
			evs, err := db.Outbox.PendingEvents(ctx, target, 3)
			if err != nil {
				t.Fatal(err)
			}
			if len(evs) == 0 {
				break
			}
			var ids []int64
			for _, e := range evs {
				if len(got) > 0 && e.EventID <= got[len(got)-1] {
					t.Fatalf("%s is given event %d after %d: ids must rise (given so far %v)", target, e.EventID, got[len(got)-1], got)
				}
				got = append(got, e.EventID)
				ids = append(ids, e.EventID)
			}
			if err := db.Outbox.EventTx(ctx, func(tx store.EventTx) error {
				n, err := tx.MarkSent(target, ids, now)
				if err == nil && n != len(ids) {
					err = fmt.Errorf("marked %d of %v sent", n, ids)
				}
				return err
			}); err != nil {
				t.Fatalf("deliver %v to %s: %v", ids, target, err)
			}
		}
		want := append(slices.Clone(old.pending[target]), shared...)
		if !slices.Equal(got, want) {
			t.Errorf("%s was given %v, want its old pending events then the shared ones: %v", target, got, want)
		}
	}
}

// TestEventLogMigrationKeepsTheOldOutboxAndDrainsItFirst upgrades an outbox an older msgx
// wrote, per target, to the log, on every dialect: as written, and with the highest rows
// purged so that the table's largest id is below the ones it gave. Every row and mark comes
// through byte for byte, every event keeps its state, the sequence starts above every id the
// table gave, and delivery takes each target's old pending events once, in order, before the
// shared rows written after the upgrade.
func TestEventLogMigrationKeepsTheOldOutboxAndDrainsItFirst(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		for _, drop := range []bool{false, true} {
			name := d.Name
			if drop {
				name += "/highest-purged"
			}
			t.Run(name, func(t *testing.T) {
				db := d.Open(t)
				ctx := context.Background()
				at17(t, db)
				old := writeOldOutbox(t, db, drop)
				if _, err := db.Migrate(ctx); err != nil {
					t.Fatal(err)
				}
				checkUpgraded(t, db, old)
				if err := db.Outbox.OpenTargets(ctx, oldTargets, nil); err != nil { // as msgx serve does at start
					t.Fatal(err)
				}
				shared := writeShared(t, db, 4)
				if shared[0] <= old.given {
					t.Fatalf("the first shared row took id %d, not above %d the old table gave", shared[0], old.given)
				}
				deliverAll(t, db, old, shared)
			})
		}
	}
}

// TestEventLogMigrationGoesDownAndUpAgain migrates an upgraded outbox with no shared row yet
// back to schema 17 and up again: the old rows come back as they were, an older msgx that
// writes again after the way down gives no id the table gave before (its events would be
// taken for delivered by a mark already past them), and the second upgrade keeps everything
// as the first did.
func TestEventLogMigrationGoesDownAndUpAgain(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		t.Run(d.Name, func(t *testing.T) {
			db := d.Open(t)
			ctx := context.Background()
			p := at17(t, db)
			old := writeOldOutbox(t, db, true)
			if _, err := db.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			checkUpgraded(t, db, old)
			if _, err := p.DownTo(ctx, 17); err != nil {
				t.Fatalf("migrate down to 17: %v", err)
			}
			if d := rowsDiff(eventRows(t, db), old.rows); d != "" {
				t.Errorf("MSG_EVENT after the way down differs from what was written: %s", d)
			}
			// The older msgx writes an event for KAFKA_FLOP again, past its mark.
			given := old.given
			id, err := oldPumpWrites(db, &old)
			if err != nil {
				t.Fatal(err)
			}
			if id <= given {
				t.Fatalf("after the way down the old table gave id %d again (it gave up to %d before the upgrade)", id, given)
			}
			old.rows = eventRows(t, db)
			if _, err := db.Migrate(ctx); err != nil {
				t.Fatalf("migrate up again: %v", err)
			}
			checkUpgraded(t, db, old)
			if err := db.Outbox.OpenTargets(ctx, oldTargets, nil); err != nil {
				t.Fatal(err)
			}
			deliverAll(t, db, old, writeShared(t, db, 2))
		})
	}
}

// oldPumpWrites inserts one more event of KAFKA_FLOP, past its mark, as the old pump did (the
// table gives its id), and returns its id; once it is in, it adds it to old but for its rows.
func oldPumpWrites(db *store.DB, old *oldOutbox) (int64, error) {
	res, err := db.SQL.Exec(`INSERT INTO MSG_EVENT (CMINMSGS_ID, TYPE_TAG, TARGET, KIND, PAYLOAD, STATE, ATTEMPTS, CREATED_AT)
VALUES (1, 'FLOP-REMC', ?, 'flop', '{"FLID":88999}', 'PENDING', 0, ?)`, event.TargetFlop, store.T(time.Date(2026, 6, 3, 0, 0, 0, 0, time.UTC)))
	if err != nil {
		return 0, err
	}
	id, err := res.LastInsertId()
	if err != nil {
		return 0, err
	}
	old.given = max(old.given, id)
	old.states[event.TargetFlop][id] = "PENDING"
	old.pending[event.TargetFlop] = append(old.pending[event.TargetFlop], id)
	return id, nil
}

// upStatements returns the statements of the Up of the MySQL migration file name, in order,
// as goose runs them (split at the semicolon that ends a line, comments left out).
func upStatements(t *testing.T, name string) []string {
	t.Helper()
	b, err := os.ReadFile("migrations/mysql/" + name)
	if err != nil {
		t.Fatal(err)
	}
	up, _, ok := strings.Cut(string(b), "-- +goose Down")
	if !ok || !strings.Contains(up, "-- +goose Up") {
		t.Fatalf("%s has no Up and Down sections", name)
	}
	var stmts []string
	var cur strings.Builder
	for line := range strings.Lines(up) {
		if strings.HasPrefix(strings.TrimSpace(line), "--") {
			continue
		}
		cur.WriteString(line)
		if strings.HasSuffix(strings.TrimSpace(line), ";") {
			stmts = append(stmts, strings.TrimSpace(cur.String()))
			cur.Reset()
		}
	}
	if strings.TrimSpace(cur.String()) != "" {
		t.Fatalf("%s: a statement without its semicolon: %q", name, cur.String())
	}
	return stmts
}

// TestEventLogMigrationRunsAgainAfterAKillOnMySQL shows the MySQL upgrade can be killed
// between any two of its statements (MySQL commits each DDL statement on its own, so goose's
// transaction does not undo the first ones) and run again from the start, as msgx does at its
// next start: for each cut, the statements before it are run alone, then the whole migration;
// the result is the same as one clean run. Between cuts the schema goes back to 17.
//
// At each cut an older msgx still pumping (the instance holding the lease while a standby is
// upgraded first) writes an event, as it did at 17: while MSG_EVENT still gives ids it takes
// one, which the sequence must then pass too (the seed was taken before); once the table
// gives none its insert is refused, so its message is processed again by the new msgx.
func TestEventLogMigrationRunsAgainAfterAKillOnMySQL(t *testing.T) {
	t.Parallel()
	stmts := upStatements(t, "00018_event_log.sql")
	if len(stmts) < 2 {
		t.Fatalf("00018's Up has %d statements", len(stmts))
	}
	for _, d := range storetest.Dialects() {
		if !strings.HasPrefix(d.Name, "mysql") {
			continue // SQLite runs the Up in one transaction: a kill undoes all of it
		}
		t.Run(d.Name, func(t *testing.T) {
			db := d.Open(t)
			ctx := context.Background()
			p := at17(t, db)
			old := writeOldOutbox(t, db, true)
			for cut := 1; cut <= len(stmts); cut++ {
				for _, s := range stmts[:cut] {
					if _, err := db.SQL.ExecContext(ctx, s); err != nil {
						t.Fatalf("cut %d: %s: %v", cut, s, err)
					}
				}
				var extra string
				if err := db.SQL.QueryRow(`SELECT EXTRA FROM information_schema.COLUMNS
WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'MSG_EVENT' AND COLUMN_NAME = 'EVENT_ID'`).Scan(&extra); err != nil {
					t.Fatal(err)
				}
				id, err := oldPumpWrites(db, &old)
				switch gives := strings.Contains(strings.ToLower(extra), "auto_increment"); {
				case gives && err != nil:
					t.Fatalf("cut %d: the old pump's insert, while the table still gives ids: %v", cut, err)
				case !gives && err == nil:
					t.Fatalf("cut %d: the old pump's insert took id %d after the table stopped giving ids", cut, id)
				case gives:
					old.rows = eventRows(t, db)
				}
				if v, err := db.Migrate(ctx); err != nil || v < 18 {
					t.Fatalf("cut %d: the migration run again after statements 1..%d: version %d, %v", cut, cut, v, err)
				}
				checkUpgraded(t, db, old)
				var keyCols string
				if err := db.SQL.QueryRow(`SELECT GROUP_CONCAT(COLUMN_NAME ORDER BY SEQ_IN_INDEX) FROM information_schema.STATISTICS
WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'MSG_EVENT' AND INDEX_NAME = 'PRIMARY'`).Scan(&keyCols); err != nil || keyCols != "EVENT_ID,TARGET" {
					t.Errorf("cut %d: MSG_EVENT's primary key is (%s), %v; want (EVENT_ID,TARGET)", cut, keyCols, err)
				}
				var added int
				if err := db.SQL.QueryRow(`SELECT COUNT(*) FROM MSG_EVENT_SENT WHERE TARGET IN (?, ?, ?, ?) AND FROM_EVENT_ID = 0 AND TO_EVENT_ID IS NULL`,
					event.TargetFlop, event.TargetSchd, event.TargetNotify, event.TargetES).Scan(&added); err != nil || added != 4 {
					t.Errorf("cut %d: %d of the four targets take every shared row, %v", cut, added, err)
				}
				if cut < len(stmts) {
					if _, err := p.DownTo(ctx, 17); err != nil {
						t.Fatalf("cut %d: migrate down to 17: %v", cut, err)
					}
				}
			}
			if err := db.Outbox.OpenTargets(ctx, oldTargets, nil); err != nil {
				t.Fatal(err)
			}
			deliverAll(t, db, old, writeShared(t, db, 3))
		})
	}
}
