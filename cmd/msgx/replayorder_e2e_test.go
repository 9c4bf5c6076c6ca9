package main_test

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// The obvious recovery never goes backwards (invariant I6), through the binary: a FLOP for a
// flight whose schedule has not arrived is parked ORPHAN, and a second one (CTOT) beside it;
// the schedule arrives; a later FLOP sets stand 305. `msgx replay --class ORPHAN --dry-run`
// says the parked stand would be left (set by the later FLOP) and CTOT set; the replay keeps
// stand 305 and every field the newer schedule set, applies CTOT (which a schedule keeps), and
// the replayed stand's note names the field it left.
func TestReplayNeverGoesBackwardsEndToEnd(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db dbEnv) { replayNeverGoesBackwards(t, db, false) })
}

// TestReplayNeverGoesBackwardsEndToEndPhaseA is the same with the flights in Redis (phase A),
// the replay after a REDIS_RESTORE of the flight.
func TestReplayNeverGoesBackwardsEndToEndPhaseA(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db dbEnv) { replayNeverGoesBackwards(t, db, true, phaseAEnv(t)...) })
}

func replayNeverGoesBackwards(t *testing.T, db dbEnv, phaseA bool, env ...string) {
	day := tomorrow(t)
	s := db.start(t, append([]string{"MSGX_PIPELINE_POLL_INTERVAL=50ms"}, env...)...)
	const flid = 94001
	ctot := sisTime(day.Add(10*time.Hour + 20*time.Minute))
	parkedStand := s.post(e2eFlop(840001, "STND", flid, "<STND>201</STND>"))
	parkedCTOT := s.post(e2eFlop(840002, "CTOT", flid, "<CTOT>"+ctot+"</CTOT>"))
	for _, id := range []int64{parkedStand, parkedCTOT} {
		s.await(id, "DEAD/ORPHAN", state("DEAD", "ORPHAN"))
	}
	dnld := s.post(e2eSchd(840003, e2eFltr(flid, "CA1555", "D", day.Add(10*time.Hour), "<REMC>SCH</REMC>")))
	s.await(dnld, "SUCCEEDED", state("SUCCEEDED", ""))
	newer := s.post(e2eFlop(840004, "STND", flid, "<STND>305</STND>"))
	s.await(newer, "SUCCEEDED", state("SUCCEEDED", ""))
	before := s.flight(flid)
	if before["STND"] != "305" || before["REMC"] != "SCH" || before["CTOT"] != nil {
		t.Fatalf("before the replay: %v", before)
	}
	if phaseA {
		s.jobRun("REDIS_RESTORE", "--flid", fmt.Sprint(flid))
	}

	kept := fmt.Sprintf("flight %d STND kept: set by message %d, newer", flid, newer)
	s.mustCLI([]string{"would leave: " + kept, fmt.Sprintf("would set: flight %d CTOT", flid)},
		"replay", "--class", "ORPHAN", "--dry-run")
	if m := s.message(parkedStand); m.State != "DEAD" {
		t.Fatalf("the dry run moved message %d: %s", parkedStand, m.State)
	}

	s.mustCLI([]string{"moved 2 to PENDING"}, "replay", "--class", "ORPHAN")
	m := s.await(parkedStand, "SUCCEEDED", state("SUCCEEDED", ""))
	if !strings.Contains(m.Note, kept) {
		t.Errorf("the replayed stand's note %q does not name the field it left (%s)", m.Note, kept)
	}
	s.mustCLI([]string{"applied out of order: " + kept}, "message", fmt.Sprint(parkedStand), "--history")
	s.await(parkedCTOT, "SUCCEEDED", state("SUCCEEDED", ""))
	after := s.flight(flid)
	if after["STND"] != "305" || after["REMC"] != "SCH" || after["CTOT"] == nil {
		t.Fatalf("after the replay: stand %v (want the newer 305), remark %v (want the schedule's SCH), CTOT %v (want the replayed one)",
			after["STND"], after["REMC"], after["CTOT"])
	}
	// The replayed stand emitted nothing: it changed nothing.
	if evs := s.events(fmt.Sprintf("msg_id=%d", parkedStand)); len(evs) != 0 {
		t.Errorf("the replayed stand, which changed nothing, committed %d events", len(evs))
	}
}
