package store_test

import (
	"testing"

	"msgx/internal/store/storetest"
)

// TestContract runs the shared store contract on every dialect.
func TestContract(t *testing.T) {
	for _, d := range storetest.Dialects() {
		t.Run(d.Name, func(t *testing.T) {
			storetest.Contract(t, func(t *testing.T) storetest.Store { return d.Open(t) })
		})
	}
}
