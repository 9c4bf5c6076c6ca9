package main_test

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestStrayElementEndToEnd drives the rule "no value lost by any stray element"
// (docs/sis-format.md §6.2) through the binary, on SQLite and MariaDB: a chocks-on entry that
// carries the stand under <STND>, another STYP's element, instead of <CHST> is DEAD/MALFORMED
// with a reason naming both, commits no event and leaves the flight's stand where chocked as
// it was; the documented clear, an empty <CHST/>, still clears it.
func TestStrayElementEndToEnd(t *testing.T) {
	t.Parallel()
	eachDB(t, strayElement)
}

func strayElement(t *testing.T, db dbEnv) {
	day := tomorrow(t)
	sibt := day.Add(11 * time.Hour)
	on := sisTime(sibt.Add(5 * time.Minute))
	s := db.start(t, "MSGX_PIPELINE_POLL_INTERVAL=50ms")

	dnld := s.post(e2eSchd(832001, e2eFltr(93201, "CA1321", "A", sibt,
		fmt.Sprintf(`<CHOT CSNO="1"><CHTM>%s</CHTM><CHID>ON</CHID><CHST>202</CHST></CHOT>`, on))))
	s.await(dnld, "snapshot SUCCEEDED", state("SUCCEEDED", ""))

	// chocks returns the flight's one CHOT entry as the API shows it.
	chocks := func() map[string]any {
		t.Helper()
		list, _ := s.flight(93201)["CHOT"].([]any)
		if len(list) != 1 {
			t.Fatalf("flight 93201 has CHOT %v, want one entry", s.flight(93201)["CHOT"])
		}
		entry, _ := list[0].(map[string]any)
		return entry
	}
	if got := chocks()["CHST"]; got != "202" {
		t.Fatalf("stand where chocked after the snapshot: %v, want 202", got)
	}

	stray := s.post(e2eFlop(832002, "CHOT", 93201,
		fmt.Sprintf(`<CHOT CSNO="1"><CHTM>%s</CHTM><CHID>ON</CHID><STND>214</STND></CHOT>`, on)))
	m := s.await(stray, "DEAD/MALFORMED", state("DEAD", "MALFORMED"))
	if want := "FLOP[1] FLID 93201 CHOT[1]: CHOT entry has <STND> but no <CHST>, which would clear it"; m.LastError == nil || !strings.Contains(*m.LastError, want) {
		t.Errorf("CHOT with STND for CHST: last error %v, want it to say %q", m.LastError, want)
	}
	if evs := s.events(fmt.Sprintf("msg_id=%d", stray)); len(evs) != 0 {
		t.Errorf("the refused CHOT committed %d events", len(evs))
	}
	if got := chocks()["CHST"]; got != "202" {
		t.Errorf("stand where chocked after the refused CHOT: %v, want 202 kept", got)
	}

	// The documented clear still clears, with no warning.
	clear := s.post(e2eFlop(832003, "CHOT", 93201,
		fmt.Sprintf(`<CHOT CSNO="1"><CHTM>%s</CHTM><CHID>ON</CHID><CHST/></CHOT>`, on)))
	m = s.await(clear, "SUCCEEDED", state("SUCCEEDED", ""))
	if len(m.Warnings) != 0 {
		t.Errorf("CHOT with an empty CHST: warnings %q, want none", m.Warnings)
	}
	if got, ok := chocks()["CHST"]; ok {
		t.Errorf("stand where chocked after <CHST/>: %v, want it cleared", got)
	}
}
