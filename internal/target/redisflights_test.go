package target

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"msgx/internal/flight/flighttest"
	"msgx/internal/flight/redisflight"
	"msgx/internal/pipeline"
	"msgx/internal/targetconf"
)

// flightRec is an ES_FLIGHT event copied to REDIS_FLIGHT: an upsert of the record, or
// (record "") a delete.
func flightRec(eid int64, flid int64, record string, created time.Time) Record {
	kind, doc := kindESUpsert, record
	if record == "" {
		kind, doc = kindESDelete, fmt.Sprintf(`{"FLID":%d}`, flid)
	}
	env := fmt.Sprintf(`{"event_id":%d,"msg_id":%d,"type_tag":"FLOP-CHOT","target":"REDIS_FLIGHT","kind":%q,"flight_key":"%d","created_at":%q,"payload":%s}`,
		eid, 100+eid, kind, flid, created.UTC().Format(time.RFC3339Nano), doc)
	return Record{EventID: eid, MsgID: 100 + eid, TypeTag: "FLOP-CHOT", Target: targetconf.FlightProjection, Kind: kind,
		Key: fmt.Sprint(flid), Value: []byte(env), Document: []byte(doc), Delete: record == ""}
}

// The redis-flights sink projects the ES_FLIGHT events into the Redis flight layout: the
// record under its local day in the airport's zone (here a day after the UTC date), the
// version counted, the message and commit time kept; a delete removes the flight; an event
// re-sent, or older than one the flight took, changes nothing but counts as delivered.
func TestRedisFlightsProjectsFlightEvents(t *testing.T) {
	prefix := flighttest.RedisPrefix(t)
	ctx := context.Background()
	s := mustOpen(t, targetconf.FlightProjection, Config{Sink: targetconf.SinkRedisFlights, Addr: flighttest.RedisAddr(), KeyPrefix: prefix, Location: flighttest.Shanghai})
	at := time.Date(2026, 3, 15, 8, 0, 0, 123456000, time.UTC)
	rec1 := `{"FLID":1,"FLNO":"CA1","SODT":"2026-03-15T17:30:00Z","REMK":"经停 🛫"}`
	rec1b := `{"FLID":1,"FLNO":"CA1","SODT":"2026-03-15T17:30:00Z","STND":"12"}`
	rec2 := `{"FLID":2,"FLNO":"CA2","SODT":"2026-03-15T09:00:00Z","MAID":1}`
	batch := []Record{flightRec(10, 1, rec1, at), flightRec(11, 2, rec2, at), flightRec(14, 1, rec1b, at.Add(time.Second))}
	if n, err := s.Send(ctx, batch); err != nil || n != 3 {
		t.Fatalf("Send: %d %v", n, err)
	}
	if n, err := s.Send(ctx, []Record{flightRec(12, 1, rec1, at), flightRec(15, 2, "", at)}); err != nil || n != 2 {
		t.Fatalf("Send of an old upsert and a delete: %d %v", n, err)
	}
	rs := redisflight.New(redisflight.Options{Addr: flighttest.RedisAddr(), Prefix: prefix, Location: flighttest.Shanghai})
	defer rs.Close()
	e, err := rs.Get(ctx, 1)
	if err != nil || e == nil || e.Day != "2026-03-16" || e.Version != 2 || string(e.Record) != rec1b || e.MsgID == nil || *e.MsgID != 114 {
		t.Fatalf("flight 1: %+v %v", e, err)
	}
	if e, err := rs.Get(ctx, 2); err != nil || e != nil {
		t.Fatalf("deleted flight 2: %+v %v", e, err)
	}
	hs, err := rs.HistoryChunk(ctx, "2026-03-16", 0, 10)
	if err != nil || len(hs) != 1 || !hs[0].UpdatedAt.Equal(at.Add(time.Second)) {
		t.Fatalf("day 2026-03-16: %+v", hs)
	}
}

// A record that is not a flight change (a target wrongly fed) is REJECTED after the records
// before it are projected; Redis down is INFRA, nothing delivered.
func TestRedisFlightsClassesItsFailures(t *testing.T) {
	prefix := flighttest.RedisPrefix(t)
	ctx := context.Background()
	s := mustOpen(t, targetconf.FlightProjection, Config{Sink: targetconf.SinkRedisFlights, Addr: flighttest.RedisAddr(), KeyPrefix: prefix})
	at := time.Now()
	flop := records(targetconf.FlightProjection, 21, 1, "3")[0]
	n, err := s.Send(ctx, []Record{flightRec(20, 3, `{"FLID":3,"SODT":"2026-03-15T09:00:00Z"}`, at), flop, flightRec(22, 3, "", at)})
	if n != 1 || pipeline.ClassOf(err) != pipeline.Rejected || !strings.Contains(err.Error(), `kind "flop"`) {
		t.Fatalf("a flop record: %d %v", n, err)
	}
	if n, err := s.Send(ctx, []Record{flightRec(23, 3, `[3]`, at)}); n != 0 || pipeline.ClassOf(err) != pipeline.Rejected {
		t.Fatalf("a record that is not an object: %d %v", n, err)
	}
	down := mustOpen(t, targetconf.FlightProjection, Config{Sink: targetconf.SinkRedisFlights, Addr: closedAddr(t), KeyPrefix: prefix, Timeout: time.Second})
	if n, err := down.Send(ctx, []Record{flightRec(24, 3, "", at)}); n != 0 || pipeline.ClassOf(err) != pipeline.Infra {
		t.Fatalf("Redis down: %d %v (class %s)", n, err, pipeline.ClassOf(err))
	}
}

func TestRedisFlightsConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    Config
		want string
	}{
		{"REDIS_FLIGHTS", Config{Sink: targetconf.SinkRedisFlights}, "targets.REDIS_FLIGHTS.sink: redis-flights serves the target REDIS_FLIGHT only"},
		{targetconf.FlightProjection, Config{Sink: targetconf.SinkRedisFlights, CopyOf: "KAFKA_SCHD"}, "targets.REDIS_FLIGHT.copy-of"},
		{targetconf.FlightProjection, Config{Sink: targetconf.SinkRedisFlights, DB: -1}, "targets.REDIS_FLIGHT.db"},
		{targetconf.FlightProjection, Config{Sink: targetconf.SinkRedisFlights, TLS: TLSConfig{Enabled: true}}, "targets.REDIS_FLIGHT.tls.enabled"},
		{targetconf.FlightProjection, Config{Sink: targetconf.SinkRedisFlights, CopyOf: targetconf.FlightProjectionSource}, ""},
	} {
		err := tc.c.Validate(tc.name)
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s %+v: %v, want %q", tc.name, tc.c, err, tc.want)
		}
	}
	if c := withDefaults(Config{Sink: targetconf.SinkRedisFlights}, targetconf.FlightProjection, ""); c.Addr != DefaultRedisAddr || c.KeyPrefix != "msgx:" || c.CopyOf != targetconf.FlightProjectionSource {
		t.Errorf("defaults: %+v", c)
	}
}
