package handler

import (
	"fmt"
	"os"
	"reflect"
	"sync"
	"testing"

	"msgx/internal/event"
	"msgx/internal/pipeline"
)

// roundTrips records what checkedRender saw: how many changes, and the first failures.
var roundTrips struct {
	sync.Mutex
	n     int
	fails []string
}

// TestMain runs every test of the package with each FlightChange the handler builds (by
// fastChange or mapChange) checked by checkedRender, and fails the run when one did not
// render alike after Encode and Decode.
func TestMain(m *testing.M) {
	render = checkedRender
	code := m.Run()
	roundTrips.Lock()
	defer roundTrips.Unlock()
	if len(roundTrips.fails) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: %d flight changes did not render alike after event.Encode and Decode:\n", len(roundTrips.fails))
		for _, f := range roundTrips.fails {
			fmt.Fprintln(os.Stderr, f)
		}
		code = 1
	} else if testing.Verbose() {
		fmt.Printf("%d flight changes rendered alike after event.Encode and Decode\n", roundTrips.n)
	}
	os.Exit(code)
}

// checkedRender is renderEvents of c, which it checks against renderEvents of
// Decode(Encode(c)): the same events, or both failing (a window JSON cannot carry).
func checkedRender(c event.FlightChange) ([]pipeline.Event, error) {
	want, err := renderEvents(c)
	var got []pipeline.Event
	b, err2 := event.Encode(&c)
	if err2 == nil {
		var d event.FlightChange
		if d, err2 = event.Decode(b); err2 == nil {
			got, err2 = renderEvents(d)
		}
	}
	roundTrips.Lock()
	defer roundTrips.Unlock()
	roundTrips.n++
	if (err == nil) != (err2 == nil) || !reflect.DeepEqual(want, got) {
		if len(roundTrips.fails) < 10 {
			roundTrips.fails = append(roundTrips.fails, fmt.Sprintf("flight %d (%v, %v)\nencoding %s\nevents  %s\nafter   %s", c.FLID, err, err2, b, want, got))
		}
	}
	return want, err
}
