package redisflight_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
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

// changeOf is the projection's change of event eid for write w of message msg.
func changeOf(eid, msg int64, w pipeline.FlightWrite) redisflight.Change {
	return redisflight.Change{EventID: eid, MsgID: msg, FLID: w.FLID, Delete: w.Delete, Day: w.Day, Record: w.Record, At: time.Now()}
}

func project(t *testing.T, s *redisflight.Store, want int, cs ...redisflight.Change) {
	t.Helper()
	n, err := s.Project(context.Background(), cs)
	if err != nil || n != want {
		t.Fatalf("Project(%d changes): %d applied, %v; want %d", len(cs), n, err, want)
	}
}

// The guard: a change takes effect only when its event is newer than the last one the flight
// took. A re-sent event, an older one after a newer one, an older upsert after a delete:
// nothing changes. A newer insert after a delete starts again at version 1, as FLIGHT_STATE
// does.
func TestProjectIgnoresOlderEvents(t *testing.T) {
	ctx := context.Background()
	s := flighttest.Redis(t, flighttest.Shanghai, nil)
	t1 := time.Date(2026, 3, 15, 9, 0, 0, 0, flighttest.Shanghai)
	up := func(eid int64, extra string) redisflight.Change {
		return changeOf(eid, eid*10, pipeline.FlightWrite{Day: "2026-03-15", FLID: 1, Record: flighttest.Rec(1, t1, extra)})
	}
	project(t, s, 2, up(10, `"STND":"1"`), up(12, `"STND":"2"`))
	project(t, s, 0, up(12, `"STND":"2"`))                       // re-sent
	project(t, s, 0, up(11, `"STND":"old"`))                     // late, older
	project(t, s, 1, up(11, `"STND":"x"`), up(13, `"STND":"3"`)) // one of two
	e, err := s.Get(ctx, 1)
	if err != nil || e == nil || e.Version != 3 || !strings.Contains(string(e.Record), `"STND":"3"`) || e.MsgID == nil || *e.MsgID != 130 {
		t.Fatalf("after the guard: %+v %v", e, err)
	}
	project(t, s, 1, changeOf(14, 140, pipeline.FlightWrite{FLID: 1, Delete: true}))
	project(t, s, 0, up(13, `"STND":"3"`)) // an older upsert does not bring it back
	if e, err := s.Get(ctx, 1); err != nil || e != nil {
		t.Fatalf("deleted flight came back: %+v %v", e, err)
	}
	if days, _ := s.HistoryDays(ctx, "2027-01-01"); len(days) != 0 {
		t.Fatalf("the emptied day is still listed: %+v", days)
	}
	project(t, s, 1, up(15, `"STND":"4"`))
	if e, _ := s.Get(ctx, 1); e == nil || e.Version != 1 || !strings.Contains(string(e.Record), `"STND":"4"`) {
		t.Fatalf("reinserted: %+v", e)
	}
	// A FLID above 2^53 stays exact (Lua numbers are doubles: FLIDs are kept as strings).
	big := int64(9_007_199_254_740_993)
	project(t, s, 1, changeOf(20, 200, pipeline.FlightWrite{Day: "2026-03-15", FLID: big, Record: flighttest.Rec(big, t1, "")}))
	if e, _ := s.Get(ctx, big); e == nil || e.FLID != big || e.Version != 1 {
		t.Fatalf("FLID above 2^53: %+v", e)
	}
	if e, _ := s.Get(ctx, big-1); e != nil {
		t.Fatalf("FLID above 2^53 stored as its neighbour: %+v", e)
	}
	// A bad upsert fails the call before anything is written.
	bad := up(16, "")
	bad.Day = "15.03.2026"
	if _, err := s.Project(ctx, []redisflight.Change{up(16, `"STND":"5"`), bad}); err == nil {
		t.Fatal("a bad day was projected")
	}
	if e, _ := s.Get(ctx, 1); e == nil || e.Version != 1 {
		t.Fatalf("a failed call wrote: %+v", e)
	}
}

