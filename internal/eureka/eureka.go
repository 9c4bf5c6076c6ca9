// Package eureka registers msgx with a Netflix Eureka server (REST API v2, the calls a Spring
// Cloud client makes), so that the legacy's consumers find it under the contract name
// (seed §6, U17: msgexchangeapi; msgexchangeapi-shadow in shadow mode).
//
// A Registrar registers the instance, sends a heartbeat every Config.Heartbeat, registers
// again when a heartbeat answers 404 (the server forgot the instance: it restarted, or the
// lease expired), moves the instance between UP and OUT_OF_SERVICE as Config.Health says,
// and deregisters when its context ends. Eureka being down never stops msgx: every failure is
// logged, counted (msgx_eureka_failures_total) and tried again with backoff.
//
// The calls, relative to each server URL (for example http://eureka:8761/eureka):
//
//	POST   /apps/{APP}                      register: {"instance": {…}}, 204
//	PUT    /apps/{APP}/{id}                 heartbeat: 200, 404 when unknown
//	PUT    /apps/{APP}/{id}/status?value=S  status UP or OUT_OF_SERVICE: 200
//	DELETE /apps/{APP}/{id}                 deregister: 200
//
// APP is the service name upper-cased, as Eureka stores application names; the instance's
// vipAddress keeps it as configured, which is what clients look it up by.
package eureka

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"msgx/internal/pipeline"
)

// Instance statuses msgx reports.
const (
	StatusUp           = "UP"
	StatusOutOfService = "OUT_OF_SERVICE"
)

// Config is what a Registrar registers and how often.
type Config struct {
	ServiceURLs []string // Eureka servers, tried in order: http://host:8761/eureka
	Name        string   // service name: msgexchangeapi (…-shadow in shadow mode)
	InstanceID  string   // default host:name:port
	HostName    string
	IPAddr      string
	Port        int
	// Heartbeat is the renewal interval (Eureka's default 30s); the lease the server keeps
	// without a heartbeat is three of them.
	Heartbeat time.Duration
	// HealthEvery is how often Health is asked between heartbeats (default: Heartbeat, at
	// most 5s), so that a change of status reaches Eureka quickly.
	HealthEvery time.Duration
	// Health says whether the instance should take traffic (UP) and, when not, why.
	// nil means always UP.
	Health func(ctx context.Context) (up bool, why string)
	// Timeout bounds one call to a server (default 5s).
	Timeout time.Duration
	Client  *http.Client
	Logger  *slog.Logger
	// Sleep waits d or until ctx ends (tests replace it); nil waits on a real timer.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Registrar keeps one instance registered. Run it in a goroutine.
type Registrar struct {
	cfg      Config
	log      *slog.Logger
	failures prometheus.Counter

	mu         sync.Mutex
	registered bool
	// unsure: a registration was cut off by the end of its context after it was sent, so the
	// server may know the instance although registered is false; Deregister then still sends
	// the DELETE.
	unsure bool
	status string // last status Eureka accepted
	server int    // index of the server that answered last
}

// New returns a Registrar for cfg with its defaults applied.
func New(cfg Config) *Registrar {
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = 30 * time.Second
	}
	if cfg.HealthEvery <= 0 {
		cfg.HealthEvery = min(cfg.Heartbeat, 5*time.Second)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Second
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{}
	}
	if cfg.InstanceID == "" {
		cfg.InstanceID = fmt.Sprintf("%s:%s:%d", cfg.HostName, cfg.Name, cfg.Port)
	}
	if cfg.Sleep == nil {
		cfg.Sleep = sleep
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Registrar{
		cfg: cfg,
		log: log.With("eureka_app", App(cfg.Name), "eureka_instance", cfg.InstanceID),
		failures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "msgx_eureka_failures_total",
			Help: "Calls to the Eureka servers that failed (register, heartbeat, status, deregister); each is tried again.",
		}),
	}
}

// App is the application name Eureka stores for a service name.
func App(name string) string { return strings.ToUpper(name) }

// Failures is the counter of failed calls, for /metrics.
func (r *Registrar) Failures() prometheus.Collector { return r.failures }

// Registered reports whether the instance is registered (as far as msgx knows) and with which
// status.
func (r *Registrar) Registered() (bool, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.registered, r.status
}

