package flight_test

import (
	"testing"
	"time"

	"msgx/internal/flight"
	"msgx/internal/flight/flighttest"
	"msgx/internal/store/storetest"
)

// TestFlightStoreContract runs the flight-store contract suite on the SQL store, on every
// dialect (the Redis store runs the same suite in package redisflight).
func TestFlightStoreContract(t *testing.T) {
	for _, d := range storetest.Dialects() {
		t.Run(d.Name, func(t *testing.T) {
			flighttest.Run(t, func(t *testing.T, loc *time.Location) flight.Contract {
				return flight.New(storetest.Flight(d.Open(t)), nil, loc)
			})
		})
	}
}
