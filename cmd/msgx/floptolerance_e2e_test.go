package main_test

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestFlopToleranceEndToEnd drives the FLOP tolerance rules of docs/sis-format.md §6 through
// the binary: a record that holds another STYP's element but not its own, and a group entry
// with a misspelt required child, are DEAD/MALFORMED and change nothing; a message with one
// record for an unknown flight applies the other and names the orphan in its warnings, with
// events for the applied record only; one whose every record is an orphan is DEAD/ORPHAN.
func TestFlopToleranceEndToEnd(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db dbEnv) { flopTolerance(t, db) })
}

// TestFlopToleranceEndToEndPhaseA is the same with the flights in Redis (phase A).
func TestFlopToleranceEndToEndPhaseA(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db dbEnv) { flopTolerance(t, db, phaseAEnv(t)...) })
}

// e2eFlops is a FLOP message of several records, each <FLOP> body given whole.
func e2eFlops(seqn int, styp string, records ...string) string {
	return fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8"?>
<MSG><META><SNDR>AODB</SNDR><SEQN>%d</SEQN><DTTM>20260101000000</DTTM><TYPE>FLOP</TYPE><STYP>%s</STYP></META>
<FLOP>%s</FLOP></MSG>`, seqn, styp, strings.Join(records, "</FLOP>\n<FLOP>"))
}

func flopTolerance(t *testing.T, db dbEnv, env ...string) {
	day := tomorrow(t)
	at := func(h, m int) time.Time { return day.Add(time.Duration(h)*time.Hour + time.Duration(m)*time.Minute) }
	s := db.start(t, append([]string{"MSGX_PIPELINE_POLL_INTERVAL=50ms"}, env...)...)

	chocks := fmt.Sprintf(`<CHOT CSNO="1"><CHTM>%s</CHTM><CHID>ON</CHID><CHST>202</CHST></CHOT>`, sisTime(at(11, 5)))
	dnld := s.post(e2eSchd(820001,
		e2eFltr(92001, "CA1301", "D", at(10, 0), ""),
		e2eFltr(92002, "CA1302", "A", at(11, 0), chocks)))
	s.await(dnld, "snapshot SUCCEEDED", state("SUCCEEDED", ""))

	flight := s.flight
	dead := func(id int64, class string, parts ...string) {
		t.Helper()
		m := s.await(id, "DEAD/"+class, state("DEAD", class))
		for _, p := range parts {
			if m.LastError == nil || !strings.Contains(*m.LastError, p) {
				t.Errorf("message %d: last error %v does not say %q", id, m.LastError, p)
			}
		}
		if evs := s.events(fmt.Sprintf("msg_id=%d", id)); len(evs) != 0 {
			t.Errorf("message %d (DEAD/%s) committed %d events", id, class, len(evs))
		}
	}
	stand0, chocks0 := flight(92001)["STND"], fmt.Sprint(flight(92002)["CHOT"])

	// A STND record with a terminal and no stand would have cleared the stand.
	trml := s.post(e2eFlop(820002, "STND", 92001, "<TRML>T2</TRML>"))
	dead(trml, "MALFORMED", "FLOP STND record has <TRML> but no <STND>")
	if got := flight(92001)["STND"]; got != stand0 || stand0 != "201" {
		t.Errorf("stand after the refused STND record: %v, want the snapshot's %v (201)", got, stand0)
	}

	// A CHOT entry whose chocks time is misspelt would have stored the chocks without it.
	chtn := s.post(e2eFlop(820003, "CHOT", 92002, fmt.Sprintf(`<CHOT CSNO="1"><CHTN>%s</CHTN><CHID>OFF</CHID><CHST>202</CHST></CHOT>`, sisTime(at(11, 40)))))
	dead(chtn, "MALFORMED", "CHOT[1]: CHOT entry has <CHTN> but no <CHTM>, which would clear it (did you mean CHTM?)")
	if got := fmt.Sprint(flight(92002)["CHOT"]); got != chocks0 || !strings.Contains(chocks0, "ON") {
		t.Errorf("chocks after the refused CHOT: %s, want the snapshot's %s", got, chocks0)
	}

	// Two records, the second for a flight the store does not have: the first applies.
	partial := s.post(e2eFlops(820004, "STND",
		"<FLID>92001</FLID><FFID>X</FFID><STND>230</STND>",
		"<FLID>99901</FLID><FFID>CA-CA1399-D-X-D</FFID><STND>231</STND>"))
	m := s.await(partial, "SUCCEEDED", state("SUCCEEDED", ""))
	if len(m.Warnings) != 1 || !strings.Contains(m.Warnings[0], "FLOP[2] STND: flight FLID 99901 is not in the store") {
		t.Errorf("partial orphan: warnings %q, want the orphan record (FLID 99901, STND) named", m.Warnings)
	}
	if !strings.Contains(m.Note, "1 record for a flight not stored") {
		t.Errorf("partial orphan: note %q", m.Note)
	}
	if got := flight(92001)["STND"]; got != "230" {
		t.Errorf("stand of 92001 after the partial orphan: %v, want 230", got)
	}
	evs := s.events(fmt.Sprintf("msg_id=%d", partial))
	if len(evs) != 4 {
		t.Errorf("partial orphan committed %d events, want the four of flight 92001", len(evs))
	}
	for _, e := range evs {
		if e.FlightKey == nil || !strings.Contains(*e.FlightKey, "92001") {
			t.Errorf("partial orphan event %+v is not for flight 92001", e)
		}
	}

	// Every record an orphan: the message is parked ORPHAN, naming each.
	all := s.post(e2eFlops(820005, "STND",
		"<FLID>99902</FLID><FFID>X</FFID><STND>232</STND>",
		"<FLID>99903</FLID><FFID>X</FFID><STND>233</STND>"))
	dead(all, "ORPHAN", "FLID 99902", "FLID 99903")
}
