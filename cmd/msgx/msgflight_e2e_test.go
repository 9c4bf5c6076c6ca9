package main_test

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"
)

// An operator looks for a flight's messages: `msgx messages --flid` lists the FLOP that was
// parked as an ORPHAN (the store does not have the flight: it changed nothing and emitted no
// event) beside the ones that were applied, and not the messages of other flights.
func TestMessagesByFlightListAParkedOrphan(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db dbEnv) {
		s := db.start(t, "MSGX_PIPELINE_POLL_INTERVAL=50ms")
		day := tomorrow(t)
		snap := s.post(e2eSchd(830001, e2eFltr(93001, "CA1401", "D", day.Add(9*time.Hour), "")))
		orphan := s.post(e2eFlop(830002, "STND", 93999, "<STND>118</STND>"))
		stnd := s.post(e2eFlop(830003, "STND", 93001, "<STND>231</STND>"))
		s.await(orphan, "parked ORPHAN", state("DEAD", "ORPHAN"))
		s.await(stnd, "SUCCEEDED", state("SUCCEEDED", ""))
		out := s.mustCLI([]string{fmt.Sprint(orphan), "DEAD", "ORPHAN"}, "messages", "--flid", "93999")
		for _, other := range []int64{snap, stnd} {
			if strings.Contains(out, fmt.Sprintf("%d ", other)) {
				t.Errorf("messages --flid 93999 lists message %d of another flight:\n%s", other, out)
			}
		}
		found, err := s.api().Messages(t.Context(), url.Values{"flid": {"93999"}})
		if err != nil {
			t.Fatal(err)
		}
		if len(found.Messages) != 1 || found.Messages[0].ID != orphan || found.Messages[0].State != "DEAD" {
			t.Fatalf("GET /api/v1/messages?flid=93999: %+v, want the parked ORPHAN %d", found.Messages, orphan)
		}
		s.mustCLI([]string{fmt.Sprint(snap), fmt.Sprint(stnd)}, "messages", "--flid", "93001")
	})
}
