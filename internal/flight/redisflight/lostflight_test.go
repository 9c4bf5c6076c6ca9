package redisflight_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"

	"msgx/internal/flight"
	"msgx/internal/flight/flighttest"
	"msgx/internal/flight/redisflight"
	"msgx/internal/pipeline"
	"msgx/internal/pump"
	"msgx/internal/store"
	"msgx/internal/store/storetest"
	"msgx/internal/testkit"
)

// delFlight deletes flight flid's hash in Redis by hand, as a stray DEL does: the day set
// still names it and the marks still agree.
func delFlight(t *testing.T, rs *redisflight.Store, flid string) {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: flighttest.RedisAddr()})
	defer c.Close()
	if n, err := c.Del(context.Background(), rs.KeyPrefix()+"flight:"+flid).Result(); err != nil || n != 1 {
		t.Fatalf("DEL flight %s: %d %v", flid, n, err)
	}
}

func flop(seqn, styp, body string) string {
	return `<MSG><META><SNDR>AODB</SNDR><SEQN>` + seqn + `</SEQN><DTTM>20260315080000</DTTM><TYPE>FLOP</TYPE><STYP>` + styp + `</STYP></META>` + body + `</MSG>`
}

func ctot(flid, at string) string {
	return `<FLOP><FLID>` + flid + `</FLID><FFID>X</FFID><CTOT>` + at + `</CTOT></FLOP>`
}

func wantState(t *testing.T, db *store.DB, what string, id int64, st pipeline.ProcStatus, class pipeline.ErrorClass) *store.Message {
	t.Helper()
	m := state(t, db, id)
	if m.State != st || m.Class() != class {
		t.Fatalf("%s (message %d): %s/%s after %d attempts (%v), want %s/%s", what, id, m.State, m.Class(), m.Attempts, m.LastError, st, class)
	}
	return m
}

// TestGuardStopsOnAFlightRedisLost: a flight's hash deleted in Redis under phase A (a stray
// DEL: the marks still agree) stops the pump at the first message for it, with the flight and
// the mirror's version, before anything is parked: the FLOP stays PENDING at the head (no
// attempt counted), the ones behind it wait, and a FLOP for a flight neither Redis nor the
// mirror has is still ORPHAN. REDIS_RESTORE of the flight lets the pump go on by itself, and
// every waiting FLOP is applied, in order. On the old code the CHOT was parked ORPHAN.
func TestGuardStopsOnAFlightRedisLost(t *testing.T) {
	for _, batch := range []bool{true, false} {
		name := "one-per-transaction"
		if batch {
			name = "batches"
		}
		t.Run(name, func(t *testing.T) {
			storetest.Each(t, func(t *testing.T, db *store.DB) {
				ctx := context.Background()
				clock := testkit.NewClock(time.Date(2026, 3, 15, 6, 0, 0, 0, flighttest.Shanghai).UTC())
				rs := flighttest.Redis(t, flighttest.Shanghai, clock)
				mirror := flight.New(storetest.Flight(db), clock, flighttest.Shanghai)
				p, _ := guarded(db, rs, clock, nil, batch)
				insert(t, db, clock, testdata(t, "schd/dnld.xml"))
				steps(t, p)
				delFlight(t, rs, "7002")

				ids := insert(t, db, clock,
					flop("9", "CTOT", ctot("4242", "15MAR261300")),  // neither store has 4242
					testdata(t, "flop/chot.xml"),                    // 7002: lost from Redis
					flop("10", "CTOT", ctot("7001", "15MAR261310")), // behind it
				)
				steps(t, p)
				wantState(t, db, "the FLOP of a flight neither store has", ids[0], pipeline.Dead, pipeline.Orphan)
				const want = "Redis lost flight 7002: in the mirror at version 1, absent in Redis"
				if h := p.Halted(); h == nil || h.Reason != want {
					t.Fatalf("halt: %+v, want %q", h, want)
				}
				if m := wantState(t, db, "CHOT of the lost flight", ids[1], pipeline.Pending, ""); m.Attempts != 0 {
					t.Fatalf("CHOT of the lost flight tried %d times", m.Attempts)
				}
				wantState(t, db, "the FLOP behind it", ids[2], pipeline.Pending, "")
				steps(t, p) // stopped: nothing moves
				if h := p.Halted(); h == nil || h.Reason != want {
					t.Fatalf("halt on the next step: %+v", h)
				}
				wantState(t, db, "CHOT while halted", ids[1], pipeline.Pending, "")

				if _, err := rs.RestoreFrom(ctx, redisflight.RestoreParams{Source: mirror, FLID: 7002}); err != nil {
					t.Fatal(err)
				}
				steps(t, p)
				if h := p.Halted(); h != nil {
					t.Fatalf("still halted after the flight's restore: %+v", h)
				}
				wantState(t, db, "CHOT after the restore", ids[1], pipeline.Succeeded, "")
				wantState(t, db, "the FLOP behind it", ids[2], pipeline.Succeeded, "")
				if e, _ := rs.Get(ctx, 7002); e == nil || e.Version != 2 || !strings.Contains(string(e.Record), "2026-03-15T01:21:00Z") {
					t.Fatalf("7002 after the CHOT: %+v", e)
				}
				if e, _ := mirror.Get(ctx, 7002); e == nil || e.Version != 2 {
					t.Fatalf("7002's mirror after the CHOT: %+v", e)
				}
			})
		})
	}
}

