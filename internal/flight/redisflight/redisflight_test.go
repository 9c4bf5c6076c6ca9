package redisflight_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"msgx/internal/flight/redisflight"
	"msgx/internal/pipeline"

	"msgx/internal/flight"
	"msgx/internal/flight/flighttest"
)

func TestContract(t *testing.T) {
	flighttest.Run(t, func(t *testing.T, loc *time.Location) flight.Contract { return flighttest.Redis(t, loc, nil) })
}

// A message's changes and its marker are written by one script: a second apply of the same
// message finds the marker, writes nothing and gives the marker back.
func TestMarkerMakesApplyOnce(t *testing.T) {
	ctx := context.Background()
	s := flighttest.Redis(t, flighttest.Shanghai, nil)
	t1 := time.Date(2026, 3, 15, 9, 0, 0, 0, flighttest.Shanghai)
	w := []pipeline.FlightWrite{{Day: "2026-03-15", FLID: 1, Record: flighttest.Rec(1, t1, "")}}
	if prev, found, err := s.ApplyMessage(ctx, 10, w, []byte("decision of 10"), time.Now()); err != nil || found || prev != nil {
		t.Fatalf("first apply: %q %v %v", prev, found, err)
	}
	w[0].Record = flighttest.Rec(1, t1, `"STND":"1"`)
	prev, found, err := s.ApplyMessage(ctx, 10, w, []byte("another decision"), time.Now())
	if err != nil || !found || string(prev) != "decision of 10" {
		t.Fatalf("second apply: %q %v %v", prev, found, err)
	}
	if e, _ := s.Get(ctx, 1); e == nil || e.Version != 1 || strings.Contains(string(e.Record), "STND") {
		t.Fatalf("the second apply wrote: %+v", e)
	}
	if m, ok, err := s.Marker(ctx, 10); err != nil || !ok || string(m) != "decision of 10" {
		t.Fatalf("Marker(10): %q %v %v", m, ok, err)
	}
	if _, ok, err := s.Marker(ctx, 11); err != nil || ok {
		t.Fatalf("Marker(11) absent: %v %v", ok, err)
	}
}

// The marker expires after the configured time.
func TestMarkerExpires(t *testing.T) {
	ctx := context.Background()
	prefix := flighttest.RedisPrefix(t)
	s := redisflight.New(redisflight.Options{Addr: flighttest.RedisAddr(), Prefix: prefix, MarkerTTL: time.Hour})
	defer s.Close()
	if _, _, err := s.ApplyMessage(ctx, 5, nil, []byte("x"), time.Now()); err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(&redis.Options{Addr: flighttest.RedisAddr()})
	defer c.Close()
	if ttl := c.TTL(ctx, prefix+"marker:5").Val(); ttl <= 59*time.Minute || ttl > time.Hour {
		t.Fatalf("marker TTL %v, want 1h", ttl)
	}
}

// A flight whose version moved between the read and the script (another writer) fails the
// message with INFRA and nothing of it is written, its marker neither.
func TestVersionMovedWritesNothing(t *testing.T) {
	ctx := context.Background()
	prefix := flighttest.RedisPrefix(t)
	s := redisflight.New(redisflight.Options{Addr: flighttest.RedisAddr(), Prefix: prefix})
	defer s.Close()
	t1 := time.Date(2026, 3, 15, 9, 0, 0, 0, flighttest.Shanghai)
	if err := s.Apply(ctx, 1, []pipeline.FlightWrite{{Day: "2026-03-15", FLID: 1, Record: flighttest.Rec(1, t1, "")}}, time.Now()); err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(&redis.Options{Addr: flighttest.RedisAddr()})
	defer c.Close()
	// A writer between the read of versions and the script: a hook that bumps the version.
	c.HSet(ctx, prefix+"flight:1", "ver", 5)
	err := redisflight.ApplyAfterRead(s, ctx, 2, []pipeline.FlightWrite{
		{Day: "2026-03-15", FLID: 2, Record: flighttest.Rec(2, t1, "")},
		{Day: "2026-03-15", FLID: 1, Record: flighttest.Rec(1, t1, `"STND":"9"`)},
	}, []byte("m"), func() { c.HSet(ctx, prefix+"flight:1", "ver", 6) })
	if !errors.Is(err, redisflight.ErrChangedUnderUs) || pipeline.ClassOf(err) != pipeline.Infra {
		t.Fatalf("err %v (class %s), want INFRA changed under us", err, pipeline.ClassOf(err))
	}
	if e, _ := s.Get(ctx, 2); e != nil {
		t.Fatalf("flight 2 written: %+v", e)
	}
	if _, ok, _ := s.Marker(ctx, 2); ok {
		t.Fatal("marker written")
	}
}

// Redis down: every call fails with INFRA.
func TestRedisDownIsInfra(t *testing.T) {
	s := redisflight.New(redisflight.Options{Addr: "127.0.0.1:1"})
	defer s.Close()
	ctx := context.Background()
	_, _, err := s.ApplyMessage(ctx, 1, []pipeline.FlightWrite{{FLID: 1, Delete: true}}, []byte("m"), time.Now())
	if err == nil || pipeline.ClassOf(err) != pipeline.Infra {
		t.Fatalf("apply: %v", err)
	}
	if _, _, err := s.Flight(ctx, 1); err == nil || pipeline.ClassOf(err) != pipeline.Infra {
		t.Fatalf("read: %v", err)
	}
}
