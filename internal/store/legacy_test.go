package store_test

// Contract tests of the legacy side of CMINMSGS, on SQLite and MariaDB: the legacy table is
// created first with the exact column types of docs/sis-format.md §4.1, then msgx migrates it.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	mysqldrv "github.com/go-sql-driver/mysql"

	"msgx/internal/handler"
	"msgx/internal/pipeline"
	"msgx/internal/pump"
	"msgx/internal/store"
	"msgx/internal/store/storetest"
	"msgx/internal/testkit"
)

var shanghai = mustZone("Asia/Shanghai")

func mustZone(name string) *time.Location {
	loc, err := time.LoadLocation(name)
	if err != nil {
		panic(err)
	}
	return loc
}

type legacyEnv struct {
	db      *store.DB
	dialect string
	log     *testkit.Buffer
}

// openLegacy creates the legacy CMINMSGS (storetest.LegacyCMINMSGSFor, with constraint
// added unless it is ""), then migrates the database with msgx. isolation is "" or a MySQL
// level for the DSN, optionally followed by "&" and more DSN parameters.
func openLegacy(t *testing.T, dialect, isolation, constraint string, opt store.LegacyOptions) *legacyEnv {
	t.Helper()
	ctx := context.Background()
	dsn := filepath.Join(t.TempDir(), "legacy.db")
	if dialect == "mysql" {
		dsn = storetest.MySQLDSN(t)
		if isolation != "" {
			level, more, _ := strings.Cut(isolation, "&")
			dsn += "?transaction_isolation=" + url.QueryEscape("'"+level+"'")
			if more != "" {
				dsn += "&" + more
			}
		}
	}
	db, err := store.Open(ctx, dialect, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	var constraints []string
	if constraint != "" {
		constraints = append(constraints, constraint)
	}
	storetest.Exec(t, db, storetest.LegacyCMINMSGSFor(db.Dialect, "CMINMSGS", constraints...))
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatalf("migrate on the legacy table: %v", err)
	}
	l := &testkit.Buffer{}
	if opt.Location == nil {
		opt.Location = shanghai
	}
	opt.Logger = slog.New(slog.NewJSONHandler(l, nil))
	db.Intake.SetLegacy(opt)
	return &legacyEnv{db: db, dialect: dialect, log: l}
}

// eachLegacy runs fn on a legacy-shaped SQLite and MariaDB database.
func eachLegacy(t *testing.T, constraint string, opt store.LegacyOptions, fn func(t *testing.T, e *legacyEnv)) {
	for _, d := range []string{"sqlite", "mysql"} {
		t.Run(d, func(t *testing.T) { fn(t, openLegacy(t, d, "", constraint, opt)) })
	}
}

// eachIsolation runs fn on SQLite and on MariaDB under READ COMMITTED and REPEATABLE READ.
func eachIsolation(t *testing.T, fn func(t *testing.T, e *legacyEnv)) {
	t.Run("sqlite", func(t *testing.T) { fn(t, openLegacy(t, "sqlite", "", "", store.LegacyOptions{})) })
	for _, iso := range []string{"READ-COMMITTED", "REPEATABLE-READ"} {
		t.Run("mysql/"+iso, func(t *testing.T) {
			fn(t, openLegacy(t, "mysql", iso+"&innodb_lock_wait_timeout=1", "", store.LegacyOptions{}))
		})
	}
}

// row is one CMINMSGS row's legacy columns, as text.
type row struct {
	Received, Processed, Name, Seq, Sent, Subtype, Type, Status sql.NullString
}

func (e *legacyEnv) row(t *testing.T, id int64) row {
	t.Helper()
	var r row
	err := e.db.SQL.QueryRow(`SELECT CAST(CMINMSGS_DATE_RECEIVED AS CHAR), CAST(CMINMSGS_DATE_PROCESSED AS CHAR), CMINMSGS_SUBSYSTEM_NAME,
		CAST(CMINMSGS_SUBSYSTEM_SEQUENCE AS CHAR), CAST(CMINMSGS_SUBSYSTEM_DATE_SENT AS CHAR), CMINMSGS_SUBSYSTEM_SUBTYPE, CMINMSGS_SUBSYSTEM_TYPE,
		CMINMSGS_STATUS FROM CMINMSGS WHERE CMINMSGS_ID = ?`, id).
		Scan(&r.Received, &r.Processed, &r.Name, &r.Seq, &r.Sent, &r.Subtype, &r.Type, &r.Status)
	if err != nil {
		t.Fatalf("CMINMSGS %d: %v", id, err)
	}
	return r
}

