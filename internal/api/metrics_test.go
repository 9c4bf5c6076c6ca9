package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"msgx/client"
	"msgx/internal/api"
	"msgx/internal/dispatch"
	"msgx/internal/inbox"
	"msgx/internal/metrics"
	"msgx/internal/pipeline"
	"msgx/internal/store"
	"msgx/internal/store/storetest"
	"msgx/internal/testkit"
)

// countingStore counts every call the sampler and the scrape could make to the database.
type countingStore struct {
	storetest.APIStore
	mu    sync.Mutex
	calls map[string]int
}

func (c *countingStore) count(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.calls == nil {
		c.calls = map[string]int{}
	}
	c.calls[name]++
}

func (c *countingStore) taken() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.calls
	c.calls = nil
	return out
}

func (c *countingStore) Ping(ctx context.Context) error { c.count("Ping"); return c.APIStore.Ping(ctx) }
func (c *countingStore) CountByState(ctx context.Context) (map[pipeline.ProcStatus]int, error) {
	c.count("CountByState")
	return c.APIStore.CountByState(ctx)
}
func (c *countingStore) CountStates(ctx context.Context, states ...pipeline.ProcStatus) (map[pipeline.ProcStatus]int, error) {
	c.count("CountStates")
	return c.APIStore.CountStates(ctx, states...)
}
func (c *countingStore) Head(ctx context.Context) (*store.Message, error) {
	c.count("Head")
	return c.APIStore.Head(ctx)
}
func (c *countingStore) DeadCounts(ctx context.Context) (store.DeadCounts, error) {
	c.count("DeadCounts")
	c.count("EventCounts") // store.DB's DeadCounts reads the outbox's counts itself
	return c.APIStore.DeadCounts(ctx)
}
func (c *countingStore) EventCounts(ctx context.Context) ([]store.EventCount, error) {
	c.count("EventCounts")
	return c.APIStore.EventCounts(ctx)
}
func (c *countingStore) PendingEvents(ctx context.Context, target string, limit int) ([]store.Event, error) {
	c.count("PendingEvents")
	return c.APIStore.PendingEvents(ctx, target, limit)
}
func (c *countingStore) PendingAtLeast(ctx context.Context, target string, n int) (bool, error) {
	c.count("PendingAtLeast")
	return c.APIStore.PendingAtLeast(ctx, target, n)
}
func (c *countingStore) ListEvents(ctx context.Context, f store.EventFilter) ([]store.Event, error) {
	c.count("ListEvents")
	return c.APIStore.ListEvents(ctx, f)
}
func (c *countingStore) EventTx(ctx context.Context, fn func(store.EventTx) error) error {
	c.count("EventTx")
	return c.APIStore.EventTx(ctx, fn)
}
func (c *countingStore) ReplayEvents(ctx context.Context, target string, ids []int64) (int, int, error) {
	c.count("ReplayEvents")
	return c.APIStore.ReplayEvents(ctx, target, ids)
}

func scrape(t testing.TB, url string) string {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("/metrics: %d %s", resp.StatusCode, b)
	}
	return string(b)
}

func wantLines(t testing.TB, body string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(body, "\n"+w+"\n") {
			t.Errorf("/metrics lacks the line %q", w)
		}
	}
}

