package main_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"msgx/client"
	"msgx/docs"
	"msgx/internal/target"
)

// payloadCapture is every payload the targets of one server sent, as received by the
// stand-ins of the test: a Kafka cluster (kfake), Redis subscribers, an Elasticsearch node and
// a webhook receiver, each kept with the schema it must match.
type payloadCapture struct {
	mu       sync.Mutex
	payloads []capturedPayload
	// ids are the distinct event ids each target delivered (Kafka header, webhook header,
	// envelope, ES version), to compare with the targets' SENT counts.
	ids map[string]map[int64]bool
}

type capturedPayload struct {
	schema string // docs schema name
	where  string // target and event, for the error
	body   []byte
}

func (c *payloadCapture) add(schema, where string, body []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.payloads = append(c.payloads, capturedPayload{schema, where, bytes.Clone(body)})
}

func (c *payloadCapture) delivered(target string, id int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ids[target] == nil {
		c.ids[target] = map[int64]bool{}
	}
	c.ids[target][id] = true
}

func (c *payloadCapture) count(target string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.ids[target])
}

// TestSimulatedDayPayloadsMatchTheSchemas runs a simulated day (`msgx simulate`, faults
// included) and an FDEL on a server whose every target sends for real — KAFKA_FLOP and
// KAFKA_SCHD to a kfake cluster, REDIS_NOTIFY and a format-legacy copy to Redis channels,
// ES_FLIGHT to a stand-in Elasticsearch node, and a webhook copying each of the four — and
// validates every payload they sent against docs/schemas: Kafka values and headers, both
// Redis shapes, the bulk actions and documents, the webhook bodies and headers. Each target
// delivered every event it marked SENT, and nothing went DEAD.
func TestSimulatedDayPayloadsMatchTheSchemas(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db dbEnv) { simulatedDayPayloads(t, db) })
}

// TestSimulatedDayPayloadsMatchTheSchemasPhaseA is the same day in phase A: the records the
// payloads are made of come from the Redis flight store.
func TestSimulatedDayPayloadsMatchTheSchemasPhaseA(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db dbEnv) { simulatedDayPayloads(t, db, phaseAEnv(t)...) })
}

