package flight_test

import (
	"context"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/pressly/goose/v3"

	"msgx/internal/flight"
	"msgx/internal/pipeline"
	"msgx/internal/store"
	"msgx/internal/store/storetest"
)

// TestMigrationFillsMAID takes the schema back below migration 00005, stores flights the way
// an older msgx did (no MAID column), migrates up again and checks the code-share lookup
// finds exactly the flights whose records name a master.
func TestMigrationFillsMAID(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		dialect := goose.DialectSQLite3
		if db.Dialect == store.MySQL {
			dialect = goose.DialectMySQL
		}
		p, err := goose.NewProvider(dialect, db.SQL, os.DirFS("../store/migrations/"+string(db.Dialect)))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.DownTo(ctx, 4); err != nil {
			t.Fatal(err)
		}
		t1 := time.Date(2026, 3, 15, 9, 0, 0, 0, shanghai)
		for _, r := range []struct {
			flid  int64
			extra string
		}{{1, ""}, {2, `"MAID":1`}, {3, `"MAID":null`}, {4, `"MAID":9007199254740993`}, {5, `"REMC":"\"MAID\":1"`}} {
			storetest.Exec(t, db, "INSERT INTO FLIGHT_STATE (FDAY, FLID, RECORD, VERSION, CMINMSGS_ID, UPDATED_AT) VALUES ('2026-03-15', "+
				itoa(r.flid)+", '"+string(rec(r.flid, t1, r.extra))+"', 1, NULL, '2026-03-15 01:00:00')")
		}
		if _, err := db.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		s := flight.New(storetest.Flight(db), nil, shanghai)
		cs, err := s.CodeShareFlights(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got := flidsOf(t, cs); !slices.Equal(got, []int64{2, 4}) {
			t.Fatalf("code-share flights after the migration: %v, want [2 4]", got)
		}
		of, err := s.CodeSharesOf(ctx, []int64{9007199254740993})
		if err != nil || !slices.Equal(flidsOf(t, of), []int64{4}) {
			t.Fatalf("CodeSharesOf a large MAID: %s %v", of, err)
		}
		// The migrated rows are written on as any other.
		write(t, db, s, pipeline.FlightWrite{Day: "2026-03-15", FLID: 2, Record: rec(2, t1, "")})
		if of, _ := s.CodeSharesOf(ctx, []int64{1}); len(of) != 0 {
			t.Fatalf("master 1 after its code-share dropped MAID: %s", of)
		}
	})
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
