package pump_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"msgx/internal/pipeline"
	"msgx/internal/store"
	"msgx/internal/store/storetest"
)

// eventsOf returns the messages of the MSG_EVENT rows in EVENT_ID order, as indexes of ids.
func eventsOf(t *testing.T, db *store.DB, ids []int64) string {
	t.Helper()
	rows, err := db.SQL.Query(`SELECT CMINMSGS_ID FROM MSG_EVENT ORDER BY EVENT_ID`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		for i, x := range ids {
			if x == id && (len(out) == 0 || out[len(out)-1] != fmt.Sprint(i)) {
				out = append(out, fmt.Sprint(i))
			}
		}
	}
	return strings.Join(out, " ")
}

// flightVersion returns the stored VERSION of flight flid.
func flightVersion(t *testing.T, db *store.DB, flid int64) int64 {
	t.Helper()
	var v int64
	if err := db.SQL.QueryRow(`SELECT VERSION FROM FLIGHT_STATE WHERE FLID = ?`, flid).Scan(&v); err != nil {
		t.Fatalf("flight %d: %v", flid, err)
	}
	return v
}

// A message failing in the middle of the messages whose writes go in one round trip (MySQL;
// on SQLite each goes alone): the ones before it commit with their flight changes and
// events, it is FAILED alone (INFRA, with backoff: it blocks what is behind it), the ones
// after it are written by none of the round trips: they wait, and once the database takes the
// failing one, everything is applied exactly once, in order, each FLOP over the one before.
func TestAFailureInTheMiddleOfOneRoundTrip(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e, fs := batchEnv(t, db, defaultPolicy, nil, true, nil)
		e.post(schd("1", "DNLD", flightRec(5001, "CA1501", "01DEC261300")))
		e.drain()
		v0 := flightVersion(t, db, 5001)
		if db.Dialect == store.MySQL {
			storetest.Exec(t, db, `CREATE TRIGGER REFUSE_BAD BEFORE INSERT ON REF_DATA FOR EACH ROW BEGIN
				IF NEW.REF_KEY = 'BAD' THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'refused by a test trigger'; END IF; END`)
		} else {
			storetest.Exec(t, db, `CREATE TRIGGER REFUSE_BAD BEFORE INSERT ON REF_DATA WHEN NEW.REF_KEY = 'BAD'
				BEGIN SELECT RAISE(ABORT, 'refused by a test trigger'); END`)
		}
		ids := e.post(
			flop("2", "STND", `<FLOP><FLID>5001</FLID><FFID>X</FFID><STND>101</STND></FLOP>`),
			refMsg("STTS", "ADD", "3", stts("A", "a"), 1),
			refMsg("STTS", "ADD", "4", stts("BAD", "bad"), 1),
			flop("5", "STND", `<FLOP><FLID>5001</FLID><FFID>X</FFID><STND>102</STND></FLOP>`),
			refMsg("STTS", "ADD", "6", stts("C", "c"), 1),
		)
		e.step()
		e.want(ids[0], pipeline.Succeeded, "")
		e.want(ids[1], pipeline.Succeeded, "")
		m := e.want(ids[2], pipeline.Failed, pipeline.Infra)
		if !strings.Contains(*m.LastError, "refused by a test trigger") || m.Attempts != 1 {
			t.Fatalf("the failing message: attempts %d, %q", m.Attempts, *m.LastError)
		}
		e.want(ids[3], pipeline.Pending, "")
		e.want(ids[4], pipeline.Pending, "")
		if r := record(t, fs, 5001); fmt.Sprint(r["STND"]) != "101" || flightVersion(t, db, 5001) != v0+1 {
			t.Fatalf("flight 5001 after the first FLOP only: STND %v version %d (was %d)", r["STND"], flightVersion(t, db, 5001), v0)
		}
		if got := eventsOf(t, db, ids); got != "0" { // reference adds make none here
			t.Fatalf("events of messages %q, want the first FLOP's", got)
		}
		storetest.Exec(t, db, `DROP TRIGGER REFUSE_BAD`)
		e.clock.Add(time.Second)
		e.drain()
		for _, id := range ids {
			e.want(id, pipeline.Succeeded, "")
		}
		if r := record(t, fs, 5001); fmt.Sprint(r["STND"]) != "102" || flightVersion(t, db, 5001) != v0+2 {
			t.Fatalf("flight 5001 after both FLOPs: STND %v version %d (was %d)", r["STND"], flightVersion(t, db, 5001), v0)
		}
		if got := eventsOf(t, db, ids); got != "0 3" {
			t.Fatalf("events of messages %q, want one run of each FLOP's in order", got)
		}
	})
}