// TestGuardTellsAnOrphanFromALostFlightInABatch: in one batch an FDEL deletes 7003 and a FLOP
// for 7003 follows; Redis lacks the flight and so does the mirror as the batch transaction
// sees it, so the FLOP is an ORPHAN, not a loss. A FLOP of two records, one for a flight Redis
// lost, is not applied with the record left out: the pump stops before it.
func TestGuardTellsAnOrphanFromALostFlightInABatch(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		clock := testkit.NewClock(time.Date(2026, 3, 15, 6, 0, 0, 0, flighttest.Shanghai).UTC())
		rs := flighttest.Redis(t, flighttest.Shanghai, clock)
		mirror := flight.New(storetest.Flight(db), clock, flighttest.Shanghai)
		p, _ := guarded(db, rs, clock, nil, true)
		insert(t, db, clock, testdata(t, "schd/dnld.xml"))
		steps(t, p)

		ids := insert(t, db, clock, testdata(t, "flop/fdel.xml"), flop("11", "CTOT", ctot("7003", "15MAR261300")))
		if _, err := p.Step(ctx); err != nil {
			t.Fatal(err)
		}
		wantState(t, db, "FDEL", ids[0], pipeline.Succeeded, "")
		wantState(t, db, "FLOP after the FDEL", ids[1], pipeline.Dead, pipeline.Orphan)
		if h := p.Halted(); h != nil {
			t.Fatalf("halted on a flight the batch deleted: %+v", h)
		}

		before, _ := rs.Get(ctx, 7001)
		delFlight(t, rs, "7002")
		two := insert(t, db, clock, flop("12", "CTOT", ctot("7001", "15MAR261320")+ctot("7002", "15MAR261325")))[0]
		steps(t, p)
		const want = "Redis lost flight 7002: in the mirror at version 1, absent in Redis"
		if h := p.Halted(); h == nil || h.Reason != want {
			t.Fatalf("halt: %+v, want %q", h, want)
		}
		wantState(t, db, "FLOP of 7001 and the lost 7002", two, pipeline.Pending, "")
		if e, _ := rs.Get(ctx, 7001); e == nil || before == nil || e.Version != before.Version {
			t.Fatalf("7001 changed by the stopped FLOP: %+v, was %+v", e, before)
		}
		if _, err := rs.RestoreFrom(ctx, redisflight.RestoreParams{Source: mirror, FLID: 7002}); err != nil {
			t.Fatal(err)
		}
		steps(t, p)
		m := wantState(t, db, "FLOP of 7001 and 7002 after the restore", two, pipeline.Succeeded, "")
		if m.LastError != nil {
			t.Fatalf("FLOP of 7001 and 7002: %s", *m.LastError)
		}
		for id, want := range map[int64]int64{7001: before.Version + 1, 7002: 2} {
			if e, _ := rs.Get(ctx, id); e == nil || e.Version != want {
				t.Fatalf("%d after the FLOP: %+v, want version %d", id, e, want)
			}
		}
	})
}