func sleep(ctx context.Context, d time.Duration) error {
	if !pipeline.Sleep(ctx, d) {
		return ctx.Err()
	}
	return nil
}

// Run registers, then heartbeats and follows Health until ctx ends, then deregisters (with a
// context of its own, bounded by Timeout). Failures are retried: registration with backoff
// from 1s doubling up to Heartbeat, heartbeats and status changes at the next tick.
func (r *Registrar) Run(ctx context.Context) {
	for failures := 1; !r.isRegistered(); failures++ {
		if err := r.Register(ctx); err != nil {
			if ctx.Err() != nil {
				r.deregisterOnExit() // the registration may have reached the server
				return
			}
			backoff := pipeline.Backoff(failures, time.Second, max(r.cfg.Heartbeat, time.Second))
			r.log.Warn("eureka: cannot register; retrying", "err", err.Error(), "retry_in", backoff.String())
			if r.cfg.Sleep(ctx, backoff) != nil {
				return
			}
			continue
		}
	}
	defer r.deregisterOnExit()
	sinceBeat := time.Duration(0)
	for {
		if r.cfg.Sleep(ctx, r.cfg.HealthEvery) != nil {
			return
		}
		sinceBeat += r.cfg.HealthEvery
		if err := r.FollowHealth(ctx); err != nil && ctx.Err() == nil {
			r.log.Warn("eureka: cannot change the instance status; retrying", "err", err.Error())
		}
		if sinceBeat >= r.cfg.Heartbeat {
			sinceBeat = 0
			if err := r.Heartbeat(ctx); err != nil && ctx.Err() == nil {
				r.log.Warn("eureka: heartbeat failed; retrying at the next one", "err", err.Error())
			}
		}
	}
}

func (r *Registrar) isRegistered() bool {
	ok, _ := r.Registered()
	return ok
}

func (r *Registrar) deregisterOnExit() {
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.Timeout)
	defer cancel()
	if err := r.Deregister(ctx); err != nil {
		r.log.Warn("eureka: cannot deregister; the server drops the instance when its lease expires", "err", err.Error())
	}
}

// health returns the status Health asks for.
func (r *Registrar) health(ctx context.Context) (string, string) {
	if r.cfg.Health == nil {
		return StatusUp, ""
	}
	if up, why := r.cfg.Health(ctx); !up {
		return StatusOutOfService, why
	}
	return StatusUp, ""
}

// instance is the instance document of a registration.
func (r *Registrar) instance(status string) ([]byte, error) {
	c := r.cfg
	host := c.HostName
	base := "http://" + host + ":" + strconv.Itoa(c.Port)
	doc := map[string]any{"instance": map[string]any{
		"instanceId":       c.InstanceID,
		"hostName":         host,
		"app":              App(c.Name),
		"ipAddr":           c.IPAddr,
		"vipAddress":       c.Name,
		"secureVipAddress": c.Name,
		"status":           status,
		"port":             map[string]any{"$": c.Port, "@enabled": "true"},
		"securePort":       map[string]any{"$": 443, "@enabled": "false"},
		"homePageUrl":      base + "/",
		"statusPageUrl":    base + "/api/v1/status",
		"healthCheckUrl":   base + "/healthz",
		"dataCenterInfo": map[string]any{
			"@class": "com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo",
			"name":   "MyOwn",
		},
		"leaseInfo": map[string]any{
			"renewalIntervalInSecs": int(max(c.Heartbeat/time.Second, 1)),
			"durationInSecs":        int(max(3*c.Heartbeat/time.Second, 1)),
		},
		"metadata": map[string]any{"management.port": strconv.Itoa(c.Port)},
	}}
	return json.Marshal(doc)
}

// Register registers the instance with the status Health gives now.
func (r *Registrar) Register(ctx context.Context) error {
	status, why := r.health(ctx)
	body, err := r.instance(status)
	if err != nil {
		return err
	}
	if _, err := r.call(ctx, http.MethodPost, "/apps/"+url.PathEscape(App(r.cfg.Name)), body, http.StatusNoContent, http.StatusOK); err != nil {
		if ctx.Err() != nil {
			r.mu.Lock()
			r.unsure = true
			r.mu.Unlock()
		}
		return fmt.Errorf("register %s: %w", App(r.cfg.Name), err)
	}
	r.mu.Lock()
	r.registered, r.status, r.unsure = true, status, false
	r.mu.Unlock()
	r.log.Info("eureka: registered", "status", status, "why", why)
	return nil
}