// A message sent again whose first copy committed in an earlier batch is SKIPPED as its
// duplicate in the middle of a batch, and the batch goes on: the messages around it are
// applied in the same step.
func TestADuplicateOfAnEarlierBatchInTheMiddle(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e, _ := batchEnv(t, db, defaultPolicy, nil, true, nil)
		a := refMsg("STTS", "ADD", "7", stts("A", "a"), 1)
		first := e.post(a)
		e.drain()
		ids := e.post(refMsg("STTS", "ADD", "8", stts("B", "b"), 1), a, refMsg("STTS", "ADD", "9", stts("C", "c"), 1))
		e.step()
		e.want(ids[0], pipeline.Succeeded, "")
		dup := e.want(ids[1], pipeline.Skipped, "")
		if *dup.LastError != fmt.Sprintf("duplicate-of:%d", first[0]) {
			t.Fatalf("duplicate: %q", *dup.LastError)
		}
		e.want(ids[2], pipeline.Succeeded, "")
	})
}

// The batch's flights are read ahead, and each decision sees the ones before it: two FLOPs
// of one flight (the second keeps the first's change, and its write is guarded by the
// version the first left), and a flight created by a schedule message earlier in the same
// batch then changed by a FLOP (not an ORPHAN). All of it is one batch.
func TestFlopsInOneBatchSeeTheFlightsBeforeThem(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e, fs := batchEnv(t, db, defaultPolicy, nil, true, nil)
		e.post(schd("1", "DNLD", flightRec(6001, "CA1601", "01DEC261300"), flightRec(6002, "CA1602", "01DEC261400")))
		e.drain()
		v1, v2 := flightVersion(t, db, 6001), flightVersion(t, db, 6002)
		ids := e.post(
			flop("2", "CTOT", `<FLOP><FLID>6001</FLID><FFID>X</FFID><CTOT>01DEC261310</CTOT></FLOP>`),
			flop("3", "STND", `<FLOP><FLID>6002</FLID><FFID>Y</FFID><STND>207</STND></FLOP>`),
			flop("4", "STND", `<FLOP><FLID>6001</FLID><FFID>X</FFID><STND>118</STND></FLOP>`),
			schd("5", "ADFT", flightRec(6003, "CA1603", "01DEC261500")),
			flop("6", "STND", `<FLOP><FLID>6003</FLID><FFID>Z</FFID><STND>330</STND></FLOP>`),
			flop("7", "STND", `<FLOP><FLID>6001</FLID><FFID>X</FFID><STND>119</STND></FLOP>`),
		)
		e.step()
		for _, id := range ids {
			e.want(id, pipeline.Succeeded, "")
		}
		r1 := record(t, fs, 6001)
		if r1["CTOT"] == nil || fmt.Sprint(r1["STND"]) != "119" || flightVersion(t, db, 6001) != v1+3 {
			t.Fatalf("flight 6001 after three FLOPs in one batch: CTOT %v STND %v version %d (was %d)", r1["CTOT"], r1["STND"], flightVersion(t, db, 6001), v1)
		}
		if r2 := record(t, fs, 6002); fmt.Sprint(r2["STND"]) != "207" || flightVersion(t, db, 6002) != v2+1 {
			t.Fatalf("flight 6002: STND %v version %d (was %d)", r2["STND"], flightVersion(t, db, 6002), v2)
		}
		if r3 := record(t, fs, 6003); fmt.Sprint(r3["STND"]) != "330" || flightVersion(t, db, 6003) != 2 {
			t.Fatalf("flight 6003 created then changed in one batch: STND %v version %d", r3["STND"], flightVersion(t, db, 6003))
		}
		if got := eventsOf(t, db, ids); got != "0 1 2 3 4 5" {
			t.Fatalf("events of messages %q", got)
		}
		m, err := db.Operations.GetMessage(context.Background(), ids[4])
		if err != nil || strings.Contains(m.Note, "ORPHAN") {
			t.Fatalf("the FLOP of the flight created in the batch: %+v %v", m, err)
		}
	})
}
