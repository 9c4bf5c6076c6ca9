package redisflight_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"msgx/internal/flight"
	"msgx/internal/flight/flighttest"
	"msgx/internal/flight/redisflight"
	"msgx/internal/pipeline"
	"msgx/internal/store/storetest"
	"msgx/internal/testkit"
)

// TestRebuildKeepsWhatRedisLacks: the phase-A rebuild (FLIGHT_STATE from Redis) keeps, and
// names, the rows of a day that Redis does not hold, unless told to prune them.
func TestRebuildKeepsWhatRedisLacks(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 3, 15, 6, 0, 0, 0, flighttest.Shanghai)
	clock := testkit.NewClock(now)
	rs := flighttest.Redis(t, flighttest.Shanghai, clock)
	sq := flight.New(storetest.Flight(storetest.SQLite(t)), clock, flighttest.Shanghai)
	d16 := now.Add(24 * time.Hour)
	ws := []pipeline.FlightWrite{
		{Day: "2026-03-16", FLID: 1, Record: flighttest.Rec(1, d16, "")},
		{Day: "2026-03-16", FLID: 2, Record: flighttest.Rec(2, d16, "")},
	}
	if err := sq.Apply(ctx, 1, ws, now); err != nil {
		t.Fatal(err)
	}
	if err := rs.Apply(ctx, 1, ws[:1], now); err != nil {
		t.Fatal(err)
	}
	res, err := sq.RebuildFrom(ctx, flight.RebuildParams{Source: rs, Days: []string{"2026-03-16"}, Now: now})
	if err != nil || res.Written != 1 || res.Replaced != 1 || res.Deleted != 0 || res.Kept != 1 || fmt.Sprint(res.KeptIDs) != "[2]" {
		t.Fatalf("rebuild without prune: %+v %v", res, err)
	}
	if e, _ := sq.Get(ctx, 2); e == nil {
		t.Fatal("flight 2 deleted from FLIGHT_STATE without prune")
	}
	res, err = sq.RebuildFrom(ctx, flight.RebuildParams{Source: rs, Days: []string{"2026-03-16"}, Now: now, Prune: true})
	if err != nil || res.Deleted != 1 || res.Kept != 0 {
		t.Fatalf("rebuild with prune: %+v %v", res, err)
	}
	if e, _ := sq.Get(ctx, 2); e != nil {
		t.Fatal("flight 2 kept with prune")
	}
}

// TestRestoreRedisFromFlightState: REDIS_RESTORE's store side, on every SQL dialect. Into an
// emptied Redis everything comes back (flights, versions, days, code-share sets) and the
// markers go; one flight DEL'd comes back alone; a day's restore deletes the flight Redis
// holds there that FLIGHT_STATE does not; FLIGHT_STATE is never written.
func TestRestoreRedisFromFlightState(t *testing.T) {
	for _, d := range storetest.Dialects() {
		t.Run(d.Name, func(t *testing.T) {
			ctx := context.Background()
			now := time.Date(2026, 3, 15, 6, 0, 0, 0, flighttest.Shanghai)
			clock := testkit.NewClock(now)
			rs := flighttest.Redis(t, flighttest.Shanghai, clock)
			sq := flight.New(storetest.Flight(d.Open(t)), clock, flighttest.Shanghai)
			d16, d17 := now.Add(24*time.Hour), now.Add(48*time.Hour)
			n := redisflight.DefaultRebuildChunk + 20
			var ws []pipeline.FlightWrite
			for i := int64(1); i <= int64(n); i++ {
				ws = append(ws, pipeline.FlightWrite{Day: "2026-03-16", FLID: i, Record: flighttest.Rec(i, d16, "")})
			}
			ws = append(ws, pipeline.FlightWrite{Day: "2026-03-17", FLID: 9001, Record: flighttest.Rec(9001, d17, `"MAID":3`)})
			for _, s := range []flight.Contract{sq, rs} {
				if err := s.Apply(ctx, 7, ws, now); err != nil {
					t.Fatal(err)
				}
				if err := s.Apply(ctx, 8, ws[2:3], now); err != nil { // flight 3 at version 2
					t.Fatal(err)
				}
			}
			days := []string{"2026-03-16", "2026-03-17"}
			equal := func(what string) {
				t.Helper()
				r, err := flight.Compare(ctx, rs, sq, days, now)
				if err != nil || r.Checked != n+1 || len(r.Mismatches) != 0 {
					t.Fatalf("%s: %d checked, %v %v", what, r.Checked, r.Mismatches, err)
				}
			}
			equal("before")
			c := redis.NewClient(&redis.Options{Addr: flighttest.RedisAddr()})
			defer c.Close()
			p := rs.KeyPrefix()
			c.Set(ctx, p+"marker:8", "m", 0)
			if err := rs.Wipe(ctx); err != nil {
				t.Fatal(err)
			}
			c.Set(ctx, p+"marker:8", "m", 0)

			var steps int
			res, err := rs.RestoreFrom(ctx, redisflight.RestoreParams{Source: sq, Progress: func(string, int) { steps++ }})
			if err != nil || res.Written != n+1 || res.Replaced != 0 || res.Deleted != 0 || res.Markers != 1 || fmt.Sprint(res.Days) != fmt.Sprint(days) || steps != 3 {
				t.Fatalf("restore everything: %+v %v, %d progress steps", res, err, steps)
			}
			equal("after the restore")
			if e, _ := rs.Get(ctx, 3); e == nil || e.Version != 2 || e.MsgID == nil || *e.MsgID != 8 {
				t.Fatalf("flight 3: %+v", e)
			}
			if cs, _ := rs.CodeSharesOf(ctx, []int64{3}); len(cs) != 1 {
				t.Fatalf("code-shares of 3: %d", len(cs))
			}
			if _, ok, _ := rs.Marker(ctx, 8); ok {
				t.Fatal("marker kept")
			}

			// One flight DEL'd.
			c.Del(ctx, p+"flight:5")
			res, err = rs.RestoreFrom(ctx, redisflight.RestoreParams{Source: sq, FLID: 5})
			if err != nil || res.Written != 1 || res.Replaced != 0 {
				t.Fatalf("restore flight 5: %+v %v", res, err)
			}
			equal("after the restore of flight 5")

			// A flight in Redis only, on a restored day.
			if err := rs.Apply(ctx, 9, []pipeline.FlightWrite{{Day: "2026-03-17", FLID: 9002, Record: flighttest.Rec(9002, d17, "")}}, now); err != nil {
				t.Fatal(err)
			}
			res, err = rs.RestoreFrom(ctx, redisflight.RestoreParams{Source: sq, Day: "2026-03-17"})
			if err != nil || res.Replaced != 1 || res.Deleted != 1 {
				t.Fatalf("restore 2026-03-17: %+v %v", res, err)
			}
			equal("after the restore of 2026-03-17")
			if e, _ := sq.Get(ctx, 9002); e != nil {
				t.Fatal("FLIGHT_STATE written")
			}
		})
	}
}
