package main_test

// Stand-ins for the systems msgx delivers to, for the end-to-end tests that read what every
// target sent during a simulated day: the schema test (schemas_e2e_test.go) validates each
// payload, the golden comparison (golden_e2e_test.go) compares the bytes with a record.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"msgx/client"
	"msgx/internal/target"
)

// The Kafka topics of the receivers' cluster and the webhook targets' signing key.
const (
	flopTopic  = "msgx.flop"
	schdTopic  = "msgx.schd"
	signingKey = "schema-secret"
)

// receivers are a stand-in for every kind of system msgx delivers to, each keeping what it
// got in the order it got it: a Kafka cluster (kfake, the topics flopTopic and schdTopic of
// three partitions each, read back by consumeKafka), subscribers of two Redis channels (the
// delivery envelope and format legacy), an Elasticsearch node that accepts every bulk action,
// and a webhook receiver that refuses a wrong signature (401). They stop when the test ends,
// after the servers started later have.
type receivers struct {
	brokers                      []string
	notifyChannel, legacyChannel string
	esURL, hookURL               string
	rdb                          *redis.Client

	mu  sync.Mutex
	got []delivery
	// barriers are the barrier messages the Redis subscriber has seen (see redisBarrier).
	barriers map[string]bool
}

// delivery is one thing a target sent, as its receiver got it.
type delivery struct {
	Target string // the target that sent it
	Sink   string // its sink kind (targetconf): kafka, redis, elasticsearch, webhook
	// Stream is where the contract keeps its order: the Kafka topic and partition
	// ("msgx.flop/2"), the Redis channel's target, the webhook's target; "ES_FLIGHT" for
	// every bulk action (one target sends them in order).
	Stream  string
	Where   string      // where it was got, for messages: "Kafka msgx.flop/2@17"
	Key     []byte      // the Kafka record's key
	Headers [][2]string // the Kafka record's headers as sent; the webhook POST's, by name
	Action  []byte      // the Elasticsearch bulk action line
	Body    []byte      // the record value, published message, indexed document (none for a delete), POST body
	EventID int64       // the event id it names (header, envelope, external version); 0: none (format legacy)
	Refused bool        // a webhook POST with a wrong signature, answered 401
}

// newReceivers starts the receivers; name makes their Redis channels the test's own.
func newReceivers(t *testing.T, name string) *receivers {
	t.Helper()
	r := &receivers{rdb: redisForE2E(t), barriers: map[string]bool{}}

	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, flopTopic, schdTopic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	r.brokers = cluster.ListenAddrs()

	prefix := fmt.Sprintf("msgx:test:e2e:%s:%d", name, time.Now().UnixNano())
	r.notifyChannel, r.legacyChannel = prefix+":notify", prefix+":FLOP-msgx"
	sub := r.rdb.Subscribe(context.Background(), r.notifyChannel, r.legacyChannel)
	for range 2 {
		if _, err := sub.Receive(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	subDone := make(chan struct{})
	t.Cleanup(func() { sub.Close(); <-subDone })
	go func() {
		defer close(subDone)
		for m := range sub.Channel(redis.WithChannelSize(100000)) {
			r.gotRedis(m.Channel, []byte(m.Payload))
		}
	}()

	es := httptest.NewServer(http.HandlerFunc(r.bulk))
	t.Cleanup(es.Close)
	r.esURL = es.URL
	hook := httptest.NewServer(http.HandlerFunc(r.webhook))
	t.Cleanup(hook.Close)
	r.hookURL = hook.URL
	return r
}

// targets is the targets section of a configuration (each line indented by two spaces) that
// sends to the receivers: KAFKA_FLOP and KAFKA_SCHD to Kafka, REDIS_NOTIFY and a format-legacy
// copy to the Redis channels, ES_FLIGHT to the Elasticsearch node, and a webhook copying each
// of the four.
func (r *receivers) targets() string {
	return fmt.Sprintf(`  KAFKA_FLOP: {sink: kafka, brokers: [%[1]q], topic: %[6]s}
  KAFKA_SCHD: {sink: kafka, brokers: [%[1]q], topic: %[7]s}
  REDIS_NOTIFY: {sink: redis, addr: "127.0.0.1:6379", channel: %[2]q}
  LEGACY_FLOP: {sink: redis, format: legacy, copy-of: REDIS_NOTIFY, addr: "127.0.0.1:6379", channel: %[3]q}
  ES_FLIGHT: {sink: elasticsearch, addresses: [%[4]q], index: msgx-flight}
  WEBHOOK_FLOP: {sink: webhook, url: %[5]q, secret: %[8]s, copy-of: KAFKA_FLOP}
  WEBHOOK_SCHD: {sink: webhook, url: %[5]q, secret: %[8]s, copy-of: KAFKA_SCHD}
  WEBHOOK_NOTIFY: {sink: webhook, url: %[5]q, secret: %[8]s, copy-of: REDIS_NOTIFY}
  WEBHOOK_ES: {sink: webhook, url: %[5]q, secret: %[8]s, copy-of: ES_FLIGHT}
`, r.brokers[0], r.notifyChannel, r.legacyChannel, r.esURL, r.hookURL, flopTopic, schdTopic, signingKey)
}

func (r *receivers) add(d delivery) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, d)
}