func simulatedDayPayloads(t *testing.T, db dbEnv, env ...string) {
	capt := &payloadCapture{ids: map[string]map[int64]bool{}}
	rdb := redisForE2E(t)

	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "msgx.flop", "msgx.schd"))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	brokers := cluster.ListenAddrs()

	prefix := fmt.Sprintf("msgx:test:e2e:schemas:%s:%d", db.Name, time.Now().UnixNano())
	notifyChannel, legacyChannel := prefix+":notify", prefix+":FLOP-msgx"
	sub := rdb.Subscribe(context.Background(), notifyChannel, legacyChannel)
	defer sub.Close()
	for range 2 {
		if _, err := sub.Receive(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	subDone := make(chan struct{})
	go func() {
		defer close(subDone)
		for m := range sub.Channel(redis.WithChannelSize(100000)) {
			body := []byte(m.Payload)
			if m.Channel == legacyChannel {
				capt.add(docs.RedisNotifyLegacy, "LEGACY_FLOP", body)
				continue
			}
			capt.add(docs.RedisNotify, "REDIS_NOTIFY", body)
			var env struct {
				EventID int64 `json:"event_id"`
			}
			if json.Unmarshal(body, &env) == nil {
				capt.delivered("REDIS_NOTIFY", env.EventID)
			}
		}
	}()

	es := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Elastic-Product", "Elasticsearch")
		w.Header().Set("Content-Type", "application/json")
		sc := bufio.NewScanner(r.Body)
		sc.Buffer(nil, 16<<20)
		var items []string
		for sc.Scan() {
			line := bytes.Clone(sc.Bytes())
			capt.add(docs.ESBulkAction, "ES_FLIGHT action", line)
			var action map[string]struct {
				Version int64 `json:"version"`
			}
			if err := json.Unmarshal(line, &action); err != nil {
				http.Error(w, "bad action line", http.StatusBadRequest)
				return
			}
			for op, meta := range action {
				capt.delivered("ES_FLIGHT", meta.Version)
				items = append(items, fmt.Sprintf(`{%q:{"status":201,"result":"created"}}`, op))
				if op == "index" && sc.Scan() {
					capt.add(docs.ESFlight, fmt.Sprintf("ES_FLIGHT document (event %d)", meta.Version), sc.Bytes())
				}
			}
		}
		fmt.Fprintf(w, `{"took":1,"errors":false,"items":[%s]}`, strings.Join(items, ","))
	}))
	defer es.Close()

	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		name := r.Header.Get("X-Msgx-Target")
		var hs [][2]string
		for k, vs := range r.Header {
			for _, v := range vs {
				hs = append(hs, [2]string{k, v})
			}
		}
		h, _ := json.Marshal(headerObject(hs))
		capt.add(docs.WebhookHeaders, name+" headers", h)
		capt.add(docs.Webhook, name, body)
		if r.Header.Get("X-Msgx-Signature") != target.Sign([]byte("schema-secret"), body) {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		var id int64
		fmt.Sscan(r.Header.Get("X-Msgx-Event-Id"), &id)
		capt.delivered(name, id)
	}))
	defer hook.Close()

	cfg := filepath.Join(t.TempDir(), "msgx.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`targets:
  KAFKA_FLOP: {sink: kafka, brokers: [%[1]q], topic: msgx.flop}
  KAFKA_SCHD: {sink: kafka, brokers: [%[1]q], topic: msgx.schd}
  REDIS_NOTIFY: {sink: redis, addr: "127.0.0.1:6379", channel: %[2]q}
  LEGACY_FLOP: {sink: redis, format: legacy, copy-of: REDIS_NOTIFY, addr: "127.0.0.1:6379", channel: %[3]q}
  ES_FLIGHT: {sink: elasticsearch, addresses: [%[4]q], index: msgx-flight}
  WEBHOOK_FLOP: {sink: webhook, url: %[5]q, secret: schema-secret, copy-of: KAFKA_FLOP}
  WEBHOOK_SCHD: {sink: webhook, url: %[5]q, secret: schema-secret, copy-of: KAFKA_SCHD}
  WEBHOOK_NOTIFY: {sink: webhook, url: %[5]q, secret: schema-secret, copy-of: REDIS_NOTIFY}
  WEBHOOK_ES: {sink: webhook, url: %[5]q, secret: schema-secret, copy-of: ES_FLIGHT}
`, brokers[0], notifyChannel, legacyChannel, es.URL, hook.URL)), 0o644); err != nil {
		t.Fatal(err)
	}
	s := db.start(t, append([]string{"MSGX_CONFIG=" + cfg, "MSGX_PIPELINE_POLL_INTERVAL=50ms", "MSGX_PIPELINE_BATCH_WAIT=200ms"}, env...)...)

	// The day: 40 flights over half an hour of schedule, every operation and fault kind, as
	// fast as the server takes them. A safety deadline, not a timing assertion.
	day := tomorrow(t).Format(time.DateOnly)
	run, out, _ := simulate(t, s, "--flights", "40", "--speed", "0", "--hours", "0.5", "--faults", "all", "--fault-rate", "0.02",
		"--seed", "37", "--day", day)
	if run.Failed != 0 || run.Flights != 40 {
		t.Fatalf("summary: %+v\n%s", run, out)
	}
	// A deletion too: the simulated day deletes no flight.
	ctx := t.Context()
	board, err := s.api().Board(ctx, day)
	if err != nil {
		t.Fatal(err)
	}
	var first struct {
		FLID int64 `json:"FLID"`
	}
	if len(board.Flights) == 0 || json.Unmarshal(board.Flights[0], &first) != nil {
		t.Fatalf("no flights on %s: %s", day, board.Flights)
	}
	fdel := s.post(e2eFlop(970001, "FDEL", first.FLID, "<FDEL/>"))
	s.await(fdel, "SUCCEEDED", state("SUCCEEDED", ""))

	// Wait until every message is finished and every target has nothing pending.
	targets := []string{"KAFKA_FLOP", "KAFKA_SCHD", "REDIS_NOTIFY", "LEGACY_FLOP", "ES_FLIGHT",
		"WEBHOOK_FLOP", "WEBHOOK_SCHD", "WEBHOOK_NOTIFY", "WEBHOOK_ES"}
	var st client.Status
	var stTargets []client.TargetStatus
	sent := map[string]int{}
	for deadline := time.Now().Add(3 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		st = s.status()
		section(t, st, "targets", &stTargets)
		busy := st.Counts["PENDING"] + st.Counts["FAILED"]
		for _, tg := range stTargets {
			busy += int(tg.Pending)
			sent[tg.Target] = int(tg.Sent)
			if tg.Dead > 0 {
				t.Fatalf("target %s has %d DEAD events\n%s", tg.Target, tg.Dead, s.logs)
			}
		}
		if busy == 0 && len(stTargets) >= len(targets) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not drained: %v %+v\n%s", st.Counts, stTargets, s.logs)
		}
	}

	// Kafka: read both topics back from the start, up to the newest KAFKA_SCHD event (the
	// last batch record names it: a batch keeps the newest event of each flight).
	newest, err := s.api().Events(ctx, url.Values{"target": {"KAFKA_SCHD"}, "order": {"desc"}, "limit": {"1"}})
	if err != nil || len(newest.Events) != 1 {
		t.Fatalf("no KAFKA_SCHD event: %+v", newest)
	}
	consumeKafka(t, brokers, capt, sent["KAFKA_FLOP"], newest.Events[0].EventID)

	// Every delivered event reached its receiver (pub/sub may lag its PUBLISH reply a little).
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		short := ""
		for _, name := range []string{"KAFKA_FLOP", "REDIS_NOTIFY", "ES_FLIGHT", "WEBHOOK_FLOP", "WEBHOOK_SCHD", "WEBHOOK_NOTIFY", "WEBHOOK_ES"} {
			if got := capt.count(name); got != sent[name] || got == 0 {
				short += fmt.Sprintf(" %s: %d of %d SENT;", name, got, sent[name])
			}
		}
		if short == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("receivers did not get every event:%s", short)
		}
	}
	sub.Close()
	<-subDone

	// Validate every payload.
	capt.mu.Lock()
	defer capt.mu.Unlock()
	perSchema := map[string]int{}
	failed := 0
	for _, p := range capt.payloads {
		perSchema[p.schema]++
		if err := docs.ValidatePayload(p.schema, p.body); err != nil {
			if failed++; failed <= 5 {
				t.Errorf("%s: %v", p.where, err)
			}
		}
	}
	if failed > 5 {
		t.Errorf("… %d payloads in all do not match their schema", failed)
	}
	for _, schema := range []string{docs.KafkaFlop, docs.KafkaSchd, docs.KafkaHeaders, docs.RedisNotify, docs.RedisNotifyLegacy,
		docs.ESFlight, docs.ESBulkAction, docs.Webhook, docs.WebhookHeaders} {
		if perSchema[schema] == 0 {
			t.Errorf("no payload of schema %s was sent", schema)
		}
	}
	t.Logf("%d messages simulated; %d payloads validated: %v; SENT per target: %v", run.Messages, len(capt.payloads), perSchema, sent)
}

// consumeKafka reads the topics from the start until msgx.flop has given flops distinct
// events and msgx.schd a record of event lastSchd, capturing each value and its headers.
func consumeKafka(t *testing.T, brokers []string, capt *payloadCapture, flops int, lastSchd int64) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics("msgx.flop", "msgx.schd"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got := map[string]int{}
	schdDone := false
	for capt.count("KAFKA_FLOP") < flops || !schdDone {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("Kafka: read %v records (%d of %d flop events, schedule event %d read: %t)", got, capt.count("KAFKA_FLOP"), flops, lastSchd, schdDone)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			got[r.Topic]++
			var hs [][2]string
			var id int64
			for _, h := range r.Headers {
				hs = append(hs, [2]string{h.Key, string(h.Value)})
				if h.Key == "event_id" {
					fmt.Sscan(string(h.Value), &id)
				}
			}
			if dup := duplicateHeader(hs); dup != "" {
				t.Errorf("Kafka record %s/%d@%d: header %s twice", r.Topic, r.Partition, r.Offset, dup)
			}
			h, _ := json.Marshal(headerObject(hs))
			where := fmt.Sprintf("Kafka %s/%d@%d", r.Topic, r.Partition, r.Offset)
			capt.add(docs.KafkaHeaders, where+" headers", h)
			if r.Topic == "msgx.flop" {
				capt.add(docs.KafkaFlop, where, r.Value)
				capt.delivered("KAFKA_FLOP", id)
			} else {
				capt.add(docs.KafkaSchd, where, r.Value)
				schdDone = schdDone || id == lastSchd
			}
		})
	}
}

// headerObject turns headers into a JSON object, name → value (the last of a repeated one).
func headerObject(hs [][2]string) map[string]string {
	m := make(map[string]string, len(hs))
	for _, h := range hs {
		m[h[0]] = h[1]
	}
	return m
}

func duplicateHeader(hs [][2]string) string {
	seen := map[string]bool{}
	for _, h := range hs {
		if seen[h[0]] {
			return h[0]
		}
		seen[h[0]] = true
	}
	return ""
}
