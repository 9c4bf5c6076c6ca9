package redisflight_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"msgx/internal/flight"
	"msgx/internal/flight/flighttest"
	"msgx/internal/pipeline"
	"msgx/internal/store"
	"msgx/internal/store/storetest"
	"msgx/internal/testkit"
)

// The sentinel finds a flight altered by hand in Redis and one missing from it, and nothing
// where the two stores agree.
func TestSentinelFindsAlteredAndMissingFlights(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 3, 15, 6, 0, 0, 0, flighttest.Shanghai)
	clock := testkit.NewClock(now)
	rs := flighttest.Redis(t, flighttest.Shanghai, clock)
	mirror := flight.New(storetest.Flight(storetest.SQLite(t)), clock, flighttest.Shanghai)
	var ws []pipeline.FlightWrite
	for i := int64(1); i <= 5; i++ {
		ws = append(ws, pipeline.FlightWrite{Day: "2026-03-16", FLID: i, Record: flighttest.Rec(i, now.Add(24*time.Hour), `"STND":"201"`)})
	}
	for _, s := range []flight.Contract{rs, mirror} {
		if err := s.Apply(ctx, 1, ws, now); err != nil {
			t.Fatal(err)
		}
	}
	sen := &flight.Sentinel{Auth: rs, Mirror: mirror, Clock: clock, Location: flighttest.Shanghai}
	if r, err := sen.Check(ctx); err != nil || r.Checked != 5 || len(r.Mismatches) != 0 {
		t.Fatalf("agreeing stores: %+v %v", r, err)
	}
	// By hand: flight 2's stand changed in Redis, flight 4 removed from Redis.
	key := rs.KeyPrefix()
	c := redis.NewClient(&redis.Options{Addr: flighttest.RedisAddr()})
	defer c.Close()
	c.HSet(ctx, key+"flight:2", "rec", string(flighttest.Rec(2, now.Add(24*time.Hour), `"STND":"999"`)))
	if err := rs.Apply(ctx, 9, []pipeline.FlightWrite{{FLID: 4, Delete: true}}, now); err != nil {
		t.Fatal(err)
	}
	r, err := sen.Check(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(r.Mismatches); got != "[{2 2026-03-16  [STND]} {4 2026-03-16 authoritative [missing]}]" {
		t.Fatalf("mismatches: %s", got)
	}
	if sen.Last() == nil || len(sen.Last().Mismatches) != 2 {
		t.Fatalf("last report: %+v", sen.Last())
	}
	// A flight only in Redis, one moved to another day, and one changed twice there: the
	// rebuild of FLIGHT_STATE from Redis repairs all of it, with Redis's versions (and, told
	// to prune, deletes flight 4, which Redis no longer holds).
	if err := rs.Apply(ctx, 10, []pipeline.FlightWrite{
		{Day: "2026-03-17", FLID: 6, Record: flighttest.Rec(6, now.Add(48*time.Hour), "")},
		{Day: "2026-03-17", FLID: 5, Record: flighttest.Rec(5, now.Add(48*time.Hour), "")},
		{Day: "2026-03-16", FLID: 3, Record: flighttest.Rec(3, now.Add(24*time.Hour), `"STND":"7"`)},
		{Day: "2026-03-16", FLID: 3, Record: flighttest.Rec(3, now.Add(24*time.Hour), `"STND":"8"`)},
	}, now); err != nil {
		t.Fatal(err)
	}
	if r, _ := sen.Check(ctx); len(r.Mismatches) != 6 { // flight 5 counts on both of its days
		t.Fatalf("before the rebuild: %v", r.Mismatches)
	}
	res, err := mirror.RebuildFrom(ctx, flight.RebuildParams{Source: rs, Days: flight.ActiveDays(now, flighttest.Shanghai), Now: now, Prune: true})
	if err != nil || res.Written != 5 {
		t.Fatalf("rebuild: %+v, %v", res, err)
	}
	if r, err := sen.Check(ctx); err != nil || r.Checked != 5 || len(r.Mismatches) != 0 {
		t.Fatalf("after the rebuild: %+v %v", r, err)
	}
	if e, _ := mirror.Get(ctx, 3); e == nil || e.Version != 3 || e.MsgID == nil || *e.MsgID != 10 {
		t.Fatalf("flight 3 in FLIGHT_STATE after the rebuild: %+v", e)
	}
	// The daily sample: a share of the flights, none at 0, all at 1.
	c.HSet(ctx, key+"flight:1", "ver", 42)
	if r, err := sen.CheckSample(ctx, 0); err != nil || r.Checked != 0 || len(r.Mismatches) != 0 {
		t.Fatalf("sample 0: %+v %v", r, err)
	}
	if r, err := sen.CheckSample(ctx, 1); err != nil || r.Checked != 5 || len(r.Mismatches) != 1 {
		t.Fatalf("sample 1: %+v %v", r, err)
	}
}

