package app

import (
	"context"
	"testing"
	"time"

	"msgx/internal/flight"
	"msgx/internal/flight/flighttest"
	"msgx/internal/flight/redisflight"
	"msgx/internal/pipeline"
	"msgx/internal/store/storetest"
)

// The history sweep of phase B with REDIS_FLIGHT deletes what it swept from the projection
// too, and with Redis down deletes nothing (the sweep fails and is retried).
func TestSweepProjectionDeletesFromRedisFirst(t *testing.T) {
	ctx := context.Background()
	sq := flight.New(storetest.Flight(storetest.SQLite(t)), nil, flighttest.Shanghai)
	rs := flighttest.Redis(t, flighttest.Shanghai, nil)
	sodt := time.Date(2026, 11, 18, 9, 0, 0, 0, flighttest.Shanghai)
	var ws []pipeline.FlightWrite
	var cs []redisflight.Change
	for i := int64(1); i <= 3; i++ {
		w := pipeline.FlightWrite{Day: "2026-11-18", FLID: i, Record: flighttest.Rec(i, sodt, "")}
		ws = append(ws, w)
		cs = append(cs, redisflight.Change{EventID: i, MsgID: 1, FLID: i, Day: w.Day, Record: w.Record})
	}
	if err := sq.Apply(ctx, 1, ws, time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := rs.Project(ctx, cs); err != nil {
		t.Fatal(err)
	}
	fs, err := sq.HistoryChunk(ctx, "2026-11-18", 0, 10)
	if err != nil || len(fs) != 3 {
		t.Fatalf("chunk: %+v %v", fs, err)
	}
	down := redisflight.New(redisflight.Options{Addr: "127.0.0.1:1", Prefix: rs.KeyPrefix()})
	defer down.Close()
	if n, err := (sweepProjection{sq, down}).DeleteHistory(ctx, fs[:1]); err == nil || n != 0 {
		t.Fatalf("Redis down: %d %v", n, err)
	}
	if e, _ := sq.Get(ctx, 1); e == nil {
		t.Fatal("FLIGHT_STATE lost a flight while Redis was down")
	}
	if n, err := (sweepProjection{sq, rs}).DeleteHistory(ctx, fs); err != nil || n != 3 {
		t.Fatalf("sweep: %d %v", n, err)
	}
	for i := int64(1); i <= 3; i++ {
		if e, _ := rs.Get(ctx, i); e != nil {
			t.Fatalf("swept flight %d is still in Redis", i)
		}
	}
	if days, _ := rs.HistoryDays(ctx, "2027-01-01"); len(days) != 0 {
		t.Fatalf("Redis still lists %v", days)
	}
}
