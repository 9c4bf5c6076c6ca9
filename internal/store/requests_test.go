package store_test

import (
	"context"
	"strings"
	"testing"

	"msgx/internal/store/storetest"
)

// A legacy COUTMSGS that exists before msgx first migrates is the table msgx writes into
// afterwards, with its own types and options: the migration does not replace it.
func TestLegacyCOUTMSGSIsKeptThroughMigrate(t *testing.T) {
	t.Parallel()
	db := storetest.MySQLLegacy(t)
	ctx := context.Background()
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	var comment, collation, def string
	var hasDefault bool
	if err := db.SQL.QueryRow(`SELECT TABLE_COMMENT, TABLE_COLLATION FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'COUTMSGS'`).Scan(&comment, &collation); err != nil {
		t.Fatal(err)
	}
	if comment != "legacy outbound" || !strings.HasPrefix(collation, "utf8mb3") {
		t.Fatalf("COUTMSGS after migrate: comment %q collation %q, want the legacy's table", comment, collation)
	}
	var d any
	if err := db.SQL.QueryRow(`SELECT COLUMN_DEFAULT FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'COUTMSGS' AND COLUMN_NAME = 'COUTMSGS_ERROR'`).Scan(&d); err != nil {
		t.Fatal(err)
	}
	if b, ok := d.([]byte); ok {
		def, hasDefault = string(b), string(b) != "NULL"
	}
	if hasDefault {
		t.Fatalf("COUTMSGS_ERROR got a default %q: the legacy table was replaced", def)
	}
}