func (r *Registrar) instancePath() string {
	return "/apps/" + url.PathEscape(App(r.cfg.Name)) + "/" + url.PathEscape(r.cfg.InstanceID)
}

// errUnknown is a 404: the server does not know the instance.
var errUnknown = errors.New("the server does not know the instance (404)")

// Heartbeat renews the lease; on a 404 it registers again.
func (r *Registrar) Heartbeat(ctx context.Context) error {
	_, err := r.call(ctx, http.MethodPut, r.instancePath(), nil, http.StatusOK)
	if errors.Is(err, errUnknown) {
		r.log.Warn("eureka: heartbeat answered 404; registering again")
		r.mu.Lock()
		r.registered = false
		r.mu.Unlock()
		return r.Register(ctx)
	}
	if err != nil {
		return fmt.Errorf("heartbeat: %w", err)
	}
	return nil
}

// FollowHealth asks Health and, when its answer differs from the status Eureka has, sets it.
func (r *Registrar) FollowHealth(ctx context.Context) error {
	status, why := r.health(ctx)
	r.mu.Lock()
	same := r.status == status
	r.mu.Unlock()
	if same {
		return nil
	}
	return r.SetStatus(ctx, status, why)
}

// SetStatus sets the instance's status on the server.
func (r *Registrar) SetStatus(ctx context.Context, status, why string) error {
	_, err := r.call(ctx, http.MethodPut, r.instancePath()+"/status?value="+url.QueryEscape(status), nil, http.StatusOK)
	if errors.Is(err, errUnknown) {
		r.mu.Lock()
		r.registered = false
		r.mu.Unlock()
		return r.Register(ctx) // registers with the status Health gives now
	}
	if err != nil {
		return fmt.Errorf("status %s: %w", status, err)
	}
	r.mu.Lock()
	r.status = status
	r.mu.Unlock()
	r.log.Info("eureka: status changed", "status", status, "why", why)
	return nil
}

// Deregister removes the instance (nothing to do when it is not registered, unless a
// registration was cut off after it was sent: the server may know the instance then).
func (r *Registrar) Deregister(ctx context.Context) error {
	r.mu.Lock()
	known := r.registered || r.unsure
	r.mu.Unlock()
	if !known {
		return nil
	}
	_, err := r.call(ctx, http.MethodDelete, r.instancePath(), nil, http.StatusOK)
	if err != nil && !errors.Is(err, errUnknown) {
		return fmt.Errorf("deregister: %w", err)
	}
	r.mu.Lock()
	r.registered, r.unsure = false, false
	r.mu.Unlock()
	r.log.Info("eureka: deregistered")
	return nil
}

// call sends one request to the servers, starting with the one that answered last and going
// on to the next on a network error or a 5xx. A 404 is errUnknown; another status outside
// ok fails at once. Each failed server counts one failure.
func (r *Registrar) call(ctx context.Context, method, path string, body []byte, ok ...int) (int, error) {
	if len(r.cfg.ServiceURLs) == 0 {
		return 0, errors.New("no eureka.service-url")
	}
	r.mu.Lock()
	first := r.server
	r.mu.Unlock()
	var errs []error
	for i := range r.cfg.ServiceURLs {
		idx := (first + i) % len(r.cfg.ServiceURLs)
		base := strings.TrimSuffix(r.cfg.ServiceURLs[idx], "/")
		code, err := r.once(ctx, method, base+path, body)
		if err == nil {
			for _, c := range ok {
				if code == c {
					r.mu.Lock()
					r.server = idx
					r.mu.Unlock()
					return code, nil
				}
			}
			if code == http.StatusNotFound {
				r.mu.Lock()
				r.server = idx
				r.mu.Unlock()
				return code, errUnknown
			}
			err = fmt.Errorf("%s %s answered %d", method, base+path, code)
		}
		r.failures.Inc()
		errs = append(errs, err)
		if ctx.Err() != nil || code >= 400 && code < 500 {
			break // the request itself is refused: another server would refuse it too
		}
	}
	return 0, errors.Join(errs...)
}

func (r *Registrar) once(ctx context.Context, method, u string, body []byte) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := r.cfg.Client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, nil
}
