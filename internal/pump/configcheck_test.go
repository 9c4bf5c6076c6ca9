package pump_test

import (
	"strings"
	"testing"
	"time"

	"msgx/internal/pump"
)

// defaultKeys are the pump's keys with the configuration's defaults.
var defaultKeys = pump.ConfigKeys{BatchSize: 200, ParkClasses: []string{"CODEC_ERROR", "UNSUPPORTED", "ORPHAN"}}

// pipeline.batch-size is 1..10000 and pipeline.batch-wait 0..1s; a value outside names its key.
func TestBatchKeys(t *testing.T) {
	for _, k := range []pump.ConfigKeys{{BatchSize: 1, BatchWait: 5 * time.Millisecond}, defaultKeys} {
		if _, err := pump.CheckConfig(k); err != nil {
			t.Errorf("%+v: %v", k, err)
		}
	}
	for _, c := range []struct {
		name string
		k    pump.ConfigKeys
	}{
		{"batch-size 0", pump.ConfigKeys{BatchSize: 0}},
		{"batch-size 10001", pump.ConfigKeys{BatchSize: 10001}},
		{"batch-wait 2s", pump.ConfigKeys{BatchSize: 200, BatchWait: 2 * time.Second}},
		{"batch-wait -1ms", pump.ConfigKeys{BatchSize: 200, BatchWait: -time.Millisecond}},
	} {
		if _, err := pump.CheckConfig(c.k); err == nil || !strings.Contains(err.Error(), "pipeline.batch-") {
			t.Errorf("%s: want an error naming the key, got %v", c.name, err)
		}
	}
}

// Only CODEC_ERROR, UNSUPPORTED and ORPHAN may be parked; another class names
// pipeline.park-classes.
func TestParkClasses(t *testing.T) {
	for _, park := range [][]string{nil, {"UNSUPPORTED"}, {"ORPHAN", "CODEC_ERROR"}} {
		k := defaultKeys
		k.ParkClasses = park
		if _, err := pump.CheckConfig(k); err != nil {
			t.Errorf("%v: %v", park, err)
		}
	}
	for _, bad := range []string{"INFRA", "MALFORMED", "EXHAUSTED", "NOPE"} {
		k := defaultKeys
		k.ParkClasses = []string{bad}
		if _, err := pump.CheckConfig(k); err == nil || !strings.Contains(err.Error(), "pipeline.park-classes") {
			t.Errorf("%s: want an error naming pipeline.park-classes, got %v", bad, err)
		}
	}
}

// identity.mode defaults to content; include-day-boundary, the older setting, still selects
// seqn-day; an unknown mode, or the older setting beside another mode, is refused naming the
// key.
func TestIdentityMode(t *testing.T) {
	for _, c := range []struct {
		mode     string
		dayBound bool
		want     string
	}{
		{"", false, "content"},
		{"seqn", false, "seqn"},
		{"seqn-day", false, "seqn-day"},
		{"", true, "seqn-day"},
		{"seqn-day", true, "seqn-day"},
	} {
		k := defaultKeys
		k.IdentityMode, k.IncludeDayBoundary = c.mode, c.dayBound
		if m, err := pump.CheckConfig(k); err != nil || string(m) != c.want {
			t.Errorf("mode %q include-day-boundary %v: mode %q %v, want %s", c.mode, c.dayBound, m, err, c.want)
		}
	}
	for _, bad := range []string{"sequence", "Content"} {
		k := defaultKeys
		k.IdentityMode = bad
		if _, err := pump.CheckConfig(k); err == nil || !strings.Contains(err.Error(), "identity.mode") {
			t.Errorf("%s: %v, want an error naming identity.mode", bad, err)
		}
	}
	for _, mode := range []string{"content", "seqn"} {
		k := defaultKeys
		k.IdentityMode, k.IncludeDayBoundary = mode, true
		if _, err := pump.CheckConfig(k); err == nil || !strings.Contains(err.Error(), "identity.include-day-boundary") {
			t.Errorf("include-day-boundary beside mode %s: %v, want an error naming it", mode, err)
		}
	}
}
