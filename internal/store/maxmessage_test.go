package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"msgx/internal/store"
	"msgx/internal/store/storetest"
)

// MaxMessageBytes is what the inbox may accept: none on SQLite; on MariaDB max_allowed_packet
// less an eighth and 4 KiB, and a message of that size (of plain text) is stored while one
// byte over max_allowed_packet is refused as too large, never sent to the server.
func TestMaxMessageBytes(t *testing.T) {
	ctx := context.Background()
	if n, err := storetest.SQLite(t).Intake.MaxMessageBytes(ctx); err != nil || n != 0 {
		t.Errorf("SQLite: %d, %v; want no limit", n, err)
	}
	db := storetest.MySQL(t)
	var packet int64
	if err := db.SQL.QueryRow(`SELECT @@max_allowed_packet`).Scan(&packet); err != nil {
		t.Fatal(err)
	}
	n, err := db.Intake.MaxMessageBytes(ctx)
	if want := packet - packet/8 - 4<<10; err != nil || n != want {
		t.Fatalf("MariaDB (max_allowed_packet %d): %d, %v; want %d", packet, n, err, want)
	}
	if packet > 64<<20 {
		t.Skipf("max_allowed_packet %d: the messages would be large", packet)
	}
	now := time.Now()
	if _, err := db.Intake.InsertMessages(ctx, []string{"<a>" + strings.Repeat("x", int(n)-7) + "</a>"}, now); err != nil {
		t.Errorf("a message of the limit's size: %v", err)
	}
	if _, err := db.Intake.InsertMessages(ctx, []string{strings.Repeat("x", int(packet)+1)}, now); !errors.Is(err, store.ErrTooLarge) {
		t.Errorf("a message over max_allowed_packet: %v, want too large", err)
	}
}