// The same writes applied to FLIGHT_STATE and projected into Redis, one event per flight
// change as the handlers emit them, leave the two stores equal (the sentinel finds nothing):
// a snapshot that drops flights removes them from Redis and from its day sets, a day move
// changes sets, code-share sets follow, multi-byte text is kept byte for byte. On every SQL
// dialect.
func TestProjectionFollowsFlightState(t *testing.T) {
	for _, d := range storetest.Dialects() {
		t.Run(d.Name, func(t *testing.T) {
			ctx := context.Background()
			now := time.Date(2026, 3, 15, 6, 0, 0, 0, flighttest.Shanghai)
			clock := testkit.NewClock(now)
			rs := flighttest.Redis(t, flighttest.Shanghai, clock)
			sq := flight.New(storetest.Flight(d.Open(t)), clock, flighttest.Shanghai)
			eid := int64(0)
			msg := int64(0)
			both := func(ws ...pipeline.FlightWrite) {
				t.Helper()
				msg++
				if err := sq.Apply(ctx, msg, ws, now); err != nil {
					t.Fatal(err)
				}
				var cs []redisflight.Change
				for _, w := range ws {
					eid += 3 // other targets' events in between
					cs = append(cs, changeOf(eid, msg, w))
				}
				project(t, rs, len(cs), cs...)
			}
			d16, d17 := now.Add(24*time.Hour), now.Add(48*time.Hour)
			var day []pipeline.FlightWrite
			for i := int64(1); i <= 6; i++ {
				day = append(day, pipeline.FlightWrite{Day: "2026-03-16", FLID: i, Record: flighttest.Rec(i, d16, `"STND":"20`+fmt.Sprint(i)+`"`)})
			}
			day[1].Record = flighttest.Rec(2, d16, `"MAID":1,"REMK":"经停 北京 🛫 Ünïcödé"`)
			both(day...)
			// A snapshot of the day: 1 and 2 changed, 3 moved to the 17th, 4 and 5 dropped, 6 kept.
			both(
				pipeline.FlightWrite{Day: "2026-03-16", FLID: 1, Record: flighttest.Rec(1, d16, `"STND":"301"`)},
				pipeline.FlightWrite{Day: "2026-03-16", FLID: 2, Record: flighttest.Rec(2, d16, `"REMK":"𠜎𠜱 漢字"`)},
				pipeline.FlightWrite{Day: "2026-03-17", FLID: 3, Record: flighttest.Rec(3, d17, `"MAID":6`)},
				pipeline.FlightWrite{Day: "2026-03-16", FLID: 4, Delete: true},
				pipeline.FlightWrite{Day: "2026-03-16", FLID: 5, Delete: true},
			)
			for _, id := range []int64{4, 5} {
				if e, _ := rs.Get(ctx, id); e != nil {
					t.Fatalf("dropped flight %d is still in Redis: %+v", id, e)
				}
			}
			c := redis.NewClient(&redis.Options{Addr: flighttest.RedisAddr()})
			defer c.Close()
			members := c.SMembers(ctx, rs.KeyPrefix()+"day:2026-03-16").Val()
			slices.Sort(members)
			if fmt.Sprint(members) != "[1 2 6]" {
				t.Fatalf("day set after the snapshot: %v", members)
			}
			if cs := c.SMembers(ctx, rs.KeyPrefix()+"codeshares").Val(); fmt.Sprint(cs) != "[3]" {
				t.Fatalf("code-share set: %v", cs)
			}
			if b, _, _ := rs.Flight(ctx, 2); !strings.Contains(string(b), "𠜎𠜱 漢字") {
				t.Fatalf("multi-byte text: %s", b)
			}
			sen := &flight.Sentinel{Auth: sq, Mirror: rs, Clock: clock, Location: flighttest.Shanghai}
			r, err := sen.Check(ctx)
			if err != nil || r.Checked != 4 || len(r.Mismatches) != 0 {
				t.Fatalf("FLIGHT_STATE and its projection: %+v %v", r, err)
			}
		})
	}
}

