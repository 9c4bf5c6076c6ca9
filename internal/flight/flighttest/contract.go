// Package flighttest is the flight-store contract suite: the behaviours every flight store
// (the SQL store of FLIGHT_STATE, the Redis store of phase A) must show, run on each through
// the flight.Contract interface, so the handlers, the API and the jobs cannot tell which
// store they read. Each case starts from an empty store.
package flighttest

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"msgx/internal/flight"
	"msgx/internal/flight/redisflight"
	"msgx/internal/pipeline"
	"msgx/internal/testkit"
)

// Shanghai is the airport zone the suite runs in (a day boundary away from UTC).
var Shanghai = mustZone("Asia/Shanghai")

func mustZone(name string) *time.Location {
	l, err := time.LoadLocation(name)
	if err != nil {
		panic(err)
	}
	return l
}

// Open returns an empty store whose view is in zone loc.
type Open func(t *testing.T, loc *time.Location) flight.Contract

// Run runs every case of the contract on the stores open makes.
func Run(t *testing.T, open Open) {
	cases := []struct {
		name string
		fn   func(t *testing.T, s flight.Contract)
	}{
		{"ReadsFollowWrites", readsFollowWrites},
		{"VersionsCountEveryChange", versionsCountEveryChange},
		{"CodeShareLookupFollowsWrites", codeShareLookupFollowsWrites},
		{"FlightsOfManyFlights", flightsOfManyFlights},
		{"BadWriteWritesNothing", badWriteWritesNothing},
		{"TextIsKeptByteForByte", textIsKeptByteForByte},
		{"HistorySweepHelpers", historySweepHelpers},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.fn(t, open(t, Shanghai)) })
	}
}

// Rec returns a flight record with FLID, FLNO and SODT and the extra JSON members given.
func Rec(flid int64, sodt time.Time, extra string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"FLID": flid, "FLNO": "CA1", "SODT": sodt.UTC()})
	if extra != "" {
		b = append(b[:len(b)-1], []byte(","+extra+"}")...)
	}
	return b
}

func apply(t *testing.T, s flight.Contract, ws ...pipeline.FlightWrite) {
	t.Helper()
	if err := s.Apply(context.Background(), 1, ws, time.Now()); err != nil {
		t.Fatal(err)
	}
}

func flidsOf(t *testing.T, recs [][]byte) []int64 {
	t.Helper()
	var out []int64
	for _, r := range recs {
		var m struct{ FLID int64 }
		if err := json.Unmarshal(r, &m); err != nil {
			t.Fatalf("record %s: %v", r, err)
		}
		out = append(out, m.FLID)
	}
	slices.Sort(out)
	return out
}

