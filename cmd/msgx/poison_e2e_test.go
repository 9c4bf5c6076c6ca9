package main_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"msgx/client"
	"msgx/internal/store"
)

// refWithSender is an STTS ADD with the given sender and sequence number.
func refWithSender(sndr string, seqn int, code string) string {
	return fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8"?>
<MSG><META><SNDR>%s</SNDR><SEQN>%d</SEQN><DTTM>20261201091600</DTTM><TYPE>STTS</TYPE><STYP>ADD</STYP></META>
<RECS>1</RECS><STTS><STTC>%s</STTC><STTD>status %s</STTD><ABNS>N</ABNS></STTS></MSG>`, sndr, seqn, code, code)
}

// A 200-character sender used to make the identity longer than its column: the outcome write
// failed forever and every later message waited. Now both reach a final state at once.
func TestALongSenderDoesNotStopThePump(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db dbEnv) {
		s := db.start(t, "MSGX_PIPELINE_POLL_INTERVAL=50ms")
		long := s.post(refWithSender(strings.Repeat("L", 200), 1, "AAA"))
		normal := s.post(refWithSender("AODB", 2, "BBB"))
		m := s.await(long, "final", func(m message) bool { return m.State == "SUCCEEDED" || m.State == "DEAD" })
		if m.State != "SUCCEEDED" {
			t.Fatalf("the long-sender message: %+v", m)
		}
		s.await(normal, "SUCCEEDED", state("SUCCEEDED", ""))
	})
}

// A handler that panics fails its message with CODEC_ERROR (the panic text in last_error),
// parked at once; the server stays up, keeps taking messages and processes the next one.
func TestAPanickingHandlerFailsItsMessageAndTheServerStaysUp(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db dbEnv) { panickingHandler(t, db) })
}

func panickingHandler(t *testing.T, db dbEnv) {
	s := db.start(t, "MSGX_PIPELINE_POLL_INTERVAL=50ms", "MSGX_TEST_PANIC_TAG=STTS-ADD")
	id := s.post(refWithSender("AODB", 1, "PAN"))
	m := s.await(id, "DEAD/CODEC_ERROR", state("DEAD", "CODEC_ERROR"))
	if m.LastError == nil || !strings.Contains(*m.LastError, "panic while deciding STTS-ADD") {
		t.Fatalf("last error does not say it panicked: %+v", m)
	}
	if !strings.Contains(s.logs.String(), `"stack"`) {
		t.Fatalf("the panic's stack is not in the log")
	}
	c := s.api()
	code := answered(c)
	if _, err := c.Health(t.Context()); err != nil || code() != http.StatusOK {
		t.Fatalf("server down after a handler panic: %d %v", code(), err)
	}
	next := s.post(airline)
	if next <= id {
		t.Fatalf("inbox answered id %d", next)
	}
	s.await(next, "SUCCEEDED", state("SUCCEEDED", ""))
}

// A DEAD message stays in CMINMSGS through ARCHIVE and replays; one that an older msgx archived
// anyway is read back from CMINMSGS_HST, not turned into DEAD/MALFORMED.
func TestReplayAfterArchive(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db dbEnv) { replayAfterArchive(t, db) })
}

func replayAfterArchive(t *testing.T, dbe dbEnv) {
	day := tomorrow(t)
	s := dbe.start(t, "MSGX_PIPELINE_POLL_INTERVAL=50ms")

	orphan := s.post(e2eFlop(820001, "CTOT", 92001, "<CTOT>"+sisTime(day.Add(10*time.Hour+12*time.Minute))+"</CTOT>"))
	orphan2 := s.post(e2eFlop(820002, "CTOT", 92002, "<CTOT>"+sisTime(day.Add(11*time.Hour+12*time.Minute))+"</CTOT>"))
	done := s.post(airline)
	s.await(orphan, "DEAD/ORPHAN", state("DEAD", "ORPHAN"))
	s.await(orphan2, "DEAD/ORPHAN", state("DEAD", "ORPHAN"))
	s.await(done, "SUCCEEDED", state("SUCCEEDED", ""))

	// Make everything two days old, run ARCHIVE: only the SUCCEEDED message moves.
	db := dbe.open(t)
	old := store.T(time.Now().Add(-48 * time.Hour))
	if _, err := db.SQL.Exec(`UPDATE PROC_STATE SET PROCESSED_AT = ?`, old); err != nil {
		t.Fatal(err)
	}
	s.startJob("ARCHIVE")
	deadline := time.Now().Add(15 * time.Second)
	for {
		jobs := s.jobs()
		if len(jobs) > 0 && jobs[0].State == "DONE" {
			if r := jobs[0].Result; r == nil || !strings.HasPrefix(*r, "archived 1 messages;") {
				t.Fatalf("archive result %v, want 1 message (the SUCCEEDED one)", r)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("archive job not done: %+v", jobs)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// An older msgx archived DEAD rows too: move the second orphan by hand.
	for _, q := range []string{
		fmt.Sprintf(`INSERT INTO CMINMSGS_HST SELECT * FROM CMINMSGS WHERE CMINMSGS_ID = %d`, orphan2),
		fmt.Sprintf(`DELETE FROM CMINMSGS WHERE CMINMSGS_ID = %d`, orphan2),
	} {
		if _, err := db.SQL.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	// The flights arrive; both orphans are replayed and now apply.
	snap := s.post(e2eSchd(820003, e2eFltr(92001, "CA1301", "D", day.Add(10*time.Hour), ""), e2eFltr(92002, "CA1302", "D", day.Add(11*time.Hour), "")))
	s.await(snap, "SUCCEEDED", state("SUCCEEDED", ""))
	s.replay(orphan, orphan2)
	s.await(orphan, "SUCCEEDED", state("SUCCEEDED", ""))
	s.await(orphan2, "SUCCEEDED", state("SUCCEEDED", ""))
}

// startJob enqueues a job of kind and returns its id, failing the test when it is refused.
func (s *server) startJob(kind string) int64 {
	s.t.Helper()
	j, err := s.api().StartJob(context.Background(), kind)
	if err != nil {
		s.t.Fatalf("start a %s job: %v", kind, err)
	}
	return j.ID
}

// replay moves messages ids back to PENDING, failing the test unless the server answers 200.
func (s *server) replay(ids ...int64) client.ReplayAnswer {
	s.t.Helper()
	c := s.api()
	code := answered(c)
	res, err := c.Replay(context.Background(), nil, ids, false)
	if err != nil || code() != http.StatusOK {
		s.t.Fatalf("replay %v: %d %v", ids, code(), err)
	}
	return res
}

// checkConsistency compares the flights in Redis and in FLIGHT_STATE, failing the test when
// the server does not answer 200 with a report.
func (s *server) checkConsistency() client.ConsistencyReport {
	s.t.Helper()
	c := s.api()
	code := answered(c)
	rep, err := c.CheckConsistency(context.Background())
	if err != nil || code() != http.StatusOK {
		s.t.Fatalf("consistency check: %d %v", code(), err)
	}
	return rep
}

// noMismatch says whether rep's mismatches are the empty list the server writes when the two
// stores agree: [], which decodes to an empty slice, not null, which decodes to nil.
func noMismatch(rep client.ConsistencyReport) bool {
	return rep.Mismatches != nil && len(rep.Mismatches) == 0
}

// reported is rep's count and mismatches as the server wrote them ("2 []"), for a failure.
func reported(rep client.ConsistencyReport) string {
	b, err := json.Marshal(rep.Mismatches)
	if err != nil {
		return fmt.Sprintf("%d %v", rep.Checked, err)
	}
	return fmt.Sprintf("%d %s", rep.Checked, b)
}
