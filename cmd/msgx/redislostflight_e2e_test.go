package main_test

// End-to-end test of phase A with one flight lost from Redis (issue 32): a stray DEL of a
// flight's hash leaves the marks agreeing; the first FLOP for the flight stops the pump before
// anything is parked, as a lost mark does, and REDIS_RESTORE of the flight lets it go on; the
// consistency check finds such a flight the same way.

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"msgx/client"
)

// TestPhaseAFlightLostFromRedisStopsThePump: msgx serve in phase A on the test Redis (a key
// prefix of the test's own). Three flights, FLOPs applied; the hash of one is DEL'd. FLOPs for
// it and the others follow: the pump stops at the first FLOP of the lost flight ("Redis lost
// flight F: in the mirror at version V, absent in Redis" in /readyz, 503, status and
// msgx_pump_halted 1), no FLOP is parked ORPHAN or even failed, those behind wait. REDIS_RESTORE
// of the flight (msgx job run) and the pump goes on by itself: every FLOP SUCCEEDED, each
// flight's stand the last FLOP's and its version one per change, in Redis, FLIGHT_STATE and the
// API alike. Then the consistency check finds a second DEL'd flight with no message for it and
// stops the pump the same way, until the whole REDIS_RESTORE. On both databases.
func TestPhaseAFlightLostFromRedisStopsThePump(t *testing.T) {
	eachDB(t, func(t *testing.T, db dbEnv) {
		env := phaseAEnv(t)
		prefix := redisPrefixOf(env)
		rdb := redisForE2E(t)
		ctx := context.Background()
		s := db.start(t, append(env, "MSGX_PIPELINE_POLL_INTERVAL=50ms")...)
		day := tomorrow(t)
		flights := []int64{99301, 99302, 99303}
		const lost = 99302
		var fltrs []string
		for i, f := range flights {
			fltrs = append(fltrs, e2eFltr(f, fmt.Sprintf("CA19%02d", 30+i), "D", day.Add(time.Duration(8+i)*time.Hour), ""))
		}
		snap := s.post(e2eSchd(993001, fltrs...))
		s.await(snap, "SUCCEEDED", state("SUCCEEDED", ""))

		// Each FLOP a new stand, so each changes its flight.
		changes := map[int64]int{}
		stand := map[int64]string{}
		seq := 993100
		post := func(f int64) int64 {
			seq++
			stand[f] = fmt.Sprint(seq - 993000)
			changes[f]++
			return s.post(e2eFlop(seq, "STND", f, "<STND>"+stand[f]+"</STND>"))
		}
		for range 2 {
			for _, f := range flights {
				s.await(post(f), "SUCCEEDED", state("SUCCEEDED", ""))
			}
		}
		mirrorVersion := 1 + changes[lost]
		if n := rdb.Del(ctx, fmt.Sprintf("%sflight:%d", prefix, lost)).Val(); n != 1 {
			t.Fatalf("DEL: %d", n)
		}
		delAt := time.Now()

		// FLOPs for the lost flight and the others: 99301's first is ahead of the loss.
		first := post(99301)
		var behind []int64
		for _, f := range []int64{lost, 99303, 99301, lost, 99303} {
			behind = append(behind, post(f))
		}
		s.await(first, "SUCCEEDED", state("SUCCEEDED", ""))

		want := fmt.Sprintf("Redis lost flight %d: in the mirror at version %d, absent in Redis", lost, mirrorVersion)
		awaitHalt(t, s, want)
		t.Logf("%s: stopped %s after the DEL", db.Name, time.Since(delAt).Round(time.Millisecond))
		if h := s.status().Halted(); h == nil || h.Reason != want {
			t.Fatalf("status pump_halted: %+v", h)
		}
		if m := s.metrics(); !strings.Contains(m, "msgx_pump_halted 1") {
			t.Fatalf("metric msgx_pump_halted not 1")
		}
		time.Sleep(300 * time.Millisecond) // steps of the stopped pump
		for i, id := range behind {
			if m := s.message(id); m.State != "PENDING" || m.Attempts != 0 {
				t.Fatalf("FLOP %d behind the loss (message %d): %s/%s after %d attempts (%v)", i, id, m.State, m.Class(), m.Attempts, m.LastError)
			}
		}
		if n := rdb.Exists(ctx, fmt.Sprintf("%sflight:%d", prefix, lost)).Val(); n != 0 {
			t.Fatalf("the lost flight written again while the pump was stopped")
		}

		res := s.jobRun("REDIS_RESTORE", "--flid", fmt.Sprint(lost))
		if !strings.HasPrefix(res, fmt.Sprintf("restored Redis from FLIGHT_STATE for flight %d: 1 flights written, 0 replaced, 0 deleted; the marks are unchanged; the pump goes on", lost)) {
			t.Fatalf("REDIS_RESTORE: %q", res)
		}
		for _, id := range behind {
			s.await(id, "SUCCEEDED", state("SUCCEEDED", ""))
		}
		awaitReady(t, s)
		if m := s.metrics(); !strings.Contains(m, "msgx_pump_halted 0") {
			t.Fatalf("metric msgx_pump_halted not 0 after the restore")
		}
		checkFlights(t, s, db, prefix, flights, changes, stand)

		// The consistency check finds a flight lost with no message for it.
		if n := rdb.Del(ctx, fmt.Sprintf("%sflight:%d", prefix, 99303)).Val(); n != 1 {
			t.Fatalf("DEL: %d", n)
		}
		rep := s.checkConsistency()
		if want := []client.Mismatch{{FLID: 99303, Day: day.Format(time.DateOnly), Where: "authoritative", Fields: []string{"missing"}}}; !reflect.DeepEqual(rep.Mismatches, want) {
			t.Fatalf("consistency after the DEL: %+v, want %+v", rep.Mismatches, want)
		}
		awaitHalt(t, s, fmt.Sprintf("Redis lost flight 99303: in the mirror at version %d, absent in Redis", 1+changes[99303]))
		late := post(99303)
		time.Sleep(300 * time.Millisecond)
		if m := s.message(late); m.State != "PENDING" || m.Attempts != 0 {
			t.Fatalf("FLOP of the flight the check found lost: %s/%s after %d attempts", m.State, m.Class(), m.Attempts)
		}
		if res := s.jobRun("REDIS_RESTORE"); !strings.Contains(res, "1 flights written, 2 replaced, 0 deleted") || !strings.Contains(res, "marks: epoch ") {
			t.Fatalf("REDIS_RESTORE: %q", res)
		}
		s.await(late, "SUCCEEDED", state("SUCCEEDED", ""))
		awaitReady(t, s)
		checkFlights(t, s, db, prefix, flights, changes, stand)
		if rep := s.checkConsistency(); rep.Checked != 3 || !noMismatch(rep) {
			t.Fatalf("consistency after the restore: %s, want 3 []", reported(rep))
		}
	})
}

