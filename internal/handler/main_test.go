package handler

import (
	"fmt"
	"os"
	"reflect"
	"strconv"
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

// checkedRender is renderEvents of c, which it checks: every target's rendering of c is the
// same as of Decode(Encode(c)) (delivered), or both fail (a window JSON cannot carry).
func checkedRender(c event.FlightChange) ([]pipeline.Event, error) {
	evs, err0 := renderEvents(c)
	want, err := renderAll(&c)
	var got []pipeline.Event
	b, err2 := event.Encode(&c)
	if err2 == nil {
		var d event.FlightChange
		if d, err2 = event.Decode(b); err2 == nil {
			got, err2 = renderAll(&d)
		}
	}
	roundTrips.Lock()
	defer roundTrips.Unlock()
	roundTrips.n++
	if (err == nil) != (err2 == nil) || (err == nil) != (err0 == nil) || !reflect.DeepEqual(want, got) {
		if len(roundTrips.fails) < 10 {
			roundTrips.fails = append(roundTrips.fails, fmt.Sprintf("flight %d (%v, %v, %v)\nencoding %s\nevents  %s\nafter   %s", c.FLID, err0, err, err2, b, want, got))
		}
	}
	return evs, err0
}

// renderAll renders c for each of Targets, as the dispatcher renders the shared event.
func renderAll(c *event.FlightChange) ([]pipeline.Event, error) {
	key := strconv.FormatInt(c.FLID, 10)
	out := make([]pipeline.Event, len(Targets))
	for i, t := range Targets {
		kind, p, err := event.Render(t, c)
		if err != nil {
			return nil, err
		}
		out[i] = pipeline.Event{Target: t, Kind: kind, Key: key, Payload: p}
	}
	return out, nil
}

// delivered returns the events of d as the targets are delivered them: each shared event
// rendered for each of Targets. It panics on one that does not decode or render.
func delivered(d pipeline.Decision) []pipeline.Event {
	var out []pipeline.Event
	for _, e := range d.Events {
		if e.Target != event.Shared {
			out = append(out, e)
			continue
		}
		c, err := event.Decode(e.Payload)
		if err != nil {
			panic(err)
		}
		evs, err := renderAll(&c)
		if err != nil {
			panic(err)
		}
		out = append(out, evs...)
	}
	return out
}
