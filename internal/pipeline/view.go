package pipeline

import (
	"context"
	"time"
)

// View is the read-only state a handler may consult (internal/handler takes it as
// handler.View). Implementations live with the stores (internal/flight and its redisflight).
// Records are the JSON of the flight record.
type View interface {
	// Flight returns the stored record of flight flid as JSON, or ok=false when there is none.
	Flight(ctx context.Context, flid int64) (record []byte, ok bool, err error)
	// FlightsOf returns the stored records of those of flids that are stored, in no
	// particular order, in a few round trips however many they are (a snapshot names
	// thousands of flights).
	FlightsOf(ctx context.Context, flids []int64) ([][]byte, error)
	// FlightsBetween returns the records of the stored flights whose SODT is in [from, to].
	FlightsBetween(ctx context.Context, from, to time.Time) ([][]byte, error)
	// CodeShareFlights returns the records of the stored flights that name a code-share
	// master (MAID).
	CodeShareFlights(ctx context.Context) ([][]byte, error)
	// CodeSharesOf returns the records of the stored flights whose code-share master (MAID)
	// is one of masters: maintaining code-share lists costs what those masters hold, not
	// what the whole history holds.
	CodeSharesOf(ctx context.Context, masters []int64) ([][]byte, error)
	// RefKeys returns the keys of the stored REF_DATA records of one type.
	RefKeys(ctx context.Context, typ string) ([]string, error)
	// Now is the current time of the injected clock.
	Now() time.Time
	// Location is the airport's zone (config sis.timezone): local days are taken in it.
	Location() *time.Location
}
