package target

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"msgx/internal/flight"
	"msgx/internal/flight/redisflight"
	"msgx/internal/pipeline"
	"msgx/internal/targetconf"
)

// DefaultKeyPrefix is a redis-flights target's key-prefix when none is set (and redis.key-prefix
// gave none): the phase A store's default.
const DefaultKeyPrefix = "msgx:"

// Event kinds the projection reads (the ES_FLIGHT events it copies).
const (
	kindESUpsert = "es-upsert"
	kindESDelete = "es-delete"
)

// flightSink projects flight changes into the Redis flight layout (redisflight.Store.Project):
// each run of records is one script, every change guarded by its event id.
type flightSink struct {
	name    string
	store   *redisflight.Store
	loc     *time.Location
	timeout time.Duration
}

func openRedisFlights(name string, c Config) Sink {
	st := redisflight.New(ProjectionOptions(c))
	loc := c.Location
	if loc == nil {
		loc = time.UTC
	}
	return &flightSink{name: name, store: st, loc: loc, timeout: c.Timeout}
}

// ProjectionOptions are the flight store options of a redis-flights target c: its server
// (addr, or Sentinel's master), db, password, key prefix and the airport's zone.
func ProjectionOptions(c Config) redisflight.Options {
	return redisflight.Options{Addr: c.Addr, DB: c.DB, Password: c.Password, Prefix: c.KeyPrefix, Location: c.Location,
		SentinelMaster: c.Sentinel.Master, SentinelAddrs: c.Sentinel.Addrs, SentinelPassword: c.Sentinel.Password}
}

// Send projects recs in order in one script. A record that is not an ES_FLIGHT event, or
// whose record is not a JSON object, is REJECTED (a configuration mistake or a bug no retry
// mends) after the records before it are projected. A Redis failure (down, timeout, an error
// reply) is INFRA: nothing of the script is written, and the records are sent again, in order.
// A record whose event its flight already took, or older than the flight's newest, counts as
// delivered and changes nothing.
func (s *flightSink) Send(ctx context.Context, recs []Record) (int, error) {
	if len(recs) == 0 {
		return 0, nil
	}
	changes := make([]redisflight.Change, 0, len(recs))
	var bad error
	for _, r := range recs {
		c, err := s.change(r)
		if err != nil {
			bad = eventErr(targetconf.SinkRedisFlights, s.name, r, pipeline.Wrap(pipeline.Rejected, err))
			break
		}
		changes = append(changes, c)
	}
	if len(changes) > 0 {
		ctx, cancel := context.WithTimeout(ctx, s.timeout)
		defer cancel()
		if _, err := s.store.Project(ctx, changes); err != nil {
			return 0, eventErr(targetconf.SinkRedisFlights, s.name, recs[0], err)
		}
	}
	return len(changes), bad
}

// change reads one record as a flight change.
func (s *flightSink) change(r Record) (redisflight.Change, error) {
	flid, err := strconv.ParseInt(r.Key, 10, 64)
	if err != nil || flid == 0 {
		return redisflight.Change{}, fmt.Errorf("flight key %q is not a FLID", r.Key)
	}
	c := redisflight.Change{EventID: r.EventID, MsgID: r.MsgID, FLID: flid, At: createdAt(r.Value)}
	doc := r.Document
	if len(doc) == 0 {
		doc = r.Value
	}
	switch r.Kind {
	case kindESDelete:
		c.Delete = true
	case kindESUpsert:
		if t := bytes.TrimSpace(doc); len(t) == 0 || t[0] != '{' {
			return c, fmt.Errorf("flight record of %d is not a JSON object", flid)
		}
		// The local day of the record's SODT, as the handlers compute FLIGHT_STATE's FDAY.
		c.Day, c.Record = flight.SODTOf(doc).In(s.loc).Format(time.DateOnly), doc
		if _, _, err := flight.CheckWrite(pipeline.FlightWrite{Day: c.Day, FLID: flid, Record: doc}); err != nil {
			return c, err
		}
	default:
		return c, fmt.Errorf("kind %q is not a flight change (%s takes copies of %s events: es-upsert, es-delete)", r.Kind, s.name, targetconf.FlightProjectionSource)
	}
	return c, nil
}

// createdAt reads the envelope's created_at (zero when it has none).
func createdAt(envelope []byte) time.Time {
	var e struct {
		CreatedAt time.Time `json:"created_at"`
	}
	_ = json.Unmarshal(envelope, &e)
	return e.CreatedAt
}

// Close closes the client's connections.
func (s *flightSink) Close() error {
	if err := s.store.Close(); err != nil {
		return fmt.Errorf("redis-flights target %s: close: %w", s.name, err)
	}
	return nil
}
