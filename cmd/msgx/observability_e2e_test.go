package main_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestObservabilityEndToEnd sends a snapshot, a FLOP, its duplicate, an orphan and a malformed
// message through a real server and reads what /metrics, /livez and /readyz say: the counters
// and histograms moved once per message and per delivered event, the state gauges match the
// API, and an instance without the pump (and, on MariaDB, a standby) says it does not hold the
// lease while /readyz names the holder; once the holder stops, /readyz on the other follows.
func TestObservabilityEndToEnd(t *testing.T) {
	t.Parallel()
	eachDB(t, testObservability)
}

func testObservability(t *testing.T, db dbEnv) {
	day := tomorrow(t)
	at := func(h, m int) time.Time { return day.Add(time.Duration(h)*time.Hour + time.Duration(m)*time.Minute) }
	a := db.start(t, "MSGX_PIPELINE_POLL_INTERVAL=50ms", "MSGX_METRICS_SAMPLE_INTERVAL=100ms", "MSGX_SCHD_FLUSH_PERIOD=100ms")

	dnld := a.post(e2eSchd(820001, e2eFltr(92001, "CA1301", "D", at(9, 0), ""), e2eFltr(92002, "CA1302", "A", at(9, 30), "")))
	stnd := a.post(e2eFlop(820002, "STND", 92002, "<STND>231</STND>"))
	dup := a.post(e2eFlop(820002, "STND", 92002, "<STND>231</STND>"))
	orphan := a.post(e2eFlop(820003, "STND", 99998, "<STND>231</STND>"))
	bad := a.post(malformed)
	a.await(dnld, "SUCCEEDED", state("SUCCEEDED", ""))
	a.await(stnd, "SUCCEEDED", state("SUCCEEDED", ""))
	a.await(dup, "SKIPPED", state("SKIPPED", ""))
	a.await(orphan, "DEAD/ORPHAN", state("DEAD", "ORPHAN"))
	a.await(bad, "DEAD/MALFORMED", state("DEAD", "MALFORMED"))

	// Every event delivered, and the sampler has seen the final state.
	var body string
	deadline := time.Now().Add(20 * time.Second)
	for {
		body = a.metrics()
		// A sample taken before the last messages finished can already show SUCCEEDED 2 (with
		// the malformed one still the head): wait for the sample of the final state.
		if len(a.events("state=PENDING")) == 0 && strings.Contains(body, "\n"+`msgx_messages{state="SUCCEEDED"} 2`+"\n") &&
			strings.Contains(body, "\n"+`msgx_messages{state="DEAD"} 2`+"\n") && strings.Contains(body, "\nmsgx_head_age_seconds 0\n") &&
			!hasPendingEvents(body) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("events never all SENT, or the gauges never showed it:\n%s", body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	body = a.metrics() // counters after the last SENT commit was sampled
	sent := map[string]int{}
	for _, e := range a.events("state=SENT") {
		sent[e.Target]++
	}
	if len(sent) == 0 {
		t.Fatal("no event was sent")
	}
	want := []string{
		`msgx_messages_received_total{source="inbox"} 5`,
		`msgx_messages_finished_total{class="",state="SUCCEEDED",type_tag="SCHD-DNLD"} 1`,
		`msgx_messages_finished_total{class="",state="SUCCEEDED",type_tag="FLOP-STND"} 1`,
		`msgx_messages_finished_total{class="",state="SKIPPED",type_tag="FLOP-STND"} 1`,
		`msgx_messages_finished_total{class="ORPHAN",state="DEAD",type_tag="FLOP-STND"} 1`,
		`msgx_messages_finished_total{class="MALFORMED",state="DEAD",type_tag="other"} 1`,
		`msgx_messages_parked_total{class="ORPHAN"} 1`,
		`msgx_processing_duration_seconds_count 5`,
		`msgx_accept_to_finish_seconds_count 5`,
		`msgx_messages{state="SUCCEEDED"} 2`, `msgx_messages{state="SKIPPED"} 1`, `msgx_messages{state="DEAD"} 2`,
		`msgx_head_age_seconds 0`, `msgx_head_blocked_seconds 0`,
		`msgx_lease_held 1`, `msgx_database_up 1`,
	}
	for target, n := range sent {
		want = append(want,
			fmt.Sprintf(`msgx_events_sent_total{target="%s"} %d`, target, n),
			fmt.Sprintf(`msgx_delivery_latency_seconds_count{target="%s"} %d`, target, n),
			fmt.Sprintf(`msgx_events{state="SENT",target="%s"} %d`, target, n),
			fmt.Sprintf(`msgx_target_oldest_pending_age_seconds{target="%s"} 0`, target))
	}
	for _, w := range want {
		if !strings.Contains(body, "\n"+w+"\n") {
			t.Errorf("%s: /metrics lacks %q", db.Name, w)
		}
	}
	for _, name := range []string{"msgx_pump_last_step_timestamp_seconds", "msgx_dispatcher_last_step_timestamp_seconds"} {
		if v := metricValue(body, name); time.Since(time.Unix(int64(v), 0)) > time.Minute {
			t.Errorf("%s = %v: not a recent step", name, v)
		}
	}
	if !strings.Contains(body, `msgx_build_info{commit="`) {
		t.Error("/metrics lacks msgx_build_info")
	}
	if code := a.getCode("/livez"); code != 200 {
		t.Errorf("/livez %d", code)
	}
	ra := a.readyz()
	if ra.code != 200 || !ra.Pump.ThisInstance || ra.Pump.Holder == "" {
		t.Fatalf("/readyz of the pump's instance: %+v", ra)
	}

	// An API-only instance: no lease, no queue gauges of its own; ready, pointing at a.
	b := db.start(t, "MSGX_PIPELINE_AUTOSTART=false")
	bb := b.metrics()
	if !strings.Contains(bb, "\nmsgx_lease_held 0\n") || strings.Contains(bb, "msgx_messages{") {
		t.Errorf("API-only instance's metrics:\n%s", bb)
	}
	if rb := b.readyz(); rb.code != 200 || rb.Pump.ThisInstance || rb.Pump.Holder != ra.Pump.Holder {
		t.Errorf("/readyz of the API-only instance: %+v, want the holder %s", rb, ra.Pump.Holder)
	}
	var c *server
	if db.Driver == "mysql" {
		// A standby: it stands by behind a, says so, and takes over when a stops.
		c = db.start(t)
		if cm := c.metrics(); !strings.Contains(cm, "\nmsgx_lease_held 0\n") {
			t.Errorf("standby's metrics say it holds the lease:\n%s", cm)
		}
		if rc := c.readyz(); rc.code != 200 || rc.Pump.ThisInstance || rc.Pump.Holder != ra.Pump.Holder {
			t.Errorf("/readyz of the standby: %+v", rc)
		}
	}
	if err := a.stop(); err != nil {
		t.Fatal(err)
	}
	if c == nil {
		// /readyz answers from the last background check (a second apart): it says so at the
		// next check.
		rb := b.readyz()
		for deadline := time.Now().Add(5 * time.Second); rb.code != 503 && time.Now().Before(deadline); rb = b.readyz() {
			time.Sleep(100 * time.Millisecond)
		}
		if rb.code != 503 || !strings.Contains(rb.Reason, "no instance holds the pump lease") {
			t.Errorf("/readyz once the only pump stopped: %+v", rb)
		}
		return
	}
	deadline = time.Now().Add(20 * time.Second)
	for {
		rc := c.readyz()
		if rc.code == 200 && rc.Pump.ThisInstance && strings.Contains(c.metrics(), "\nmsgx_lease_held 1\n") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the standby never took over: %+v\n%s", rc, c.logs)
		}
		time.Sleep(100 * time.Millisecond)
	}
	rb := b.readyz()
	for deadline := time.Now().Add(5 * time.Second); (rb.code != 200 || rb.Pump.Holder == ra.Pump.Holder) && time.Now().Before(deadline); rb = b.readyz() {
		time.Sleep(100 * time.Millisecond) // the API-only instance sees the take-over at its next check
	}
	if rb.code != 200 || rb.Pump.Holder == ra.Pump.Holder {
		t.Errorf("/readyz of the API-only instance after the take-over: %+v", rb)
	}
}

// hasPendingEvents says whether a scrape shows PENDING events of any target.
func hasPendingEvents(body string) bool {
	for _, l := range strings.Split(body, "\n") {
		if strings.HasPrefix(l, `msgx_events{state="PENDING"`) && !strings.HasSuffix(l, " 0") {
			return true
		}
	}
	return false
}

// metricValue returns the value of the line of name with no labels (0 when absent).
func metricValue(body, name string) float64 {
	for _, l := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(l, name+" "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return 0
}

// metrics reads s's /metrics, failing the test unless it answers 200.
func (s *server) metrics() string {
	s.t.Helper()
	c := s.api()
	code := answered(c)
	m, err := c.Metrics(context.Background())
	if err != nil || code() != http.StatusOK {
		s.t.Fatalf("GET /metrics: %d %v", code(), err)
	}
	return m
}

// getCode is the HTTP status s answers GET path with (a probe's answer is its status).
func (s *server) getCode(path string) int {
	s.t.Helper()
	resp, err := http.Get(s.url + path)
	if err != nil {
		s.t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

type readiness struct {
	code   int
	Ready  bool   `json:"ready"`
	Reason string `json:"reason"`
	Pump   struct {
		Holder       string `json:"holder"`
		ThisInstance bool   `json:"this_instance"`
	} `json:"pump"`
}

// readyz is s's /readyz with its status: a probe's answer is its status code, 503 with the
// same body when not ready.
func (s *server) readyz() readiness {
	s.t.Helper()
	resp, err := http.Get(s.url + "/readyz")
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	var r readiness
	json.NewDecoder(resp.Body).Decode(&r)
	r.code = resp.StatusCode
	return r
}
