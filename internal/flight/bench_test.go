package flight_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"msgx/internal/flight"
	"msgx/internal/handler"
	"msgx/internal/pipeline"
	"msgx/internal/pump"
	"msgx/internal/sis"
	"msgx/internal/store"
	"msgx/internal/store/storetest"
	"msgx/internal/testkit"
)

const (
	benchFlights = 3000
	benchFlops   = 2000
)

func benchSodt(i int) time.Time {
	return time.Date(2026, 3, 15, 6, 0, 0, 0, shanghai).Add(time.Duration(i*17%(17*60)) * time.Minute)
}

// benchTime formats t as ddMMMyyHHmm in the airport zone (24-hour clock).
func benchTime(t time.Time) string { return sis.FormatDateTime(t, shanghai) }

// benchSnapshot builds a SCHD DNLD of n flights with the groups a real FLTR carries.
func benchSnapshot(n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, `<?xml version="1.0" encoding="UTF-8"?><MSG><META><SNDR>AODB</SNDR><SEQN>1</SEQN><DTTM>20260315000000</DTTM><TYPE>SCHD</TYPE><STYP>DNLD</STYP></META><SCHD><RECS>%d</RECS>`, n)
	for i := 0; i < n; i++ {
		s := benchSodt(i)
		t := func(m int) string { return benchTime(s.Add(time.Duration(m) * time.Minute)) }
		mvin := "AD"[i%2 : i%2+1]
		fmt.Fprintf(&b, `<FLTR><FLID>%d</FLID><ALCD>CA</ALCD><FLNO>CA%04d</FLNO><MVIN>%s</MVIN><SODT>%s</SODT><FLTY>W</FLTY><FLIN>D</FLIN>`+
			`<ACFT>320</ACFT><RENO>B-%04d</RENO><TRML>T2</TRML><MAXP>180</MAXP><STND>%d</STND><ESTT>%s</ESTT>`,
			100000+i, i, mvin, benchTime(s), i, 100+i%200, t(5))
		if i%10 == 1 {
			fmt.Fprintf(&b, `<CSOP>CA</CSOP><CSFT>CA%04d</CSFT><MAID>%d</MAID>`, i-1, 100000+i-1)
		}
		fmt.Fprintf(&b, `<PSDT PSNO="1"><PSST>%d</PSST><STST>%s</STST><STET>%s</STET></PSDT>`, 100+i%200, t(-30), t(60))
		fmt.Fprintf(&b, `<GTDT GTNO="1"><GATE>B%d</GATE><PGOT>%s</PGOT><PGCT>%s</PGCT><GTYP>D</GTYP></GTDT>`, i%40, t(-40), t(-10))
		for k := 1; k <= 3; k++ {
			fmt.Fprintf(&b, `<CKDT CKNO="%d"><CHKC>K%d</CHKC><CCLS>Y</CCLS><PCOT>%s</PCOT><PCCT>%s</PCCT><CTYP>D</CTYP></CKDT>`, k, 100+k, t(-120), t(-40))
		}
		fmt.Fprintf(&b, `<CLDT CLNO="1"><BELT>%d</BELT><BCLS>Y</BCLS><PCOT>%s</PCOT><PCCT>%s</PCCT><BTYP>D</BTYP></CLDT>`, i%12, t(10), t(50))
		fmt.Fprintf(&b, `<PHAG>1002</PHAG><FHAG>1001</FHAG><MHAG>1003</MHAG><EOBT>%s</EOBT><TOBT>%s</TOBT>`, t(0), t(2))
		fmt.Fprintf(&b, `<ERUT RTNO="1"><APCD>PEK</APCD><SCDT>%s</SCDT></ERUT><ERUT RTNO="2"><APCD>CTU</APCD><SCAT>%s</SCAT></ERUT>`, t(-150), t(0))
		fmt.Fprintf(&b, `<FTSS>SCH</FTSS><REMC>航班 %d</REMC><RUNW>02L</RUNW></FLTR>`, i)
	}
	b.WriteString(`</SCHD></MSG>`)
	return b.String()
}

// benchFlop is the i-th FLOP of the stream: CTOT, STND and CHOT changes over the flights.
func benchFlop(i int) string {
	flid := 100000 + (i*7)%benchFlights
	var styp, payload string
	switch i % 3 {
	case 0:
		styp, payload = "CTOT", "<CTOT>"+benchTime(benchSodt(flid-100000).Add(time.Duration(i%50)*time.Minute))+"</CTOT>"
	case 1:
		styp, payload = "STND", fmt.Sprintf("<STND>%d</STND>", 300+i%97)
	default:
		styp, payload = "CHOT", fmt.Sprintf(`<CHOT CSNO="1"><CHTM>%s</CHTM><CHID>ON</CHID><CHST>%d</CHST></CHOT>`, benchTime(benchSodt(flid-100000)), i%50)
	}
	return fmt.Sprintf(`<MSG><META><SNDR>AODB</SNDR><SEQN>%d</SEQN><DTTM>20260315000000</DTTM><TYPE>FLOP</TYPE><STYP>%s</STYP></META>`+
		`<FLOP><FLID>%d</FLID><FFID>X</FFID>%s</FLOP></MSG>`, 10+i, styp, flid, payload)
}

// peakHeap samples HeapInuse until stop is called and returns the highest value seen.
func peakHeap() (stop func() uint64) {
	var peak atomic.Uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var ms runtime.MemStats
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 { close(done); wg.Wait(); return peak.Load() }
}

// BenchmarkSnapshotThenFlops applies a 3,000-flight SCHD DNLD and then a stream of 2,000 FLOP
// messages through the real pump and flight store, on SQLite and on MariaDB. It reports
// seconds per snapshot, FLOP messages per second and the peak heap in use.
//
//	go test ./internal/flight -run '^$' -bench SnapshotThenFlops -benchtime 1x
func BenchmarkSnapshotThenFlops(b *testing.B) {
	snapshot := benchSnapshot(benchFlights)
	flops := make([]string, benchFlops)
	for i := range flops {
		flops[i] = benchFlop(i)
	}
	b.Logf("snapshot message: %d flights, %.1f MB", benchFlights, float64(len(snapshot))/1e6)
	for _, dialect := range []string{"sqlite", "mysql"} {
		b.Run(dialect, func(b *testing.B) {
			var snapTotal, flopTotal time.Duration
			var peak uint64
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
				p := pump.New(storetest.Pump(db), handler.Default(handler.Options{}), pump.Options{
					Clock: clock, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), SIS: sis.Options{Location: shanghai},
					Flights: fs, View: fs, Policy: pipeline.RetryPolicy{MaxAttempts: 3, Steps: pipeline.DefaultBackoff, Cap: time.Minute, HeadDeadline: time.Hour},
				})
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
				runtime.GC()
				stop := peakHeap()
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
				peak = max(peak, stop())
				counts, _ := db.Operations.CountByState(ctx)
				if counts[pipeline.Succeeded] != 1+benchFlops {
					b.Fatalf("states after the run: %v", counts)
				}
				if day, _ := fs.Day(ctx, "2026-03-15"); len(day) != benchFlights {
					b.Fatalf("%d flights on the board, want %d", len(day), benchFlights)
				}
			}
			b.ReportMetric(snapTotal.Seconds()/float64(b.N), "s/snapshot")
			b.ReportMetric(float64(benchFlops*b.N)/flopTotal.Seconds(), "flops/s")
			b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
		})
	}
}