// The phase-B rebuild rewrites Redis's active days from FLIGHT_STATE in chunks: a flight
// altered by hand, one missing, one only in Redis, one Redis holds on the wrong day, all
// repaired with FLIGHT_STATE's versions; progress is told per chunk; afterwards an event
// older than the rebuild's watermark changes nothing and a newer one applies. On every SQL
// dialect.
func TestRebuildRedisFromFlightState(t *testing.T) {
	for _, d := range storetest.Dialects() {
		t.Run(d.Name, func(t *testing.T) {
			ctx := context.Background()
			now := time.Date(2026, 3, 15, 6, 0, 0, 0, flighttest.Shanghai)
			clock := testkit.NewClock(now)
			rs := flighttest.Redis(t, flighttest.Shanghai, clock)
			sq := flight.New(storetest.Flight(d.Open(t)), clock, flighttest.Shanghai)
			d16, d17 := now.Add(24*time.Hour), now.Add(48*time.Hour)
			var ws []pipeline.FlightWrite
			for i := int64(1); i <= 7; i++ {
				ws = append(ws, pipeline.FlightWrite{Day: "2026-03-16", FLID: i, Record: flighttest.Rec(i, d16, `"STND":"1"`)})
			}
			ws = append(ws, pipeline.FlightWrite{Day: "2026-03-17", FLID: 8, Record: flighttest.Rec(8, d17, `"MAID":1`)})
			if err := sq.Apply(ctx, 1, ws, now); err != nil {
				t.Fatal(err)
			}
			ws[0].Record = flighttest.Rec(1, d16, `"STND":"2"`)
			if err := sq.Apply(ctx, 2, ws[:1], now); err != nil { // flight 1 at version 2
				t.Fatal(err)
			}
			// Redis: flight 2 altered, 3 missing, 9 only in Redis, 8 on the wrong day.
			var cs []redisflight.Change
			for i, w := range ws {
				if w.FLID == 3 {
					continue
				}
				if w.FLID == 8 {
					w.Day, w.Record = "2026-03-16", flighttest.Rec(8, d16, "")
				}
				cs = append(cs, changeOf(int64(10+i), 1, w))
			}
			cs = append(cs, changeOf(30, 1, pipeline.FlightWrite{Day: "2026-03-16", FLID: 9, Record: flighttest.Rec(9, d16, "")}))
			project(t, rs, len(cs), cs...)
			c := redis.NewClient(&redis.Options{Addr: flighttest.RedisAddr()})
			defer c.Close()
			c.HSet(ctx, rs.KeyPrefix()+"flight:2", "rec", string(flighttest.Rec(2, d16, `"STND":"999"`)))
			sen := &flight.Sentinel{Auth: sq, Mirror: rs, Clock: clock, Location: flighttest.Shanghai}
			if r, _ := sen.Check(ctx); len(r.Mismatches) != 6 {
				t.Fatalf("before the rebuild: %v", r.Mismatches)
			}
			var steps []string
			written, deleted, err := rs.RebuildFrom(ctx, sq, flight.ActiveDays(now, flighttest.Shanghai), 100, 3, func(day string, n int) {
				steps = append(steps, fmt.Sprintf("%s:%d", day, n))
			})
			if err != nil || written != 9 || deleted != 1 { // flight 8 twice: found on the 16th, then on its day
				t.Fatalf("rebuild: %d written, %d deleted, %v", written, deleted, err)
			}
			if got := strings.Join(steps, " "); got != "2026-03-16:3 2026-03-16:6 2026-03-16:7 2026-03-16:9 2026-03-17:1" {
				t.Fatalf("progress: %s", got)
			}
			if r, err := sen.Check(ctx); err != nil || r.Checked != 8 || len(r.Mismatches) != 0 {
				t.Fatalf("after the rebuild: %+v %v", r, err)
			}
			if e, _ := rs.Get(ctx, 1); e == nil || e.Version != 2 || e.MsgID == nil || *e.MsgID != 2 {
				t.Fatalf("flight 1 after the rebuild: %+v", e)
			}
			// Events older than the watermark (pending when the rebuild ran) change nothing,
			// not even the flight the rebuild deleted; a newer one applies on top.
			project(t, rs, 0,
				changeOf(99, 1, pipeline.FlightWrite{Day: "2026-03-16", FLID: 2, Record: flighttest.Rec(2, d16, `"STND":"old"`)}),
				changeOf(99, 1, pipeline.FlightWrite{Day: "2026-03-16", FLID: 9, Record: flighttest.Rec(9, d16, "")}))
			project(t, rs, 1, changeOf(101, 3, pipeline.FlightWrite{Day: "2026-03-16", FLID: 2, Record: flighttest.Rec(2, d16, `"STND":"new"`)}))
			if e, _ := rs.Get(ctx, 2); e == nil || e.Version != 2 || !strings.Contains(string(e.Record), "new") {
				t.Fatalf("flight 2 after a newer event: %+v", e)
			}
			if e, _ := rs.Get(ctx, 9); e != nil {
				t.Fatalf("flight 9 came back: %+v", e)
			}
		})
	}
}

