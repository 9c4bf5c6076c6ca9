package eureka

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// fakeEureka is a Eureka server that keeps the instances registered with it and records
// every call as "METHOD path[?query]".
type fakeEureka struct {
	mu        sync.Mutex
	calls     []string
	instances map[string]map[string]any // "APP/id" → instance document
	status    map[string]string
	down      bool // answer 503 to everything
	srv       *httptest.Server
}

func newFake(t *testing.T) *fakeEureka {
	f := &fakeEureka{instances: map[string]map[string]any{}, status: map[string]string{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeEureka) url() string { return f.srv.URL + "/eureka/" }

func (f *fakeEureka) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	call := r.Method + " " + r.URL.Path
	if r.URL.RawQuery != "" {
		call += "?" + r.URL.RawQuery
	}
	f.calls = append(f.calls, call)
	if f.down {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/eureka/apps/"), "/")
	switch {
	case r.Method == http.MethodPost && len(parts) == 1:
		var doc struct {
			Instance map[string]any `json:"instance"`
		}
		b, _ := io.ReadAll(r.Body)
		if json.Unmarshal(b, &doc) != nil || doc.Instance == nil || doc.Instance["app"] != parts[0] {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		key := parts[0] + "/" + doc.Instance["instanceId"].(string)
		f.instances[key] = doc.Instance
		f.status[key] = doc.Instance["status"].(string)
		w.WriteHeader(http.StatusNoContent)
	case len(parts) >= 2:
		key := parts[0] + "/" + parts[1]
		if _, ok := f.instances[key]; !ok {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		switch {
		case r.Method == http.MethodPut && len(parts) == 2:
		case r.Method == http.MethodPut && len(parts) == 3 && parts[2] == "status":
			f.status[key] = r.URL.Query().Get("value")
		case r.Method == http.MethodDelete && len(parts) == 2:
			delete(f.instances, key)
			delete(f.status, key)
		default:
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusOK)
	default:
		w.WriteHeader(http.StatusBadRequest)
	}
}

func (f *fakeEureka) takeCalls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.calls
	f.calls = nil
	return c
}

func (f *fakeEureka) forget() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.instances = map[string]map[string]any{}
	f.status = map[string]string{}
}

func (f *fakeEureka) setDown(d bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down = d
}

func (f *fakeEureka) statusOf(key string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.status[key]
}

// health is a switchable Health function.
type health struct {
	mu sync.Mutex
	up bool
}

func (h *health) set(up bool) { h.mu.Lock(); h.up = up; h.mu.Unlock() }
func (h *health) check(context.Context) (bool, string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.up, "pump standing by"
}

func newRegistrar(urls []string, h *health) *Registrar {
	return New(Config{
		ServiceURLs: urls, Name: "msgexchangeapi", HostName: "node1", IPAddr: "10.1.2.3", Port: 8080,
		Heartbeat: 30 * time.Second, Health: h.check, Timeout: 2 * time.Second,
	})
}

const instancePath = "/eureka/apps/MSGEXCHANGEAPI/node1:msgexchangeapi:8080"

func TestRegisterSendsTheInstance(t *testing.T) {
	f := newFake(t)
	r := newRegistrar([]string{f.url()}, &health{up: true})
	if err := r.Register(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := f.takeCalls(); !slices.Equal(got, []string{"POST /eureka/apps/MSGEXCHANGEAPI"}) {
		t.Fatalf("calls %v", got)
	}
	inst := f.instances["MSGEXCHANGEAPI/node1:msgexchangeapi:8080"]
	for k, want := range map[string]any{
		"app": "MSGEXCHANGEAPI", "vipAddress": "msgexchangeapi", "hostName": "node1", "ipAddr": "10.1.2.3",
		"status": "UP", "healthCheckUrl": "http://node1:8080/healthz",
	} {
		if inst[k] != want {
			t.Errorf("instance %s = %v, want %v", k, inst[k], want)
		}
	}
	if port, _ := inst["port"].(map[string]any); port["$"] != float64(8080) || port["@enabled"] != "true" {
		t.Errorf("port %v", inst["port"])
	}
	if dc, _ := inst["dataCenterInfo"].(map[string]any); dc["name"] != "MyOwn" {
		t.Errorf("dataCenterInfo %v", inst["dataCenterInfo"])
	}
	if lease, _ := inst["leaseInfo"].(map[string]any); lease["renewalIntervalInSecs"] != float64(30) {
		t.Errorf("leaseInfo %v", inst["leaseInfo"])
	}
}

func TestHeartbeatReRegistersOn404(t *testing.T) {
	f := newFake(t)
	r := newRegistrar([]string{f.url()}, &health{up: true})
	ctx := context.Background()
	if err := r.Register(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.Heartbeat(ctx); err != nil {
		t.Fatal(err)
	}
	f.forget() // the server restarted
	if err := r.Heartbeat(ctx); err != nil {
		t.Fatal(err)
	}
	want := []string{"POST /eureka/apps/MSGEXCHANGEAPI", "PUT " + instancePath, "PUT " + instancePath, "POST /eureka/apps/MSGEXCHANGEAPI"}
	if got := f.takeCalls(); !slices.Equal(got, want) {
		t.Fatalf("calls\n got  %v\n want %v", got, want)
	}
	if ok, _ := r.Registered(); !ok {
		t.Error("not registered after the 404")
	}
}

func TestStatusFollowsHealth(t *testing.T) {
	f := newFake(t)
	h := &health{up: false}
	r := newRegistrar([]string{f.url()}, h)
	ctx := context.Background()
	if err := r.Register(ctx); err != nil {
		t.Fatal(err)
	}
	key := "MSGEXCHANGEAPI/node1:msgexchangeapi:8080"
	if s := f.statusOf(key); s != StatusOutOfService {
		t.Errorf("registered as %s, want OUT_OF_SERVICE", s)
	}
	if err := r.FollowHealth(ctx); err != nil { // no change: no call
		t.Fatal(err)
	}
	h.set(true)
	if err := r.FollowHealth(ctx); err != nil {
		t.Fatal(err)
	}
	h.set(false)
	if err := r.FollowHealth(ctx); err != nil {
		t.Fatal(err)
	}
	want := []string{"POST /eureka/apps/MSGEXCHANGEAPI",
		"PUT " + instancePath + "/status?value=UP",
		"PUT " + instancePath + "/status?value=OUT_OF_SERVICE"}
	if got := f.takeCalls(); !slices.Equal(got, want) {
		t.Fatalf("calls\n got  %v\n want %v", got, want)
	}
	if s := f.statusOf(key); s != StatusOutOfService {
		t.Errorf("status %s", s)
	}
}

func TestDeregister(t *testing.T) {
	f := newFake(t)
	r := newRegistrar([]string{f.url()}, &health{up: true})
	ctx := context.Background()
	if err := r.Deregister(ctx); err != nil { // not registered: nothing to do
		t.Fatal(err)
	}
	r.Register(ctx)
	if err := r.Deregister(ctx); err != nil {
		t.Fatal(err)
	}
	want := []string{"POST /eureka/apps/MSGEXCHANGEAPI", "DELETE " + instancePath}
	if got := f.takeCalls(); !slices.Equal(got, want) {
		t.Fatalf("calls %v", got)
	}
	if len(f.instances) != 0 {
		t.Errorf("still registered: %v", f.instances)
	}
}

func TestFailsOverToTheNextServer(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := "http://" + ln.Addr().String() + "/eureka"
	ln.Close()
	f := newFake(t)
	r := newRegistrar([]string{dead, f.url()}, &health{up: true})
	if err := r.Register(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := failures(t, r); got != 1 {
		t.Errorf("failures %v, want 1 (the dead server)", got)
	}
	r.Heartbeat(context.Background()) // goes to the server that answered
	if got := failures(t, r); got != 1 {
		t.Errorf("failures after the heartbeat %v, want 1", got)
	}
}

// TestRunRetriesUntilEurekaIsUpThenDeregisters: Eureka down at start never stops Run; it
// retries with doubling backoff (capped at the heartbeat), counts each failure, registers once
// the server answers, heartbeats, and deregisters when its context ends. No real sleeping:
// the Sleep hook drives the loop.
func TestRunRetriesUntilEurekaIsUpThenDeregisters(t *testing.T) {
	f := newFake(t)
	f.setDown(true)
	h := &health{up: true}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var waits []time.Duration
	r := New(Config{
		ServiceURLs: []string{f.url()}, Name: "msgexchangeapi-shadow", HostName: "node1", IPAddr: "10.1.2.3", Port: 8080,
		Heartbeat: 4 * time.Second, HealthEvery: 2 * time.Second, Health: h.check,
		Sleep: func(ctx context.Context, d time.Duration) error {
			waits = append(waits, d)
			switch len(waits) {
			case 4:
				f.setDown(false)
			case 6:
				h.set(false)
			case 9:
				cancel()
			}
			return ctx.Err()
		},
	})
	r.Run(ctx)
	wantWaits := []time.Duration{1, 2, 4, 4, 2, 2, 2, 2, 2}
	for i := range wantWaits {
		wantWaits[i] *= time.Second
	}
	if !slices.Equal(waits, wantWaits) {
		t.Errorf("waits %v, want %v", waits, wantWaits)
	}
	p := "/eureka/apps/MSGEXCHANGEAPI-SHADOW/node1:msgexchangeapi-shadow:8080"
	want := []string{
		"POST /eureka/apps/MSGEXCHANGEAPI-SHADOW", "POST /eureka/apps/MSGEXCHANGEAPI-SHADOW",
		"POST /eureka/apps/MSGEXCHANGEAPI-SHADOW", "POST /eureka/apps/MSGEXCHANGEAPI-SHADOW",
		"POST /eureka/apps/MSGEXCHANGEAPI-SHADOW",   // up now
		"PUT " + p + "/status?value=OUT_OF_SERVICE", // health turned at the second tick
		"PUT " + p, // heartbeat after 4s
		"PUT " + p, // and after 8s
		"DELETE " + p,
	}
	if got := f.takeCalls(); !slices.Equal(got, want) {
		t.Errorf("calls\n got  %v\n want %v", got, want)
	}
	if got := failures(t, r); got != 4 {
		t.Errorf("failures %v, want 4", got)
	}
	if ok, _ := r.Registered(); ok {
		t.Error("still registered after Run ended")
	}
}

func failures(t *testing.T, r *Registrar) float64 {
	t.Helper()
	var m dto.Metric
	if err := r.failures.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// TestARegistrationCutOffByShutdownIsStillDeregistered: SIGTERM while a registration's answer
// is on its way (the server took it, msgx never heard back) must still end in a DELETE, or the
// server keeps an instance that is gone until its lease expires.
func TestARegistrationCutOffByShutdownIsStillDeregistered(t *testing.T) {
	f := newFake(t)
	took := make(chan struct{})
	var once sync.Once
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method == http.MethodPost {
			f.serve(httptest.NewRecorder(), req) // the server registers the instance…
			once.Do(func() { close(took) })
			<-req.Context().Done() // …and its answer never reaches msgx
			return
		}
		f.serve(w, req)
	}))
	t.Cleanup(slow.Close)
	r := newRegistrar([]string{slow.URL + "/eureka/"}, &health{up: true})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	<-took
	cancel()
	<-done
	if got := f.takeCalls(); !slices.Equal(got, []string{"POST /eureka/apps/MSGEXCHANGEAPI", "DELETE " + instancePath}) {
		t.Errorf("calls %v, want the POST then a DELETE", got)
	}
	if len(f.instances) != 0 {
		t.Errorf("still registered: %v", f.instances)
	}
}
