package pump_test

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"msgx/internal/flight"
	"msgx/internal/handler"
	"msgx/internal/jobs"
	"msgx/internal/pipeline"
	"msgx/internal/pump"
	"msgx/internal/sis"
	"msgx/internal/store"
	"msgx/internal/store/storetest"
	"msgx/internal/testkit"
)

// Every decoded message that names a flight is found by it, whatever its outcome — applied,
// applied changing nothing, a duplicate SKIPPED, a parked ORPHAN, FAILED — one by one and in
// a batch; a message that could not be decoded names none; a retry adds no row.
func TestEveryOutcomeIsFoundByItsFlight(t *testing.T) {
	t.Parallel()
	for _, size := range []int{1, 50} {
		t.Run(fmt.Sprintf("batch=%d", size), func(t *testing.T) {
			storetest.Each(t, func(t *testing.T, db *store.DB) {
				clock := testkit.NewClock(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
				flights := flight.New(storetest.Flight(db), clock, time.UTC)
				policy := defaultPolicy
				policy.Park = []pipeline.ErrorClass{pipeline.Orphan}
				reg := handler.Default(handler.Options{})
				reg.Replace("FLOP-STND", handler.Func(func(context.Context, handler.View, *sis.Message) (pipeline.Decision, error) {
					return pipeline.Decision{}, pipeline.Errorf(pipeline.Infra, "dependency down")
				}))
				p := pump.New(storetest.Pump(db), reg, pump.Options{
					Policy: policy, Clock: clock, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
					Jobs: &jobs.Runner{DB: db.Archiver, Clock: clock}, Flights: flights, View: flights, BatchSize: size,
					FlightsIn: func(tx *sql.Tx) pump.TxFlights { return flights.InTx(tx) }, SIS: sis.Options{Location: time.UTC},
				})
				e := &env{db: db, clock: clock, pump: p, t: t}
				ctot := flop("12", "CTOT", `<FLOP><FLID>5101</FLID><FFID>X</FFID><CTOT>01DEC261310</CTOT></FLOP>`)
				ids := e.post(
					schd("11", "DNLD", flightRec(5101, "CA1501", "01DEC261300"), flightRec(5102, "CA1502", "01DEC261400")),
					ctot,
					ctot, // the same identity: SKIPPED as a duplicate
					flop("13", "CTOT", `<FLOP><FLID>5199</FLID><FFID>Y</FFID><CTOT>01DEC261310</CTOT></FLOP>`),                 // ORPHAN, parked
					`<MSG><META><SNDR>AODB</SNDR><SEQN>14</SEQN><TYPE>FLOP</TYPE><STYP>CTOT</STYP></META><FLOP><FLID>5101</FL`, // not decodable
					flop("15", "STND", `<FLOP><FLID>5101</FLID><FFID>X</FFID><STND>118</STND></FLOP>`),                         // INFRA: FAILED
				)
				e.drain()
				e.want(ids[0], pipeline.Succeeded, "")
				e.want(ids[1], pipeline.Succeeded, "")
				e.want(ids[2], pipeline.Skipped, "")
				e.want(ids[3], pipeline.Dead, pipeline.Orphan)
				e.want(ids[4], pipeline.Dead, pipeline.Malformed)
				e.want(ids[5], pipeline.Failed, pipeline.Infra)
				// Retried: FAILED again, its flight still once.
				clock.Add(time.Minute)
				e.drain()
				if m := e.want(ids[5], pipeline.Failed, pipeline.Infra); m.Attempts < 2 {
					t.Fatalf("the FAILED message was not retried: %d attempts", m.Attempts)
				}
				search := func(flid int64) []int64 {
					t.Helper()
					ms, err := db.Operations.SearchMessages(context.Background(), store.MessageQuery{FLID: flid})
					if err != nil {
						t.Fatal(err)
					}
					out := []int64{}
					for _, m := range ms {
						out = append(out, m.ID)
					}
					return out
				}
				if got, want := search(5101), []int64{ids[0], ids[1], ids[2], ids[5]}; !slices.Equal(got, want) {
					t.Errorf("flight 5101: %v, want %v", got, want)
				}
				if got, want := search(5102), ids[:1]; !slices.Equal(got, want) {
					t.Errorf("flight 5102: %v, want %v", got, want)
				}
				if got, want := search(5199), ids[3:4]; !slices.Equal(got, want) {
					t.Errorf("flight 5199 (the ORPHAN): %v, want %v", got, want)
				}
				for i, id := range ids {
					fs, err := db.Flights.MessageFlights(context.Background(), id)
					if err != nil {
						t.Fatal(err)
					}
					want := map[int][]int64{0: {5101, 5102}, 1: {5101}, 2: {5101}, 3: {5199}, 4: {}, 5: {5101}}[i]
					if !slices.Equal(fs, want) {
						t.Errorf("message %d names %v, want %v", i, fs, want)
					}
				}
			})
		})
	}
}