// The phase-A rebuild (FLIGHT_STATE from Redis) works in chunks of flight.RebuildChunk
// flights, telling its progress after each, and drops the rows Redis does not hold (prune). On every
// SQL dialect.
func TestRebuildFlightStateInChunks(t *testing.T) {
	for _, d := range storetest.Dialects() {
		t.Run(d.Name, func(t *testing.T) {
			ctx := context.Background()
			now := time.Date(2026, 3, 15, 6, 0, 0, 0, flighttest.Shanghai)
			clock := testkit.NewClock(now)
			rs := flighttest.Redis(t, flighttest.Shanghai, clock)
			sq := flight.New(storetest.Flight(d.Open(t)), clock, flighttest.Shanghai)
			d16 := now.Add(24 * time.Hour)
			n := 2*flight.RebuildChunk + 100
			var ws []pipeline.FlightWrite
			for i := int64(1); i <= int64(n); i++ {
				ws = append(ws, pipeline.FlightWrite{Day: "2026-03-16", FLID: i, Record: flighttest.Rec(i, d16, "")})
			}
			if err := rs.Apply(ctx, 1, ws, now); err != nil {
				t.Fatal(err)
			}
			// FLIGHT_STATE: a stale row of the day, and flight 5 on another day.
			if err := sq.Apply(ctx, 1, []pipeline.FlightWrite{
				{Day: "2026-03-16", FLID: 99999, Record: flighttest.Rec(99999, d16, "")},
				{Day: "2026-03-17", FLID: 5, Record: flighttest.Rec(5, d16.Add(24*time.Hour), "")},
			}, now); err != nil {
				t.Fatal(err)
			}
			var steps []string
			res, err := sq.RebuildFrom(ctx, flight.RebuildParams{Source: rs, Days: []string{"2026-03-16", "2026-03-17"}, Now: now, Prune: true,
				Progress: func(day string, done int) { steps = append(steps, fmt.Sprintf("%s:%d", day, done)) }})
			if err != nil || res.Written != n || res.Replaced != 1 || res.Deleted != 1 || res.Kept != 0 {
				t.Fatalf("rebuild: %+v, %v", res, err)
			}
			want := fmt.Sprintf("2026-03-16:%d 2026-03-16:%d 2026-03-16:%d 2026-03-16:%[3]d 2026-03-17:0", flight.RebuildChunk, 2*flight.RebuildChunk, n)
			if got := strings.Join(steps, " "); got != want {
				t.Fatalf("progress: %s, want %s", got, want)
			}
			r, err := flight.Compare(ctx, rs, sq, []string{"2026-03-16", "2026-03-17"}, now)
			if err != nil || r.Checked != n || len(r.Mismatches) != 0 {
				t.Fatalf("after the rebuild: %d checked, %v %v", r.Checked, r.Mismatches, err)
			}
		})
	}
}
