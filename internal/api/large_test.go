package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"testing"
	"time"

	"msgx/internal/api"
	"msgx/internal/dispatch"
	"msgx/internal/inbox"
	"msgx/internal/metrics"
	"msgx/internal/pipeline"
	"msgx/internal/store"
	"msgx/internal/store/storetest"
	"msgx/internal/testkit"
)

// The large outbox: n MSG_EVENT rows over three targets, as a long-running airport leaves
// them: almost all SENT, the newest ones PENDING, a few DEAD among the old ones, one message
// per ten events. It is built with one INSERT … SELECT per table (a recursive counter), since
// a million rows through the pump would take longer than a test may.

var largeTargets = []string{"ES_FLIGHT", "KAFKA_FLOP", "REDIS_NOTIFY"}

const (
	largePendingTail = 3000   // the newest events are PENDING (1,000 per target)
	largeDeadEvery   = 100003 // one event in this many is DEAD
)

// largeCounts is what status must say of the large outbox.
type largeCounts struct {
	pending, dead, sent map[string]int64
	messages            int
}

// stateOf is the state the builder gives event i (1-based) of n, and its target.
func stateOf(i, n int) (target, state string) {
	target = largeTargets[i%3]
	switch {
	case i > n-largePendingTail:
		return target, "PENDING"
	case i%largeDeadEvery == 0:
		return target, "DEAD"
	}
	return target, "SENT"
}

func buildLargeOutbox(t testing.TB, db *store.DB, n int, created time.Time) largeCounts {
	t.Helper()
	ctx := context.Background()
	start := time.Now()
	msgs := n / 10
	ts := store.T(created)
	// One connection with a large page cache, and MSG_EVENT's indexes built after its rows
	// (sorted once instead of updated row by row): the same indexes as migration 00001.
	conn, err := db.SQL.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, q := range []string{`PRAGMA cache_size = -400000`, `DROP INDEX IDX_EVT_HEAD`, `DROP INDEX IDX_EVT_MSG`} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	// Messages: all SUCCEEDED but the last, which is PENDING (the head).
	_, err = conn.ExecContext(ctx, `WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < ?)
INSERT INTO CMINMSGS (CMINMSGS_ID, CMINMSGS_CLOB_MSG, CMINMSGS_DATE_RECEIVED, CMINMSGS_DATE_PROCESSED, CMINMSGS_STATUS)
SELECT i, '<MSG/>', ?, ?, 'VALID' FROM c`, msgs, ts, ts)
	if err != nil {
		t.Fatal(err)
	}
	_, err = conn.ExecContext(ctx, `WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < ?)
INSERT INTO PROC_STATE (CMINMSGS_ID, STATE, ATTEMPTS, TYPE_TAG, CREATED_AT, UPDATED_AT, PROCESSED_AT)
SELECT i, CASE WHEN i = ? THEN 'PENDING' ELSE 'SUCCEEDED' END, 0, 'FLOP-CHOT', ?, ?, ? FROM c`, msgs, msgs, ts, ts, ts)
	if err != nil {
		t.Fatal(err)
	}
	_, err = conn.ExecContext(ctx, `WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < ?)
INSERT INTO MSG_EVENT (EVENT_ID, CMINMSGS_ID, TYPE_TAG, TARGET, KIND, FLIGHT_KEY, PAYLOAD, STATE, ATTEMPTS, CREATED_AT, SENT_AT)
SELECT i, (i - 1) / 10 + 1, 'FLOP-CHOT', CASE i % 3 WHEN 0 THEN 'ES_FLIGHT' WHEN 1 THEN 'KAFKA_FLOP' ELSE 'REDIS_NOTIFY' END,
  'flight.updated', 'FL' || (i % 5000), '{"flid":' || (i % 5000) || ',"chot":"2026-12-01T08:00:00Z"}',
  CASE WHEN i > ? THEN 'PENDING' WHEN i % ? = 0 THEN 'DEAD' ELSE 'SENT' END, 0, ?,
  CASE WHEN i > ? OR i % ? = 0 THEN NULL ELSE ? END
FROM c`, n, n-largePendingTail, largeDeadEvery, ts, n-largePendingTail, largeDeadEvery, ts)
	if err != nil {
		t.Fatal(err)
	}
	// The SENT totals of rows that exist before MSG_EVENT_SENT is kept: what migration 00011
	// does on an existing database.
	for _, q := range []string{`CREATE INDEX IDX_EVT_HEAD ON MSG_EVENT (TARGET, STATE, EVENT_ID)`, `CREATE INDEX IDX_EVT_MSG ON MSG_EVENT (CMINMSGS_ID)`,
		`INSERT INTO MSG_EVENT_SENT (TARGET, SENT) SELECT TARGET, COUNT(*) FROM MSG_EVENT WHERE STATE = 'SENT' GROUP BY TARGET
ON CONFLICT (TARGET) DO UPDATE SET SENT = excluded.SENT`,
		fmt.Sprintf(`UPDATE MSGX_COUNTER SET VALUE = %d WHERE NAME = 'EVENT_ID'`, n), // the ids given out above
		`PRAGMA cache_size = -2000`} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	want := largeCounts{pending: map[string]int64{}, dead: map[string]int64{}, sent: map[string]int64{}, messages: msgs}
	for i := 1; i <= n; i++ {
		target, state := stateOf(i, n)
		switch state {
		case "PENDING":
			want.pending[target]++
		case "DEAD":
			want.dead[target]++
		default:
			want.sent[target]++
		}
	}
	t.Logf("built %d MSG_EVENT rows and %d messages in %s", n, msgs, time.Since(start).Round(time.Millisecond))
	return want
}

