package main_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"msgx/client"
	"msgx/internal/target"
)

// TestOutboxFilesOnTheEmbeddedDefault runs msgx with no targets configured (every target a
// JSON-lines file, the embedded default), on SQLite and on MariaDB, posts a snapshot and FLOP
// changes, and reads the outboxes: every event exactly once, in EVENT_ID order per target,
// KAFKA_SCHD as arrays with one record per flight.
func TestOutboxFilesOnTheEmbeddedDefault(t *testing.T) {
	t.Parallel()
	eachDB(t, testOutboxFilesOnTheEmbeddedDefault)
}

func testOutboxFilesOnTheEmbeddedDefault(t *testing.T, db dbEnv) {
	day := tomorrow(t)
	at := func(h int) time.Time { return day.Add(time.Duration(h) * time.Hour) }
	s := db.start(t, "MSGX_SCHD_FLUSH_PERIOD=300ms")

	s.post(e2eSchd(920001, e2eFltr(93001, "CA1301", "D", at(9), ""), e2eFltr(93002, "CA1302", "A", at(12), "")))
	for i, stand := range []string{"201", "202", "203"} {
		s.post(e2eFlop(920002+i, "STND", 93001, "<STND>"+stand+"</STND>"))
	}
	last := s.post(e2eFlop(920010, "STND", 93002, "<STND>301</STND>"))
	s.await(last, "SUCCEEDED", state("SUCCEEDED", ""))

	deadline := time.Now().Add(20 * time.Second)
	for len(s.events("state=PENDING")) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("events still pending: %+v\n%s", s.events("state=PENDING"), s.logs)
		}
		time.Sleep(50 * time.Millisecond)
	}
	all := s.events("")
	byTarget := map[string][]listedEvent{}
	for _, e := range all {
		if e.State != "SENT" {
			t.Fatalf("event %d is %s", e.EventID, e.State)
		}
		byTarget[e.Target] = append(byTarget[e.Target], e)
	}
	for _, tgt := range []string{"KAFKA_FLOP", "REDIS_NOTIFY", "ES_FLIGHT"} {
		lines := readLines(t, db.outbox(tgt))
		want := byTarget[tgt]
		if len(want) == 0 || len(lines) != len(want) {
			t.Fatalf("%s: %d lines for %d events", tgt, len(lines), len(want))
		}
		for i, line := range lines {
			var env struct {
				EventID   int64           `json:"event_id"`
				MsgID     int64           `json:"msg_id"`
				TypeTag   string          `json:"type_tag"`
				Target    string          `json:"target"`
				FlightKey string          `json:"flight_key"`
				Payload   json.RawMessage `json:"payload"`
			}
			if err := json.Unmarshal(line, &env); err != nil {
				t.Fatalf("%s line %d: %v", tgt, i+1, err)
			}
			if env.EventID != want[i].EventID || env.Target != tgt || env.MsgID == 0 || env.TypeTag == "" || len(env.Payload) == 0 {
				t.Fatalf("%s line %d: %s, want event %d", tgt, i+1, line, want[i].EventID)
			}
			if want[i].FlightKey == nil || env.FlightKey != *want[i].FlightKey {
				t.Fatalf("%s line %d: flight key %q", tgt, i+1, env.FlightKey)
			}
		}
	}
	// KAFKA_SCHD: arrays of whole records, one per flight in each array, and the newest
	// record of every flight delivered.
	lines := readLines(t, db.outbox("KAFKA_SCHD"))
	if len(lines) == 0 {
		t.Fatal("no KAFKA_SCHD batch")
	}
	lastStand := map[float64]string{}
	for i, line := range lines {
		var batch []map[string]any
		if err := json.Unmarshal(line, &batch); err != nil {
			t.Fatalf("KAFKA_SCHD line %d is not a JSON array: %v: %s", i+1, err, line)
		}
		seen := map[float64]bool{}
		for _, rec := range batch {
			flid, _ := rec["FLID"].(float64)
			if seen[flid] {
				t.Fatalf("KAFKA_SCHD line %d has flight %v twice", i+1, flid)
			}
			seen[flid] = true
			lastStand[flid], _ = rec["STND"].(string)
		}
	}
	if lastStand[93001] != "203" || lastStand[93002] != "301" {
		t.Fatalf("newest stands delivered: %v, want 93001→203, 93002→301", lastStand)
	}
	if len(byTarget["KAFKA_SCHD"]) < len(lines) {
		t.Fatalf("%d KAFKA_SCHD batches for %d events", len(lines), len(byTarget["KAFKA_SCHD"]))
	}
}

// TestSinkDownBlocksOnlyItsTarget points REDIS_NOTIFY at a port where nothing listens: the
// pump and the other targets go on, and the Redis events wait, failing, in MSG_EVENT.
func TestSinkDownBlocksOnlyItsTarget(t *testing.T) {
	t.Parallel()
	eachDB(t, testSinkDownBlocksOnlyItsTarget)
}

