package main_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"msgx/client"
)

// The checks of issue 8 (real traffic), through the binary, on SQLite and MariaDB: a
// deterministic failure is parked at once and the queue moves on; a misspelt FLOP element never
// clears a value; a snapshot with one invalid FLTR applies the others and keeps that flight; a
// schedule update without ERUT keeps the route.

func e2eSchdSTYP(seqn int, styp string, fltrs ...string) string {
	return strings.Replace(e2eSchd(seqn, fltrs...), "<STYP>DNLD</STYP>", "<STYP>"+styp+"</STYP>", 1)
}

func e2eRef(seqn int, code, desc string) string {
	return fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8"?>
<MSG><META><SNDR>AODB</SNDR><SEQN>%d</SEQN><DTTM>20260101000000</DTTM><TYPE>STTS</TYPE><STYP>ADD</STYP></META>
<RECS>1</RECS><STTS><STTC>%s</STTC><STTD>%s</STTD><ABNS>N</ABNS></STTS></MSG>`, seqn, code, desc)
}

// flightEntry returns GET /api/v1/flights/{flid}'s answer as it is (record, version, day…).
func (s *server) flightEntry(flid int64) map[string]any {
	s.t.Helper()
	raw, err := s.api().Flight(context.Background(), flid)
	var e map[string]any
	if err != nil || json.Unmarshal(raw, &e) != nil {
		s.t.Fatalf("GET flight %d: %v %s", flid, err, raw)
	}
	return e
}

// flight returns the stored record of flid (GET /api/v1/flights/{flid}'s "record").
func (s *server) flight(flid int64) map[string]any {
	s.t.Helper()
	rec, _ := s.flightEntry(flid)["record"].(map[string]any)
	return rec
}

func TestUnknownFLOPIsParkedAndTheQueueMovesOn(t *testing.T) {
	t.Parallel()
	eachDB(t, testUnknownFLOPIsParked)
}

func testUnknownFLOPIsParked(t *testing.T, db dbEnv) {
	s := db.start(t, "MSGX_PIPELINE_POLL_INTERVAL=50ms")
	// ESTT is a FLOP STYP the AODB sends (FORMAT §2.1) that msgx has no decoder for.
	unknown := s.post(e2eFlop(820001, "ESTT", 1, "<ESTT>"+sisTime(tomorrow(t))+"</ESTT>"))
	posted := time.Now()
	next := s.post(e2eRef(820002, "BRD", "boarding"))
	s.await(next, "SUCCEEDED", state("SUCCEEDED", ""))
	if took := time.Since(posted); took > 2*time.Second {
		t.Fatalf("the message behind an unknown FLOP took %s to succeed", took)
	}
	m := s.await(unknown, "DEAD/UNSUPPORTED", state("DEAD", "UNSUPPORTED"))
	if m.Attempts != 1 || m.LastError == nil || !strings.Contains(*m.LastError, "ESTT") || !strings.Contains(m.Note, "park") {
		t.Fatalf("parked message: %+v", m)
	}
	// Replayable: it goes back to PENDING and, msgx still not reading ESTT, is parked again.
	if res := s.replay(unknown); res.Moved != 1 {
		t.Fatalf("replay of the parked message: %+v", res)
	}
	s.await(unknown, "parked again", func(m message) bool { return m.State == "DEAD" && m.Class() == "UNSUPPORTED" && m.Attempts == 1 })
	var recent []client.RecentNote
	section(t, s.status(), "recent", &recent)
	// The newest problem is the second park. The operator's replay is in the list too (an
	// action, no message id), and may be recorded after the pump parked the message again.
	problems := recent[:0:0]
	for _, r := range recent {
		if r.MsgID != 0 {
			problems = append(problems, r)
		}
	}
	if len(problems) == 0 || problems[0].MsgID != unknown || problems[0].State != "PARKED" {
		t.Fatalf("status does not show the parked message: %+v", recent)
	}
	out, err := db.command(t, "status", "--server", s.url).CombinedOutput()
	if err != nil || !strings.Contains(string(out), fmt.Sprintf("message %d FLOP-ESTT PARKED UNSUPPORTED", unknown)) {
		t.Fatalf("msgx status: %v\n%s", err, out)
	}
}

func TestRealTrafficDefects(t *testing.T) {
	t.Parallel()
	eachDB(t, testRealTrafficDefects)
}

func testRealTrafficDefects(t *testing.T, db dbEnv) {
	day := tomorrow(t)
	at := func(h, m int) time.Time { return day.Add(time.Duration(h)*time.Hour + time.Duration(m)*time.Minute) }
	s := db.start(t, "MSGX_PIPELINE_POLL_INTERVAL=50ms")

	route := `<ERUT RTNO="1"><APCD>PEK</APCD><SCDT>` + sisTime(at(9, 0)) + `</SCDT></ERUT>` +
		`<ERUT RTNO="2"><APCD>SHA</APCD><SCAT>` + sisTime(at(11, 0)) + `</SCAT></ERUT>`
	a := e2eFltr(93001, "CA1301", "A", at(11, 0), route)
	b := e2eFltr(93002, "CA1302", "D", at(12, 0), "")
	c := e2eFltr(93003, "CA1303", "A", at(13, 0), "")
	first := s.post(e2eSchd(830001, a, b, c))
	s.await(first, "SUCCEEDED", state("SUCCEEDED", ""))
	before := s.flight(93002)

	// A misspelt element in a FLOP STND is MALFORMED, names what it probably meant, and the
	// stand is not cleared.
	stdn := s.post(e2eFlop(830002, "STND", 93003, "<STDN>215</STDN>"))
	m := s.await(stdn, "DEAD/MALFORMED", state("DEAD", "MALFORMED"))
	if m.LastError == nil || !strings.Contains(*m.LastError, "STDN") || !strings.Contains(*m.LastError, "STND") {
		t.Fatalf("misspelt element: %+v", m)
	}
	if got := s.flight(93003)["STND"]; got != "203" {
		t.Fatalf("stand after a misspelt STND: %v, want 203 kept", got)
	}

	// A snapshot with one invalid FLTR: the two valid ones applied, the invalid flight kept as
	// stored, and the message's warnings name it.
	bBad := strings.Replace(e2eFltr(93002, "CA1302", "D", at(12, 30), ""), "<MVIN>D</MVIN>", "<MVIN>X</MVIN>", 1)
	aNew := e2eFltr(93001, "CA1301", "A", at(11, 5), route)
	cNew := e2eFltr(93003, "CA1303", "A", at(13, 5), "")
	snap := s.post(e2eSchd(830003, aNew, bBad, cNew))
	m = s.await(snap, "SUCCEEDED", state("SUCCEEDED", ""))
	if !strings.Contains(strings.Join(m.Warnings, "\n"), "93002") {
		t.Fatalf("snapshot warnings do not name the invalid FLTR: %+v", m)
	}
	if got := s.flight(93001)["SODT"]; got != at(11, 5).UTC().Format(time.RFC3339) {
		t.Fatalf("valid FLTR not applied: SODT %v", got)
	}
	after := s.flight(93002)
	if fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("the invalid FLTR's stored flight changed:\nbefore %v\nafter  %v", before, after)
	}

	// A schedule update whose FLTR has no ERUT keeps the stored route (FORMAT §3.5 step 4).
	upd := s.post(e2eSchdSTYP(830004, "ADFT", e2eFltr(93001, "CA1301", "A", at(11, 10), "")))
	s.await(upd, "SUCCEEDED", state("SUCCEEDED", ""))
	f := s.flight(93001)
	if f["SODT"] != at(11, 10).UTC().Format(time.RFC3339) {
		t.Fatalf("update not applied: %v", f["SODT"])
	}
	if r, _ := json.Marshal(f["ERUT"]); !strings.Contains(string(r), "PEK") || !strings.Contains(string(r), "SHA") {
		t.Fatalf("route cleared by an update without ERUT: %s", r)
	}
}
