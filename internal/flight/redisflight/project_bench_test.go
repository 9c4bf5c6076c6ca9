package redisflight_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"msgx/internal/flight"
	"msgx/internal/flight/flighttest"
	"msgx/internal/flight/redisflight"
	"msgx/internal/pipeline"
	"msgx/internal/store/storetest"
)

// BenchmarkProjection measures the phase-B projection of a 3,000-flight snapshot, sent as the
// dispatcher sends it (30 scripts of 100 events, each guarded), beside its floor in the same
// run: the phase-A apply of the same writes in one script (no guard, no eid); and the phase-B
// rebuild of those 3,000 flights from FLIGHT_STATE on SQLite, in chunks of 250. Each reports
// ms per 3,000 flights.
//
//	MSGX_TEST_REQUIRE_SERVICES=1 go test ./internal/flight/redisflight -run '^$' -bench Projection -benchtime 5x
func BenchmarkProjection(b *testing.B) {
	const flights = 3000
	ctx := context.Background()
	sodt := time.Date(2026, 3, 16, 9, 0, 0, 0, flighttest.Shanghai)
	ws := make([]pipeline.FlightWrite, flights)
	for i := range ws {
		id := int64(i + 1)
		ws[i] = pipeline.FlightWrite{Day: "2026-03-16", FLID: id, Record: flighttest.Rec(id, sodt.Add(time.Duration(i)*time.Second),
			`"STND":"20`+fmt.Sprint(i%10)+`","REMK":"经停 北京 延误"`)}
	}
	report := func(b *testing.B, start time.Time) {
		b.ReportMetric(float64(time.Since(start).Milliseconds())/float64(b.N), "ms/3000flights")
	}
	b.Run("phase-B-project-100-per-script", func(b *testing.B) {
		s := flighttest.Redis(b, flighttest.Shanghai, nil)
		eid := int64(0)
		b.ResetTimer()
		start := time.Now()
		for n := 0; n < b.N; n++ {
			for at := 0; at < flights; at += 100 {
				cs := make([]redisflight.Change, 0, 100)
				for _, w := range ws[at : at+100] {
					eid++
					cs = append(cs, changeOf(eid, 1, w))
				}
				if _, err := s.Project(ctx, cs); err != nil {
					b.Fatal(err)
				}
			}
		}
		report(b, start)
	})
	b.Run("phase-A-apply-one-script", func(b *testing.B) {
		s := flighttest.Redis(b, flighttest.Shanghai, nil)
		b.ResetTimer()
		start := time.Now()
		for n := 0; n < b.N; n++ {
			if err := s.Apply(ctx, int64(n+1), ws, time.Now()); err != nil {
				b.Fatal(err)
			}
		}
		report(b, start)
	})
	b.Run("phase-B-rebuild-from-sqlite", func(b *testing.B) {
		s := flighttest.Redis(b, flighttest.Shanghai, nil)
		sq := flight.New(storetest.Flight(storetest.SQLite(b)), nil, flighttest.Shanghai)
		if err := sq.Apply(ctx, 1, ws, time.Now()); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		start := time.Now()
		for n := 0; n < b.N; n++ {
			if _, _, err := s.RebuildFrom(ctx, sq, []string{"2026-03-16"}, int64(n+1), 0, nil); err != nil {
				b.Fatal(err)
			}
		}
		report(b, start)
	})
}
