package pump_test

import (
	"fmt"
	"os"
	"strconv"
	"testing"

	"msgx/internal/pump"
)

// TestMain lets the whole suite run one by one as well as batched (the default):
// MSGX_TEST_PUMP_BATCH_SIZE=1 go test ./internal/pump
func TestMain(m *testing.M) {
	if v := os.Getenv("MSGX_TEST_PUMP_BATCH_SIZE"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "MSGX_TEST_PUMP_BATCH_SIZE=%q is not a positive number\n", v)
			os.Exit(2)
		}
		pump.DefaultBatchSize = n
	}
	os.Exit(m.Run())
}
