package main_test

// End-to-end tests of msgx on a legacy-shaped CMINMSGS (docs/sis-format.md §4.1) that exists before
// msgx first migrates the database: the real binary over HTTP, on the shared harness
// (harness_test.go), so on SQLite and on MariaDB.

import (
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"msgx/client"
	"msgx/internal/store/storetest"
)

// legacyTable is the legacy CMINMSGS of one test's database, seen the way the legacy gateway
// and poller see it: plain SQL, not msgx's API.
type legacyTable struct{ db *sql.DB }

// createLegacy creates CMINMSGS in db's database exactly as the legacy has it
// (storetest.LegacyCMINMSGSFor); call it before the first db.start, so that msgx migrates a
// database that already holds the legacy table. db.open does not migrate.
func createLegacy(t *testing.T, db dbEnv) legacyTable {
	t.Helper()
	sqlDB := db.open(t)
	storetest.Exec(t, sqlDB, storetest.LegacyCMINMSGSFor(sqlDB.Dialect, "CMINMSGS"))
	return legacyTable{sqlDB.SQL}
}

// gateway inserts a VALID row as the legacy gateway does and returns its id; processed is the
// legacy's CMINMSGS_DATE_PROCESSED ("" for NULL: the legacy has not taken the row).
func (l legacyTable) gateway(t *testing.T, raw, received, processed string) int64 {
	t.Helper()
	var p any
	if processed != "" {
		p = processed
	}
	res, err := l.db.Exec(`INSERT INTO CMINMSGS (CMINMSGS_CLOB_MSG, CMINMSGS_DATE_RECEIVED, CMINMSGS_DATE_PROCESSED, CMINMSGS_STATUS) VALUES (?, ?, ?, 'VALID')`, raw, received, p)
	if err != nil {
		t.Fatal(err)
	}
	id, _ := res.LastInsertId() // both drivers know it
	return id
}

// legacyRow is one CMINMSGS row's legacy columns as text ("" for NULL).
type legacyRow struct{ Received, Processed, Name, Seq, Sent, Subtype, Type string }

func (l legacyTable) row(t *testing.T, id int64) legacyRow {
	t.Helper()
	var c [7]sql.NullString
	err := l.db.QueryRow(`SELECT CAST(CMINMSGS_DATE_RECEIVED AS CHAR), CAST(CMINMSGS_DATE_PROCESSED AS CHAR), CMINMSGS_SUBSYSTEM_NAME,
		CAST(CMINMSGS_SUBSYSTEM_SEQUENCE AS CHAR), CAST(CMINMSGS_SUBSYSTEM_DATE_SENT AS CHAR), CMINMSGS_SUBSYSTEM_SUBTYPE, CMINMSGS_SUBSYSTEM_TYPE
		FROM CMINMSGS WHERE CMINMSGS_ID = ?`, id).Scan(&c[0], &c[1], &c[2], &c[3], &c[4], &c[5], &c[6])
	if err != nil {
		t.Fatalf("CMINMSGS %d: %v", id, err)
	}
	return legacyRow{c[0].String, c[1].String, c[2].String, c[3].String, c[4].String, c[5].String, c[6].String}
}

