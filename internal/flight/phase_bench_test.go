package flight_test

import (
	"context"
	"database/sql"
	"io"
	"log/slog"
	"testing"
	"time"

	"msgx/internal/flight"
	"msgx/internal/flight/flighttest"
	"msgx/internal/flight/redisflight"
	"msgx/internal/handler"
	"msgx/internal/pipeline"
	"msgx/internal/pump"
	"msgx/internal/sis"
	"msgx/internal/store"
	"msgx/internal/store/storetest"
	"msgx/internal/testkit"
)

// BenchmarkPhaseAAgainstB runs the workload of BenchmarkSnapshotThenFlops (a 3,000-flight SCHD
// DNLD, then 2,000 FLOPs) in phase B (FLIGHT_STATE, batches), phase A as serve runs it (Redis
// first with a marker per message, FLIGHT_STATE mirrored, batches: a script per message, one
// SQL transaction per batch) and phase A one message per transaction (A-unbatched: the pump
// without ViewIn, as phase A ran before it batched), on SQLite and MariaDB, in one run,
// reporting seconds per snapshot and FLOPs per second of each.
//
//	go test ./internal/flight -run '^$' -bench PhaseAAgainstB -benchtime 1x
func BenchmarkPhaseAAgainstB(b *testing.B) {
	snapshot := benchSnapshot(benchFlights)
	flops := make([]string, benchFlops)
	for i := range flops {
		flops[i] = benchFlop(i)
	}
	for _, dialect := range []string{"sqlite", "mysql"} {
		for _, phase := range []string{"B", "A", "A-unbatched"} {
			b.Run(dialect+"/phase-"+phase, func(b *testing.B) {
				var snapTotal, flopTotal time.Duration
				for n := 0; n < b.N; n++ {
					b.StopTimer()
					var db *store.DB
					if dialect == "sqlite" {
						db = storetest.SQLite(b)
					} else {
						db = storetest.MySQL(b)
					}
					ctx := context.Background()
					clock := testkit.NewClock(time.Date(2026, 3, 15, 1, 0, 0, 0, shanghai).UTC())
					fs := flight.New(storetest.Flight(db), clock, shanghai)
					opt := pump.Options{
						Clock: clock, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), SIS: sis.Options{Location: shanghai},
						Flights: fs, View: fs, Policy: pipeline.RetryPolicy{MaxAttempts: 3, Steps: pipeline.DefaultBackoff, Cap: time.Minute, HeadDeadline: time.Hour},
					}
					// Phase B as serve runs it: batches whose handlers read through the batch.
					opt.FlightsIn = func(tx *sql.Tx) pump.TxFlights { return fs.InTx(tx) }
					var reader flight.Reader = fs
					if phase != "B" {
						rs := flighttest.Redis(b, shanghai, clock)
						opt.Authority, opt.View, reader = rs, redisflight.WithRefs(rs, fs), rs
						opt.ViewIn = func(tx *sql.Tx) handler.View { return redisflight.WithRefs(rs, fs.InTx(tx)) }
						opt.BatchFlights = func() pump.BatchFlights { return rs.Batch() }
						if phase == "A-unbatched" {
							opt.ViewIn, opt.BatchFlights = nil, nil
						}
					}
					p := pump.New(storetest.Pump(db), handler.Default(handler.Options{}), opt)
					drain := func() {
						for {
							w, err := p.Step(ctx)
							if err != nil {
								b.Fatal(err)
							}
							if w > 0 {
								return
							}
						}
					}
					if _, err := db.Intake.InsertMessages(ctx, []string{snapshot}, clock.Now()); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
					t0 := time.Now()
					drain()
					snapTotal += time.Since(t0)
					b.StopTimer()
					if _, err := db.Intake.InsertMessages(ctx, flops, clock.Now()); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
					t0 = time.Now()
					drain()
					flopTotal += time.Since(t0)
					b.StopTimer()
					counts, _ := db.Operations.CountByState(ctx)
					if counts[pipeline.Succeeded] != 1+benchFlops {
						b.Fatalf("states after the run: %v", counts)
					}
					if day, _ := reader.Day(ctx, "2026-03-15"); len(day) != benchFlights {
						b.Fatalf("%d flights on the board, want %d", len(day), benchFlights)
					}
				}
				b.ReportMetric(snapTotal.Seconds()/float64(b.N), "s/snapshot")
				b.ReportMetric(float64(benchFlops*b.N)/flopTotal.Seconds(), "flops/s")
			})
		}
	}
}
