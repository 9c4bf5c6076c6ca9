package api_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
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

// hangingStore is a database that, once hung, never returns from a call (as a Galera node
// stopped by SIGSTOP, behind a driver that ignores its context), until the test ends.
type hangingStore struct {
	storetest.APIStore
	hung   atomic.Bool
	freeze chan struct{} // closed at the end of the test
}

func (h *hangingStore) hang() {
	if h.hung.Load() {
		<-h.freeze
	}
}

func (h *hangingStore) Ping(ctx context.Context) error { h.hang(); return h.APIStore.Ping(ctx) }
func (h *hangingStore) LeaseHolder(ctx context.Context, name string) (string, time.Time, error) {
	h.hang()
	return h.APIStore.LeaseHolder(ctx, name)
}
func (h *hangingStore) CountByState(ctx context.Context) (map[pipeline.ProcStatus]int, error) {
	h.hang()
	return h.APIStore.CountByState(ctx)
}
func (h *hangingStore) Head(ctx context.Context) (*store.Message, error) {
	h.hang()
	return h.APIStore.Head(ctx)
}
func (h *hangingStore) Pause(ctx context.Context, name string) (*store.Pause, error) {
	h.hang()
	return h.APIStore.Pause(ctx, name)
}

// /livez, /readyz and /metrics answer within a second while every database call hangs, from
// the values the background check and the state sampler keep; each says how old they are, and
// /readyz turns 503 once the last check that succeeded is older than Health.Stale. Without
// the background check the routes hang with the database.
func TestHealthRoutesAnswerInAHang(t *testing.T) {
	t.Parallel()
	db := storetest.SQLite(t)
	hs := &hangingStore{APIStore: storetest.API(db), freeze: make(chan struct{})}
	clock := pipeline.SystemClock{}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := db.Leases.AcquireLease(ctx, api.LeaseName, "other/pid-1/ab", time.Hour, clock.Now()); err != nil {
		t.Fatal(err)
	}
	health := api.NewHealth(hs, clock)
	health.Every, health.Stale = 50*time.Millisecond, 500*time.Millisecond
	m := metrics.New(clock, "v-test", api.DatabaseUp(health))
	m.Register(health.SampleAges(m.SampledAt))
	go health.Run(ctx)
	sampler := &metrics.Sampler{DB: hs, Targets: dispatch.TargetSamples(hs), Clock: clock, Log: log, Every: 50 * time.Millisecond}
	go sampler.Run(ctx, m)
	srv := api.New(api.Deps{DB: hs, Inbox: inbox.New(db.Intake, clock, log, 1<<20, nil), Clock: clock, Log: log, Instance: "me",
		Health: health, Extra: []func(*http.ServeMux){api.MetricsRoute(m)}})
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	defer close(hs.freeze)                   // before ts.Close, which waits for the handlers
	hc := &http.Client{Timeout: time.Second} // a hang detector: these routes read memory only
	get := func(path string) (int, string) {
		t.Helper()
		start := time.Now()
		resp, err := hc.Get(ts.URL + path)
		if err != nil {
			t.Fatalf("%s while the database hangs: %v", path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		t.Logf("%s answered %d in %s", path, resp.StatusCode, time.Since(start).Round(time.Millisecond))
		return resp.StatusCode, string(b)
	}
	testkit.Eventually(t, 20*time.Second, "a check and a state sample", func() bool { return health.Up() && !m.SampledAt().IsZero() })
	if code, body := get("/readyz"); code != 200 {
		t.Fatalf("/readyz before the hang: %d %s", code, body)
	}

	hs.hung.Store(true)
	time.Sleep(100 * time.Millisecond) // the check and the sampler are now stuck in a call
	for _, path := range []string{"/livez", "/readyz", "/metrics"} {
		if code, body := get(path); code != 200 {
			t.Errorf("%s just after the hang began: %d %s", path, code, body)
		}
	}
	time.Sleep(700 * time.Millisecond) // past Stale
	code, body := get("/readyz")
	var rd client.Readiness
	json.Unmarshal([]byte(body), &rd)
	if code != 503 || rd.Database != "down" || !strings.Contains(rd.Reason, "has not answered a check") || rd.DatabaseCheckAge < 0.5 || rd.DatabaseCheckedAt == nil {
		t.Errorf("/readyz in the hang: %d %s", code, body)
	}
	if code, _ := get("/livez"); code != 200 {
		t.Errorf("/livez in the hang: %d", code)
	}
	code, body = get("/metrics")
	if code != 200 || !strings.Contains(body, "\nmsgx_database_up 0\n") || !strings.Contains(body, `msgx_sample_age_seconds{sample="database"}`) ||
		!strings.Contains(body, `msgx_sample_age_seconds{sample="state"}`) || !strings.Contains(body, `msgx_messages{`) {
		t.Errorf("/metrics in the hang: %d\n%s", code, body)
	}
}
