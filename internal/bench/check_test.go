package bench

import (
	"errors"
	"testing"
	"time"
)

// Check takes msgx bench's flags as given: the defaults pass, and each value out of range,
// zero counts included, is refused.
func TestCheckRefusesOptionsOutOfRange(t *testing.T) {
	ok := Options{Workload: WorkloadDay, Messages: DefaultMessages, Rate: DefaultRate, Clients: DefaultClients, FloorTime: DefaultFloorTime}
	if err := ok.Check(); err != nil {
		t.Fatalf("the defaults: %v", err)
	}
	classic := ok
	classic.Workload, classic.Flights, classic.History, classic.AsOfWait = WorkloadClassic, 10, 5, time.Second
	if err := classic.Check(); err != nil {
		t.Fatalf("classic with flights, history and as-of wait: %v", err)
	}
	for name, change := range map[string]func(*Options){
		"no messages": func(o *Options) { o.Messages = 0 }, "rate 0": func(o *Options) { o.Rate = 0 },
		"no clients": func(o *Options) { o.Clients = 0 }, "floor time 0": func(o *Options) { o.FloorTime = 0 },
		"negative history": func(o *Options) { o.History = -1 }, "negative as-of wait": func(o *Options) { o.AsOfWait = -time.Second },
		"negative flights": func(o *Options) { o.Flights = -1 }, "no workload": func(o *Options) { o.Workload = "" },
		"unknown workload": func(o *Options) { o.Workload = "night" },
	} {
		o := ok
		change(&o)
		if err := o.Check(); !errors.Is(err, ErrOptions) {
			t.Errorf("%s: %v, want ErrOptions", name, err)
		}
	}
}