// awaitHalt waits until /readyz answers 503 naming why: "the pump applies nothing: "+why.
func awaitHalt(t *testing.T, s *server, why string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		r := s.readyz()
		if r.code == http.StatusServiceUnavailable && r.Reason == "the pump applies nothing: "+why {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz never named the loss %q: %d %q\n%s", why, r.code, r.Reason, s.logs)
		}
	}
}

// awaitReady waits until /readyz answers 200.
func awaitReady(t *testing.T, s *server) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		r := s.readyz()
		if r.code == http.StatusOK {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz: %d %q", r.code, r.Reason)
		}
	}
}

// checkFlights checks each flight's stand (the last FLOP's) in the API, and its version (one
// for the snapshot and one per change) and stand in Redis and FLIGHT_STATE.
func checkFlights(t *testing.T, s *server, db dbEnv, prefix string, flights []int64, changes map[int64]int, stand map[int64]string) {
	t.Helper()
	rdb := redisForE2E(t)
	ctx := context.Background()
	for _, f := range flights {
		want := int64(1 + changes[f])
		if got := fmt.Sprint(s.flight(f)["STND"]); got != stand[f] {
			t.Fatalf("flight %d: API's stand %s, want %s", f, got, stand[f])
		}
		v, err := rdb.HMGet(ctx, fmt.Sprintf("%sflight:%d", prefix, f), "ver", "rec").Result()
		if err != nil || fmt.Sprint(v[0]) != fmt.Sprint(want) || !strings.Contains(fmt.Sprint(v[1]), `"STND":"`+stand[f]+`"`) {
			t.Fatalf("flight %d in Redis: %v (%v), want version %d, stand %s", f, v, err, want, stand[f])
		}
		var ver int64
		var rec string
		if err := db.open(t).SQL.QueryRow(`SELECT VERSION, RECORD FROM FLIGHT_STATE WHERE FLID = ?`, f).Scan(&ver, &rec); err != nil || ver != want || !strings.Contains(rec, `"STND":"`+stand[f]+`"`) {
			t.Fatalf("flight %d in FLIGHT_STATE: version %d (%v), want %d; %s", f, ver, err, want, rec)
		}
	}
}
