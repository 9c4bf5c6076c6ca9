package main_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

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
	resp, err := http.Get(s.url + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("server down after a handler panic: %v", err)
	}
	resp.Body.Close()
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
	s.postJSON("/api/v1/jobs", `{"kind":"ARCHIVE"}`)
	deadline := time.Now().Add(15 * time.Second)
	for {
		var jobs struct {
			Jobs []struct {
				State  string  `json:"state"`
				Result *string `json:"result"`
			} `json:"jobs"`
		}
		s.getJSON("/api/v1/jobs", &jobs)
		if len(jobs.Jobs) > 0 && jobs.Jobs[0].State == "DONE" {
			if r := jobs.Jobs[0].Result; r == nil || !strings.HasPrefix(*r, "archived 1 messages;") {
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
	s.postJSON("/api/v1/replay", fmt.Sprintf(`{"ids":[%d,%d]}`, orphan, orphan2))
	s.await(orphan, "SUCCEEDED", state("SUCCEEDED", ""))
	s.await(orphan2, "SUCCEEDED", state("SUCCEEDED", ""))
}

// postJSON posts body to path and fails the test unless it is answered 2xx.
func (s *server) postJSON(path, body string) map[string]any {
	s.t.Helper()
	resp, err := http.Post(s.url+path, "application/json", strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	if resp.StatusCode/100 != 2 {
		s.t.Fatalf("POST %s: %d %v", path, resp.StatusCode, out)
	}
	return out
}