func readsFollowWrites(t *testing.T, s flight.Contract) {
	ctx := context.Background()
	t1 := time.Date(2026, 3, 15, 9, 0, 0, 0, Shanghai)
	t2 := time.Date(2026, 3, 16, 1, 0, 0, 0, Shanghai)
	apply(t, s,
		pipeline.FlightWrite{Day: "2026-03-15", FLID: 1, Record: Rec(1, t1, "")},
		pipeline.FlightWrite{Day: "2026-03-15", FLID: 2, Record: Rec(2, t1.Add(time.Hour), `"MAID":1`)},
	)
	if b, ok, err := s.Flight(ctx, 2); err != nil || !ok || !strings.Contains(string(b), `"MAID":1`) {
		t.Fatalf("Flight(2): %s %v %v", b, ok, err)
	}
	if _, ok, err := s.Flight(ctx, 3); err != nil || ok {
		t.Fatalf("Flight(3) absent: %v %v", ok, err)
	}
	if e, err := s.Get(ctx, 3); err != nil || e != nil {
		t.Fatalf("Get(3) absent: %+v %v", e, err)
	}
	apply(t, s, pipeline.FlightWrite{Day: "2026-03-15", FLID: 1, Record: Rec(1, t1, `"STND":"213"`)})
	if err := s.Apply(ctx, 7, []pipeline.FlightWrite{{Day: "2026-03-16", FLID: 1, Record: Rec(1, t2, "")}}, time.Now()); err != nil {
		t.Fatal(err)
	}
	e, err := s.Get(ctx, 1)
	if err != nil || e == nil || e.Version != 3 || e.Day != "2026-03-16" || e.MsgID == nil || *e.MsgID != 7 || !e.SODT.Equal(t2) {
		t.Fatalf("after a day move: %+v %v", e, err)
	}
	day15, _ := s.Day(ctx, "2026-03-15")
	day16, _ := s.Day(ctx, "2026-03-16")
	if len(day15) != 1 || day15[0].FLID != 2 || len(day16) != 1 || day16[0].FLID != 1 {
		t.Fatalf("days: 15 %+v, 16 %+v", day15, day16)
	}
	if none, err := s.Day(ctx, "2026-03-17"); err != nil || none == nil || len(none) != 0 {
		t.Fatalf("an empty day is an empty list: %#v %v", none, err)
	}
	if _, err := s.Day(ctx, "16/03/2026"); err == nil {
		t.Fatal("Day accepted a bad day")
	}
	in, err := s.FlightsBetween(ctx, t1, t2)
	if err != nil || len(in) != 2 || !strings.Contains(string(in[0]), `"FLID":2`) {
		t.Fatalf("FlightsBetween both, in SODT order: %s %v", in, err)
	}
	in, _ = s.FlightsBetween(ctx, t1.Add(30*time.Minute), t2.Add(-time.Minute))
	if len(in) != 1 || !strings.Contains(string(in[0]), `"FLID":2`) {
		t.Fatalf("FlightsBetween narrow: %s", in)
	}
	if in, _ = s.FlightsBetween(ctx, t2, t1); len(in) != 0 {
		t.Fatalf("FlightsBetween backwards: %s", in)
	}
	apply(t, s, pipeline.FlightWrite{FLID: 2, Delete: true}, pipeline.FlightWrite{FLID: 99, Delete: true})
	if e, _ := s.Get(ctx, 2); e != nil {
		t.Fatalf("deleted flight still there: %+v", e)
	}
	if day15, _ := s.Day(ctx, "2026-03-15"); len(day15) != 0 {
		t.Fatalf("deleted flight still listed: %+v", day15)
	}
	// Same SODT: FLID order.
	apply(t, s, pipeline.FlightWrite{Day: "2026-03-15", FLID: 12, Record: Rec(12, t1, "")},
		pipeline.FlightWrite{Day: "2026-03-15", FLID: 11, Record: Rec(11, t1, "")})
	if d, _ := s.Day(ctx, "2026-03-15"); len(d) != 2 || d[0].FLID != 11 || d[1].FLID != 12 {
		t.Fatalf("same SODT in FLID order: %+v", d)
	}
}

// Every change advances the version by one from the version stored: a flight written twice
// in one Apply moves two steps, an insert after a delete starts again at 1.
func versionsCountEveryChange(t *testing.T, s flight.Contract) {
	ctx := context.Background()
	t1 := time.Date(2026, 3, 15, 9, 0, 0, 0, Shanghai)
	var ws []pipeline.FlightWrite
	for i := int64(1); i <= 300; i++ {
		ws = append(ws, pipeline.FlightWrite{Day: "2026-03-15", FLID: i, Record: Rec(i, t1, "")})
	}
	apply(t, s, ws...)
	for i := range ws {
		ws[i].Record = Rec(ws[i].FLID, t1, `"STND":"1"`)
	}
	ws[1].Day, ws[1].Record = "2026-03-16", Rec(2, t1.Add(24*time.Hour), "")
	apply(t, s, ws...)
	apply(t, s, pipeline.FlightWrite{Day: "2026-03-15", FLID: 1, Record: Rec(1, t1, `"STND":"2"`)},
		pipeline.FlightWrite{Day: "2026-03-15", FLID: 1, Record: Rec(1, t1, `"STND":"3"`)},
		pipeline.FlightWrite{FLID: 3, Delete: true},
		pipeline.FlightWrite{Day: "2026-03-15", FLID: 3, Record: Rec(3, t1, "")})
	for flid, want := range map[int64]int64{1: 4, 2: 2, 3: 1, 300: 2} {
		if e, err := s.Get(ctx, flid); err != nil || e == nil || e.Version != want {
			t.Fatalf("flight %d: %+v %v, want version %d", flid, e, err, want)
		}
	}
	if e, _ := s.Get(ctx, 1); !strings.Contains(string(e.Record), `"STND":"3"`) {
		t.Fatalf("the last write of a flight wins: %s", e.Record)
	}
	if d, _ := s.Day(ctx, "2026-03-16"); len(d) != 1 || d[0].FLID != 2 {
		t.Fatalf("day move in a batch: %+v", d)
	}
	if d, _ := s.Day(ctx, "2026-03-15"); len(d) != 299 {
		t.Fatalf("day 15 holds %d flights, want 299", len(d))
	}
}

