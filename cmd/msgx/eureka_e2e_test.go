package main_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// eurekaFake is a Eureka server that records each call as "METHOD path[?query]", keeps the
// registered instances with their status, and answers 404 for an unknown instance.
type eurekaFake struct {
	mu     sync.Mutex
	calls  []string
	status map[string]string // "APP/instanceId" → status
	srv    *httptest.Server
}

func newEurekaFake(t *testing.T) *eurekaFake {
	f := &eurekaFake{status: map[string]string{}}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		call := r.Method + " " + r.URL.Path
		if r.URL.RawQuery != "" {
			call += "?" + r.URL.RawQuery
		}
		f.calls = append(f.calls, call)
		parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/eureka/apps/"), "/")
		if r.Method == http.MethodPost && len(parts) == 1 {
			var doc struct {
				Instance struct {
					App, InstanceID, Status, VipAddress string
				} `json:"instance"`
			}
			b, _ := io.ReadAll(r.Body)
			if json.Unmarshal(b, &doc) != nil || doc.Instance.App != parts[0] || doc.Instance.InstanceID == "" {
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			f.status[parts[0]+"/"+doc.Instance.InstanceID] = doc.Instance.Status
			w.WriteHeader(http.StatusNoContent)
			return
		}
		if len(parts) < 2 {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		key := parts[0] + "/" + parts[1]
		if _, ok := f.status[key]; !ok {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		switch {
		case r.Method == http.MethodPut && len(parts) == 3:
			f.status[key] = r.URL.Query().Get("value")
		case r.Method == http.MethodDelete:
			delete(f.status, key)
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *eurekaFake) url() string { return f.srv.URL + "/eureka" }

// count returns how many calls start with prefix.
func (f *eurekaFake) count(prefix string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.calls {
		if strings.HasPrefix(c, prefix) {
			n++
		}
	}
	return n
}

// forget drops every registered instance, as a restarted server would.
func (f *eurekaFake) forget() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.status = map[string]string{}
}

// snapshot returns the calls so far.
func (f *eurekaFake) snapshot() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// registered returns the registered instances of app with their status.
func (f *eurekaFake) registered(app string) map[string]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]string{}
	for k, s := range f.status {
		if a, id, _ := strings.Cut(k, "/"); a == app {
			out[id] = s
		}
	}
	return out
}

func (f *eurekaFake) waitFor(t *testing.T, what string, cond func() bool, logs func() string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("eureka never saw %s; calls %v\n%s", what, f.snapshot(), logs())
}

// TestEurekaRegistersHeartbeatsAndDeregisters: serve registers under msgexchangeapi (in shadow
// mode msgexchangeapi-shadow) with status UP once it holds the pump lease, sends heartbeats at
// eureka.heartbeat, and deregisters on SIGTERM.
func TestEurekaRegistersHeartbeatsAndDeregisters(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db dbEnv) {
		for _, mode := range []struct{ mode, app string }{{"normal", "MSGEXCHANGEAPI"}, {"shadow", "MSGEXCHANGEAPI-SHADOW"}} {
			f := newEurekaFake(t)
			env := []string{"MSGX_EUREKA_ENABLED=true", "MSGX_EUREKA_SERVICE_URL=" + f.url(), "MSGX_EUREKA_HEARTBEAT=200ms"}
			if mode.mode == "shadow" {
				env = append(env, "MSGX_MODE=shadow")
			}
			s := db.start(t, env...)
			f.waitFor(t, mode.app+" registered UP and 2 heartbeats", func() bool {
				reg := f.registered(mode.app)
				up := len(reg) == 1
				for _, st := range reg {
					up = up && st == "UP"
				}
				return up && f.count("PUT /eureka/apps/"+mode.app+"/") >= 2
			}, s.logs.String)
			if n := f.count("POST /eureka/apps/" + mode.app); n < 1 {
				t.Errorf("%s: %d registrations", mode.mode, n)
			}
			for _, c := range f.snapshot() {
				if strings.HasPrefix(c, "POST ") && c != "POST /eureka/apps/"+mode.app {
					t.Errorf("%s mode: %s", mode.mode, c)
				}
			}
			// Eureka restarts and forgets the instance: the next heartbeat answers 404, and
			// msgx registers again.
			posts := f.count("POST /eureka/apps/" + mode.app)
			f.forget()
			f.waitFor(t, mode.app+" registered again after a 404", func() bool {
				return len(f.registered(mode.app)) == 1 && f.count("POST /eureka/apps/"+mode.app) > posts
			}, s.logs.String)
			if err := s.stop(); err != nil {
				t.Fatalf("stop: %v\n%s", err, s.logs)
			}
			if reg := f.registered(mode.app); len(reg) != 0 {
				t.Errorf("%s: still registered after SIGTERM: %v\n%s", mode.mode, reg, s.logs)
			}
			if f.count("DELETE /eureka/apps/"+mode.app+"/") != 1 {
				t.Errorf("%s: no DELETE on SIGTERM\n%s", mode.mode, s.logs)
			}
		}
	})
}