// received returns what the receivers got so far, in the order each got it.
func (r *receivers) received() []delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

// count returns how many distinct events target delivered (for format legacy, which names
// none: 0).
func (r *receivers) count(target string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	ids := map[int64]bool{}
	for _, d := range r.got {
		if d.Target == target && d.EventID != 0 && !d.Refused {
			ids[d.EventID] = true
		}
	}
	return len(ids)
}

// barrierPrefix starts a message redisBarrier publishes; the subscriber keeps it apart.
const barrierPrefix = "msgx-test-barrier:"

func (r *receivers) gotRedis(channel string, body []byte) {
	if b, ok := bytes.CutPrefix(body, []byte(barrierPrefix)); ok {
		r.mu.Lock()
		r.barriers[channel+" "+string(b)] = true
		r.mu.Unlock()
		return
	}
	if channel == r.legacyChannel {
		r.add(delivery{Target: "LEGACY_FLOP", Sink: "redis", Stream: "LEGACY_FLOP", Where: "LEGACY_FLOP", Body: body})
		return
	}
	d := delivery{Target: "REDIS_NOTIFY", Sink: "redis", Stream: "REDIS_NOTIFY", Where: "REDIS_NOTIFY", Body: body}
	var env struct {
		EventID int64 `json:"event_id"`
	}
	if json.Unmarshal(body, &env) == nil {
		d.EventID = env.EventID
	}
	r.add(d)
}

// redisBarrier returns once the subscriber has got every message published to the Redis
// channels before it was called: it publishes a message of its own to each and waits for
// both. A channel's subscriber gets the messages in the order Redis took the PUBLISHes, and
// msgx marks an event SENT only after its PUBLISH was answered.
func (r *receivers) redisBarrier(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	token := fmt.Sprint(time.Now().UnixNano())
	for _, ch := range []string{r.notifyChannel, r.legacyChannel} {
		if err := r.rdb.Publish(ctx, ch, barrierPrefix+token).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		r.mu.Lock()
		seen := r.barriers[r.notifyChannel+" "+token] && r.barriers[r.legacyChannel+" "+token]
		r.mu.Unlock()
		if seen {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the Redis subscriber did not get the barrier messages")
		}
	}
}

// bulk is the Elasticsearch node's _bulk: it keeps each action with its document and answers
// that every one was done.
func (r *receivers) bulk(w http.ResponseWriter, req *http.Request) {
	w.Header().Set("X-Elastic-Product", "Elasticsearch")
	w.Header().Set("Content-Type", "application/json")
	sc := bufio.NewScanner(req.Body)
	sc.Buffer(nil, 16<<20)
	var items []string
	for sc.Scan() {
		line := bytes.Clone(sc.Bytes())
		var action map[string]struct {
			Version int64 `json:"version"`
		}
		if err := json.Unmarshal(line, &action); err != nil {
			http.Error(w, "bad action line", http.StatusBadRequest)
			return
		}
		for op, meta := range action {
			d := delivery{Target: "ES_FLIGHT", Sink: "elasticsearch", Stream: "ES_FLIGHT", Where: "ES_FLIGHT action", Action: line, EventID: meta.Version}
			items = append(items, fmt.Sprintf(`{%q:{"status":201,"result":"created"}}`, op))
			if op == "index" && sc.Scan() {
				d.Body = bytes.Clone(sc.Bytes())
				d.Where = fmt.Sprintf("ES_FLIGHT document (event %d)", meta.Version)
			}
			r.add(d)
		}
	}
	fmt.Fprintf(w, `{"took":1,"errors":false,"items":[%s]}`, strings.Join(items, ","))
}