// The inbox counts what it stores; the sampler reads the state through index-bounded
// queries, the outbox's counts once; a scrape then shows it with ages taken at the scrape's time, and makes no call to
// the database but the ping of msgx_database_up. An instance with no sample (a standby)
// shows no queue gauges, and says it does not hold the lease.
func TestMetricsScrapeReadsNoTable(t *testing.T) {
	t.Parallel()
	db := storetest.SQLite(t)
	cs := &countingStore{APIStore: storetest.API(db)}
	t0 := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	clock := testkit.NewClock(t0)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	health := api.NewHealth(cs, clock)
	health.Check(ctx)
	m := metrics.New(clock, "v-test", api.DatabaseUp(health))
	m.Register(health.SampleAges(m.SampledAt))
	inbox := inbox.New(db.Intake, clock, log, 1<<20, nil)
	inbox.Metrics = m
	go inbox.Run(ctx)
	srv := api.New(api.Deps{DB: storetest.API(db), Inbox: inbox, Clock: clock, Log: log, Extra: []func(*http.ServeMux){api.MetricsRoute(m)}})
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()

	// A standby: nothing sampled yet.
	body := scrape(t, ts.URL)
	wantLines(t, body, `msgx_lease_held 0`, `msgx_database_up 1`, `msgx_build_info{commit="`+metrics.Commit()+`",version="v-test"} 1`)
	if strings.Contains(body, "msgx_messages{") || strings.Contains(body, "msgx_head_age_seconds") {
		t.Errorf("an instance with no sample shows queue gauges:\n%s", body)
	}

	var ids []int64
	for range 3 {
		resp, err := http.Post(ts.URL+"/cminmsgs/send", "text/plain", strings.NewReader("<m/>"))
		if err != nil {
			t.Fatal(err)
		}
		var id int64
		fmt.Fscan(resp.Body, &id)
		resp.Body.Close()
		ids = append(ids, id)
	}
	// Message 1 succeeds with three events of T1 (two sent) and one of T2 (dead); message 2
	// fails and is the head.
	evs := []pipeline.Event{{Target: "T1", Kind: "k", Payload: []byte(`{}`)}, {Target: "T1", Kind: "k", Payload: []byte(`{}`)},
		{Target: "T1", Kind: "k", Payload: []byte(`{}`)}, {Target: "T2", Kind: "k", Payload: []byte(`{}`)}}
	if _, _, err := db.Processor.Succeed(ctx, ids[0], store.Success{TypeTag: "X-Y", Identity: "i|1", Decision: pipeline.Decision{Events: evs}}, nil, t0); err != nil {
		t.Fatal(err)
	}
	t1 := t0.Add(10 * time.Second)
	if err := db.Processor.Record(ctx, ids[1], store.Outcome{State: pipeline.Failed, Class: pipeline.Infra, Attempts: 1, FirstFailedAt: t1,
		NextAttemptAt: t1.Add(time.Second), LastError: "down"}, t1); err != nil {
		t.Fatal(err)
	}
	p1, _ := db.Outbox.PendingEvents(ctx, "T1", 3)
	p2, _ := db.Outbox.PendingEvents(ctx, "T2", 1)
	err := db.Outbox.EventTx(ctx, func(tx store.EventTx) error {
		if _, err := tx.MarkSent("T1", []int64{p1[0].EventID, p1[1].EventID}, t1); err != nil {
			return err
		}
		_, err := tx.Change([]*store.Event{&p2[0]}, store.EventChange{State: pipeline.EventDead, Class: pipeline.Rejected, LastError: "no"})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	cs.taken()
	snap, err := (&metrics.Sampler{DB: cs, Targets: dispatch.TargetSamples(cs), Clock: clock}).Sample(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := cs.taken()["EventCounts"]; n != 1 {
		t.Errorf("a sample read the outbox's counts %d times, want once", n)
	}
	// Counted by a StateCounter instead (as `msgx serve` does): the same counts.
	snap2, err := (&metrics.Sampler{DB: cs, Counts: db.Operations.NewStateCounter(), Targets: dispatch.TargetSamples(cs), Clock: clock}).Sample(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(snap2.Messages) != fmt.Sprint(snap.Messages) {
		t.Errorf("counted by a StateCounter: %v, by CountByState: %v", snap2.Messages, snap.Messages)
	}
	m.SetSnapshot(snap)
	cs.taken()

	clock.Set(t0.Add(time.Minute))
	for range 3 {
		body = scrape(t, ts.URL)
	}
	if calls := cs.taken(); len(calls) != 0 {
		t.Fatalf("three scrapes called the database: %v, want nothing (msgx_database_up is the background check's)", calls)
	}
	wantLines(t, body,
		`msgx_messages_received_total{source="inbox"} 3`,
		`msgx_messages{state="SUCCEEDED"} 1`, `msgx_messages{state="FAILED"} 1`, `msgx_messages{state="PENDING"} 1`,
		`msgx_events{state="SENT",target="T1"} 2`, `msgx_events{state="PENDING",target="T1"} 1`, `msgx_events{state="DEAD",target="T2"} 1`,
		`msgx_target_oldest_pending_age_seconds{target="T1"} 60`, `msgx_oldest_pending_event_age_seconds{target="T1"} 60`,
		`msgx_target_blocked_since_seconds{target="T1"} 0`,
		`msgx_head_blocked_seconds 50`, `msgx_head_message_attempts 1`,
		`msgx_state_sample_timestamp_seconds 1.796112e+09`, `msgx_sample_age_seconds{sample="state"} 60`,
		`msgx_database_up 0`, `msgx_sample_age_seconds{sample="database"} 60`)
	// The check a second before: up, and 1 s old.
	clock.Set(t0.Add(59 * time.Second))
	health.Check(ctx)
	clock.Set(t0.Add(time.Minute))
	wantLines(t, scrape(t, ts.URL), `msgx_database_up 1`, `msgx_sample_age_seconds{sample="database"} 1`)
	// The head was received at the inbox's clock (t0): 60 s old at the scrape.
	wantLines(t, body, `msgx_head_age_seconds 60`)

	// The database gone: the next check, then the scrape say so, still without a query.
	db.Close()
	health.Check(ctx)
	wantLines(t, scrape(t, ts.URL), `msgx_database_up 0`)
}

// Every route of the health family: /livez never reads the database; /readyz answers 200 only
// when the database answers and an unexpired pump lease exists (this instance's, whose pump
// must have stepped recently, or another's: a standby sees where the pump runs); /healthz
// keeps its answer.
func TestHealthRoutes(t *testing.T) {
	t.Parallel()
	db := storetest.SQLite(t)
	t0 := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	clock := testkit.NewClock(t0)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	var lastStep time.Time
	var mu sync.Mutex
	srv := api.New(api.Deps{DB: storetest.API(db), Inbox: inbox.New(db.Intake, clock, log, 1<<20, nil), Clock: clock, Log: log, Instance: "me",
		Pump: steppingPump{func() time.Time { mu.Lock(); defer mu.Unlock(); return lastStep }}})
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	ctx := context.Background()
	get := func(path string) (int, client.Readiness) {
		t.Helper()
		resp, err := http.Get(ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var r client.Readiness
		b, _ := io.ReadAll(resp.Body)
		json.Unmarshal(b, &r)
		return resp.StatusCode, r
	}
	check := func(what string, code int, r client.Readiness, wantCode int, reason string) {
		t.Helper()
		if code != wantCode || !strings.Contains(r.Reason, reason) {
			t.Errorf("%s: /readyz %d %+v, want %d with reason containing %q", what, code, r, wantCode, reason)
		}
	}

	if code, _ := get("/livez"); code != 200 {
		t.Errorf("/livez %d", code)
	}
	code, r := get("/readyz")
	check("no lease", code, r, 503, "no instance holds the pump lease")

	// Another instance holds the lease: this one (a standby) is ready and says who runs the pump.
	if err := db.Leases.AcquireLease(ctx, api.LeaseName, "other/pid-1/ab", 15*time.Second, t0); err != nil {
		t.Fatal(err)
	}
	code, r = get("/readyz")
	check("standby", code, r, 200, "")
	if !r.Ready || r.Pump == nil || r.Pump.Holder != "other/pid-1/ab" || r.Pump.ThisInstance || r.Database != "up" {
		t.Errorf("standby's readiness: %+v", r)
	}
	// Its lease expired and nobody took over: the pump runs nowhere.
	clock.Set(t0.Add(16 * time.Second))
	code, r = get("/readyz")
	check("expired lease", code, r, 503, "expired")

	// This instance holds the lease; its pump stepped 10 s ago: ready. Three minutes ago: stuck.
	if err := db.Leases.AcquireLease(ctx, api.LeaseName, "me", 15*time.Second, clock.Now()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	lastStep = clock.Now().Add(-10 * time.Second)
	mu.Unlock()
	code, r = get("/readyz")
	check("holder stepping", code, r, 200, "")
	if r.Pump == nil || !r.Pump.ThisInstance || r.Pump.LastStepAt == nil {
		t.Errorf("holder's readiness: %+v", r)
	}
	mu.Lock()
	lastStep = clock.Now().Add(-3 * time.Minute)
	mu.Unlock()
	code, r = get("/readyz")
	check("holder stuck", code, r, 503, "has not stepped since")

	// The database gone: not ready, /healthz 503, /livez still 200.
	db.Close()
	code, r = get("/readyz")
	check("database down", code, r, 503, "database unreachable")
	if r.Database != "down" {
		t.Errorf("database down: %+v", r)
	}
	if code, _ := get("/healthz"); code != 503 {
		t.Errorf("/healthz with the database down: %d", code)
	}
	if code, _ := get("/livez"); code != 200 {
		t.Errorf("/livez with the database down: %d", code)
	}
}

// steppingPump is a pump whose last step the test sets; it foresees nothing and never halts.
type steppingPump struct{ last func() time.Time }

func (p steppingPump) Wake() {}
func (p steppingPump) Foresee(context.Context, int64) (api.Foresight, error) {
	return api.Foresight{}, nil
}
func (p steppingPump) LastStep() time.Time { return p.last() }
func (p steppingPump) Halted() string      { return "" }