func codeShareLookupFollowsWrites(t *testing.T, s flight.Contract) {
	ctx := context.Background()
	t1 := time.Date(2026, 3, 15, 9, 0, 0, 0, Shanghai)
	check := func(step string, all []int64, of map[int64][]int64) {
		t.Helper()
		cs, err := s.CodeShareFlights(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got := flidsOf(t, cs); !slices.Equal(got, all) {
			t.Fatalf("%s: CodeShareFlights %v, want %v", step, got, all)
		}
		for m, want := range of {
			recs, err := s.CodeSharesOf(ctx, []int64{m})
			if err != nil {
				t.Fatal(err)
			}
			if got := flidsOf(t, recs); !slices.Equal(got, want) {
				t.Fatalf("%s: CodeSharesOf(%d) %v, want %v", step, m, got, want)
			}
		}
	}
	up := func(flid int64, day string, extra string) pipeline.FlightWrite {
		sodt := t1
		if day == "2026-03-16" {
			sodt = t1.Add(24 * time.Hour)
		}
		return pipeline.FlightWrite{Day: day, FLID: flid, Record: Rec(flid, sodt, extra)}
	}
	apply(t, s, up(1, "2026-03-15", ""), up(2, "2026-03-15", `"MAID":1`), up(3, "2026-03-15", `"MAID":1`),
		up(4, "2026-03-15", `"MAID":null`), up(6, "2026-03-15", `"MAID":"x"`))
	check("insert", []int64{2, 3}, map[int64][]int64{1: {2, 3}, 2: nil})
	apply(t, s, up(3, "2026-03-15", `"MAID":2`), up(2, "2026-03-15", ""), up(4, "2026-03-15", `"MAID":1`))
	check("change", []int64{3, 4}, map[int64][]int64{1: {4}, 2: {3}})
	apply(t, s, up(4, "2026-03-16", `"MAID":1`))
	check("day move", []int64{3, 4}, map[int64][]int64{1: {4}})
	apply(t, s, pipeline.FlightWrite{FLID: 3, Delete: true})
	check("delete", []int64{4}, map[int64][]int64{2: nil})
	apply(t, s, up(5, "2026-03-15", `"MAID":1`), up(5, "2026-03-15", `"MAID":4`), up(4, "2026-03-16", ""))
	check("one by one", []int64{5}, map[int64][]int64{1: nil, 4: {5}})
	if recs, err := s.CodeSharesOf(ctx, []int64{1, 2, 4}); err != nil || !slices.Equal(flidsOf(t, recs), []int64{5}) {
		t.Fatalf("CodeSharesOf(1, 2, 4): %s %v", recs, err)
	}
	if recs, err := s.CodeSharesOf(ctx, nil); err != nil || len(recs) != 0 {
		t.Fatalf("CodeSharesOf(): %s %v", recs, err)
	}
}

func flightsOfManyFlights(t *testing.T, s flight.Contract) {
	ctx := context.Background()
	t1 := time.Date(2026, 3, 15, 9, 0, 0, 0, Shanghai)
	var ws []pipeline.FlightWrite
	var ask []int64
	for i := int64(1); i <= 1200; i++ {
		if i%3 != 0 {
			ws = append(ws, pipeline.FlightWrite{Day: "2026-03-15", FLID: i, Record: Rec(i, t1, "")})
		}
		ask = append(ask, i)
	}
	apply(t, s, ws...)
	recs, err := s.FlightsOf(ctx, ask)
	if err != nil {
		t.Fatal(err)
	}
	if got := flidsOf(t, recs); len(got) != 800 || got[0] != 1 || got[799] != 1199 {
		t.Fatalf("FlightsOf: %d records", len(got))
	}
	if recs, err := s.FlightsOf(ctx, nil); err != nil || len(recs) != 0 {
		t.Fatalf("FlightsOf(): %d %v", len(recs), err)
	}
}

// A write with a bad day or a record that is not JSON fails the whole Apply: the writes
// before it in the same Apply are not kept.
func badWriteWritesNothing(t *testing.T, s flight.Contract) {
	ctx := context.Background()
	t1 := time.Date(2026, 3, 15, 9, 0, 0, 0, Shanghai)
	for _, bad := range []pipeline.FlightWrite{
		{Day: "15/03/2026", FLID: 5, Record: Rec(5, t1, "")},
		{Day: "2026-03-15", FLID: 5, Record: json.RawMessage(`{"FLID":5,`)},
	} {
		err := s.Apply(ctx, 1, []pipeline.FlightWrite{{Day: "2026-03-15", FLID: 4, Record: Rec(4, t1, "")}, bad}, time.Now())
		if err == nil {
			t.Fatalf("%+v was accepted", bad)
		}
		if e, _ := s.Get(ctx, 4); e != nil {
			t.Fatalf("a write before the bad one was kept: %+v", e)
		}
	}
}

// Records hold CJK and 4-byte text and JSON escapes; the store gives back the bytes it got.
func textIsKeptByteForByte(t *testing.T, s flight.Contract) {
	ctx := context.Background()
	t1 := time.Date(2026, 3, 15, 23, 59, 59, 999_000_000, Shanghai)
	r := Rec(9_007_199_254_740_993, t1, `"REMK":"延误✈🛫 \u003c\"q\"\u003e","ROUT":"PEK\\SHA"`)
	apply(t, s, pipeline.FlightWrite{Day: "2026-03-15", FLID: 9_007_199_254_740_993, Record: r})
	b, ok, err := s.Flight(ctx, 9_007_199_254_740_993)
	if err != nil || !ok || string(b) != string(r) {
		t.Fatalf("record changed on the way:\n got %s\nwant %s (%v)", b, r, err)
	}
	if d, _ := s.Day(ctx, "2026-03-15"); len(d) != 1 || d[0].FLID != 9_007_199_254_740_993 {
		t.Fatalf("a FLID above 2^53: %+v", d)
	}
}

func historySweepHelpers(t *testing.T, s flight.Contract) {
	ctx := context.Background()
	sodt := time.Date(2026, 11, 18, 9, 0, 0, 0, Shanghai)
	var ws []pipeline.FlightWrite
	for i, day := range []string{"2026-11-18", "2026-11-18", "2026-11-18", "2026-11-19", "2026-11-20"} {
		ws = append(ws, pipeline.FlightWrite{Day: day, FLID: int64(9_000_000_000 + i), Record: Rec(int64(9_000_000_000+i), sodt, `"REMK":"延误✈🛫"`)})
	}
	apply(t, s, ws...)
	days, err := s.HistoryDays(ctx, "2026-11-20")
	if err != nil || fmt.Sprint(days) != "[{2026-11-18 3} {2026-11-19 1}]" {
		t.Fatalf("days: %v %v", days, err)
	}
	page, err := s.HistoryChunk(ctx, "2026-11-18", 0, 2)
	if err != nil || len(page) != 2 || page[0].FLID != 9_000_000_000 || page[0].Version != 1 || page[0].MsgID != 1 || page[0].UpdatedAt.IsZero() {
		t.Fatalf("first page: %+v %v", page, err)
	}
	rest, err := s.HistoryChunk(ctx, "2026-11-18", page[1].FLID, 2)
	if err != nil || len(rest) != 1 || rest[0].FLID != 9_000_000_002 {
		t.Fatalf("second page: %+v %v", rest, err)
	}
	apply(t, s, pipeline.FlightWrite{Day: "2026-11-18", FLID: 9_000_000_002, Record: Rec(9_000_000_002, sodt, `"STND":"213"`)})
	n, err := s.DeleteHistory(ctx, append(page, rest...))
	if err != nil || n != 2 {
		t.Fatalf("deleted %d (%v), want the 2 unchanged flights", n, err)
	}
	days, _ = s.HistoryDays(ctx, "2026-11-20")
	if fmt.Sprint(days) != "[{2026-11-18 1} {2026-11-19 1}]" {
		t.Fatalf("days after the delete: %v", days)
	}
	if n, err := s.DeleteHistory(ctx, nil); err != nil || n != 0 {
		t.Fatalf("empty delete: %d %v", n, err)
	}
}

// RedisAddr is the Redis server tests use (MSGX_TEST_REDIS_ADDR, default 127.0.0.1:6379).
func RedisAddr() string {
	if a := os.Getenv("MSGX_TEST_REDIS_ADDR"); a != "" {
		return a
	}
	return "127.0.0.1:6379"
}

// RedisPrefix returns a key prefix of t's own on the test Redis server, whose keys are deleted
// when t ends. It skips t (fails it under MSGX_TEST_REQUIRE_SERVICES=1) when Redis is absent.
func RedisPrefix(t testing.TB) string {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: RedisAddr(), DialTimeout: 2 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	err := c.Ping(ctx).Err()
	cancel()
	if err != nil {
		c.Close()
		testkit.RequireService(t, "Redis at "+RedisAddr(), err)
	}
	prefix := fmt.Sprintf("msgxtest:%d:%d:", time.Now().UnixNano()%1e9, rand.IntN(1e6))
	t.Cleanup(func() {
		defer c.Close()
		redisflight.New(redisflight.Options{Addr: RedisAddr(), Prefix: prefix}).Wipe(context.Background())
	})
	return prefix
}

// Redis returns an empty Redis store under a key prefix of t's own.
func Redis(t testing.TB, loc *time.Location, clock pipeline.Clock) *redisflight.Store {
	t.Helper()
	s := redisflight.New(redisflight.Options{Addr: RedisAddr(), Prefix: RedisPrefix(t), Location: loc, Clock: clock})
	t.Cleanup(func() { s.Close() })
	return s
}