// statusServer serves the status route and /metrics as `msgx serve` wires them.
func statusServer(t testing.TB, db *store.DB, clock pipeline.Clock) (*httptest.Server, *metrics.Metrics) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	health := api.NewHealth(storetest.API(db), clock)
	health.Check(context.Background())
	m := metrics.New(clock, "test", api.DatabaseUp(health))
	srv := api.New(api.Deps{Health: health, DB: storetest.API(db), Inbox: inbox.New(db.Intake, clock, log, 1<<20, nil), Clock: clock, Log: log, PumpRunning: true,
		Counts:      db.Operations.NewStateCounter(),
		Extra:       []func(*http.ServeMux){api.MetricsRoute(m)},
		StatusExtra: map[string]func(context.Context) (any, error){"targets": dispatch.StatusSection(db.Outbox, clock, nil)}})
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return ts, m
}

type largeStatus struct {
	Counts map[string]int `json:"counts"`
	Head   *struct {
		ID int64 `json:"id"`
	} `json:"head"`
	Extra struct {
		Targets []struct {
			Target  string  `json:"target"`
			Pending int64   `json:"pending"`
			Dead    int64   `json:"dead"`
			Sent    int64   `json:"sent"`
			Age     float64 `json:"oldest_pending_age_s"`
		} `json:"targets"`
	} `json:"extra"`
}

func getStatus(t testing.TB, url string) largeStatus {
	t.Helper()
	resp, err := http.Get(url + "/api/v1/status")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("status: %d %s", resp.StatusCode, b)
	}
	var st largeStatus
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatalf("status: %v in %s", err, b)
	}
	return st
}

// largeEvents is how many MSG_EVENT rows the test builds: MSGX_TEST_LARGE_EVENTS, else a
// million (200,000 with -short).
func largeEvents() int {
	if n, err := strconv.Atoi(os.Getenv("MSGX_TEST_LARGE_EVENTS")); err == nil && n > largePendingTail {
		return n
	}
	if testing.Short() {
		return 200000
	}
	return 1000000
}

