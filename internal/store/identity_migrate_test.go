package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"msgx/internal/store"
	"msgx/internal/store/storetest"
)

// TestMigrationKeepsBoundIdentities takes the schema back below migration 00013 (MariaDB's
// IDENTITY_KEY compared by the table's case-insensitive collation), binds an identity the way
// an older msgx did, migrates up again and checks the identity is still held (a re-send is
// still a duplicate), while one that differs only by letter case now binds beside it.
func TestMigrationKeepsBoundIdentities(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		t.Run(d.Name, func(t *testing.T) {
			db := d.Open(t)
			ctx := context.Background()
			downTo(t, db, 12)
			now := time.Date(2026, 6, 1, 8, 0, 0, 0, time.UTC)
			ids, err := db.Intake.InsertMessages(ctx, []string{"<a/>", "<b/>", "<c/>"}, now)
			if err != nil {
				t.Fatal(err)
			}
			storetest.Exec(t, db, fmt.Sprintf(`UPDATE PROC_STATE SET STATE = 'SUCCEEDED', IDENTITY_KEY = 'AODB|AIRL|UPD|7' WHERE CMINMSGS_ID = %d`, ids[0]))
			if _, err := db.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			if holder, ok, err := db.Processor.BoundTo(ctx, "AODB|AIRL|UPD|7"); err != nil || !ok || holder != ids[0] {
				t.Fatalf("identity bound before the migration: %d %v %v", holder, ok, err)
			}
			if _, _, err := db.Processor.Succeed(ctx, ids[1], store.Success{TypeTag: "AIRL-UPD", Identity: "AODB|AIRL|UPD|7"}, nil, now); !errors.Is(err, store.ErrIdentityTaken) {
				t.Fatalf("binding it again: %v", err)
			}
			if _, _, err := db.Processor.Succeed(ctx, ids[2], store.Success{TypeTag: "AIRL-UPD", Identity: "aodb|AIRL|UPD|7"}, nil, now); err != nil {
				t.Fatalf("an identity differing by case after the migration: %v", err)
			}
		})
	}
}
