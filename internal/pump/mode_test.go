package pump

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"msgx/internal/handler"
	"msgx/internal/pipeline"
	"msgx/internal/store"
)

// The mode is chosen once, from the options: phase A with an authority, which batches only when
// its handlers read reference data through the batch transaction, and decodes each message at
// its turn; phase B otherwise, batching unless pipeline.batch-size is 1.
func TestNewChoosesTheModeOnce(t *testing.T) {
	viewIn := func(*sql.Tx) handler.View { return nil }
	for _, c := range []struct {
		name    string
		opt     Options
		phaseA  bool
		batches bool
	}{
		{"phase B", Options{}, false, true},
		{"phase B one by one", Options{BatchSize: 1}, false, false},
		{"phase A without ViewIn", Options{Authority: noAuthority{}}, true, false},
		{"phase A with ViewIn", Options{Authority: noAuthority{}, ViewIn: viewIn}, true, true},
		{"phase A one by one", Options{Authority: noAuthority{}, ViewIn: viewIn, BatchSize: 1}, true, false},
	} {
		p := New(nil, handler.NewRegistry(), c.opt)
		_, isA := p.mode.(*phaseA)
		if isA != c.phaseA || p.mode.batches() != c.batches {
			t.Errorf("%s: phase A %v batches %v, want %v %v", c.name, isA, p.mode.batches(), c.phaseA, c.batches)
		}
	}
	run := []*store.Due{{Message: store.Message{ID: 1, State: pipeline.Pending}, Raw: sttsText, RawOK: true}}
	a := New(nil, handler.NewRegistry(), Options{Authority: noAuthority{}})
	if decs := a.mode.decodeRun(context.Background(), run); len(decs) != 1 || decs[0] != nil {
		t.Errorf("phase A decoded a message ahead of its turn: %+v", decs)
	}
	b := New(nil, handler.NewRegistry(), Options{})
	if decs := b.mode.decodeRun(context.Background(), run); len(decs) != 1 || decs[0] == nil || decs[0].tag != "STTS-ADD" {
		t.Errorf("phase B did not decode the run ahead: %+v", decs)
	}
}

// noAuthority is an Authority that is never asked.
type noAuthority struct{}

func (noAuthority) Marker(context.Context, int64) ([]byte, bool, error) { return nil, false, nil }
func (noAuthority) Markers(context.Context, []int64) (map[int64][]byte, error) {
	return map[int64][]byte{}, nil
}
func (noAuthority) ApplyMessage(context.Context, int64, []pipeline.FlightWrite, []byte, time.Time) ([]byte, bool, error) {
	return nil, false, nil
}
func (noAuthority) ApplyUnmarked(context.Context, int64, []pipeline.FlightWrite, []byte, time.Time) ([]byte, bool, error) {
	return nil, false, nil
}