// TestEurekaStandbyIsOutOfService: on MariaDB a second instance stands by for the pump lease;
// it registers OUT_OF_SERVICE, and turns UP when it takes over after the first one stops.
func TestEurekaStandbyIsOutOfService(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db dbEnv) {
		if db.Driver != "mysql" {
			return // SQLite has no standby (a second instance exits with code 3)
		}
		f := newEurekaFake(t)
		env := []string{"MSGX_EUREKA_ENABLED=true", "MSGX_EUREKA_SERVICE_URL=" + f.url(), "MSGX_EUREKA_HEARTBEAT=200ms"}
		s1 := db.start(t, env...)
		f.waitFor(t, "the first instance UP", func() bool { return len(f.registered("MSGEXCHANGEAPI")) == 1 }, s1.logs.String)
		s2 := db.start(t, env...)
		f.waitFor(t, "one UP and one OUT_OF_SERVICE", func() bool {
			var got []string
			for _, st := range f.registered("MSGEXCHANGEAPI") {
				got = append(got, st)
			}
			slices.Sort(got)
			return slices.Equal(got, []string{"OUT_OF_SERVICE", "UP"})
		}, s2.logs.String)
		s1.stop()
		f.waitFor(t, "the standby UP after the holder stopped", func() bool {
			reg := f.registered("MSGEXCHANGEAPI")
			if len(reg) != 1 {
				return false
			}
			for _, st := range reg {
				return st == "UP"
			}
			return false
		}, s2.logs.String)
		if calls := strings.Join(f.snapshot(), " "); !strings.Contains(calls, "/status?value=UP") {
			t.Errorf("the standby never set its status UP: %s", calls)
		}
	})
}

// TestEurekaDownNeverStopsTheStart: with every Eureka server unreachable, serve starts, serves,
// and counts the failed calls in msgx_eureka_failures_total.
func TestEurekaDownNeverStopsTheStart(t *testing.T) {
	t.Parallel()
	dead := "http://" + freeAddr(t) + "/eureka"
	s := start(t, t.TempDir(), "MSGX_EUREKA_ENABLED=true", "MSGX_EUREKA_SERVICE_URL="+dead, "MSGX_EUREKA_HEARTBEAT=200ms")
	deadline := time.Now().Add(20 * time.Second)
	for {
		b := s.metrics()
		if strings.Contains(b, "msgx_eureka_failures_total") && !strings.Contains(b, "msgx_eureka_failures_total 0\n") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no failure counted:\n%s\n%s", b, s.logs)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(s.logs.String(), "eureka: cannot register") {
		t.Errorf("no log line about the failed registration:\n%s", s.logs)
	}
	if err := s.stop(); err != nil {
		t.Errorf("stop: %v", err)
	}
}