// webhook is the webhook receiver: it keeps each POST, and refuses one whose signature is
// not the body's.
func (r *receivers) webhook(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	name := req.Header.Get("X-Msgx-Target")
	var hs [][2]string
	for k, vs := range req.Header {
		for _, v := range vs {
			hs = append(hs, [2]string{k, v})
		}
	}
	slices.SortStableFunc(hs, func(a, b [2]string) int { return strings.Compare(a[0], b[0]) })
	d := delivery{Target: name, Sink: "webhook", Stream: name, Where: name, Headers: hs, Body: body}
	fmt.Sscan(req.Header.Get("X-Msgx-Event-Id"), &d.EventID)
	d.Refused = req.Header.Get("X-Msgx-Signature") != target.Sign([]byte(signingKey), body)
	r.add(d)
	if d.Refused {
		http.Error(w, "bad signature", http.StatusUnauthorized)
	}
}

// consumeKafka reads the topics from the start until flopTopic has given flops distinct
// events and schdTopic a record of event lastSchd, keeping each record.
func (r *receivers) consumeKafka(t *testing.T, flops int, lastSchd int64) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(r.brokers...), kgo.ConsumeTopics(flopTopic, schdTopic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got := map[string]int{}
	schdDone := false
	for r.count("KAFKA_FLOP") < flops || !schdDone {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("Kafka: read %v records (%d of %d flop events, schedule event %d read: %t)", got, r.count("KAFKA_FLOP"), flops, lastSchd, schdDone)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", topic, p, err) })
		fs.EachRecord(func(rec *kgo.Record) {
			got[rec.Topic]++
			d := delivery{Target: "KAFKA_FLOP", Sink: "kafka", Stream: fmt.Sprintf("%s/%d", rec.Topic, rec.Partition),
				Where: fmt.Sprintf("Kafka %s/%d@%d", rec.Topic, rec.Partition, rec.Offset), Key: rec.Key, Body: rec.Value}
			if rec.Topic == schdTopic {
				d.Target = "KAFKA_SCHD"
			}
			for _, h := range rec.Headers {
				d.Headers = append(d.Headers, [2]string{h.Key, string(h.Value)})
				if h.Key == "event_id" {
					fmt.Sscan(string(h.Value), &d.EventID)
				}
			}
			if dup := duplicateHeader(d.Headers); dup != "" {
				t.Errorf("%s: header %s twice", d.Where, dup)
			}
			r.add(d)
			schdDone = schdDone || d.Target == "KAFKA_SCHD" && d.EventID == lastSchd
		})
	}
}

// awaitReceived waits until each of targets has delivered to its receiver every event it
// marked SENT (sent, from awaitIdle), and at least one: pub/sub may lag its PUBLISH reply a
// little.
func (r *receivers) awaitReceived(t *testing.T, sent map[string]int, targets ...string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		short := ""
		for _, name := range targets {
			if got := r.count(name); got != sent[name] || got == 0 {
				short += fmt.Sprintf(" %s: %d of %d SENT;", name, got, sent[name])
			}
		}
		if short == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("receivers did not get every event:%s", short)
		}
	}
}

// awaitIdle waits until no message of s is pending or failed and none of targets (each of
// which the status must list) has an event pending, and returns the events each target the
// status lists has marked SENT. An event of any target gone DEAD fails the test.
func (s *server) awaitIdle(targets ...string) map[string]int {
	s.t.Helper()
	ctx := context.Background()
	for deadline := time.Now().Add(3 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		var st client.Status
		if err := s.api().Get(ctx, "/api/v1/status", &st); err != nil {
			s.t.Fatalf("GET /api/v1/status: %v", err)
		}
		var tgs []client.TargetStatus
		if raw, ok := st.Extra["targets"]; ok {
			if err := json.Unmarshal(raw, &tgs); err != nil {
				s.t.Fatalf("the status's targets: %v", err)
			}
		}
		busy := st.Counts["PENDING"] + st.Counts["FAILED"]
		sent := map[string]int{}
		listed := 0
		for _, tg := range tgs {
			sent[tg.Target] = int(tg.Sent)
			if tg.Dead > 0 {
				s.t.Fatalf("target %s has %d DEAD events\n%s", tg.Target, tg.Dead, s.logs)
			}
			if slices.Contains(targets, tg.Target) {
				listed++
				busy += int(tg.Pending)
			}
		}
		if busy == 0 && listed == len(targets) {
			return sent
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("not drained: %+v %+v\n%s", st, tgs, s.logs)
		}
	}
}

// newestEvent is the id of the newest event of target (0 when it has none).
func (s *server) newestEvent(target string) int64 {
	s.t.Helper()
	var page client.EventList
	if err := s.api().Get(context.Background(), "/api/v1/events?target="+target+"&order=desc&limit=1", &page); err != nil {
		s.t.Fatalf("GET the newest %s event: %v", target, err)
	}
	if len(page.Events) == 0 {
		return 0
	}
	return page.Events[0].EventID
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
