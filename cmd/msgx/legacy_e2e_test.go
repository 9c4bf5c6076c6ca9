package main_test

// End-to-end tests of msgx on a legacy-shaped CMINMSGS (FORMAT.md §4.1), created before msgx
// migrates the database: the real binary over HTTP, on SQLite and on MariaDB. The helpers
// here are this file's own (lg prefix), so the shared harness can change independently.

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"msgx/internal/store/storetest"
)

var (
	lgBuildOnce sync.Once
	lgBinary    string
	lgBuildErr  error
)

// lgBuild builds the msgx binary once for this file's tests.
func lgBuild(t *testing.T) string {
	t.Helper()
	lgBuildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "msgx-legacy-e2e")
		if err != nil {
			lgBuildErr = err
			return
		}
		lgBinary = filepath.Join(dir, "msgx")
		if out, err := exec.Command("go", "build", "-o", lgBinary, ".").CombinedOutput(); err != nil {
			lgBuildErr = fmt.Errorf("building msgx: %v\n%s", err, out)
		}
	})
	if lgBuildErr != nil {
		t.Fatal(lgBuildErr)
	}
	return lgBinary
}

// lgLog collects a process's output while it runs.
type lgLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lgLog) Write(p []byte) (int, error) { l.mu.Lock(); defer l.mu.Unlock(); return l.b.Write(p) }
func (l *lgLog) String() string              { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

// lgServer is a running `msgx serve`.
type lgServer struct {
	t    *testing.T
	cmd  *exec.Cmd
	url  string
	logs *lgLog
	done chan error
}

func lgStart(t *testing.T, env ...string) *lgServer {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.Command(lgBuild(t), "serve")
	cmd.Env = append(os.Environ(), "MSGX_HTTP_ADDR="+addr, "MSGX_DATA_DIR="+t.TempDir(), "MSGX_PIPELINE_POLL_INTERVAL=100ms")
	cmd.Env = append(cmd.Env, env...)
	logs := &lgLog{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &lgServer{t: t, cmd: cmd, url: "http://" + addr, logs: logs, done: make(chan error, 1)}
	go func() { s.done <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.done:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
		}
		if t.Failed() {
			t.Logf("msgx serve log:\n%s", logs)
		}
	})
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		select {
		case err := <-s.done:
			s.done <- err
			t.Fatalf("msgx serve exited early: %v\n%s", err, logs)
		default:
		}
		if resp, err := http.Get(s.url + "/healthz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return s
			}
		}
	}
	t.Fatalf("msgx serve did not answer /healthz\n%s", logs)
	return nil
}

func (s *lgServer) post(body string) int64 {
	s.t.Helper()
	resp, err := http.Post(s.url+"/cminmsgs/send", "application/xml", strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var id int64
	if _, err := fmt.Sscanf(string(b), "%d", &id); resp.StatusCode != 200 || err != nil {
		s.t.Fatalf("POST /cminmsgs/send: %d %s", resp.StatusCode, b)
	}
	return id
}

// lgMessage is what GET /api/v1/messages/{id} answers.
type lgMessage struct {
	ID        int64   `json:"id"`
	State     string  `json:"state"`
	Class     *string `json:"error_class"`
	LastError *string `json:"last_error"`
}

// message returns message id, or nil on 404.
func (s *lgServer) message(id int64) *lgMessage {
	s.t.Helper()
	resp, err := http.Get(fmt.Sprintf("%s/api/v1/messages/%d", s.url, id))
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return nil
	}
	var m lgMessage
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil || resp.StatusCode != 200 {
		s.t.Fatalf("GET message %d: %d %v", id, resp.StatusCode, err)
	}
	return &m
}

// awaitFinal waits until message id is in a final state and returns it.
func (s *lgServer) awaitFinal(id int64) *lgMessage {
	s.t.Helper()
	var m *lgMessage
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		m = s.message(id)
		if m != nil && (m.State == "SUCCEEDED" || m.State == "SKIPPED" || m.State == "DEAD") {
			return m
		}
	}
	s.t.Fatalf("message %d did not finish within 20 s: %+v", id, m)
	return nil
}

