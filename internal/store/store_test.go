package store_test

import (
	"context"
	"testing"

	"msgx/internal/store"
	"msgx/internal/store/storetest"
)

func TestMigrateTwiceIsANoOp(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		v, err := db.Migrate(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if v < 1 {
			t.Fatalf("schema version %d after migrate", v)
		}
		for _, table := range []string{"CMINMSGS", "CMINMSGS_HST", "PROC_STATE", "MSG_EVENT", "REF_DATA", "REQ_TRACK", "PUMP_JOB", "FLIGHT_STATE", "PUMP_LEASE"} {
			var n int
			if err := db.SQL.QueryRow("SELECT COUNT(*) FROM " + table).Scan(&n); err != nil {
				t.Errorf("table %s: %v", table, err)
			}
		}
	})
}
