package jobs_test

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"msgx/internal/flight"
	"msgx/internal/jobs"
	"msgx/internal/jobs/jobkind"
	"msgx/internal/pipeline"
	"msgx/internal/store"
	"msgx/internal/store/storetest"
	"msgx/internal/testkit"
)

var shanghai, _ = time.LoadLocation("Asia/Shanghai")

// seedFlights stores n flights on each of days, FLIDs day-index*1000+1…, and returns them by
// day.
func seedFlights(t *testing.T, db *store.DB, fs *flight.Store, n int, days ...string) {
	t.Helper()
	var ws []pipeline.FlightWrite
	for di, day := range days {
		for i := 1; i <= n; i++ {
			flid := int64((di+1)*1000 + i)
			rec, _ := json.Marshal(map[string]any{"FLID": flid, "FLNO": fmt.Sprintf("MU%d", flid), "REMK": "航班✈🛫"})
			ws = append(ws, pipeline.FlightWrite{Day: day, FLID: flid, Record: rec})
		}
	}
	err := db.Tx(context.Background(), func(tx *sql.Tx) error {
		return fs.WriteFlights(context.Background(), tx, 1, ws, time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC))
	})
	if err != nil {
		t.Fatal(err)
	}
}

func flightsLeft(t *testing.T, db *store.DB) map[string][]int64 {
	t.Helper()
	rows, err := db.SQL.Query(`SELECT FDAY, FLID FROM FLIGHT_STATE ORDER BY FDAY, FLID`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string][]int64{}
	for rows.Next() {
		var day string
		var flid int64
		rows.Scan(&day, &flid)
		out[day] = append(out[day], flid)
	}
	return out
}

// esNode is a stand-in Elasticsearch node: it checks each _bulk request and answers each
// item with fail(flid) (an item body) or 201.
type esNode struct {
	t      *testing.T
	mu     sync.Mutex
	status int // answer every request with this status, when set
	fail   func(id string) string
	docs   map[string]json.RawMessage // _id → last document indexed with success
	reqs   int
}

func (n *esNode) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Elastic-Product", "Elasticsearch")
	w.Header().Set("Content-Type", "application/json")
	n.mu.Lock()
	defer n.mu.Unlock()
	n.reqs++
	if r.Method != http.MethodPost || r.URL.Path != "/_bulk" || r.Header.Get("Content-Type") != "application/x-ndjson" {
		n.t.Errorf("%s %s %s, want POST /_bulk NDJSON", r.Method, r.URL.Path, r.Header.Get("Content-Type"))
	}
	if n.status != 0 {
		w.WriteHeader(n.status)
		fmt.Fprint(w, `{"error":{"type":"test","reason":"node down"}}`)
		return
	}
	sc := bufio.NewScanner(r.Body)
	sc.Buffer(nil, 1<<20)
	var items []string
	errs := false
	for sc.Scan() {
		var action map[string]map[string]any
		if err := json.Unmarshal(sc.Bytes(), &action); err != nil {
			n.t.Errorf("action line %q: %v", sc.Bytes(), err)
			return
		}
		meta, ok := action["index"]
		if !ok || meta["_index"] != "msgx-history" || meta["version_type"] != "external" {
			n.t.Errorf("action %v, want index into msgx-history with an external version", action)
		}
		if !sc.Scan() {
			n.t.Error("index action without its document")
			return
		}
		var doc flight.HistoryFlight
		if err := json.Unmarshal(sc.Bytes(), &doc); err != nil || doc.FLID == 0 || !strings.Contains(string(doc.Record), "航班✈🛫") {
			n.t.Errorf("document %s: %v", sc.Bytes(), err)
		}
		id := meta["_id"].(string)
		if want := fmt.Sprintf("%s-%d", doc.Day, doc.FLID); id != want || meta["version"] != float64(doc.Version) {
			n.t.Errorf("_id %s version %v, want %s version %d", id, meta["version"], want, doc.Version)
		}
		item := `{"status":201,"result":"created"}`
		if n.fail != nil {
			if f := n.fail(id); f != "" {
				item, errs = f, true
			}
		}
		if !strings.Contains(item, "error") {
			n.docs[id] = append(json.RawMessage(nil), sc.Bytes()...)
		}
		items = append(items, `{"index":`+item+`}`)
	}
	fmt.Fprintf(w, `{"took":3,"errors":%t,"items":[%s]}`, errs, strings.Join(items, ","))
}