// With a million MSG_EVENT rows (almost all SENT), status and the metrics' sample give the
// exact counts per target and state, the head and the messages per state, reading index
// ranges and the SENT totals instead of every row. How long they took is logged (speed is
// the benchmark's to measure, not asserted).
func TestStatusAndMetricsOverALargeOutbox(t *testing.T) {
	t.Parallel()
	db := storetest.SQLite(t)
	n := largeEvents()
	created := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	want := buildLargeOutbox(t, db, n, created)
	clock := testkit.NewClock(created.Add(90 * time.Second))
	ts, m := statusServer(t, db, clock)

	start := time.Now()
	st := getStatus(t, ts.URL)
	t.Logf("the first GET /api/v1/status over %d events (counting the finished messages) took %s", n, time.Since(start).Round(time.Microsecond))
	start = time.Now()
	again := getStatus(t, ts.URL)
	if a, b := jsonOf(again), jsonOf(st); a != b {
		t.Errorf("the second status differs:\n%s\n%s", a, b)
	}
	t.Logf("GET /api/v1/status over %d events took %s", n, time.Since(start).Round(time.Microsecond))
	if st.Counts["SUCCEEDED"] != want.messages-1 || st.Counts["PENDING"] != 1 || st.Head == nil || st.Head.ID != int64(want.messages) {
		t.Errorf("status counts %v head %+v, want %d SUCCEEDED and head %d PENDING", st.Counts, st.Head, want.messages-1, want.messages)
	}
	if len(st.Extra.Targets) != len(largeTargets) {
		t.Fatalf("status targets: %+v", st.Extra.Targets)
	}
	for _, tg := range st.Extra.Targets {
		if tg.Pending != want.pending[tg.Target] || tg.Dead != want.dead[tg.Target] || tg.Sent != want.sent[tg.Target] || tg.Age != 90 {
			t.Errorf("target %s: pending %d dead %d sent %d age %v, want %d, %d, %d, 90", tg.Target, tg.Pending, tg.Dead, tg.Sent, tg.Age,
				want.pending[tg.Target], want.dead[tg.Target], want.sent[tg.Target])
		}
	}

	counts := db.Operations.NewStateCounter()
	if _, err := counts.Counts(context.Background(), clock.Now()); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	snap, err := (&metrics.Sampler{DB: storetest.API(db), Counts: counts, Targets: dispatch.TargetSamples(db.Outbox), Clock: clock}).Sample(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("metrics state sample over %d events took %s", n, time.Since(start).Round(time.Microsecond))
	m.SetSnapshot(snap)
	start = time.Now()
	body := scrape(t, ts.URL)
	t.Logf("GET /metrics took %s", time.Since(start).Round(time.Microsecond))
	var lines []string
	for _, tg := range largeTargets {
		lines = append(lines,
			fmt.Sprintf(`msgx_events{state="SENT",target="%s"} %d`, tg, want.sent[tg]),
			fmt.Sprintf(`msgx_events{state="PENDING",target="%s"} %d`, tg, want.pending[tg]),
			fmt.Sprintf(`msgx_events{state="DEAD",target="%s"} %d`, tg, want.dead[tg]),
			fmt.Sprintf(`msgx_target_oldest_pending_age_seconds{target="%s"} 90`, tg))
	}
	lines = append(lines, fmt.Sprintf(`msgx_messages{state="SUCCEEDED"} %d`, want.messages-1), `msgx_head_age_seconds 90`)
	wantLines(t, body, lines...)
}

// BenchmarkStatusLargeOutbox measures GET /api/v1/status, the metrics' state sample, a scrape,
// and the event counts and a whole CountByState alone (what status cost before), over MSGX_BENCH_EVENTS
// MSG_EVENT rows and a tenth as many messages (default ten million events; building them
// takes a few minutes and about 2 GB of disk in the temporary directory):
//
//	go test ./internal/api -run '^$' -bench StatusLargeOutbox -benchtime 20x
func BenchmarkStatusLargeOutbox(b *testing.B) {
	n := 10000000
	if v, err := strconv.Atoi(os.Getenv("MSGX_BENCH_EVENTS")); err == nil && v > largePendingTail {
		n = v
	}
	db := storetest.SQLite(b)
	created := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	buildLargeOutbox(b, db, n, created)
	clock := testkit.NewClock(created.Add(time.Minute))
	ts, _ := statusServer(b, db, clock)
	start := time.Now()
	getStatus(b, ts.URL)
	b.Logf("the first status (counting the finished messages) took %s", time.Since(start).Round(time.Millisecond))
	b.Run("status", func(b *testing.B) {
		for b.Loop() {
			getStatus(b, ts.URL)
		}
	})
	counts := db.Operations.NewStateCounter()
	if _, err := counts.Counts(context.Background(), clock.Now()); err != nil {
		b.Fatal(err)
	}
	b.Run("sample", func(b *testing.B) {
		for b.Loop() {
			if _, err := (&metrics.Sampler{DB: storetest.API(db), Counts: counts, Targets: dispatch.TargetSamples(db.Outbox), Clock: clock}).Sample(context.Background()); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("event-counts", func(b *testing.B) {
		for b.Loop() {
			if _, err := db.Outbox.EventCounts(context.Background()); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("count-by-state", func(b *testing.B) {
		for b.Loop() {
			if _, err := db.Operations.CountByState(context.Background()); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("scrape", func(b *testing.B) {
		for b.Loop() {
			scrape(b, ts.URL)
		}
	})
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