// TestSentinelStopsThePumpOnAFlightRedisLost: the consistency check finds a flight the mirror
// holds and Redis lacks and the pump stops at its next step with no message for it, as for a
// lost mark (the same gauge); the whole REDIS_RESTORE (flights, then new marks) lets it go on.
func TestSentinelStopsThePumpOnAFlightRedisLost(t *testing.T) {
	ctx := context.Background()
	db := storetest.SQLite(t)
	clock := testkit.NewClock(time.Date(2026, 3, 15, 6, 0, 0, 0, flighttest.Shanghai).UTC())
	rs := flighttest.Redis(t, flighttest.Shanghai, clock)
	mirror := flight.New(storetest.Flight(db), clock, flighttest.Shanghai)
	p, g := guarded(db, rs, clock, nil, true)
	insert(t, db, clock, testdata(t, "schd/dnld.xml"))
	steps(t, p)
	delFlight(t, rs, "7001")

	sen := &flight.Sentinel{Auth: rs, Mirror: mirror, Clock: clock, Location: flighttest.Shanghai}
	r, err := sen.Check(ctx)
	if err != nil || len(r.Mismatches) != 1 || r.Mismatches[0].FLID != 7001 || r.Mismatches[0].Where != "authoritative" {
		t.Fatalf("report: %+v %v", r, err)
	}
	steps(t, p)
	const want = "Redis lost flight 7001: in the mirror at version 1, absent in Redis"
	if h := p.Halted(); h == nil || h.Reason != want {
		t.Fatalf("halt: %+v, want %q", h, want)
	}
	if got := gauge(t, p); got != 1 {
		t.Fatalf("msgx_pump_halted %v", got)
	}
	chot := insert(t, db, clock, testdata(t, "flop/chot.xml"))[0]
	steps(t, p)
	wantState(t, db, "CHOT while halted", chot, pipeline.Pending, "")

	sqlMark, _, err := g.SQLMark(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rs.RestoreFrom(ctx, redisflight.RestoreParams{Source: mirror}); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Restore(ctx, sqlMark.MsgID); err != nil {
		t.Fatal(err)
	}
	steps(t, p)
	if h := p.Halted(); h != nil {
		t.Fatalf("halted after the restore: %+v", h)
	}
	wantState(t, db, "CHOT after the restore", chot, pipeline.Succeeded, "")
	if got := gauge(t, p); got != 0 {
		t.Fatalf("msgx_pump_halted %v", got)
	}
}

// TestSentinelSuspectIsJudgedAfterTheCommit: a flight the sentinel saw missing from Redis that
// the mirror no longer holds by the pump's next check (a delete whose SQL side committed since)
// stops nothing.
func TestSentinelSuspectIsJudgedAfterTheCommit(t *testing.T) {
	db := storetest.SQLite(t)
	clock := testkit.NewClock(time.Date(2026, 3, 15, 6, 0, 0, 0, flighttest.Shanghai).UTC())
	rs := flighttest.Redis(t, flighttest.Shanghai, clock)
	p, _ := guarded(db, rs, clock, nil, true)
	insert(t, db, clock, testdata(t, "schd/dnld.xml"), testdata(t, "flop/fdel.xml"))
	steps(t, p)
	rs.NoteMissing([]int64{7003}) // as if seen between the FDEL's script and its commit
	steps(t, p)
	if h := p.Halted(); h != nil {
		t.Fatalf("halted on a flight deleted by a message: %+v", h)
	}
}

// gauge is the value of msgx_pump_halted.
func gauge(t *testing.T, p *pump.Pump) float64 {
	t.Helper()
	return testutil.ToFloat64(p.HaltMetric())
}