// legacyStatus is a flight-status reference message (STTS ADD) with the META values the
// back-fill copies into the legacy columns.
func legacyStatus(sndr, seqn, dttm, code string) string {
	return fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8"?>
<MSG>
  <META><SNDR>%s</SNDR><SEQN>%s</SEQN><DTTM>%s</DTTM><TYPE>STTS</TYPE><STYP>ADD</STYP></META>
  <RECS>1</RECS>
  <STTS><STTC>%s</STTC><STTD>status %s</STTD><STDC>旅客登机</STDC><ABNS>N</ABNS></STTS>
</MSG>`, sndr, seqn, dttm, code, code)
}

// legacyLocal is a time as the legacy datetime columns hold it by default: airport local
// time (sis.timezone), whole seconds.
func legacyLocal(t *testing.T, at time.Time) string {
	t.Helper()
	zone, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		t.Fatal(err)
	}
	return at.In(zone).Format(time.DateTime)
}

// messageStatus is the HTTP status GET /api/v1/messages/{id} answers: 404 while msgx has not
// taken CMINMSGS row id (a gateway row is adopted within a poll interval, or never).
func messageStatus(t *testing.T, s *server, id int64) int {
	t.Helper()
	_, err := s.api().Message(t.Context(), id)
	var answer *client.Error
	switch {
	case err == nil:
		return http.StatusOK
	case errors.As(err, &answer):
		return answer.Status
	}
	t.Fatal(err)
	return 0
}

// awaitSucceeded waits until msgx has taken row id and the message is final, and fails t
// unless it SUCCEEDED.
func awaitSucceeded(t *testing.T, s *server, id int64) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); messageStatus(t, s, id) == http.StatusNotFound; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("msgx never took CMINMSGS row %d\n%s", id, s.logs)
		}
	}
	m := s.await(id, "final", func(m message) bool { return m.State == "SUCCEEDED" || m.State == "SKIPPED" || m.State == "DEAD" })
	if m.State != "SUCCEEDED" {
		lastError := ""
		if m.LastError != nil {
			lastError = *m.LastError
		}
		t.Fatalf("message %d ended %s (%s): %s", id, m.State, m.Class(), lastError)
	}
}

// notTaken fails t unless msgx has no message id.
func notTaken(t *testing.T, s *server, id int64, what string) {
	t.Helper()
	if code := messageStatus(t, s, id); code != http.StatusNotFound {
		t.Fatalf("msgx took %s (GET message %d answers %d, want 404)", what, id, code)
	}
}

func TestLegacyE2EBackfillThatDoesNotFitStillSucceeds(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db dbEnv) {
		legacy := createLegacy(t, db)
		s := db.start(t, "MSGX_PIPELINE_POLL_INTERVAL=100ms")
		big := s.post(legacyStatus("AODB", "9000000", "20261201083000", "LGB"))
		cjk := s.post(legacyStatus("机场", "731", "20261201083100", "LGC"))
		awaitSucceeded(t, s, big)
		awaitSucceeded(t, s, cjk)
		if r := legacy.row(t, big); r.Seq != "" || r.Name != "AODB" || r.Type != "STTS" || r.Subtype != "ADD" || r.Sent != "2026-12-01 08:30:00" || r.Processed == "" {
			t.Fatalf("SEQN 9,000,000: back-fill %+v; want the sequence NULL (over MEDIUMINT) and the rest filled", r)
		}
		if r := legacy.row(t, cjk); r.Name != "机场" || r.Seq != "731" || r.Sent != "2026-12-01 08:31:00" {
			t.Fatalf("SNDR 机场: back-fill %+v; want the name whole", r)
		}
		warned := false
		for _, line := range strings.Split(s.logs.String(), "\n") {
			warned = warned || strings.Contains(line, `"level":"WARN"`) && strings.Contains(line, fmt.Sprintf(`"msg_id":%d,`, big)) &&
				strings.Contains(line, "CMINMSGS_SUBSYSTEM_SEQUENCE left NULL")
		}
		if !warned {
			t.Fatalf("no warning about the sequence of message %d\n%s", big, s.logs)
		}
		// The message's effects are there: the status it added (ref fails t on a 404).
		s.ref("STTS", "LGB")
	})
}

func TestLegacyE2ECutOverTakesOnlyRowsTheLegacyLeft(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db dbEnv) {
		legacy := createLegacy(t, db)
		t0 := time.Now()
		// Before msgx starts: the legacy took one row (and forwarded it), one waits.
		taken := legacy.gateway(t, legacyStatus("AODB", "741", "20261130090000", "LGT"), "2026-11-30 09:00:00", "2026-11-30 09:00:02")
		waiting := legacy.gateway(t, legacyStatus("AODB", "742", "20261201090000", "LGW"), "2026-12-01 09:00:00", "")
		s := db.start(t, "MSGX_PIPELINE_POLL_INTERVAL=100ms")
		awaitSucceeded(t, s, waiting)
		notTaken(t, s, taken, "the row the legacy had processed")
		if r := legacy.row(t, taken); r != (legacyRow{Received: "2026-11-30 09:00:00", Processed: "2026-11-30 09:00:02"}) {
			t.Fatalf("the legacy's row was changed: %+v", r)
		}
		r := legacy.row(t, waiting)
		if r.Name != "AODB" || r.Seq != "742" || r.Type != "STTS" || r.Subtype != "ADD" || r.Sent != "2026-12-01 09:00:00" || r.Received != "2026-12-01 09:00:00" {
			t.Fatalf("the adopted row's legacy columns: %+v", r)
		}
		if from, to := legacyLocal(t, t0.Add(-time.Second)), legacyLocal(t, time.Now().Add(time.Second)); r.Processed < from || r.Processed > to {
			t.Fatalf("CMINMSGS_DATE_PROCESSED %q is not the local time msgx took the row (between %s and %s)", r.Processed, from, to)
		}
		if !strings.Contains(s.logs.String(), `"count":1,"oldest_received_at":"2026-12-01T09:00:00+08:00"`) {
			t.Fatalf("the start did not log the one row to adopt and its date\n%s", s.logs)
		}
		// While msgx runs: a gateway row joins, and the inbox's own rows are marked taken at
		// once, in local time.
		later := legacy.gateway(t, legacyStatus("AODB", "743", "20261201091000", "LGL"), legacyLocal(t, time.Now()), "")
		own := s.post(legacyStatus("AODB", "744", "20261201091100", "LGO"))
		awaitSucceeded(t, s, later)
		awaitSucceeded(t, s, own)
		if r := legacy.row(t, own); r.Received == "" || r.Processed != r.Received || r.Received < legacyLocal(t, t0.Add(-time.Second)) {
			t.Fatalf("inbox row: received %q processed %q; want both the local time of its arrival", r.Received, r.Processed)
		}
	})
}

func TestLegacyE2EAdoptionBoundsAndZoneFromConfig(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db dbEnv) {
		legacy := createLegacy(t, db)
		stale := legacy.gateway(t, legacyStatus("AODB", "751", "20261101090000", "LGS"), "2026-11-01 09:00:00", "")
		fresh := legacy.gateway(t, legacyStatus("AODB", "752", "20261201090000", "LGF"), "2026-12-01 09:00:00", "")
		s := db.start(t, "MSGX_PIPELINE_POLL_INTERVAL=100ms", "MSGX_INBOX_ADOPT_SINCE=2026-11-15", "MSGX_LEGACY_TIMEZONE=Europe/Paris")
		awaitSucceeded(t, s, fresh)
		notTaken(t, s, stale, "the row received before inbox.adopt-since")
		// DTTM is airport time (sis.timezone, Shanghai); the legacy columns are in legacy.timezone.
		if r := legacy.row(t, fresh); r.Sent != "2026-12-01 02:00:00" {
			t.Fatalf("CMINMSGS_SUBSYSTEM_DATE_SENT %q, want DTTM 09:00 Shanghai as Paris time 02:00", r.Sent)
		}
		if !strings.Contains(s.logs.String(), `"count":1,"oldest_received_at":"2026-12-01T09:00:00+01:00"`) {
			t.Fatalf("the start did not log the one row within the bound, in legacy.timezone\n%s", s.logs)
		}

		bad := db.command(t, "serve")
		bad.Env = append(bad.Env, "MSGX_INBOX_ADOPT_SINCE=last tuesday")
		out, err := bad.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "inbox.adopt-since") {
			t.Fatalf("serve with a bad inbox.adopt-since: %v\n%s", err, out)
		}
	})
}
