package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"msgx/internal/store"
	"msgx/internal/store/storetest"
)

// TestMigrationStampsArchivedRows takes the schema back below migration 00008, archives
// messages the way an older msgx did (no ARCHIVED_AT), migrates up again and checks that the
// finished archived rows take their processing time as ARCHIVED_AT, so retention.archive
// purges them, while DEAD and live rows get none.
func TestMigrationStampsArchivedRows(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		t.Run(d.Name, func(t *testing.T) {
			db := d.Open(t)
			ctx := context.Background()
			downTo(t, db, 7)
			t0 := time.Date(2026, 6, 1, 8, 0, 0, 0, time.UTC)
			ids, err := db.Intake.InsertMessages(ctx, []string{"<a/>", "<b/>", "<c/>", "<d/>"}, t0)
			if err != nil {
				t.Fatal(err)
			}
			storetest.Exec(t, db,
				fmt.Sprintf(`UPDATE PROC_STATE SET STATE = 'SUCCEEDED', PROCESSED_AT = '%s' WHERE CMINMSGS_ID IN (%d, %d)`, store.T(t0), ids[0], ids[3]),
				fmt.Sprintf(`UPDATE PROC_STATE SET STATE = 'DEAD', ERROR_CLASS = 'ORPHAN', PROCESSED_AT = '%s' WHERE CMINMSGS_ID = %d`, store.T(t0), ids[1]),
				fmt.Sprintf(`INSERT INTO CMINMSGS_HST (CMINMSGS_ID, CMINMSGS_CLOB_MSG, CMINMSGS_STATUS) SELECT CMINMSGS_ID, CMINMSGS_CLOB_MSG, CMINMSGS_STATUS FROM CMINMSGS WHERE CMINMSGS_ID IN (%d, %d)`, ids[0], ids[1]),
				fmt.Sprintf(`DELETE FROM CMINMSGS WHERE CMINMSGS_ID IN (%d, %d)`, ids[0], ids[1]))
			if _, err := db.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			stamped := map[int64]bool{}
			rows, err := db.SQL.Query(`SELECT CMINMSGS_ID FROM PROC_STATE WHERE ARCHIVED_AT IS NOT NULL`)
			if err != nil {
				t.Fatal(err)
			}
			for rows.Next() {
				var id int64
				rows.Scan(&id)
				stamped[id] = true
			}
			rows.Close()
			if len(stamped) != 1 || !stamped[ids[0]] {
				t.Fatalf("rows with ARCHIVED_AT after the migration: %v, want only %d", stamped, ids[0])
			}
			res, err := db.Archiver.PurgeArchived(ctx, t0.Add(time.Hour), nil)
			if err != nil || res.ProcState != 1 || res.History != 1 {
				t.Fatalf("purge after the migration: %+v %v", res, err)
			}
		})
	}
}
