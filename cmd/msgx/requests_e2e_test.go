package main_test

// End-to-end tests of the data requests to the AODB (docs/sis-format.md §4.3) and of shadow mode: the
// real binary over HTTP, on SQLite and on MariaDB. The test plays the legacy gateway: it reads
// COUTMSGS, sets COUTMSGS_DATE_SENT, and inserts CMINMSGS rows.

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"msgx/client"
	"msgx/internal/store"
)

// postRaw posts JSON body to path and returns the status and the answer as sent: the tests
// of bad input, of 201 Created and of the legacy /view endpoint read the status itself.
func (s *server) postRaw(path, body string) (int, []byte) {
	s.t.Helper()
	resp, err := http.Post(s.url+path, "application/json", strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// dataRequest is a request as GET /api/v1/requests/{id} answers it.
type dataRequest = client.Request

func (s *server) dataRequest(id int64) dataRequest {
	s.t.Helper()
	r, err := s.api().DataRequest(context.Background(), id)
	if err != nil {
		s.t.Fatalf("GET request %d: %v", id, err)
	}
	return r
}

// awaitRequest polls request id until cond holds.
func (s *server) awaitRequest(id int64, what string, cond func(dataRequest) bool) dataRequest {
	s.t.Helper()
	var r dataRequest
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if r = s.dataRequest(id); cond(r) {
			return r
		}
	}
	s.t.Fatalf("request %d never became %s; last %+v\n%s", id, what, r, s.logs)
	return r
}

// outbound reads COUTMSGS row id as the gateway does.
func outbound(t *testing.T, db *store.DB, id int64) *store.Outbound {
	t.Helper()
	o, err := db.RequestTracker.GetOutbound(context.Background(), id)
	if err != nil || o == nil {
		t.Fatalf("COUTMSGS %d: %v %v", id, o, err)
	}
	return o
}

func airlResp(seqn string) string {
	return fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8"?>
<MSG><META><SNDR>AODB</SNDR><SEQN>%s</SEQN><DTTM>20261203090000</DTTM><TYPE>AIRL</TYPE><STYP>RESP</STYP></META>
<RECS>1</RECS>
<AIRL><ITOP>CA</ITOP><ICOP>CCA</ICOP><ONAM>AIR CHINA</ONAM><ONMC>中国国际航空</ONMC><CTRY>CN</CTRY><DORI>I</DORI></AIRL>
</MSG>`, seqn)
}

func schdResp(seqn int, fltrs ...string) string {
	return strings.Replace(e2eSchd(seqn, fltrs...), "<STYP>DNLD</STYP>", "<STYP>RESP</STYP>", 1)
}

// TestDataRequestsEndToEnd: a reference request through the API and a schedule request
// through the legacy admin route are written into COUTMSGS; the gateway sends them; the RESPs
// posted to the inbox turn them DONE. A request the gateway has not sent waits for it, however
// long, shown with its age; once sent and not answered it is sent again and EXPIRES.
func TestDataRequestsEndToEnd(t *testing.T) {
	t.Parallel()
	eachDB(t, testDataRequests)
}

func testDataRequests(t *testing.T, db dbEnv) {
	s := db.start(t, "MSGX_PIPELINE_POLL_INTERVAL=50ms")
	for _, c := range []struct{ path, body, want string }{
		{"/api/v1/requests", `{"type":"RQRD","ref_type":"XXXX"}`, "ref_type"},
		{"/api/v1/requests", `{"type":"RQFD","from":"03DEC26"}`, "to: missing"},
		{"/api/v1/requests", `{"type":"RQFD","from":"someday","to":"03DEC26"}`, "from"},
		{"/view/admin/data-request", `{"RQRD":"FLOP"}`, "not a reference TYPE"},
		{"/view/admin/data-request", `{"RQFD":"x","STDB":"03DEC26","STDE":"04DEC26"}`, "RQFD must be empty"},
		{"/view/admin/data-request", `{"RQFD":"","STDB":"03DEC26"}`, "to: missing"},
		{"/view/admin/data-request", `{}`, "neither RQRD nor RQFD"},
	} {
		code, body := s.postRaw(c.path, c.body)
		if code != http.StatusBadRequest || !strings.Contains(string(body), c.want) {
			t.Fatalf("POST %s %s: %d %s, want 400 naming %q", c.path, c.body, code, body, c.want)
		}
	}

	code, body := s.postRaw("/api/v1/requests", `{"type":"RQRD","ref_type":"AIRL"}`)
	var ref dataRequest
	if code != http.StatusCreated || json.Unmarshal(body, &ref) != nil || ref.State != "REGISTERED" || ref.SEQN != "000001" {
		t.Fatalf("reference request: %d %s", code, body)
	}
	day := tomorrow(t)
	from, to := sisTime(day)[:7], sisTime(day.Add(24 * time.Hour))[:7]
	code, body = s.postRaw("/view/admin/data-request", fmt.Sprintf(`{"RQFD":"","STDB":"%s","STDE":"%s"}`, from, to))
	var legacyAnswer struct {
		Success   bool  `json:"success"`
		RequestID int64 `json:"request_id"`
	}
	if code != http.StatusOK || json.Unmarshal(body, &legacyAnswer) != nil || !legacyAnswer.Success {
		t.Fatalf("legacy schedule request: %d %s", code, body)
	}
	sched := s.dataRequest(legacyAnswer.RequestID)
	code, body = s.postRaw("/view/admin/data-request", `{"RQRD":"CITY"}`)
	if code != http.StatusOK || json.Unmarshal(body, &legacyAnswer) != nil {
		t.Fatalf("legacy reference request: %d %s", code, body)
	}
	unanswered := s.dataRequest(legacyAnswer.RequestID)

	sqlDB := db.open(t)
	o := outbound(t, sqlDB, ref.CoutmsgsID)
	for _, want := range []string{"<SNDR>VIEW</SNDR><SEQN>000001</SEQN><DTTM>", "<TYPE>RQRD</TYPE><STYP>AIRL</STYP>", "<RQRD><RTYP>AIRL</RTYP></RQRD>"} {
		if o.Routing != "VIEWRQRD" || !strings.Contains(o.XML, want) {
			t.Fatalf("COUTMSGS row of the reference request (routing %s) lacks %s:\n%s", o.Routing, want, o.XML)
		}
	}
	o = outbound(t, sqlDB, sched.CoutmsgsID)
	for _, want := range []string{"<SEQN>000002</SEQN>", "<TYPE>RQFD</TYPE><STYP>NONE</STYP>", "<RQFD><STDB>" + from + "</STDB><STDE>" + to + "</STDE></RQFD>"} {
		if o.Routing != "VIEWRQFD" || !strings.Contains(o.XML, want) {
			t.Fatalf("COUTMSGS row of the schedule request (routing %s) lacks %s:\n%s", o.Routing, want, o.XML)
		}
	}

	// The gateway sends the three rows.
	if _, err := sqlDB.SQL.Exec(`UPDATE COUTMSGS SET COUTMSGS_DATE_SENT = ? WHERE COUTMSGS_DATE_SENT IS NULL`, legacyLocal(t, time.Now())); err != nil {
		t.Fatal(err)
	}
	for _, id := range []int64{ref.ID, sched.ID, unanswered.ID} {
		s.awaitRequest(id, "SENT", func(r dataRequest) bool { return r.State == "SENT" })
	}

	// The AODB answers two of them: the reference RESP echoes the request's SEQN, the
	// schedule RESP does not.
	airl := s.post(airlResp(ref.SEQN))
	schd := s.post(schdResp(1243, e2eFltr(92001, "CA1301", "D", day.Add(10*time.Hour), "")))
	for _, c := range []struct {
		msg int64
		req dataRequest
	}{{airl, ref}, {schd, sched}} {
		s.await(c.msg, "SUCCEEDED", state("SUCCEEDED", ""))
		got := s.awaitRequest(c.req.ID, "DONE", func(r dataRequest) bool { return r.State == "DONE" })
		if got.AnswerID == nil || *got.AnswerID != c.msg {
			t.Fatalf("request %d answered by %v, want message %d", c.req.ID, got.AnswerID, c.msg)
		}
		if m := s.message(c.msg); m.AnsweredRequest == nil || *m.AnsweredRequest != c.req.ID {
			t.Fatalf("message %d names request %v, want %d", c.msg, m.AnsweredRequest, c.req.ID)
		}
	}
	if r := s.dataRequest(unanswered.ID); r.State != "SENT" {
		t.Fatalf("the unanswered CITY request: %+v", r)
	}

	// A short timeout: a request the gateway does not send is not sent again, however long it
	// waits, and is shown waiting; once the gateway sends it and nobody answers, it is sent
	// again once, then EXPIRES. The SEQN counter survived the restart.
	s.stop()
	s = db.start(t, "MSGX_PIPELINE_POLL_INTERVAL=50ms", "MSGX_REQUESTS_TIMEOUT=300ms", "MSGX_REQUESTS_MAX_RESENDS=1")
	code, body = s.postRaw("/api/v1/requests", `{"type":"RQRD","ref_type":"ABDG"}`)
	var lost dataRequest
	if code != http.StatusCreated || json.Unmarshal(body, &lost) != nil || lost.SEQN != "000004" {
		t.Fatalf("request after the restart: %d %s, want SEQN 000004", code, body)
	}
	// A negative check over a real timeout: the server's timer runs in another process, so
	// the test lets six of its timeouts pass and then looks that nothing was re-sent.
	time.Sleep(2 * time.Second)
	if r := s.dataRequest(lost.ID); r.State != "REGISTERED" || r.Resends != 0 || r.CoutmsgsID != lost.CoutmsgsID {
		t.Fatalf("a request the gateway has not sent, after 2 s: %+v, want REGISTERED and never re-sent", r)
	}
	if n := count(t, sqlDB, `SELECT COUNT(*) FROM COUTMSGS`); n != 4 {
		t.Fatalf("%d COUTMSGS rows, want 4: nothing queued behind the unsent one", n)
	}
	out, err := exec.Command(binary, "requests", "--server", s.url, "--state", "REGISTERED").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "ABDG") || !strings.Contains(string(out), "waiting for gateway ") {
		t.Fatalf("msgx requests --state REGISTERED: %v\n%s", err, out)
	}
	m := s.metrics()
	if n, age := metricValue(m, "msgx_requests_waiting_for_gateway"), metricValue(m, "msgx_requests_waiting_for_gateway_oldest_age_seconds"); n != 1 || age < 2 {
		t.Fatalf("/metrics: %v waiting for the gateway, the oldest for %v s; want 1 for 2 s or more:\n%s", n, age, grepLines(m, "msgx_requests_"))
	}
	if _, err := sqlDB.SQL.Exec(`UPDATE COUTMSGS SET COUTMSGS_DATE_SENT = ? WHERE COUTMSGS_ID = ?`, legacyLocal(t, time.Now()), lost.CoutmsgsID); err != nil {
		t.Fatal(err)
	}
	resent := s.awaitRequest(lost.ID, "re-sent", func(r dataRequest) bool { return r.Resends == 1 })
	if resent.CoutmsgsID == lost.CoutmsgsID || resent.SEQN == lost.SEQN {
		t.Fatalf("the re-send reused COUTMSGS row %d / SEQN %s", lost.CoutmsgsID, lost.SEQN)
	}
	if o := outbound(t, sqlDB, resent.CoutmsgsID); o.Routing != "VIEWRQRD" || !strings.Contains(o.XML, "<RTYP>ABDG</RTYP>") {
		t.Fatalf("the re-send's COUTMSGS row: %+v", o)
	}
	if _, err := sqlDB.SQL.Exec(`UPDATE COUTMSGS SET COUTMSGS_DATE_SENT = ? WHERE COUTMSGS_ID = ?`, legacyLocal(t, time.Now()), resent.CoutmsgsID); err != nil {
		t.Fatal(err)
	}
	s.awaitRequest(lost.ID, "EXPIRED", func(r dataRequest) bool { return r.State == "EXPIRED" && r.Resends == 1 })

	list, err := s.api().DataRequests(t.Context(), url.Values{"order": {"asc"}})
	if err != nil {
		t.Fatal(err)
	}
	var states []string
	for _, r := range list.Requests {
		states = append(states, r.STYP+":"+r.State)
	}
	if strings.Join(states, " ") != "AIRL:DONE NONE:DONE CITY:SENT ABDG:EXPIRED" {
		t.Fatalf("GET /api/v1/requests: %v", states)
	}

	// The command line.
	out, err = exec.Command(binary, "request", "--server", s.url, "ref", "DLYL").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "RQRD DLYL queued in COUTMSGS row") || !strings.Contains(string(out), "SEQN 000006") {
		t.Fatalf("msgx request ref DLYL: %v\n%s", err, out)
	}
	out, err = exec.Command(binary, "request", "schedule", "--server", s.url, "--from", "2026-12-03").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "to: missing") {
		t.Fatalf("msgx request schedule without --to: %v\n%s", err, out)
	}
	out, err = exec.Command(binary, "message", "--server", s.url, fmt.Sprint(airl)).CombinedOutput()
	if err != nil || !strings.Contains(string(out), fmt.Sprintf("answered:   data request %d", ref.ID)) {
		t.Fatalf("msgx message %d: %v\n%s", airl, err, out)
	}
	out, err = exec.Command(binary, "requests", "--server", s.url).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "EXPIRED") || !strings.Contains(string(out), fmt.Sprintf("message %d", airl)) {
		t.Fatalf("msgx requests: %v\n%s", err, out)
	}
}

// legacyChecksum digests every row and column of the legacy tables, read as the legacy reads
// them.
func legacyChecksum(t *testing.T, db *sql.DB, tables ...string) string {
	t.Helper()
	h := sha256.New()
	for _, table := range tables {
		rows, err := db.Query(`SELECT * FROM ` + table + ` ORDER BY 1`)
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rows.Columns()
		fmt.Fprintf(h, "%s %v\n", table, cols)
		for rows.Next() {
			vals := make([]sql.NullString, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(h, "%v\n", vals)
		}
		rows.Close()
	}
	return hex.EncodeToString(h.Sum(nil))
}

// TestShadowModeEndToEnd: msgx in shadow mode beside a legacy whose gateway fills CMINMSGS and
// whose poller marks every row processed at once processes every row after its watermark and
// changes no legacy row or column; it refuses the inbox and data requests, keeps its watermark
// over a restart, and will not start with a target on the legacy's channel.
func TestShadowModeEndToEnd(t *testing.T) {
	t.Parallel()
	eachDB(t, testShadowMode)
}

func testShadowMode(t *testing.T, db dbEnv) {
	legacy := createLegacy(t, db)
	// The legacy ran before the shadow: its rows are processed and stay below the watermark.
	old := legacy.gateway(t, legacyStatus("AODB", "801", "20261201080000", "SHO"), "2026-12-01 08:00:00", "2026-12-01 08:00:01")
	oldWaiting := legacy.gateway(t, legacyStatus("AODB", "802", "20261201080100", "SHW"), "2026-12-01 08:01:00", "")
	s := db.start(t, "MSGX_PIPELINE_POLL_INTERVAL=50ms", "MSGX_MODE=shadow")

	// The gateway inserts; the legacy poller takes each row within moments (some at once).
	// msgx may take a row at any moment after its insert, so what each row must still hold
	// is what the gateway and the poller wrote, known here, not read back.
	want := map[int64]legacyRow{}
	var rows []int64
	for i := range 6 {
		now := legacyLocal(t, time.Now())
		processed := ""
		if i%3 != 2 {
			processed = now
		}
		id := legacy.gateway(t, legacyStatus("AODB", fmt.Sprint(810+i), "20261201090000", fmt.Sprintf("SH%d", i)), now, processed)
		if processed == "" {
			processed = legacyLocal(t, time.Now())
			if _, err := legacy.db.Exec(`UPDATE CMINMSGS SET CMINMSGS_DATE_PROCESSED = ? WHERE CMINMSGS_ID = ?`, processed, id); err != nil {
				t.Fatal(err)
			}
		}
		rows = append(rows, id)
		want[id] = legacyRow{Received: now, Processed: processed}
	}
	tables := []string{"CMINMSGS"}
	for _, id := range rows {
		awaitSucceeded(t, s, id)
	}
	for _, id := range rows {
		if got := legacy.row(t, id); got != want[id] {
			t.Fatalf("shadow mode changed CMINMSGS row %d: %+v, want %+v", id, got, want[id])
		}
	}
	sum := legacyChecksum(t, legacy.db, tables...)
	notTaken(t, s, old, "a row below the watermark")
	notTaken(t, s, oldWaiting, "a row below the watermark the legacy had not taken")

	// Nothing legacy is written: not by the inbox, not by a data request.
	var refused *client.Error
	if _, err := s.api().RequestReference(t.Context(), "AIRL"); !errors.As(err, &refused) || refused.Status != http.StatusConflict || refused.Code != "shadow_mode" {
		t.Fatalf("a data request in shadow: %v, want 409 shadow_mode", err)
	}
	if _, err := s.send(legacyStatus("AODB", "899", "20261201090000", "SHX")); !errors.As(err, &refused) || refused.Status != http.StatusConflict || refused.Code != "shadow_mode" {
		t.Fatalf("the inbox in shadow: %v, want 409 shadow_mode", err)
	}
	var n int
	if err := legacy.db.QueryRow(`SELECT COUNT(*) FROM COUTMSGS`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d COUTMSGS rows (%v) in shadow", n, err)
	}
	if got := legacyChecksum(t, legacy.db, tables...); got != sum {
		t.Fatal("shadow mode changed a legacy CMINMSGS row or column after processing it")
	}
	var shadow struct {
		Mode    string `json:"mode"`
		AfterID int64  `json:"after_id"`
	}
	section(t, s.status(), "shadow", &shadow)
	if shadow.Mode != "shadow" || shadow.AfterID != oldWaiting {
		t.Fatalf("status of the shadow: %+v, want the watermark %d", shadow, oldWaiting)
	}
	// The effects are msgx's own: the reference records it applied.
	s.ref("STTS", "SH5")

	// A restart keeps the watermark; a row the gateway inserted meanwhile is processed.
	s.stop()
	during := legacy.gateway(t, legacyStatus("AODB", "820", "20261201091000", "SHR"), legacyLocal(t, time.Now()), legacyLocal(t, time.Now()))
	sum = legacyChecksum(t, legacy.db, tables...)
	s = db.start(t, "MSGX_PIPELINE_POLL_INTERVAL=50ms", "MSGX_MODE=shadow")
	awaitSucceeded(t, s, during)
	notTaken(t, s, oldWaiting, "a row below the watermark after a restart")
	if got := legacyChecksum(t, legacy.db, tables...); got != sum {
		t.Fatal("shadow mode changed a legacy CMINMSGS row or column after its restart")
	}
	s.stop()

	// shadow.start-after-id overrides the stored watermark: the rows from the first one on.
	s = db.start(t, "MSGX_PIPELINE_POLL_INTERVAL=50ms", "MSGX_MODE=shadow", fmt.Sprintf("MSGX_SHADOW_START_AFTER_ID=%d", old-1))
	awaitSucceeded(t, s, old)
	awaitSucceeded(t, s, oldWaiting)
	if got := legacyChecksum(t, legacy.db, tables...); got != sum {
		t.Fatal("shadow mode changed a legacy CMINMSGS row or column processing the rows below its stored watermark")
	}
	s.stop()

	// A shadow never delivers under the legacy's names.
	cfg := filepath.Join(t.TempDir(), "shadow.yaml")
	if err := os.WriteFile(cfg, []byte("mode: shadow\ntargets:\n  LEGACY_FLOP: {sink: redis, channel: FLOP}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := db.command(t, "serve", "--config", cfg)
	out, err := cmd.CombinedOutput()
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 4 || !strings.Contains(string(out), "targets.LEGACY_FLOP.channel") {
		t.Fatalf("shadow with a target on channel FLOP: %v (exit %v)\n%s", err, cmd.ProcessState, out)
	}
}

// count runs a COUNT query on db.
func count(t *testing.T, db *store.DB, q string) int {
	t.Helper()
	var n int
	if err := db.SQL.QueryRow(q).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// grepLines returns the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