func newESNode(t *testing.T) (*esNode, *jobs.ESHistory) {
	n := &esNode{t: t, docs: map[string]json.RawMessage{}}
	srv := httptest.NewServer(n)
	t.Cleanup(srv.Close)
	h, err := jobs.NewESHistory(jobs.ESHistoryConfig{URL: srv.URL, Index: "msgx-history", Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return n, h
}

// Today is 2026-11-23 (local); keep-days 3 keeps the 20th on, sweeps the 18th and 19th.
var sweepNow = time.Date(2026, 11, 23, 3, 30, 0, 0, shanghai)

// A partly failing bulk deletes only the flights written (I4); the failed ones stay, the job
// says so, and the next sweep writes and deletes them.
func TestHistorySweepDeletesOnlyTheSuccessSet(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		clock := testkit.NewClock(sweepNow)
		fs := flight.New(storetest.Flight(db), clock, shanghai)
		seedFlights(t, db, fs, 7, "2026-11-18", "2026-11-19", "2026-11-20", "2026-11-23")
		node, es := newESNode(t)
		node.fail = func(id string) string {
			switch id {
			case "2026-11-18-1003":
				return `{"status":429,"error":{"type":"es_rejected_execution_exception","reason":"queue full"}}`
			case "2026-11-19-2007":
				return `{"status":400,"error":{"type":"mapper_parsing_exception","reason":"bad field"}}`
			}
			return ""
		}
		r := &jobs.Runner{Clock: clock, Flights: fs, History: es, Location: shanghai, KeepDays: 3, Chunk: 3}
		written := testutil.ToFloat64(jobs.RowsMetric("HISTORY_SWEEP", "history"))
		failedBefore := testutil.ToFloat64(jobs.FailedMetric())
		res, err := r.RunJob(ctx, &store.Job{ID: 1, Kind: jobs.HistorySweep})
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"swept 12 flights of 2 days before 2026-11-20", "12 deleted", "2 not written", "flight 1003 of 2026-11-18 not written: HTTP 429",
			"FLIGHT_STATE -12", "history +12"} {
			if !strings.Contains(res, want) {
				t.Errorf("result %q does not say %q", res, want)
			}
		}
		left := flightsLeft(t, db)
		if fmt.Sprint(left["2026-11-18"]) != "[1003]" || fmt.Sprint(left["2026-11-19"]) != "[2007]" || len(left["2026-11-20"]) != 7 || len(left["2026-11-23"]) != 7 {
			t.Fatalf("flights left: %v", left)
		}
		if len(node.docs) != 12 {
			t.Fatalf("%d documents written, want 12", len(node.docs))
		}
		if d := testutil.ToFloat64(jobs.RowsMetric("HISTORY_SWEEP", "history")) - written; d != 12 {
			t.Fatalf("msgx_job_rows_total{history} moved by %v", d)
		}
		if d := testutil.ToFloat64(jobs.FailedMetric()) - failedBefore; d != 2 {
			t.Fatalf("msgx_history_sweep_failed_total moved by %v", d)
		}
		// The node is well again: the next sweep takes the two left over, and only them.
		node.fail = nil
		res, err = r.RunJob(ctx, &store.Job{ID: 2, Kind: jobs.HistorySweep})
		if err != nil || !strings.Contains(res, "swept 2 flights of 2 days") {
			t.Fatalf("second sweep: %q %v", res, err)
		}
		left = flightsLeft(t, db)
		if len(left["2026-11-18"])+len(left["2026-11-19"]) != 0 || len(node.docs) != 14 {
			t.Fatalf("after the second sweep: left %v, %d documents", left, len(node.docs))
		}
	})
}