func testSinkDownBlocksOnlyItsTarget(t *testing.T, db dbEnv) {
	day := tomorrow(t)
	cfg := filepath.Join(t.TempDir(), "msgx.yaml")
	os.WriteFile(cfg, []byte(`targets:
  KAFKA_FLOP: {sink: file}
  KAFKA_SCHD: {sink: file}
  ES_FLIGHT: {sink: file}
  REDIS_NOTIFY: {sink: redis, addr: "`+freeAddr(t)+`", channel: "msgx:notify", timeout: 500ms}
`), 0o644)
	s := db.start(t, "MSGX_CONFIG="+cfg, "MSGX_SCHD_FLUSH_PERIOD=200ms")
	first := s.post(e2eSchd(930001, e2eFltr(94001, "CA1401", "D", day.Add(20*time.Hour), "")))
	last := s.post(e2eFlop(930002, "STND", 94001, "<STND>401</STND>"))
	s.await(first, "SUCCEEDED", state("SUCCEEDED", ""))
	s.await(last, "SUCCEEDED", state("SUCCEEDED", ""))
	deadline := time.Now().Add(20 * time.Second)
	for {
		pending := map[string]int{}
		for _, e := range s.events("state=PENDING") {
			pending[e.Target]++
		}
		if len(pending) == 1 && pending["REDIS_NOTIFY"] == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pending per target %v, want only REDIS_NOTIFY's 2\n%s", pending, s.logs)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if n := len(readLines(t, db.outbox("KAFKA_FLOP"))); n != 2 {
		t.Fatalf("KAFKA_FLOP delivered %d, want 2", n)
	}
	var targets []client.TargetStatus
	deadline = time.Now().Add(10 * time.Second)
	for {
		section(t, s.status(), "targets", &targets)
		ok := false
		for _, tg := range targets {
			if tg.Target == "REDIS_NOTIFY" && tg.Pending == 2 && tg.Head != nil && tg.Head.Attempts > 0 && tg.Head.LastError != nil {
				ok = true
			}
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("status does not show the failing Redis head: %+v", targets)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestUndefinedTargetStopsTheStart(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	cfg := filepath.Join(data, "msgx.yaml")
	os.WriteFile(cfg, []byte("targets:\n  KAFKA_FLOP: {sink: file}\n"), 0o644)
	cmd := dieWithTest(exec.Command(binary, "serve", "--config", cfg))
	cmd.Env = append(os.Environ(), "MSGX_HTTP_ADDR="+freeAddr(t), "MSGX_DATA_DIR="+data)
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "is not defined, but events are emitted to it") {
		t.Fatalf("serve with a missing target: %v\n%s", err, out)
	}
}

// TestWebhookGetsACopyOfNotifications configures a webhook as a copy of REDIS_NOTIFY and
// checks that it receives every notification, signed, in event order.
func TestWebhookGetsACopyOfNotifications(t *testing.T) {
	t.Parallel()
	eachDB(t, testWebhookGetsACopyOfNotifications)
}

func testWebhookGetsACopyOfNotifications(t *testing.T, db dbEnv) {
	day := tomorrow(t)
	var mu sync.Mutex
	var got []int64
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.Header.Get("X-Msgx-Signature") != target.Sign([]byte("hook-secret"), body) {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		var env struct {
			EventID int64  `json:"event_id"`
			Target  string `json:"target"`
			Kind    string `json:"kind"`
		}
		if json.Unmarshal(body, &env) != nil || env.Target != "WEBHOOK_OPS" || env.Kind != "notify" {
			http.Error(w, "unexpected body", http.StatusBadRequest)
			return
		}
		mu.Lock()
		got = append(got, env.EventID)
		mu.Unlock()
	}))
	defer hook.Close()
	cfg := filepath.Join(t.TempDir(), "msgx.yaml")
	os.WriteFile(cfg, []byte(`targets:
  KAFKA_FLOP: {sink: file}
  KAFKA_SCHD: {sink: file}
  ES_FLIGHT: {sink: file}
  REDIS_NOTIFY: {sink: file}
  WEBHOOK_OPS: {sink: webhook, url: "`+hook.URL+`", secret: hook-secret, copy-of: REDIS_NOTIFY}
`), 0o644)
	s := db.start(t, "MSGX_CONFIG="+cfg)
	s.post(e2eSchd(940001, e2eFltr(95001, "CA1501", "D", day.Add(21*time.Hour), ""), e2eFltr(95002, "CA1502", "A", day.Add(22*time.Hour), "")))
	last := s.post(e2eFlop(940002, "STND", 95001, "<STND>501</STND>"))
	s.await(last, "SUCCEEDED", state("SUCCEEDED", ""))
	deadline := time.Now().Add(20 * time.Second)
	for {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("webhook got %d notifications, want 3\n%s", n, s.logs)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !slices.IsSorted(got) {
		t.Fatalf("webhook events out of order: %v", got)
	}
	for len(s.events("target=REDIS_NOTIFY&state=PENDING")) > 0 {
		if time.Now().After(deadline) {
			t.Fatal("REDIS_NOTIFY events still pending")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if n := len(readLines(t, db.outbox("REDIS_NOTIFY"))); n != 3 {
		t.Fatalf("REDIS_NOTIFY delivered %d, want its own 3", n)
	}
}
