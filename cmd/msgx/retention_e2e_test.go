package main_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"msgx/client"
	"msgx/internal/store"
)

// jobs lists the server's jobs, newest first.
func (s *server) jobs() []client.Job {
	s.t.Helper()
	jobs, err := s.api().Jobs(context.Background())
	if err != nil {
		s.t.Fatalf("GET jobs: %v", err)
	}
	return jobs
}

// awaitJob polls job id until it is DONE and returns its result.
func (s *server) awaitJob(id int64) string {
	s.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		for _, j := range s.jobs() {
			if j.ID == id && j.State == "DONE" && j.Result != nil {
				return *j.Result
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.t.Fatalf("job %d never DONE: %+v\n%s", id, s.jobs(), s.logs)
	return ""
}

// The scheduled jobs, the history sweep and log shipping through the real binary: the
// scheduler enqueues each day's job once (a restart does not enqueue it again), a sweep
// moves old flights to the history files and out of the flight store, status tells the last
// jobs, and the lines of a message posted with a traceparent reach logstash with its trace id.
func TestScheduledJobsHistoryAndLogShipping(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, dbe dbEnv) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		env := []string{"MSGX_PIPELINE_POLL_INTERVAL=50ms", "MSGX_LOG_LOGSTASH_ADDR=" + ln.Addr().String(),
			// Local midnight has always passed: the day's ARCHIVE is due at start.
			"MSGX_JOBS_ARCHIVE_AT=00:00", "MSGX_JOBS_HISTORY_SWEEP_AT=off", "MSGX_JOBS_RETENTION_AT=off", "MSGX_HISTORY_KEEP_DAYS=2"}
		s := dbe.start(t, env...)

		// A message with a traceparent: its lines reach logstash with the trace id.
		const trace = "0af7651916cd43dd8448eb211c80319c"
		req, _ := http.NewRequest("POST", s.url+"/cminmsgs/send", strings.NewReader(airline))
		req.Header.Set("Content-Type", "application/xml")
		req.Header.Set("traceparent", "00-"+trace+"-b7ad6b7169203331-01")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var id int64
		fmt.Sscanf(string(b), "%d", &id)
		s.await(id, "SUCCEEDED", state("SUCCEEDED", ""))
		ln.(*net.TCPListener).SetDeadline(time.Now().Add(30 * time.Second))
		conn, err := ln.Accept()
		if err != nil {
			t.Fatalf("msgx never connected to logstash: %v\n%s", err, s.logs)
		}
		defer conn.Close()
		conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		r := bufio.NewReader(conn)
		seen := map[string]bool{}
		for !(seen["message received"] && seen["message SUCCEEDED"]) {
			line, err := r.ReadBytes('\n')
			if err != nil {
				t.Fatalf("logstash got %v before %v\n%s", seen, err, s.logs)
			}
			var m map[string]any
			if err := json.Unmarshal(line, &m); err != nil {
				t.Fatalf("line %q is not JSON", line)
			}
			if m["msg_id"] == float64(id) {
				if m["trace_id"] != trace {
					t.Fatalf("a line of message %d without its trace id: %s", id, line)
				}
				seen[m["msg"].(string)] = true
			}
		}

		// The day's ARCHIVE was enqueued once at start, and not again by a restart.
		archives := func() (n int) {
			for _, j := range s.jobs() {
				if j.Kind == "ARCHIVE" && strings.HasPrefix(j.ScheduleKey, "ARCHIVE/") {
					n++
				}
			}
			return n
		}
		if archives() != 1 {
			t.Fatalf("scheduled ARCHIVE jobs: %+v", s.jobs())
		}
		s.stop()
		s = dbe.start(t, env...)
		if archives() != 1 {
			t.Fatalf("a restart enqueued the day's ARCHIVE again: %+v", s.jobs())
		}

		// Two flights of a day ten days ago and one of today: the sweep takes the old ones.
		loc, _ := time.LoadLocation("Asia/Shanghai")
		old := time.Now().In(loc).AddDate(0, 0, -10).Format(time.DateOnly)
		today := time.Now().In(loc).Format(time.DateOnly)
		db := dbe.open(t)
		now := store.T(time.Now())
		for _, f := range []struct {
			day  string
			flid int64
		}{{old, 7101}, {old, 7102}, {today, 7103}} {
			if _, err := db.SQL.Exec(`INSERT INTO FLIGHT_STATE (FDAY, FLID, RECORD, VERSION, CMINMSGS_ID, UPDATED_AT) VALUES (?, ?, ?, 1, 1, ?)`,
				f.day, f.flid, fmt.Sprintf(`{"FLID":%d,"FLNO":"MU%d","REMK":"延误🛫"}`, f.flid, f.flid), now); err != nil {
				t.Fatal(err)
			}
		}
		job := s.startJob("HISTORY_SWEEP")
		res := s.awaitJob(job)
		if !strings.HasPrefix(res, "swept 2 flights of 1 days") || !strings.Contains(res, "FLIGHT_STATE -2") {
			t.Fatalf("sweep result %q", res)
		}
		var left int
		db.SQL.QueryRow(`SELECT COUNT(*) FROM FLIGHT_STATE WHERE FLID IN (7101, 7102, 7103)`).Scan(&left)
		if left != 1 {
			t.Fatalf("%d of the 3 flights left, want today's", left)
		}
		lines := readLines(t, filepath.Join(dbe.DataDir, "history", "flights-"+old+".jsonl"))
		if len(lines) != 2 || !strings.Contains(string(lines[0]), `"flid":7101`) {
			t.Fatalf("history file: %s", lines)
		}

		// msgx status tells the last job of each kind.
		cmd := dbe.command(t, "status", "--server", s.url)
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "last jobs") || !strings.Contains(string(out), "swept 2 flights") {
			t.Fatalf("msgx status: %v\n%s", err, out)
		}
		if _, err := os.Stat(filepath.Join(dbe.DataDir, "history")); err != nil {
			t.Fatal(err)
		}
	})
}
