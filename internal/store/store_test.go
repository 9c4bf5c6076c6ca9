package store_test

import (
	"testing"

	"msgx/internal/store/storetest"
)

// TestContract runs the shared store contract on every dialect, the dialects side by side:
// every case opens a fresh database of its own.
func TestContract(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		t.Run(d.Name, func(t *testing.T) {
			t.Parallel()
			storetest.Contract(t, d.Open)
		})
	}
}