// gateway inserts a row straight into CMINMSGS, as the legacy gateway does; processed is the
// legacy's CMINMSGS_DATE_PROCESSED ("" for NULL).
func (e *legacyEnv) gateway(t *testing.T, raw, received, processed, status string) int64 {
	t.Helper()
	var p any
	if processed != "" {
		p = processed
	}
	res, err := e.db.SQL.Exec(`INSERT INTO CMINMSGS (CMINMSGS_CLOB_MSG, CMINMSGS_DATE_RECEIVED, CMINMSGS_DATE_PROCESSED, CMINMSGS_STATUS) VALUES (?, ?, ?, ?)`,
		raw, received, p, status)
	if err != nil {
		t.Fatal(err)
	}
	id, _ := res.LastInsertId()
	return id
}

func (e *legacyEnv) state(t *testing.T, id int64) *store.Message {
	t.Helper()
	m, err := e.db.Operations.GetMessage(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestLegacyTableCreatedFirstKeepsItsTypesThroughMigrate(t *testing.T) {
	t.Parallel()
	eachLegacy(t, "", store.LegacyOptions{}, func(t *testing.T, e *legacyEnv) {
		ctx := context.Background()
		if _, err := e.db.Migrate(ctx); err != nil {
			t.Fatalf("second migrate: %v", err)
		}
		for col, want := range map[string]string{"CMINMSGS_SUBSYSTEM_SEQUENCE": "mediumint", "CMINMSGS_SUBSYSTEM_NAME": "varchar(4)", "CMINMSGS_DATE_RECEIVED": "datetime"} {
			query := `SELECT type FROM pragma_table_info('CMINMSGS') WHERE name = ?`
			if e.db.Dialect == store.MySQL {
				query = `SELECT COLUMN_TYPE FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'CMINMSGS' AND COLUMN_NAME = ?`
			}
			var got string
			if err := e.db.SQL.QueryRowContext(ctx, query, col).Scan(&got); err != nil {
				t.Fatalf("declared type of %s: %v", col, err)
			}
			if !strings.HasPrefix(strings.ToLower(got), want) {
				t.Errorf("%s is %q after migrate, want the legacy's %s", col, got, want)
			}
		}
		// The inbox writes the legacy's datetime columns in airport local time, and marks its
		// rows taken so a legacy poller leaves them alone.
		now := time.Date(2026, 12, 1, 0, 30, 15, 250000000, time.UTC)
		ids, err := e.db.Intake.InsertMessages(ctx, []string{"<MSG/>"}, now)
		if err != nil {
			t.Fatal(err)
		}
		r := e.row(t, ids[0])
		if r.Received.String != "2026-12-01 08:30:15" || r.Processed.String != "2026-12-01 08:30:15" || r.Status.String != "VALID" {
			t.Fatalf("inbox row: received %q processed %q status %q, want local time 2026-12-01 08:30:15 and VALID", r.Received.String, r.Processed.String, r.Status.String)
		}
		var recv store.NullTime
		if err := e.db.SQL.QueryRow(`SELECT CMINMSGS_DATE_RECEIVED FROM CMINMSGS WHERE CMINMSGS_ID = ?`, ids[0]).Scan(&recv); err != nil {
			t.Fatal(err)
		}
		if got := e.db.Intake.LegacyTime(recv); got == nil || !got.Equal(now.Truncate(time.Second)) {
			t.Fatalf("LegacyTime read %v back, want %v", got, now.Truncate(time.Second))
		}
	})
}

// succeed commits message id as processed with meta and one event, as the pump does.
func succeed(t *testing.T, e *legacyEnv, id int64, meta store.Backfill, now time.Time) {
	t.Helper()
	dec := pipeline.Decision{Events: []pipeline.Event{{Target: "KAFKA_FLOP", Kind: "update", Key: "1", Payload: []byte(`{}`)}}}
	ident := fmt.Sprintf("%s|%s|%s|%s|%d", meta.SNDR, meta.TYPE, meta.STYP, meta.SEQN, id)
	if _, _, err := e.db.Processor.Succeed(context.Background(), id, store.Success{TypeTag: meta.TYPE + "-" + meta.STYP, Identity: ident, Meta: meta, Decision: dec}, nil, now); err != nil {
		t.Fatalf("message %d (%+v): %v", id, meta, err)
	}
	if m := e.state(t, id); m.State != pipeline.Succeeded {
		t.Fatalf("message %d is %s", id, m.State)
	}
	var n int
	if err := e.db.SQL.QueryRow(`SELECT COUNT(*) FROM MSG_EVENT WHERE CMINMSGS_ID = ?`, id).Scan(&n); err != nil || n != 1 {
		t.Fatalf("message %d committed %d events (%v), want its one event", id, n, err)
	}
}

func TestLegacyBackfillFitsTheLegacyColumns(t *testing.T) {
	t.Parallel()
	dttm := time.Date(2026, 12, 1, 8, 0, 0, 0, shanghai)
	cases := []struct {
		name      string
		meta      store.Backfill
		sndr, seq string // "" = NULL
		sent      string
		warn      string // in the log with the msg_id, "" = no warning
	}{
		{"fits", store.Backfill{SNDR: "AODB", TYPE: "FLOP", STYP: "CTOT", SEQN: "740013", DTTM: dttm}, "AODB", "740013", "2026-12-01 08:00:00", ""},
		{"largest MEDIUMINT", store.Backfill{SNDR: "AODB", TYPE: "FLOP", STYP: "CTOT", SEQN: "8388607", DTTM: dttm}, "AODB", "8388607", "2026-12-01 08:00:00", ""},
		{"SEQN one over MEDIUMINT", store.Backfill{SNDR: "AODB", TYPE: "FLOP", STYP: "CTOT", SEQN: "8388608", DTTM: dttm}, "AODB", "", "2026-12-01 08:00:00", "CMINMSGS_SUBSYSTEM_SEQUENCE left NULL"},
		{"SEQN over MEDIUMINT", store.Backfill{SNDR: "AODB", TYPE: "FLOP", STYP: "CTOT", SEQN: "9000000", DTTM: dttm}, "AODB", "", "2026-12-01 08:00:00", "CMINMSGS_SUBSYSTEM_SEQUENCE left NULL"},
		{"SEQN at MEDIUMINT UNSIGNED's largest", store.Backfill{SNDR: "AODB", TYPE: "FLOP", STYP: "CTOT", SEQN: "16777215", DTTM: dttm}, "AODB", "", "2026-12-01 08:00:00", "CMINMSGS_SUBSYSTEM_SEQUENCE left NULL"},
		{"SEQN one over MEDIUMINT UNSIGNED", store.Backfill{SNDR: "AODB", TYPE: "FLOP", STYP: "CTOT", SEQN: "16777216", DTTM: dttm}, "AODB", "", "2026-12-01 08:00:00", "CMINMSGS_SUBSYSTEM_SEQUENCE left NULL"},
		{"negative SEQN", store.Backfill{SNDR: "AODB", TYPE: "FLOP", STYP: "CTOT", SEQN: "-1", DTTM: dttm}, "AODB", "", "2026-12-01 08:00:00", "CMINMSGS_SUBSYSTEM_SEQUENCE left NULL: bad sequence"},
		{"SEQN of 19 digits", store.Backfill{SNDR: "AODB", TYPE: "FLOP", STYP: "CTOT", SEQN: "1234567890123456789", DTTM: dttm}, "AODB", "", "2026-12-01 08:00:00", "CMINMSGS_SUBSYSTEM_SEQUENCE left NULL"},
		{"CJK SNDR whole", store.Backfill{SNDR: "机场", TYPE: "FLOP", STYP: "CTOT", SEQN: "1", DTTM: dttm}, "机场", "1", "2026-12-01 08:00:00", ""},
		{"CJK SNDR cut at a character", store.Backfill{SNDR: "双流机场调度", TYPE: "FLOP", STYP: "CTOT", SEQN: "2", DTTM: dttm}, "双流机场", "2", "2026-12-01 08:00:00", "CMINMSGS_SUBSYSTEM_NAME cut"},
		{"4-byte SNDR", store.Backfill{SNDR: "𠀀𠀁𠀂𠀃𠀄", TYPE: "FLOP", STYP: "CTOT", SEQN: "3", DTTM: dttm}, "𠀀𠀁𠀂𠀃", "3", "2026-12-01 08:00:00", "CMINMSGS_SUBSYSTEM_NAME cut"},
		{"150-character SNDR", store.Backfill{SNDR: strings.Repeat("S", 150), TYPE: "FLOP", STYP: "CTOT", SEQN: "4", DTTM: dttm}, "SSSS", "4", "2026-12-01 08:00:00", "CMINMSGS_SUBSYSTEM_NAME cut"},
		{"DTTM before DATETIME's range", store.Backfill{SNDR: "AODB", TYPE: "FLOP", STYP: "CTOT", SEQN: "5", DTTM: time.Date(999, 1, 1, 0, 0, 0, 0, shanghai)}, "AODB", "5", "", "CMINMSGS_SUBSYSTEM_DATE_SENT left NULL"},
	}
	for _, batched := range []bool{false, true} {
		t.Run(fmt.Sprintf("batched=%v", batched), func(t *testing.T) {
			eachLegacy(t, "", store.LegacyOptions{}, func(t *testing.T, e *legacyEnv) {
				checkBackfills(t, e, cases, batched)
			})
		})
	}
}

// checkBackfills processes one gateway row per case, SUCCEEDED and SKIPPED in turn, one by one
// or all in one batch whose messages defer their back-fills to its end (Batch.Flush, several
// UPDATEs per round trip on MySQL), and checks what each row holds and what was logged.
func checkBackfills(t *testing.T, e *legacyEnv, cases []struct {
	name      string
	meta      store.Backfill
	sndr, seq string // "" = NULL
	sent      string
	warn      string // in the log with the msg_id, "" = no warning
}, batched bool) {
	ctx := context.Background()
	now := time.Date(2026, 12, 1, 1, 0, 0, 0, time.UTC)
	ids := make([]int64, len(cases))
	for i, c := range cases {
		ids[i] = e.gateway(t, fmt.Sprintf("<MSG n=%q/>", c.name), "2026-12-01 08:59:00", "", "VALID")
		if _, err := e.db.Intake.AdoptLegacy(ctx, ids[i]-1, ids[i], now); err != nil {
			t.Fatal(err)
		}
	}
	var b *store.Batch
	if batched {
		var err error
		if b, err = e.db.Processor.BeginBatch(ctx); err != nil {
			t.Fatal(err)
		}
		b.DeferWrites()
	}
	for i, c := range cases {
		id := ids[i]
		switch {
		case i%2 == 0 && !batched:
			succeed(t, e, id, c.meta, now)
		case i%2 == 0:
			ident := fmt.Sprintf("%s|%s|%s|%s|%d", c.meta.SNDR, c.meta.TYPE, c.meta.STYP, c.meta.SEQN, id)
			dec := pipeline.Decision{Events: []pipeline.Event{{Target: "KAFKA_FLOP", Kind: "update", Key: "1", Payload: []byte(`{}`)}}}
			if _, _, err := b.Succeed(ctx, id, store.Success{TypeTag: c.meta.TYPE + "-" + c.meta.STYP, Identity: ident, Meta: c.meta, Decision: dec}, nil, now); err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
		default:
			// A SKIPPED message back-fills too.
			meta := c.meta
			o := store.Outcome{State: pipeline.Skipped, LastError: "duplicate-of:1", Meta: &meta}
			record := e.db.Processor.Record
			if batched {
				record = b.Record
			}
			if err := record(ctx, id, o, now); err != nil {
				t.Fatalf("%s: record SKIPPED: %v", c.name, err)
			}
		}
	}
	if batched {
		if err := b.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if err := b.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for i, c := range cases {
		id := ids[i]
		{
			r := e.row(t, id)
			if r.Name.String != c.sndr || r.Seq.String != c.seq || r.Sent.String != c.sent || r.Type.String != c.meta.TYPE || r.Subtype.String != c.meta.STYP {
				t.Errorf("%s: back-fill name %q seq %q sent %q type %q subtype %q; want %q %q %q", c.name,
					r.Name.String, r.Seq.String, r.Sent.String, r.Type.String, r.Subtype.String, c.sndr, c.seq, c.sent)
			}
			if r.Processed.String != "2026-12-01 09:00:00" {
				t.Errorf("%s: CMINMSGS_DATE_PROCESSED %q, want the local time msgx took it", c.name, r.Processed.String)
			}
			logged := strings.Contains(e.log.String(), fmt.Sprintf(`"msg_id":%d,`, id))
			if c.warn == "" && logged {
				t.Errorf("%s: warned although everything fits: %s", c.name, e.log)
			}
			if c.warn != "" && (!logged || !strings.Contains(e.log.String(), c.warn)) {
				t.Errorf("%s: no warning %q with msg_id %d in the log: %s", c.name, c.warn, id, e.log)
			}
		}
	}
}

func TestLegacyBackfillRefusedByTheDatabaseDoesNotFailTheMessage(t *testing.T) {
	t.Parallel()
	// A constraint msgx cannot know: the database refuses the back-fill with a data error.
	eachLegacy(t, "CHECK (CMINMSGS_SUBSYSTEM_NAME <> 'NOPE')", store.LegacyOptions{}, func(t *testing.T, e *legacyEnv) {
		now := time.Date(2026, 12, 1, 1, 0, 0, 0, time.UTC)
		id := e.gateway(t, "<MSG/>", "2026-12-01 08:59:00", "", "VALID")
		if _, err := e.db.Intake.AdoptLegacy(context.Background(), 0, id, now); err != nil {
			t.Fatal(err)
		}
		succeed(t, e, id, store.Backfill{SNDR: "NOPE", TYPE: "FLOP", STYP: "CTOT", SEQN: "7"}, now)
		r := e.row(t, id)
		if r.Name.Valid || r.Type.Valid || r.Seq.Valid {
			t.Fatalf("the refused back-fill was partly written: %+v", r)
		}
		if r.Processed.String != "2026-12-01 09:00:00" {
			t.Fatalf("CMINMSGS_DATE_PROCESSED %q: the row must still be marked taken", r.Processed.String)
		}
		if !strings.Contains(e.log.String(), "refused by the database") || !strings.Contains(e.log.String(), fmt.Sprintf(`"msg_id":%d,`, id)) {
			t.Fatalf("no warning for the refused back-fill: %s", e.log)
		}
	})
}

func TestLegacyAdoptsOnlyRowsTheLegacyHasNotTaken(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC) // 10:00 in the airport
	eachLegacy(t, "", store.LegacyOptions{}, func(t *testing.T, e *legacyEnv) {
		ctx := context.Background()
		taken := e.gateway(t, "<MSG n='legacy took it'/>", "2026-11-30 09:00:00", "2026-11-30 09:00:01", "VALID")
		waiting := e.gateway(t, "<MSG n='waiting'/>", "2026-12-01 09:50:00", "", "VALID")
		invalid := e.gateway(t, "<MSG n='invalid'/>", "2026-12-01 09:51:00", "", "INVALID")
		n, oldest, err := e.db.Intake.Backlog(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n != 1 || oldest == nil || !oldest.Equal(time.Date(2026, 12, 1, 9, 50, 0, 0, shanghai)) {
			t.Fatalf("backlog %d, oldest %v; want 1 received 2026-12-01 09:50 local", n, oldest)
		}
		if n, err := e.db.Intake.AdoptLegacy(ctx, 0, invalid, now); err != nil || n != 1 {
			t.Fatalf("adopted %d (%v), want 1", n, err)
		}
		if e.state(t, taken) != nil || e.state(t, invalid) != nil {
			t.Fatal("adopted a row the legacy took, or an invalid one")
		}
		if m := e.state(t, waiting); m == nil || m.State != pipeline.Pending {
			t.Fatalf("the untaken VALID row was not adopted: %+v", m)
		}
		if r := e.row(t, taken); r.Processed.String != "2026-11-30 09:00:01" {
			t.Fatalf("the legacy's row was touched: %+v", r)
		}
		if r := e.row(t, waiting); r.Processed.String != "2026-12-01 10:00:00" {
			t.Fatalf("adopted row: CMINMSGS_DATE_PROCESSED %q, want msgx's local take time 2026-12-01 10:00:00", r.Processed.String)
		}
	})
}

func TestLegacyAdoptionBounds(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name string
		opt  func(ids []int64) store.LegacyOptions
	}{
		{"adopt-from-id", func(ids []int64) store.LegacyOptions { return store.LegacyOptions{AdoptFromID: ids[2]} }},
		{"adopt-since", func([]int64) store.LegacyOptions {
			return store.LegacyOptions{AdoptSince: time.Date(2026, 12, 1, 9, 0, 0, 0, shanghai)}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			eachLegacy(t, "", store.LegacyOptions{}, func(t *testing.T, e *legacyEnv) {
				ctx := context.Background()
				var ids []int64
				for _, recv := range []string{"2026-11-20 08:00:00", "2026-12-01 08:59:59", "2026-12-01 09:00:00", "2026-12-01 09:30:00"} {
					ids = append(ids, e.gateway(t, "<MSG/>", recv, "", "VALID"))
				}
				opt := c.opt(ids)
				opt.Location = shanghai
				e.db.Intake.SetLegacy(opt)
				if n, _, err := e.db.Intake.Backlog(ctx); err != nil || n != 2 {
					t.Fatalf("backlog %d (%v), want the 2 rows within the bound", n, err)
				}
				if n, err := e.db.Intake.AdoptLegacy(ctx, 0, ids[3], now); err != nil || n != 2 {
					t.Fatalf("adopted %d (%v), want 2", n, err)
				}
				for i, id := range ids {
					if got, want := e.state(t, id) != nil, i >= 2; got != want {
						t.Errorf("row %d (received %d-th): adopted %v, want %v", id, i, got, want)
					}
				}
			})
		})
	}
}

func TestLegacyTwoInboxNodesCommitInIDOrder(t *testing.T) {
	t.Parallel()
	eachIsolation(t, func(t *testing.T, e *legacyEnv) {
		ctx := context.Background()
		now := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
		// Another inbox node is in the middle of its commit: it holds the inbox lock and has
		// its row inserted, not committed.
		other, err := e.db.SQL.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer other.Rollback()
		if e.dialect == "mysql" {
			if _, err := other.Exec(`SELECT NAME FROM INBOX_LOCK WHERE NAME = 'inbox' FOR UPDATE`); err != nil {
				t.Fatal(err)
			}
		}
		res, err := other.Exec(`INSERT INTO CMINMSGS (CMINMSGS_CLOB_MSG, CMINMSGS_DATE_RECEIVED, CMINMSGS_DATE_PROCESSED, CMINMSGS_STATUS) VALUES ('<MSG n="other node"/>', ?, ?, 'VALID')`,
			e.db.Intake.LegacyNow(now), e.db.Intake.LegacyNow(now))
		if err != nil {
			t.Fatal(err)
		}
		first, _ := res.LastInsertId()
		if _, err := other.Exec(`INSERT INTO PROC_STATE (CMINMSGS_ID, STATE, ATTEMPTS, CREATED_AT, UPDATED_AT) VALUES (?, 'PENDING', 0, ?, ?)`, first, store.T(now), store.T(now)); err != nil {
			t.Fatal(err)
		}
		type result struct {
			ids []int64
			err error
		}
		done := make(chan result, 1)
		go func() {
			ids, err := e.db.Intake.InsertMessages(ctx, []string{`<MSG n="this node"/>`}, now)
			done <- result{ids, err}
		}()
		if e.dialect == "mysql" {
			// This node must wait for the other's commit, not take a higher id and commit
			// first: with the lock wait bounded to 1 s here, it gives up waiting.
			r := <-done
			var me *mysqldrv.MySQLError
			if r.err == nil || !errors.As(r.err, &me) || me.Number != 1205 || !errors.Is(r.err, store.ErrUnavailable) {
				t.Fatalf("this node answered %v, %v while the other node's lower id %d was not committed; want a lock wait timeout (unavailable)", r.ids, r.err, first)
			}
			go func() {
				ids, err := e.db.Intake.InsertMessages(ctx, []string{`<MSG n="this node, again"/>`}, now)
				done <- result{ids, err}
			}()
		}
		// Meanwhile the pump sees neither.
		if head, err := e.db.Processor.Head(ctx); err != nil || head != nil {
			t.Fatalf("the pump sees head %+v (%v) before either commit", head, err)
		}
		if err := other.Commit(); err != nil {
			t.Fatal(err)
		}
		r := <-done
		if r.err != nil {
			t.Fatal(r.err)
		}
		if r.ids[0] <= first {
			t.Fatalf("this node got id %d, committed after the other node's %d", r.ids[0], first)
		}
	})
}

// garbage is a message the pump finishes at once (DEAD/MALFORMED): enough to move the order.
const garbage = "not xml"

func newPump(db *store.DB, now time.Time) *pump.Pump {
	pdb := struct {
		*store.Intake
		*store.Processor
		*store.JobQueue
	}{db.Intake, db.Processor, db.JobQueue}
	return pump.New(pdb, handler.Default(handler.Options{}), pump.Options{
		Clock: fixedClock(now), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Policy: pipeline.RetryPolicy{MaxAttempts: 3, Steps: []time.Duration{time.Second}, Cap: time.Minute, HeadDeadline: time.Hour},
	})
}

type fixedClock time.Time

func (c fixedClock) Now() time.Time { return time.Time(c) }

// drain steps p until it waits.
func drain(t *testing.T, p *pump.Pump) {
	t.Helper()
	for i := 0; i < 50; i++ {
		wait, err := p.Step(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if wait > 0 {
			return
		}
	}
	t.Fatal("the pump never waited")
}

func TestLegacyRowBelowTheNewestJoinsWithinOneStep(t *testing.T) {
	t.Parallel()
	eachIsolation(t, func(t *testing.T, e *legacyEnv) {
		ctx := context.Background()
		now := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
		p := newPump(e.db, now)
		ids, err := e.db.Intake.InsertMessages(ctx, []string{garbage}, now)
		if err != nil {
			t.Fatal(err)
		}
		drain(t, p) // started; the clock stands still, so no minute sweep from here on
		// The gateway's rows: one with a higher id commits first, leaving a hole below it.
		hole := ids[0] + 5
		e.gateway(t, garbage, e.db.Intake.LegacyNow(now), "", "VALID") // takes ids[0]+1
		if _, err := e.db.SQL.Exec(`INSERT INTO CMINMSGS (CMINMSGS_ID, CMINMSGS_CLOB_MSG, CMINMSGS_DATE_RECEIVED, CMINMSGS_STATUS) VALUES (?, ?, ?, 'VALID')`,
			hole+1, garbage, e.db.Intake.LegacyNow(now)); err != nil {
			t.Fatal(err)
		}
		drain(t, p)
		if m := e.state(t, hole+1); m == nil || !m.State.Terminal() {
			t.Fatalf("the newest gateway row was not processed: %+v", m)
		}
		// The row with the lower id commits late.
		if _, err := e.db.SQL.Exec(`INSERT INTO CMINMSGS (CMINMSGS_ID, CMINMSGS_CLOB_MSG, CMINMSGS_DATE_RECEIVED, CMINMSGS_STATUS) VALUES (?, ?, ?, 'VALID')`,
			hole, garbage, e.db.Intake.LegacyNow(now)); err != nil {
			t.Fatal(err)
		}
		if _, err := p.Step(ctx); err != nil {
			t.Fatal(err)
		}
		if m := e.state(t, hole); m == nil {
			t.Fatalf("gateway row %d committed late was not adopted within one step", hole)
		}
	})
}

func TestLegacyInboxDoesNotWaitForAnOpenGatewayTransaction(t *testing.T) {
	t.Parallel()
	for _, iso := range []string{"READ-COMMITTED", "REPEATABLE-READ"} {
		t.Run("mysql/"+iso, func(t *testing.T) {
			e := openLegacy(t, "mysql", iso, "", store.LegacyOptions{})
			ctx := context.Background()
			now := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
			p := newPump(e.db, now)
			if _, err := e.db.Intake.InsertMessages(ctx, []string{garbage}, now); err != nil {
				t.Fatal(err)
			}
			drain(t, p)
			gw, err := e.db.SQL.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer gw.Rollback()
			res, err := gw.Exec(`INSERT INTO CMINMSGS (CMINMSGS_CLOB_MSG, CMINMSGS_DATE_RECEIVED, CMINMSGS_STATUS) VALUES (?, ?, 'VALID')`, garbage, e.db.Intake.LegacyNow(now))
			if err != nil {
				t.Fatal(err)
			}
			late, _ := res.LastInsertId()
			// The inbox commits while the gateway's transaction is open (a wait would end in
			// a lock wait timeout error here).
			ids, err := e.db.Intake.InsertMessages(ctx, []string{garbage}, now)
			if err != nil {
				t.Fatalf("the inbox could not commit beside an open gateway transaction: %v", err)
			}
			if ids[0] <= late {
				t.Fatalf("inbox id %d not above the gateway's %d", ids[0], late)
			}
			drain(t, p)
			if err := gw.Commit(); err != nil {
				t.Fatal(err)
			}
			if _, err := p.Step(ctx); err != nil {
				t.Fatal(err)
			}
			if m := e.state(t, late); m == nil {
				t.Fatalf("gateway row %d committed late was not adopted within one step", late)
			}
			if r := e.row(t, late); !r.Processed.Valid {
				t.Fatalf("adopted gateway row not marked taken: %+v", r)
			}
		})
	}
}

func TestLegacyInboxRefusesAMessageOverTheClobColumn(t *testing.T) {
	t.Parallel()
	eachLegacy(t, "", store.LegacyOptions{}, func(t *testing.T, e *legacyEnv) {
		// MEDIUMTEXT holds 16 MiB - 1 bytes.
		huge := "<MSG>" + strings.Repeat("机", (16<<20)/3) + "</MSG>"
		_, err := e.db.Intake.InsertMessages(context.Background(), []string{huge}, time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC))
		if !errors.Is(err, store.ErrTooLarge) {
			t.Fatalf("a %d-byte message into MEDIUMTEXT: %v, want ErrTooLarge (413)", len(huge), err)
		}
		if errors.Is(err, store.ErrUnavailable) {
			t.Fatalf("a message too large is not the database being unavailable: %v", err)
		}
	})
}

func TestLegacyBackfillIntoALatin1ColumnDoesNotFailTheMessage(t *testing.T) {
	t.Parallel()
	// MariaDB only: a legacy column in latin1 cannot hold 机场, which msgx cannot tell from the
	// column's width; the database refuses it (1366) and the back-fill gives way.
	e := openLegacy(t, "mysql", "", "", store.LegacyOptions{})
	if _, err := e.db.SQL.Exec(`ALTER TABLE CMINMSGS MODIFY CMINMSGS_SUBSYSTEM_NAME VARCHAR(4) CHARACTER SET latin1 NULL`); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 12, 1, 1, 0, 0, 0, time.UTC)
	id := e.gateway(t, "<MSG/>", "2026-12-01 08:59:00", "", "VALID")
	if _, err := e.db.Intake.AdoptLegacy(context.Background(), 0, id, now); err != nil {
		t.Fatal(err)
	}
	succeed(t, e, id, store.Backfill{SNDR: "机场", TYPE: "FLOP", STYP: "CTOT", SEQN: "8"}, now)
	if r := e.row(t, id); r.Name.Valid || r.Processed.String != "2026-12-01 09:00:00" {
		t.Fatalf("back-fill after the refusal: %+v; want no name and the row marked taken", r)
	}
	if !strings.Contains(e.log.String(), "Error 1366") {
		t.Fatalf("the refusal (1366) was not logged: %s", e.log)
	}
}

func TestLegacySessionsRunAtAnExplicitIsolationLevel(t *testing.T) {
	t.Parallel()
	for dsnLevel, want := range map[string]string{"": "READ-COMMITTED", "REPEATABLE-READ": "REPEATABLE-READ", "READ-COMMITTED": "READ-COMMITTED"} {
		e := openLegacy(t, "mysql", dsnLevel, "", store.LegacyOptions{})
		var level string
		var wait int
		if err := e.db.SQL.QueryRow(`SELECT @@SESSION.tx_isolation, @@SESSION.innodb_lock_wait_timeout`).Scan(&level, &wait); err != nil {
			t.Fatal(err)
		}
		if level != want || wait != 10 {
			t.Errorf("DSN level %q: session at %s with a %d s lock wait; want %s and 10 s", dsnLevel, level, wait, want)
		}
	}
}

// In a batch the back-fills go to the database at its end, several per round trip on MySQL:
// one the database refuses (the middle message's) is done again alone, so the messages around
// it keep theirs, and it is marked taken, as one by one.
func TestLegacyBackfillRefusedInABatch(t *testing.T) {
	t.Parallel()
	eachLegacy(t, "CHECK (CMINMSGS_SUBSYSTEM_NAME <> 'NOPE')", store.LegacyOptions{}, func(t *testing.T, e *legacyEnv) {
		ctx := context.Background()
		now := time.Date(2026, 12, 1, 1, 0, 0, 0, time.UTC)
		var ids []int64
		for i := 0; i < 3; i++ {
			id := e.gateway(t, fmt.Sprintf("<MSG n='%d'/>", i), "2026-12-01 08:59:00", "", "VALID")
			if _, err := e.db.Intake.AdoptLegacy(ctx, id-1, id, now); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		b, err := e.db.Processor.BeginBatch(ctx)
		if err != nil {
			t.Fatal(err)
		}
		b.DeferWrites()
		for i, sndr := range []string{"AODB", "NOPE", "ATC"} {
			meta := store.Backfill{SNDR: sndr, TYPE: "FLOP", STYP: "CTOT", SEQN: fmt.Sprint(i + 1)}
			if _, _, err := b.Succeed(ctx, ids[i], store.Success{TypeTag: "FLOP-CTOT", Identity: fmt.Sprintf("%s|%d", sndr, i), Meta: meta}, nil, now); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.Flush(ctx); err != nil {
			t.Fatalf("a refused back-fill failed the batch: %v", err)
		}
		if err := b.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		for i, want := range []string{"AODB", "", "ATC"} {
			r := e.row(t, ids[i])
			if r.Name.String != want || r.Seq.Valid != (want != "") {
				t.Errorf("message %d: back-fill name %q seq %v, want %q", i, r.Name.String, r.Seq, want)
			}
			if r.Processed.String != "2026-12-01 09:00:00" {
				t.Errorf("message %d: CMINMSGS_DATE_PROCESSED %q: the row must be marked taken", i, r.Processed.String)
			}
			if m := e.state(t, ids[i]); m.State != pipeline.Succeeded {
				t.Errorf("message %d is %s", i, m.State)
			}
		}
		if !strings.Contains(e.log.String(), "refused by the database") || !strings.Contains(e.log.String(), fmt.Sprintf(`"msg_id":%d,`, ids[1])) {
			t.Fatalf("no warning for the refused back-fill: %s", e.log)
		}
	})
}
