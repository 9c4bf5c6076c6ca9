package flight

import (
	"context"
	"database/sql"
	"encoding/json"
	"time"

	"msgx/internal/pipeline"
)

// Reader is what the handlers, the flights API and the jobs read of a flight store, whichever
// one holds the flights: the SQL store (FLIGHT_STATE, phase B) or the Redis store (phase A,
// package redisflight). Both answer the same way; the contract suite (package flighttest)
// holds them to it.
type Reader interface {
	// Flight returns the stored record of flight flid, or ok=false when there is none.
	Flight(ctx context.Context, flid int64) ([]byte, bool, error)
	// FlightsOf returns the stored records of those of flids that are stored, in no order.
	FlightsOf(ctx context.Context, flids []int64) ([][]byte, error)
	// FlightsBetween returns the records of the flights whose SODT is in [from, to], in SODT
	// then FLID order.
	FlightsBetween(ctx context.Context, from, to time.Time) ([][]byte, error)
	// CodeShareFlights returns the records of every flight that names a code-share master.
	CodeShareFlights(ctx context.Context) ([][]byte, error)
	// CodeSharesOf returns the records of the flights whose MAID is one of masters.
	CodeSharesOf(ctx context.Context, masters []int64) ([][]byte, error)
	// Day returns the flights of a local day (YYYY-MM-DD) in SODT then FLID order.
	Day(ctx context.Context, day string) ([]Entry, error)
	// Get returns the stored entry of flight flid, or nil.
	Get(ctx context.Context, flid int64) (*Entry, error)
}

// History is what the HISTORY_SWEEP job needs of a flight store (history.go).
type History interface {
	HistoryDays(ctx context.Context, before string) ([]HistoryDay, error)
	HistoryChunk(ctx context.Context, day string, afterFLID int64, limit int) ([]HistoryFlight, error)
	DeleteHistory(ctx context.Context, flights []HistoryFlight) (int, error)
}

// Contract is the whole flight-store contract: reads, the history sweep's helpers, and Apply,
// which writes a message's flight changes in order, all or none, each change advancing the
// flight's version by one under a compare-and-set on the version read (an upsert of an absent
// flight makes version 1; a delete of an absent flight is a no-op; a record that moves to
// another day leaves the old day). A snapshot's replace of a day is one Apply of its upserts
// and deletes. A bad day (not YYYY-MM-DD) or a record that is not JSON fails the whole Apply.
type Contract interface {
	Reader
	History
	Apply(ctx context.Context, msgID int64, writes []pipeline.FlightWrite, now time.Time) error
}

var _ Contract = (*Store)(nil)

// Apply writes the changes of message msgID in a transaction of their own (the pump writes
// them inside its success transaction instead, through WriteFlights).
func (s *Store) Apply(ctx context.Context, msgID int64, writes []pipeline.FlightWrite, now time.Time) error {
	return s.db.Tx(ctx, func(tx *sql.Tx) error { return s.WriteFlights(ctx, tx, msgID, writes, now) })
}

// CheckWrite checks an upsert's day (YYYY-MM-DD) and record (JSON) as every flight store
// does before it writes anything, and returns the code-share master the record names (MAID),
// if any.
func CheckWrite(w pipeline.FlightWrite) (maid int64, ok bool, err error) {
	m, err := checkWrite(w)
	return m.Int64, m.Valid, err
}

// SODTOf returns the scheduled time a record holds (zero when it has none readable): the
// flights of a day are listed in SODT then FLID order.
func SODTOf(rec json.RawMessage) time.Time {
	var m struct {
		SODT time.Time `json:"SODT"`
	}
	_ = json.Unmarshal(rec, &m)
	return m.SODT
}

// ValidDay reports whether s is a day YYYY-MM-DD.
func ValidDay(s string) bool { return validDay(s) }

// writeOf is the upsert that would store e.
func writeOf(e Entry) pipeline.FlightWrite {
	return pipeline.FlightWrite{Day: e.Day, FLID: e.FLID, Record: e.Record}
}
