package pump_test

import (
	"context"
	"database/sql"
	"io"
	"log/slog"
	"syscall"
	"testing"
	"time"

	"msgx/internal/bench"
	"msgx/internal/flight"
	"msgx/internal/handler"
	"msgx/internal/pipeline"
	"msgx/internal/pump"
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

func benchBacklog(b *testing.B, db *store.DB) {
	ctx := context.Background()
	clock := pipeline.SystemClock{}
	loc := time.UTC
	day := time.Now().In(loc).Truncate(24*time.Hour).AddDate(0, 0, 1)
	s := bench.Schedule{Day: day, Flights: 300, Loc: loc}
	fs := flight.New(db, clock, loc)
	p := pump.New(db, handler.Default(handler.Options{}), pump.Options{
		Policy: defaultPolicy, Clock: clock, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Flights: fs, View: fs, FlightsIn: func(tx *sql.Tx) pump.TxFlights { return fs.InTx(tx) },
		SIS: sis.Options{Location: loc}, BatchSize: 200,
	})
	drain := func() {
		for {
			if _, err := p.Step(ctx); err != nil {
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
	if _, err := db.InsertMessages(ctx, []string{s.Snapshot()}, clock.Now()); err != nil {
		b.Fatal(err)
	}
	drain()
	raws := make([]string, b.N)
	for i := range raws {
		if i%2 == 0 {
			raws[i] = bench.RefAdd(i)
		} else {
			raws[i] = s.Flop(i)
		}
	}
	for start := 0; start < len(raws); start += 500 {
		if _, err := db.InsertMessages(ctx, raws[start:min(start+500, len(raws))], clock.Now()); err != nil {
			b.Fatal(err)
		}
	}
	var r0, r1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &r0)
	b.ResetTimer()
	start := time.Now()
	drain()
	el := time.Since(start)
	b.StopTimer()
	syscall.Getrusage(syscall.RUSAGE_SELF, &r1)
	cpu := time.Duration(r1.Utime.Nano() - r0.Utime.Nano() + r1.Stime.Nano() - r0.Stime.Nano())
	var bad int
	if err := db.SQL.QueryRow(`SELECT COUNT(*) FROM PROC_STATE WHERE STATE <> 'SUCCEEDED'`).Scan(&bad); err != nil || bad != 0 {
		b.Fatalf("%d messages not SUCCEEDED (%v)", bad, err)
	}
	b.ReportMetric(float64(b.N)/el.Seconds(), "msgs/s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/msg")
}