// The sentinel compares records as decoded JSON: a mirror row that the database re-wrote
// with JSON_SET (MariaDB writes ", " and ": " throughout, groups included) to change one field
// names that field alone, and a row re-indented by hand (1.50 for 1.5) names none. On SQLite
// and MariaDB.
func TestSentinelNamesOnlyTheFieldThatChanged(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		now := time.Date(2026, 3, 15, 6, 0, 0, 0, flighttest.Shanghai)
		clock := testkit.NewClock(now)
		rs := flighttest.Redis(t, flighttest.Shanghai, clock)
		mirror := flight.New(storetest.Flight(db), clock, flighttest.Shanghai)
		const groups = `"STND":"201","PAXC":1.5,` +
			`"CHOT":[{"CSNO":1,"CHTM":"2026-03-16T01:07:00Z","CHID":"ON","CHST":"213"}],` +
			`"CLDT":[{"CLNO":1,"BELT":"7","PCOT":"2026-03-16T01:20:00Z","PCCT":"2026-03-16T01:50:00Z"}],` +
			`"PSDT":[{"PSNO":1,"STND":"213","PSST":"2026-03-16T01:05:00Z"},{"PSNO":2,"STND":"215","PSST":"2026-03-16T02:05:00Z"}]`
		var ws []pipeline.FlightWrite
		for i := int64(1); i <= 3; i++ {
			ws = append(ws, pipeline.FlightWrite{Day: "2026-03-16", FLID: i, Record: flighttest.Rec(i, now.Add(24*time.Hour), groups)})
		}
		for _, s := range []flight.Contract{rs, mirror} {
			if err := s.Apply(ctx, 1, ws, now); err != nil {
				t.Fatal(err)
			}
		}
		var indented bytes.Buffer
		if err := json.Indent(&indented, bytes.Replace(flighttest.Rec(3, now.Add(24*time.Hour), groups), []byte(`"PAXC":1.5`), []byte(`"PAXC":1.50`), 1), "", "   "); err != nil {
			t.Fatal(err)
		}
		storetest.Exec(t, db,
			`UPDATE FLIGHT_STATE SET RECORD = JSON_SET(RECORD, '$.STND', '999') WHERE FLID = 2`,
			`UPDATE FLIGHT_STATE SET RECORD = '`+indented.String()+`' WHERE FLID = 3`)
		var rewritten string
		if err := db.SQL.QueryRow(`SELECT RECORD FROM FLIGHT_STATE WHERE FLID = 2`).Scan(&rewritten); err != nil {
			t.Fatal(err)
		}
		sen := &flight.Sentinel{Auth: rs, Mirror: mirror, Clock: clock, Location: flighttest.Shanghai}
		r, err := sen.Check(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(r.Mismatches); r.Checked != 3 || got != "[{2 2026-03-16  [STND]}]" {
			t.Fatalf("checked %d, mismatches %s; flight 2's mirror row:\n%s", r.Checked, got, rewritten)
		}
	})
}
