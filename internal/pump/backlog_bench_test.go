package pump_test

import (
	"context"
	"database/sql"
	"io"
	"log/slog"
	"strings"
	"syscall"
	"testing"
	"time"

	"msgx/internal/bench"
	"msgx/internal/flight"
	"msgx/internal/handler"
	"msgx/internal/pipeline"
	"msgx/internal/pump"
	"msgx/internal/simulate"
	"msgx/internal/sis"
	"msgx/internal/store"
	"msgx/internal/store/storetest"
)

// BenchmarkBacklog processes a backlog of b.N messages (half reference adds, half FLOPs of
// the flights of a 300-flight snapshot, as msgx bench sends them) with the batching pump
// alone, and reports processed messages per second and the process's CPU per message (less
// sensitive than the wall clock to a busy machine).
//
//	go test ./internal/pump -run XXX -bench Backlog -benchtime 3000x
func BenchmarkBacklog(b *testing.B) {
	b.Run("sqlite", func(b *testing.B) { benchBacklog(b, storetest.SQLite(b)) })
	b.Run("mysql", func(b *testing.B) { benchBacklog(b, storetest.MySQL(b)) })
}

// BenchmarkBacklogDay is BenchmarkBacklog on msgx bench's default workload: the simulated
// airport day of about b.N FLOPs (b.N/10 flights), its reference data and schedule processed
// first, then its FLOPs of every STYP in time order as the backlog, by the pump alone (msgx
// bench runs the dispatcher beside it).
//
//	go test ./internal/pump -run XXX -bench BacklogDay -benchtime 3000x
func BenchmarkBacklogDay(b *testing.B) {
	b.Run("sqlite", func(b *testing.B) { benchBacklogDay(b, storetest.SQLite(b)) })
	b.Run("mysql", func(b *testing.B) { benchBacklogDay(b, storetest.MySQL(b)) })
}

// backlogPump is the batching pump of the backlog benchmarks over db, and the day they run on.
func backlogPump(db *store.DB) (*pump.Pump, time.Time) {
	clock := pipeline.SystemClock{}
	loc := time.UTC
	fs := flight.New(storetest.Flight(db), clock, loc)
	p := pump.New(storetest.Pump(db), handler.Default(handler.Options{}), pump.Options{
		Policy: defaultPolicy, Clock: clock, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Flights: fs, View: fs, FlightsIn: func(tx *sql.Tx) pump.TxFlights { return fs.InTx(tx) },
		SIS: sis.Options{Location: loc}, BatchSize: 200,
	})
	return p, time.Now().In(loc).Truncate(24*time.Hour).AddDate(0, 0, 1)
}

// insertAll inserts raws, 500 per statement.
func insertAll(b *testing.B, db *store.DB, raws []string) {
	for start := 0; start < len(raws); start += 500 {
		if _, err := db.Intake.InsertMessages(context.Background(), raws[start:min(start+500, len(raws))], time.Now()); err != nil {
			b.Fatal(err)
		}
	}
}

// drain steps p until no message is PENDING or FAILED.
func drain(b *testing.B, db *store.DB, p *pump.Pump) {
	for {
		if _, err := p.Step(context.Background()); err != nil {
			b.Fatal(err)
		}
		var n int
		if err := db.SQL.QueryRow(`SELECT COUNT(*) FROM PROC_STATE WHERE STATE IN ('PENDING', 'FAILED')`).Scan(&n); err != nil {
			b.Fatal(err)
		}
		if n == 0 {
			return
		}
	}
}

func benchBacklog(b *testing.B, db *store.DB) {
	p, day := backlogPump(db)
	s := bench.Schedule{Day: day, Flights: 300, Loc: time.UTC}
	insertAll(b, db, []string{s.Snapshot()})
	drain(b, db, p)
	raws := make([]string, b.N)
	for i := range raws {
		if i%2 == 0 {
			raws[i] = bench.RefAdd(i)
		} else {
			raws[i] = s.Flop(i)
		}
	}
	insertAll(b, db, raws)
	drainTimed(b, db, p, len(raws), pipeline.Succeeded)
}

func benchBacklogDay(b *testing.B, db *store.DB) {
	p, day := backlogPump(db)
	st, err := simulate.Generate(simulate.Options{Flights: max(1, b.N/10), Day: day, Loc: time.UTC, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	var head, ops []string
	for _, m := range st.Messages {
		if len(ops) == 0 && !strings.HasPrefix(m.Tag, "FLOP-") {
			head = append(head, string(m.Body))
		} else {
			ops = append(ops, string(m.Body))
		}
	}
	insertAll(b, db, head)
	drain(b, db, p)
	insertAll(b, db, ops)
	drainTimed(b, db, p, len(ops), pipeline.Succeeded, pipeline.Skipped)
}

// drainTimed drains the n messages of the backlog as the benchmark's timed part, reports
// messages per second and CPU per message, and checks that each one ended in one of states.
func drainTimed(b *testing.B, db *store.DB, p *pump.Pump, n int, states ...pipeline.ProcStatus) {
	var r0, r1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &r0)
	b.ResetTimer()
	start := time.Now()
	drain(b, db, p)
	el := time.Since(start)
	b.StopTimer()
	syscall.Getrusage(syscall.RUSAGE_SELF, &r1)
	cpu := time.Duration(r1.Utime.Nano() - r0.Utime.Nano() + r1.Stime.Nano() - r0.Stime.Nano())
	in := make([]any, len(states))
	for i, st := range states {
		in[i] = string(st)
	}
	var bad int
	q := `SELECT COUNT(*) FROM PROC_STATE WHERE STATE NOT IN (?` + strings.Repeat(", ?", len(in)-1) + `)`
	if err := db.SQL.QueryRow(q, in...).Scan(&bad); err != nil || bad != 0 {
		b.Fatalf("%d messages not %v (%v)", bad, states, err)
	}
	b.ReportMetric(float64(n)/el.Seconds(), "msgs/s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(n), "cpu-µs/msg")
}
