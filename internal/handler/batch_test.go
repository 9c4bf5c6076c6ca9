package handler

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// batchView is a memView that counts its FlightsOf calls and answers them in another order
// than asked (no order is promised).
type batchView struct {
	*memView
	batches int // FlightsOf calls
}

func (v *batchView) FlightsOf(_ context.Context, flids []int64) ([][]byte, error) {
	v.batches++
	var out [][]byte
	for _, id := range flids {
		if b, ok := v.flights[id]; ok {
			out = append(out, b)
		}
	}
	slices.Reverse(out) // no order is promised
	return out, nil
}

// TestGoldenDecisionsThroughBatchReads checks that a view offering the batched reads gives
// every test message the same Decision as one read flight by flight (the golden files).
func TestGoldenDecisionsThroughBatchReads(t *testing.T) {
	if *update {
		t.Skip("the golden files are written by TestGoldenDecisions")
	}
	batched := 0
	for _, dir := range []string{"flop", "schd", "schs"} {
		files, _ := filepath.Glob(filepath.Join("../../testdata", dir, "*.xml"))
		for _, f := range files {
			name := dir + "_" + strings.TrimSuffix(filepath.Base(f), ".xml")
			t.Run(name, func(t *testing.T) {
				v := &batchView{memView: baseView(t)}
				v.refs[SeasonType] = []string{"2025-03-30/2025-10-25", "2025-10-26/2026-03-28"}
				d, err := decideErr(v, decodeFile(t, f))
				checkGolden(t, name, d, err)
				batched += v.batches
			})
		}
	}
	if batched == 0 {
		t.Fatal("no message read its flights through FlightsOf")
	}
}
