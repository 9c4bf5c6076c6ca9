package store_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"msgx/internal/store"
	"msgx/internal/store/storetest"
)

// TestMigrationCopiesFlightsFromEvents takes the schema back below migration 00012, stores
// events the way an older msgx did, migrates up again and checks that the messages are found
// by the FLIDs their events carried — only keys that are FLIDs (not a reference key, not one
// longer than 18 digits).
func TestMigrationCopiesFlightsFromEvents(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		t.Run(d.Name, func(t *testing.T) {
			db := d.Open(t)
			ctx := context.Background()
			downTo(t, db, 11)
			t0 := time.Date(2026, 6, 1, 8, 0, 0, 0, time.UTC)
			ids, err := db.Intake.InsertMessages(ctx, []string{"<a/>", "<b/>"}, t0)
			if err != nil {
				t.Fatal(err)
			}
			ev := func(id int64, key string) string {
				return fmt.Sprintf(`INSERT INTO MSG_EVENT (CMINMSGS_ID, TYPE_TAG, TARGET, KIND, FLIGHT_KEY, PAYLOAD, STATE, ATTEMPTS, CREATED_AT)
					VALUES (%d, 'X-Y', 'T', 'k', '%s', '{}', 'SENT', 0, '%s')`, id, key, store.T(t0))
			}
			storetest.Exec(t, db, ev(ids[0], "7001"), ev(ids[0], "7001"), ev(ids[0], "7002"), ev(ids[1], "DEP"),
				ev(ids[1], "0123"), ev(ids[1], "1234567890123456789"), ev(ids[1], "7002"))
			if _, err := db.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			for id, want := range map[int64][]int64{ids[0]: {7001, 7002}, ids[1]: {7002}} {
				got, err := db.Flights.MessageFlights(ctx, id)
				if err != nil || !slices.Equal(got, want) {
					t.Errorf("flights of message %d after the migration: %v %v, want %v", id, got, err, want)
				}
			}
		})
	}
}