// A history store that is down fails the whole write: nothing is deleted, and the job still
// finishes (the messages behind it are not held up), saying why.
func TestHistorySweepWithTheSinkDownDeletesNothing(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		clock := testkit.NewClock(sweepNow)
		fs := flight.New(storetest.Flight(db), clock, shanghai)
		seedFlights(t, db, fs, 4, "2026-11-01", "2026-11-22")
		node, es := newESNode(t)
		node.status = http.StatusServiceUnavailable
		r := &jobs.Runner{Clock: clock, Flights: fs, History: es, Location: shanghai, KeepDays: 3}
		res, err := r.RunJob(context.Background(), &store.Job{ID: 1, Kind: jobs.HistorySweep})
		if err != nil || !strings.Contains(res, "swept 0 flights") || !strings.Contains(res, "4 not written") || !strings.Contains(res, "HTTP 503") {
			t.Fatalf("result %q %v", res, err)
		}
		if left := flightsLeft(t, db); len(left["2026-11-01"]) != 4 {
			t.Fatalf("flights left: %v", left)
		}
	})
}

// The embedded default writes JSON lines per day under the data directory, synced before the
// flights are deleted.
func TestHistorySweepToFiles(t *testing.T) {
	db := storetest.SQLite(t)
	clock := testkit.NewClock(sweepNow)
	fs := flight.New(storetest.Flight(db), clock, shanghai)
	seedFlights(t, db, fs, 5, "2026-11-10", "2026-11-21")
	dir := filepath.Join(t.TempDir(), "history")
	r := &jobs.Runner{Clock: clock, Flights: fs, History: &jobs.FileHistory{Dir: dir}, Location: shanghai, KeepDays: 1}
	res, err := r.RunJob(context.Background(), &store.Job{ID: 1, Kind: jobs.HistorySweep})
	if err != nil || !strings.Contains(res, "swept 10 flights of 2 days before 2026-11-22") {
		t.Fatalf("%q %v", res, err)
	}
	if left := flightsLeft(t, db); len(left) != 0 {
		t.Fatalf("flights left: %v", left)
	}
	b, err := os.ReadFile(filepath.Join(dir, "flights-2026-11-10.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	var f flight.HistoryFlight
	if len(lines) != 5 || json.Unmarshal([]byte(lines[0]), &f) != nil || f.FLID != 1001 || f.Day != "2026-11-10" || f.Version != 1 {
		t.Fatalf("history file: %d lines, first %s", len(lines), lines[0])
	}
}

// blockingSink holds its second write until released, so the test can look at the job in hand.
type blockingSink struct {
	writes  int
	entered chan struct{}
	release chan struct{}
}

func (s *blockingSink) Write(ctx context.Context, fl []flight.HistoryFlight) ([]error, error) {
	s.writes++
	if s.writes == 2 {
		close(s.entered)
		<-s.release
	}
	return make([]error, len(fl)), nil
}
func (s *blockingSink) Close() error { return nil }

// While a job runs, Current tells its kind, what it is doing and for how long.
func TestProgressShowsTheJobInHand(t *testing.T) {
	db := storetest.SQLite(t)
	clock := testkit.NewClock(sweepNow)
	fs := flight.New(storetest.Flight(db), clock, shanghai)
	seedFlights(t, db, fs, 5, "2026-11-19")
	sink := &blockingSink{entered: make(chan struct{}), release: make(chan struct{})}
	r := &jobs.Runner{Clock: clock, Flights: fs, History: sink, Location: shanghai, KeepDays: 3, Chunk: 2}
	if r.Current() != nil {
		t.Fatal("a job in hand before any runs")
	}
	done := make(chan error, 1)
	go func() {
		_, err := r.RunJob(context.Background(), &store.Job{ID: 7, Kind: jobs.HistorySweep})
		done <- err
	}()
	select {
	case <-sink.entered:
	case err := <-done:
		t.Fatalf("job ended before its second write: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the job never reached its second write")
	}
	clock.Set(sweepNow.Add(90 * time.Second))
	p := r.Current()
	if p == nil || p.JobID != 7 || p.Kind != jobs.HistorySweep || p.Doing != "sweep day 2026-11-19: 2/5 flights" || p.RunningFor != "1m30s" {
		t.Fatalf("job in hand: %+v", p)
	}
	close(sink.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if r.Current() != nil {
		t.Fatalf("a job in hand after it ended: %+v", r.Current())
	}
}

// RETENTION purges old SENT events and long-archived messages, reports rows per table and
// counts them in msgx_job_rows_total.
func TestRetentionJobReportsRowsPerTable(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		now := time.Date(2026, 11, 30, 20, 0, 0, 0, time.UTC)
		clock := testkit.NewClock(now)
		old := now.Add(-200 * 24 * time.Hour)
		ids, err := db.Intake.InsertMessages(ctx, []string{"<a/>", "<b/>", "<c/>"}, old)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := db.Processor.Succeed(ctx, ids[0], store.Success{TypeTag: "X-Y", Identity: "a|b|c|1", Decision: pipeline.Decision{Events: []pipeline.Event{
			{Target: "T1", Kind: "k", Payload: []byte(`{}`)}, {Target: "T2", Kind: "k", Payload: []byte(`{}`)}}}}, nil, old); err != nil {
			t.Fatal(err)
		}
		storetest.Exec(t, db, fmt.Sprintf(`UPDATE MSG_EVENT SET STATE = 'SENT', SENT_AT = '%s' WHERE TARGET = 'T1'`, store.T(old)))
		if err := db.Processor.Record(ctx, ids[1], store.Outcome{State: pipeline.Dead, Class: pipeline.Orphan, LastError: "x"}, old); err != nil {
			t.Fatal(err)
		}
		a := &jobs.Runner{DB: db.Archiver, Clock: clock}
		clock.Set(old.Add(48 * time.Hour))
		if res, err := a.RunJob(ctx, &store.Job{ID: 1, Kind: jobs.Archive, AfterMsgID: ids[2]}); err != nil || !strings.HasPrefix(res, "archived 1 messages; rows CMINMSGS -1, CMINMSGS_HST +1; took") {
			t.Fatalf("archive: %q %v", res, err)
		}
		clock.Set(now)
		before := testutil.ToFloat64(jobs.RowsMetric("RETENTION", "MSG_EVENT"))
		r := &jobs.Runner{Clock: clock, Purge: db.Archiver, EventsAge: 7 * 24 * time.Hour, ArchivedAge: 90 * 24 * time.Hour}
		res, err := r.RunJob(ctx, &store.Job{ID: 2, Kind: jobs.Retention})
		if err != nil {
			t.Fatal(err)
		}
		want := "purged 1 SENT events older than 168h0m0s and 1 messages archived longer than 2160h0m0s; rows CMINMSGS_HST -1, MSG_EVENT -1, PROC_STATE -1; took"
		if !strings.HasPrefix(res, want) {
			t.Fatalf("result %q, want %q…", res, want)
		}
		if d := testutil.ToFloat64(jobs.RowsMetric("RETENTION", "MSG_EVENT")) - before; d != 1 {
			t.Fatalf("msgx_job_rows_total{RETENTION,MSG_EVENT} moved by %v", d)
		}
		// The PENDING event, the DEAD and the PENDING message stay.
		var events, states int
		db.SQL.QueryRow(`SELECT COUNT(*) FROM MSG_EVENT`).Scan(&events)
		db.SQL.QueryRow(`SELECT COUNT(*) FROM PROC_STATE`).Scan(&states)
		if events != 1 || states != 2 {
			t.Fatalf("left %d events and %d states", events, states)
		}
		off := &jobs.Runner{Clock: clock, Purge: db.Archiver}
		if res, err := off.RunJob(ctx, &store.Job{ID: 3, Kind: jobs.Retention}); err != nil || !strings.HasPrefix(res, "nothing to purge") {
			t.Fatalf("switched off: %q %v", res, err)
		}
	})
}

// The scheduler enqueues each job once per local day at its time, whatever the number of
// ticks, restarts or instances.
func TestSchedulerEnqueuesOncePerDay(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		clock := testkit.NewClock(time.Date(2026, 11, 23, 2, 59, 0, 0, shanghai))
		entries := []jobs.Entry{}
		for kind, at := range map[string]string{jobs.Archive: "03:00", jobs.HistorySweep: "03:30", jobs.Retention: "off"} {
			h, m, on, err := jobkind.ParseAt(at)
			if err != nil {
				t.Fatal(err)
			}
			if on {
				entries = append(entries, jobs.Entry{Kind: kind, Hour: h, Minute: m})
			}
		}
		woken := 0
		a := &jobs.Scheduler{DB: db.JobQueue, Clock: clock, Location: shanghai, Entries: entries, Wake: func() { woken++ }}
		b := &jobs.Scheduler{DB: db.JobQueue, Clock: clock, Location: shanghai, Entries: entries} // a second instance
		keys := func() []string {
			js, err := db.JobQueue.ListJobs(ctx, 100)
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for i := len(js) - 1; i >= 0; i-- {
				out = append(out, js[i].Kind+"@"+js[i].ScheduleKey)
			}
			return out
		}
		next, err := a.Tick(ctx)
		if err != nil || len(keys()) != 0 || next != time.Minute {
			t.Fatalf("before 03:00: %v, next in %s, %v", keys(), next, err)
		}
		clock.Set(time.Date(2026, 11, 23, 3, 0, 0, 0, shanghai))
		for i := 0; i < 3; i++ {
			if _, err := a.Tick(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := b.Tick(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if got := fmt.Sprint(keys()); got != "[ARCHIVE@ARCHIVE/2026-11-23]" || woken != 1 {
			t.Fatalf("at 03:00: %s, woken %d", got, woken)
		}
		clock.Set(time.Date(2026, 11, 23, 11, 0, 0, 0, shanghai))
		a.Tick(ctx)
		b.Tick(ctx)
		// The next day after 03:30 (an instance down at 03:00 catches up when it ticks).
		clock.Set(time.Date(2026, 11, 24, 9, 0, 0, 0, shanghai))
		b.Tick(ctx)
		a.Tick(ctx)
		want := "[ARCHIVE@ARCHIVE/2026-11-23 HISTORY_SWEEP@HISTORY_SWEEP/2026-11-23 ARCHIVE@ARCHIVE/2026-11-24 HISTORY_SWEEP@HISTORY_SWEEP/2026-11-24]"
		if got := fmt.Sprint(keys()); got != want {
			t.Fatalf("jobs %s, want %s", got, want)
		}
	})
}

func TestParseAt(t *testing.T) {
	for in, want := range map[string]string{"03:00": "3:0 true", "23:59": "23:59 true", "": "0:0 false", "off": "0:0 false", "OFF": "0:0 false"} {
		h, m, on, err := jobkind.ParseAt(in)
		if got := fmt.Sprintf("%d:%d %v", h, m, on); err != nil || got != want {
			t.Errorf("ParseAt(%q) = %s %v, want %s", in, got, err, want)
		}
	}
	for _, in := range []string{"3", "25:00", "03:60", "3am"} {
		if _, _, _, err := jobkind.ParseAt(in); err == nil {
			t.Errorf("ParseAt(%q) accepted", in)
		}
	}
}