// lgDB is a database with the legacy CMINMSGS, and the environment that points msgx at it.
type lgDB struct {
	sql *sql.DB
	env []string
}

// lgLegacyDB creates a database holding the legacy CMINMSGS exactly as FORMAT.md §4.1 gives
// it, before msgx has seen it.
func lgLegacyDB(t *testing.T, dialect string) *lgDB {
	t.Helper()
	id, engine := "CMINMSGS_ID BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY", " ENGINE=InnoDB DEFAULT CHARSET=utf8mb4"
	var dsn string
	var env []string
	switch dialect {
	case "sqlite":
		id, engine = "CMINMSGS_ID INTEGER PRIMARY KEY AUTOINCREMENT", ""
		dsn = filepath.Join(t.TempDir(), "legacy.db")
		env = []string{"MSGX_DATABASE_DRIVER=sqlite", "MSGX_DATABASE_DSN=" + dsn}
	case "mysql":
		dsn = storetest.MySQLDSN(t)
		env = []string{"MSGX_DATABASE_DRIVER=mysql", "MSGX_DATABASE_DSN=" + dsn, "MSGX_PIPELINE_AUTOSTART=true"}
	}
	db, err := sql.Open(dialect, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	_, err = db.Exec(`CREATE TABLE CMINMSGS (
  ` + id + `,
  CMINMSGS_CLOB_MSG MEDIUMTEXT NOT NULL,
  CMINMSGS_DATE_RECEIVED DATETIME NULL,
  CMINMSGS_DATE_PROCESSED DATETIME NULL,
  CMINMSGS_SUBSYSTEM_NAME VARCHAR(4) NULL,
  CMINMSGS_SUBSYSTEM_SEQUENCE MEDIUMINT NULL,
  CMINMSGS_SUBSYSTEM_DATE_SENT DATETIME NULL,
  CMINMSGS_SUBSYSTEM_SUBTYPE VARCHAR(4) NULL,
  CMINMSGS_SUBSYSTEM_TYPE VARCHAR(4) NULL,
  CMINMSGS_STATUS VARCHAR(20) NULL
)` + engine)
	if err != nil {
		t.Fatal(err)
	}
	return &lgDB{sql: db, env: env}
}

// gateway inserts a row as the legacy gateway does (processed "" = NULL) and returns its id.
func (d *lgDB) gateway(t *testing.T, raw, received, processed string) int64 {
	t.Helper()
	var p any
	if processed != "" {
		p = processed
	}
	res, err := d.sql.Exec(`INSERT INTO CMINMSGS (CMINMSGS_CLOB_MSG, CMINMSGS_DATE_RECEIVED, CMINMSGS_DATE_PROCESSED, CMINMSGS_STATUS) VALUES (?, ?, ?, 'VALID')`, raw, received, p)
	if err != nil {
		t.Fatal(err)
	}
	id, _ := res.LastInsertId()
	return id
}

// lgRow is one CMINMSGS row's legacy columns as text ("" for NULL).
type lgRow struct{ Received, Processed, Name, Seq, Sent, Subtype, Type string }

func (d *lgDB) row(t *testing.T, id int64) lgRow {
	t.Helper()
	var c [7]sql.NullString
	err := d.sql.QueryRow(`SELECT CAST(CMINMSGS_DATE_RECEIVED AS CHAR), CAST(CMINMSGS_DATE_PROCESSED AS CHAR), CMINMSGS_SUBSYSTEM_NAME,
		CAST(CMINMSGS_SUBSYSTEM_SEQUENCE AS CHAR), CAST(CMINMSGS_SUBSYSTEM_DATE_SENT AS CHAR), CMINMSGS_SUBSYSTEM_SUBTYPE, CMINMSGS_SUBSYSTEM_TYPE
		FROM CMINMSGS WHERE CMINMSGS_ID = ?`, id).Scan(&c[0], &c[1], &c[2], &c[3], &c[4], &c[5], &c[6])
	if err != nil {
		t.Fatalf("CMINMSGS %d: %v", id, err)
	}
	return lgRow{c[0].String, c[1].String, c[2].String, c[3].String, c[4].String, c[5].String, c[6].String}
}

// lgStatus is a flight-status reference message (STTS ADD) with its own META values.
func lgStatus(sndr, seqn, dttm, code, desc string) string {
	return fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8"?>
<MSG xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:noNamespaceSchemaLocation="unisysaodbsis.xsd">
  <META>
    <SNDR>%s</SNDR>
    <SEQN>%s</SEQN>
    <DTTM>%s</DTTM>
    <TYPE>STTS</TYPE>
    <STYP>ADD</STYP>
  </META>
  <RECS>1</RECS>
  <STTS>
    <STTC>%s</STTC>
    <STTD>%s</STTD>
    <STDC>旅客登机</STDC>
    <ABNS>N</ABNS>
  </STTS>
</MSG>`, sndr, seqn, dttm, code, desc)
}

// lgLocal is a time as the legacy datetime columns hold it: airport local time, seconds.
func lgLocal(t time.Time) string {
	loc, _ := time.LoadLocation("Asia/Shanghai")
	return t.In(loc).Format(time.DateTime)
}

func lgEach(t *testing.T, fn func(t *testing.T, dialect string)) {
	for _, d := range []string{"sqlite", "mysql"} {
		t.Run(d, func(t *testing.T) { fn(t, d) })
	}
}

func TestLegacyE2EBackfillThatDoesNotFitStillSucceeds(t *testing.T) {
	lgEach(t, func(t *testing.T, dialect string) {
		db := lgLegacyDB(t, dialect)
		s := lgStart(t, db.env...)
		big := s.post(lgStatus("AODB", "9000000", "20261201083000", "LGB", "BOARDING"))
		cjk := s.post(lgStatus("机场", "731", "20261201083100", "LGC", "BOARDING CJK"))
		for _, id := range []int64{big, cjk} {
			if m := s.awaitFinal(id); m.State != "SUCCEEDED" {
				t.Fatalf("message %d ended %s (%v): %v", id, m.State, m.Class, m.LastError)
			}
		}
		if r := db.row(t, big); r.Seq != "" || r.Name != "AODB" || r.Type != "STTS" || r.Subtype != "ADD" || r.Sent != "2026-12-01 08:30:00" || r.Processed == "" {
			t.Fatalf("SEQN 9,000,000: back-fill %+v; want the sequence NULL (over MEDIUMINT) and the rest filled", r)
		}
		if r := db.row(t, cjk); r.Name != "机场" || r.Seq != "731" || r.Sent != "2026-12-01 08:31:00" {
			t.Fatalf("SNDR 机场: back-fill %+v; want the name whole", r)
		}
		warned := false
		for _, line := range strings.Split(s.logs.String(), "\n") {
			warned = warned || strings.Contains(line, `"level":"WARN"`) && strings.Contains(line, fmt.Sprintf(`"msg_id":%d,`, big)) &&
				strings.Contains(line, "CMINMSGS_SUBSYSTEM_SEQUENCE left NULL")
		}
		if !warned {
			t.Fatalf("no warning about the sequence of message %d", big)
		}
		resp, err := http.Get(s.url + "/api/v1/ref/STTS/LGB")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("the effects of message %d are missing: GET /api/v1/ref/STTS/LGB answers %d", big, resp.StatusCode)
		}
	})
}

func TestLegacyE2ECutOverTakesOnlyRowsTheLegacyLeft(t *testing.T) {
	lgEach(t, func(t *testing.T, dialect string) {
		db := lgLegacyDB(t, dialect)
		t0 := time.Now()
		// Before msgx starts: the legacy took one row (and forwarded it), one waits.
		taken := db.gateway(t, lgStatus("AODB", "741", "20261130090000", "LGT", "TAKEN BY LEGACY"), "2026-11-30 09:00:00", "2026-11-30 09:00:02")
		waiting := db.gateway(t, lgStatus("AODB", "742", "20261201090000", "LGW", "WAITING"), "2026-12-01 09:00:00", "")
		s := lgStart(t, db.env...)
		if m := s.awaitFinal(waiting); m.State != "SUCCEEDED" {
			t.Fatalf("the waiting row ended %s: %v", m.State, m.LastError)
		}
		if m := s.message(taken); m != nil {
			t.Fatalf("msgx took the row the legacy had processed: %+v", m)
		}
		if r := db.row(t, taken); r != (lgRow{Received: "2026-11-30 09:00:00", Processed: "2026-11-30 09:00:02"}) {
			t.Fatalf("the legacy's row was changed: %+v", r)
		}
		r := db.row(t, waiting)
		if r.Name != "AODB" || r.Seq != "742" || r.Type != "STTS" || r.Subtype != "ADD" || r.Sent != "2026-12-01 09:00:00" || r.Received != "2026-12-01 09:00:00" {
			t.Fatalf("the adopted row's legacy columns: %+v", r)
		}
		if r.Processed < lgLocal(t0.Add(-time.Second)) || r.Processed > lgLocal(time.Now().Add(time.Second)) {
			t.Fatalf("CMINMSGS_DATE_PROCESSED %q is not the local time msgx took the row (between %s and %s)", r.Processed, lgLocal(t0), lgLocal(time.Now()))
		}
		if !strings.Contains(s.logs.String(), `"count":1,"oldest_received_at":"2026-12-01T09:00:00+08:00"`) {
			t.Fatalf("the start did not log the one row to adopt and its date")
		}
		// While msgx runs: a gateway row joins, and the inbox's own rows are marked taken at
		// once, in local time.
		later := db.gateway(t, lgStatus("AODB", "743", "20261201091000", "LGL", "LATER"), lgLocal(time.Now()), "")
		own := s.post(lgStatus("AODB", "744", "20261201091100", "LGO", "INBOX"))
		for _, id := range []int64{later, own} {
			if m := s.awaitFinal(id); m.State != "SUCCEEDED" {
				t.Fatalf("message %d ended %s: %v", id, m.State, m.LastError)
			}
		}
		if r := db.row(t, own); r.Received == "" || r.Processed != r.Received || r.Received < lgLocal(t0.Add(-time.Second)) {
			t.Fatalf("inbox row: received %q processed %q; want both the local time of its arrival", r.Received, r.Processed)
		}
	})
}

func TestLegacyE2EAdoptionBoundsAndZoneFromConfig(t *testing.T) {
	db := lgLegacyDB(t, "sqlite")
	stale := db.gateway(t, lgStatus("AODB", "751", "20261101090000", "LGS", "STALE"), "2026-11-01 09:00:00", "")
	fresh := db.gateway(t, lgStatus("AODB", "752", "20261201090000", "LGF", "FRESH"), "2026-12-01 09:00:00", "")
	env := append(db.env, "MSGX_INBOX_ADOPT_SINCE=2026-11-15", "MSGX_LEGACY_TIMEZONE=Europe/Paris")
	s := lgStart(t, env...)
	if m := s.awaitFinal(fresh); m.State != "SUCCEEDED" {
		t.Fatalf("the fresh row ended %s: %v", m.State, m.LastError)
	}
	if m := s.message(stale); m != nil {
		t.Fatalf("the row received before inbox.adopt-since was adopted: %+v", m)
	}
	// DTTM is airport time (sis.timezone, Shanghai); the legacy columns are in legacy.timezone.
	if r := db.row(t, fresh); r.Sent != "2026-12-01 02:00:00" {
		t.Fatalf("CMINMSGS_SUBSYSTEM_DATE_SENT %q, want DTTM 09:00 Shanghai as Paris time 02:00", r.Sent)
	}
	if !strings.Contains(s.logs.String(), `"count":1,"oldest_received_at":"2026-12-01T09:00:00+01:00"`) {
		t.Fatal("the start did not log the one row within the bound, in legacy.timezone")
	}

	bad := exec.Command(lgBuild(t), "serve")
	bad.Env = append(os.Environ(), append(db.env, "MSGX_DATA_DIR="+t.TempDir(), "MSGX_INBOX_ADOPT_SINCE=last tuesday")...)
	out, err := bad.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "inbox.adopt-since") {
		t.Fatalf("serve with a bad inbox.adopt-since: %v\n%s", err, out)
	}
}
