package pump_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"msgx/internal/handler"
	"msgx/internal/jobs"
	"msgx/internal/metrics"
	"msgx/internal/pipeline"
	"msgx/internal/pump"
	"msgx/internal/store"
	"msgx/internal/store/storetest"
	"msgx/internal/testkit"
)

// A real deadlock in the middle of a batch on MariaDB: another transaction, heavier (so InnoDB
// rolls the batch back, not it), holds the second message's PROC_STATE row and then asks for
// the lease row, which the batch locked first (the fence). The batch is done again from fresh reads, and no message
// is charged for it: both SUCCEED with no failed attempt, and the retry is counted in
// msgx_db_conflict_retries_total{op="pump"}.
func TestDeadlockedBatchIsDoneAgainNotCharged(t *testing.T) {
	t.Parallel()
	db := storetest.MySQL(t)
	ctx := context.Background()
	clock := testkit.NewClock(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	m := metrics.New(clock, "test", nil)
	// The pump's batches lock the lease row first (the fence), as under `msgx serve`.
	if err := db.Leases.AcquireLease(ctx, store.PumpLease, "test/pid-1/x", time.Hour, clock.Now()); err != nil {
		t.Fatal(err)
	}
	db.Leases.SetFence(store.PumpLease, "test/pid-1/x")
	p := pump.New(storetest.Pump(db), handler.Default(handler.Options{}), pump.Options{
		Policy: defaultPolicy, Clock: clock, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Jobs: &jobs.Runner{DB: db.Archiver, Clock: clock}, Metrics: m, BatchSize: 10,
	})
	e := &env{db: db, clock: clock, pump: p, t: t}
	ids := e.post(refMsg("STTS", "ADD", "81", stts("D1", "one"), 1), refMsg("STTS", "ADD", "82", stts("D2", "two"), 1))

	storetest.Exec(t, db, "CREATE TABLE T_HEAVY (ID INT PRIMARY KEY, V INT NOT NULL)")
	var heavy strings.Builder
	heavy.WriteString("INSERT INTO T_HEAVY VALUES ")
	for i := range 300 {
		fmt.Fprintf(&heavy, "(%d, 0),", i)
	}
	storetest.Exec(t, db, strings.TrimSuffix(heavy.String(), ","))
	other, err := db.SQL.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Rollback()
	for _, q := range []string{"UPDATE T_HEAVY SET V = V + 1", fmt.Sprintf("UPDATE PROC_STATE SET ATTEMPTS = ATTEMPTS WHERE CMINMSGS_ID = %d", ids[1])} {
		if _, err := other.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	stepped := make(chan error, 1)
	go func() {
		// Steps until the batch is through (the first may only adopt, at start).
		for range 50 {
			if _, err := p.Step(ctx); err != nil {
				stepped <- err
				return
			}
			var open int
			if err := db.SQL.QueryRow(`SELECT COUNT(*) FROM PROC_STATE WHERE STATE <> 'SUCCEEDED'`).Scan(&open); err != nil || open == 0 {
				stepped <- err
				return
			}
		}
		stepped <- fmt.Errorf("the messages were not through after 50 steps")
	}()
	// Once the batch waits for the second message's row, ask for a row the batch holds: a
	// deadlock. (The lease row is no longer one: the batch locks it only at its commit.)
	for end := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		var waiting int
		if err := db.SQL.QueryRow(`SELECT COUNT(*) FROM information_schema.PROCESSLIST
			WHERE DB = DATABASE() AND INFO LIKE 'UPDATE PROC_STATE%' AND TIME_MS > 200`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			break
		}
		select {
		case err := <-stepped:
			var states string
			db.SQL.QueryRow(`SELECT GROUP_CONCAT(CONCAT(CMINMSGS_ID, ':', STATE, ':', ATTEMPTS)) FROM PROC_STATE`).Scan(&states)
			t.Fatalf("the steps ended (%v) without waiting for the second message's row: %s", err, states)
		default:
		}
		if time.Now().After(end) {
			t.Fatal("the batch never waited for the second message's row")
		}
	}
	// The batch holds the first message's row, which it wrote before it came to the second:
	// asking for it closes the circle.
	if _, err := other.Exec(fmt.Sprintf("SELECT STATE FROM PROC_STATE WHERE CMINMSGS_ID = %d FOR UPDATE", ids[0])); err != nil {
		t.Fatalf("the heavier transaction was chosen as the deadlock's victim: %v", err)
	}
	if err := other.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := <-stepped; err != nil {
		t.Fatalf("the step with the deadlock: %v", err)
	}
	for _, id := range ids {
		if msg := e.want(id, pipeline.Succeeded, ""); msg.Attempts != 0 {
			t.Errorf("message %d was charged %d failed attempts for a deadlock", id, msg.Attempts)
		}
	}
	if got := conflictRetries(t, m, "pump"); got != 1 {
		t.Errorf("msgx_db_conflict_retries_total{op=pump} = %v, want 1", got)
	}
}

func conflictRetries(t *testing.T, m *metrics.Metrics, op string) float64 {
	t.Helper()
	mfs, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "msgx_db_conflict_retries_total" {
			continue
		}
		for _, mt := range mf.GetMetric() {
			if hasLabel(mt, "op", op) {
				return mt.GetCounter().GetValue()
			}
		}
	}
	return 0
}

func hasLabel(mt *dto.Metric, name, value string) bool {
	for _, l := range mt.GetLabel() {
		if l.GetName() == name && l.GetValue() == value {
			return true
		}
	}
	return false
}
