package target

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"msgx/internal/pipeline"
	"msgx/internal/targetconf"
)

const testTopic = "msgx.flop"

// flightKeys spread over the three partitions of testTopic (0, 2, 1, 1 with franz-go's
// default murmur2 partitioner), so per-key order is not just the order of one partition.
var flightKeys = []string{"CA1234-20250101-D", "CA1234-D", "MU5101-A", "HU7801-A"}

func newKfake(t *testing.T, opts ...kfake.Opt) *kfake.Cluster {
	t.Helper()
	opts = append([]kfake.Opt{kfake.NumBrokers(1), kfake.SeedTopics(3, testTopic)}, opts...)
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// consumed is one record read back from the topic.
type consumed struct {
	key, value     string
	partition      int32
	eventID, msgID int64
	typeTag        string
}

// consumeAll reads the topic from the start until want records arrived.
func consumeAll(t *testing.T, brokers []string, want int, extra ...kgo.Opt) []consumed {
	t.Helper()
	return consume(t, brokers, want, false, extra...)
}

// consumeFirsts reads the topic from the start until want distinct events arrived, and
// returns the first arrival of each: what a consumer that drops repeats sees.
func consumeFirsts(t *testing.T, brokers []string, want int, extra ...kgo.Opt) []consumed {
	t.Helper()
	return consume(t, brokers, want, true, extra...)
}

// consume reads the topic from the start until want records (firsts: distinct events)
// arrived, keeping repeats unless firsts.
func consume(t *testing.T, brokers []string, want int, firsts bool, extra ...kgo.Opt) []consumed {
	t.Helper()
	opts := append([]kgo.Opt{
		kgo.SeedBrokers(brokers...),
		kgo.ConsumeTopics(testTopic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
	}, extra...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out []consumed
	seen := map[int64]bool{}
	for len(out) < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records before the deadline", len(out), want)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			c := consumed{key: string(r.Key), value: string(r.Value), partition: r.Partition}
			for _, h := range r.Headers {
				switch h.Key {
				case "event_id":
					c.eventID, _ = strconv.ParseInt(string(h.Value), 10, 64)
				case "msg_id":
					c.msgID, _ = strconv.ParseInt(string(h.Value), 10, 64)
				case "type_tag":
					c.typeTag = string(h.Value)
				default:
					t.Errorf("unexpected header %q", h.Key)
				}
			}
			if firsts && seen[c.eventID] {
				return
			}
			seen[c.eventID] = true
			out = append(out, c)
		})
	}
	return out
}

// checkPerKeyOrder checks that got holds each of want exactly once, with key, headers and
// value intact, each key in one partition and in event order.
func checkPerKeyOrder(t *testing.T, got []consumed, want []Record) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("consumed %d records, want %d (loss or duplicates)", len(got), len(want))
	}
	byID := map[int64]Record{}
	wantOrder := map[string][]int64{}
	for _, r := range want {
		byID[r.EventID] = r
		wantOrder[r.Key] = append(wantOrder[r.Key], r.EventID)
	}
	gotOrder := map[string][]int64{}
	partition := map[string]int32{}
	for _, c := range got {
		r, ok := byID[c.eventID]
		if !ok {
			t.Fatalf("consumed an unknown event_id %d", c.eventID)
		}
		if c.key != r.Key || c.value != string(r.Value) || c.msgID != r.MsgID || c.typeTag != r.TypeTag {
			t.Errorf("event %d arrived as key=%q value=%s msg_id=%d type_tag=%q; want %q %s %d %q",
				c.eventID, c.key, c.value, c.msgID, c.typeTag, r.Key, r.Value, r.MsgID, r.TypeTag)
		}
		if p, seen := partition[c.key]; seen && p != c.partition {
			t.Errorf("key %s in partitions %d and %d", c.key, p, c.partition)
		}
		partition[c.key] = c.partition
		gotOrder[c.key] = append(gotOrder[c.key], c.eventID)
	}
	for k, w := range wantOrder {
		if g := gotOrder[k]; !equalIDs(g, w) {
			t.Errorf("key %s: events in order %v, want %v", k, g, w)
		}
	}
}

func equalIDs(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestKafkaDeliversKeyHeadersValueInOrder(t *testing.T) {
	c := newKfake(t)
	s := mustOpen(t, "KAFKA_FLOP", Config{Sink: targetconf.SinkKafka, Brokers: c.ListenAddrs(), Topic: testTopic, ClientID: "msgx-test"})
	recs := records("KAFKA_FLOP", 1, 60, flightKeys...)
	ctx := context.Background()
	// In several sends, as the dispatcher would.
	for _, batch := range [][]Record{recs[:1], recs[1:25], recs[25:]} {
		n, err := s.Send(ctx, batch)
		if err != nil || n != len(batch) {
			t.Fatalf("Send(%d records) = %d, %v", len(batch), n, err)
		}
	}
	got := consumeAll(t, c.ListenAddrs(), len(recs))
	checkPerKeyOrder(t, got, recs)
	parts := map[int32]bool{}
	for _, c := range got {
		parts[c.partition] = true
	}
	if len(parts) != 3 {
		t.Errorf("records landed in %d partitions, want 3", len(parts))
	}
}

// failProduce makes the cluster answer every produce request with a retriable error while
// *failing is true, and counts the requests it failed.
func failProduce(c *kfake.Cluster, failing *atomic.Bool, failed *atomic.Int64) {
	c.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if !failing.Load() {
			return nil, nil, false // the cluster handles it normally
		}
		failed.Add(1)
		return notEnoughReplicas(req), nil, true
	})
}

// notEnoughReplicas answers a produce request as a broker does that lacks its in-sync
// replicas: every partition refused with NOT_ENOUGH_REPLICAS (retriable), nothing written.
func notEnoughReplicas(req kmsg.Request) kmsg.Response {
	preq := req.(*kmsg.ProduceRequest)
	resp := preq.ResponseKind().(*kmsg.ProduceResponse)
	for _, rt := range preq.Topics {
		st := kmsg.NewProduceResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		for _, rp := range rt.Partitions {
			sp := kmsg.NewProduceResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.ErrorCode = kerr.NotEnoughReplicas.Code
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

func TestKafkaOutageThenRecoveryNoLossNoReorder(t *testing.T) {
	c := newKfake(t)
	var failing atomic.Bool
	var failed atomic.Int64
	failProduce(c, &failing, &failed)
	s := mustOpen(t, "KAFKA_FLOP", Config{Sink: targetconf.SinkKafka, Brokers: c.ListenAddrs(), Topic: testTopic, Timeout: time.Second})
	ctx := context.Background()
	recs := records("KAFKA_FLOP", 1, 30, flightKeys...)

	if n, err := s.Send(ctx, recs[:10]); err != nil || n != 10 {
		t.Fatalf("Send before the outage = %d, %v", n, err)
	}

	failing.Store(true)
	rest := recs[10:20]
	n, err := s.Send(ctx, rest)
	if err == nil {
		t.Fatalf("Send during the outage = %d, nil; want an error", n)
	}
	if failed.Load() == 0 {
		t.Fatal("no produce request reached the failing broker")
	}
	if pipeline.ClassOf(err) != pipeline.Infra {
		t.Errorf("outage error class %s, want INFRA (retried): %v", pipeline.ClassOf(err), err)
	}
	if want := "event " + strconv.FormatInt(rest[n].EventID, 10); !strings.Contains(err.Error(), "KAFKA_FLOP") || !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not name the target and %q", err, want)
	}
	// A second attempt while still down fails too, and is not stuck.
	sent := n
	if n, err := s.Send(ctx, rest[sent:]); err == nil {
		t.Fatalf("second Send during the outage = %d, nil", n)
	} else {
		sent += n
	}

	failing.Store(false)
	// The dispatcher's retry: resend from the first unacknowledged record until all are in.
	for attempt := 0; sent < len(rest); attempt++ {
		if attempt == 10 {
			t.Fatalf("still failing after recovery: %d of %d sent", sent, len(rest))
		}
		n, err := s.Send(ctx, rest[sent:])
		sent += n
		if err != nil {
			t.Logf("retry %d after recovery: %v", attempt, err)
		}
	}
	if n, err := s.Send(ctx, recs[20:]); err != nil || n != 10 {
		t.Fatalf("Send after recovery = %d, %v", n, err)
	}

	got := consumeAll(t, c.ListenAddrs(), len(recs))
	checkPerKeyOrder(t, got, recs)
}

func TestKafkaDownClusterFailsWithinTimeout(t *testing.T) {
	s := mustOpen(t, "KAFKA_FLOP", Config{Sink: targetconf.SinkKafka, Brokers: []string{closedAddr(t)}, Topic: testTopic, Timeout: time.Second})
	done := make(chan error, 1)
	go func() {
		n, err := s.Send(context.Background(), records("KAFKA_FLOP", 7, 3, "A"))
		if n != 0 {
			err = errors.Join(err, errors.New("records acknowledged by a cluster that is not there"))
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("Send to a down cluster succeeded")
		}
		if !strings.Contains(err.Error(), "kafka target KAFKA_FLOP: event 7") {
			t.Errorf("error %q does not say which target and event failed", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Send to a down cluster did not return: retries are not bounded by the timeout")
	}
}

func TestKafkaSASL(t *testing.T) {
	for _, mech := range []string{targetconf.SASLPlain, targetconf.SASLScramSHA256, targetconf.SASLScramSHA512} {
		t.Run(mech, func(t *testing.T) {
			c := newKfake(t, kfake.EnableSASL(), kfake.Superuser(mech, "msgx", "s3cret"))
			cfg := Config{Sink: targetconf.SinkKafka, Brokers: c.ListenAddrs(), Topic: testTopic, Timeout: 2 * time.Second,
				SASL: targetconf.SASLConfig{Mechanism: mech, Username: "msgx", Password: "s3cret"}}
			s := mustOpen(t, "KAFKA_FLOP", cfg)
			if n, err := s.Send(context.Background(), records("KAFKA_FLOP", 1, 2, "A")); err != nil || n != 2 {
				t.Fatalf("Send with good credentials = %d, %v", n, err)
			}
			cfg.SASL.Password = "wrong"
			bad := mustOpen(t, "KAFKA_FLOP", cfg)
			if n, err := bad.Send(context.Background(), records("KAFKA_FLOP", 3, 1, "A")); err == nil {
				t.Fatalf("Send with a wrong password = %d, nil", n)
			}
		})
	}
}

func TestKafkaTLS(t *testing.T) {
	cert := newTestCert(t)
	c := newKfake(t, kfake.TLS(cert.Server))
	s := mustOpen(t, "KAFKA_FLOP", Config{Sink: targetconf.SinkKafka, Brokers: c.ListenAddrs(), Topic: testTopic, Timeout: 2 * time.Second,
		TLS: TLSConfig{Enabled: true, CAFile: cert.CAFile}})
	recs := records("KAFKA_FLOP", 1, 3, "A")
	if n, err := s.Send(context.Background(), recs); err != nil || n != 3 {
		t.Fatalf("Send over TLS = %d, %v", n, err)
	}
	tlsCfg, err := loadTLS(TLSConfig{Enabled: true, CAFile: cert.CAFile})
	if err != nil {
		t.Fatal(err)
	}
	checkPerKeyOrder(t, consumeAll(t, c.ListenAddrs(), 3, kgo.DialTLSConfig(tlsCfg)), recs)

	// Without the CA the broker's certificate is not trusted.
	plain := mustOpen(t, "KAFKA_FLOP", Config{Sink: targetconf.SinkKafka, Brokers: c.ListenAddrs(), Topic: testTopic, Timeout: time.Second,
		TLS: TLSConfig{Enabled: true}})
	if n, err := plain.Send(context.Background(), records("KAFKA_FLOP", 4, 1, "A")); err == nil {
		t.Fatalf("Send to an untrusted broker = %d, nil", n)
	}
}

func TestKafkaOversizedRecordIsRejected(t *testing.T) {
	c := newKfake(t)
	s := mustOpen(t, "KAFKA_SCHD", Config{Sink: targetconf.SinkKafka, Brokers: c.ListenAddrs(), Topic: testTopic, Timeout: 2 * time.Second})
	recs := records("KAFKA_SCHD", 1, 2)
	recs[1].Value = []byte(`["` + strings.Repeat("x", 2<<20) + `"]`) // over the 1 MB batch limit
	n, err := s.Send(context.Background(), recs)
	if n != 1 || pipeline.ClassOf(err) != pipeline.Rejected {
		t.Fatalf("Send = %d, %v; want 1 and a REJECTED error", n, err)
	}
}

// TestKafkaRecordsWithoutKeyShareOneKey: records with no key of their own (the schedule
// batches) all get the target's key — the configured one, or the target name — so they land
// in one partition, in order; a record with a flight key keeps it.
func TestKafkaRecordsWithoutKeyShareOneKey(t *testing.T) {
	for _, tc := range []struct{ key, want string }{{"", "KAFKA_SCHD"}, {"schd", "schd"}} {
		t.Run("key "+tc.want, func(t *testing.T) {
			c := newKfake(t)
			s := mustOpen(t, "KAFKA_SCHD", Config{Sink: targetconf.SinkKafka, Brokers: c.ListenAddrs(), Topic: testTopic, Key: tc.key})
			recs := records("KAFKA_SCHD", 1, 30)
			recs[29].Key = "CA1234-D"
			for i := 0; i < len(recs); i += 7 { // several sends, as successive batches
				batch := recs[i:min(i+7, len(recs))]
				if n, err := s.Send(context.Background(), batch); err != nil || n != len(batch) {
					t.Fatalf("Send = %d, %v", n, err)
				}
			}
			got := consumeAll(t, c.ListenAddrs(), len(recs))
			parts := map[int32]bool{}
			var order []int64
			for _, g := range got {
				if g.eventID == 30 {
					if g.key != "CA1234-D" {
						t.Errorf("a record's own key became %q", g.key)
					}
					continue
				}
				if g.key != tc.want {
					t.Errorf("event %d has key %q, want %q", g.eventID, g.key, tc.want)
				}
				parts[g.partition] = true
				order = append(order, g.eventID)
			}
			if len(parts) != 1 {
				t.Errorf("keyless records in partitions %v, want one", parts)
			}
			if !slices.IsSorted(order) || len(order) != 29 {
				t.Errorf("keyless records arrived as %v", order)
			}
		})
	}
}

// TestKafkaMaxRecordBytes: the producer's limit is max-record-bytes; MaxValueBytes leaves
// room for the key and headers, so a value of exactly that size goes through and a value
// over max-record-bytes is REJECTED.
func TestKafkaMaxRecordBytes(t *testing.T) {
	c := newKfake(t)
	const limit = 8 << 10
	s := mustOpen(t, "KAFKA_SCHD", Config{Sink: targetconf.SinkKafka, Brokers: c.ListenAddrs(), Topic: testTopic, MaxRecordBytes: limit, Timeout: 5 * time.Second})
	l, ok := s.(ValueLimiter)
	if !ok {
		t.Fatal("the kafka sink does not tell its record size limit")
	}
	maxValue := l.MaxValueBytes()
	if maxValue <= 0 || maxValue >= limit {
		t.Fatalf("MaxValueBytes = %d with max-record-bytes %d", maxValue, limit)
	}
	recs := records("KAFKA_SCHD", 1, 2)
	recs[0].Value = []byte(`"` + strings.Repeat("x", maxValue-2) + `"`)
	recs[0].TypeTag = strings.Repeat("T", 64) // the longest type tag
	recs[1].Value = []byte(`"` + strings.Repeat("x", limit) + `"`)
	n, err := s.Send(context.Background(), recs)
	if n != 1 || pipeline.ClassOf(err) != pipeline.Rejected {
		t.Fatalf("Send = %d, %v; want the first delivered and the second REJECTED", n, err)
	}
	if !errors.Is(err, kerr.MessageTooLarge) {
		t.Errorf("error %v is not MESSAGE_TOO_LARGE", err)
	}
	// The default is franz-go's own.
	d := mustOpen(t, "K", Config{Sink: targetconf.SinkKafka, Brokers: c.ListenAddrs(), Topic: testTopic})
	if got := d.(ValueLimiter).MaxValueBytes(); got <= DefaultKafkaMaxRecordBytes-1024 || got >= DefaultKafkaMaxRecordBytes {
		t.Errorf("default MaxValueBytes = %d, want just under %d", got, DefaultKafkaMaxRecordBytes)
	}
}

// TestKafkaWindowInOneSend: the Kafka sink takes a whole window in one Send, with one record
// per produce batch (a small batch limit), so the records travel in many produce requests,
// several in flight at a time; every one arrives, each flight's in order, and Send counts
// them all delivered.
func TestKafkaWindowInOneSend(t *testing.T) {
	c := newKfake(t)
	var requests atomic.Int64
	c.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		requests.Add(1)
		return nil, nil, false
	})
	s := mustOpen(t, "KAFKA_FLOP", Config{Sink: targetconf.SinkKafka, Brokers: c.ListenAddrs(), Topic: testTopic, MaxRecordBytes: targetconf.MinKafkaMaxRecordBytes})
	w, ok := s.(Windowed)
	if !ok || w.Window() < 500 {
		t.Fatalf("the Kafka sink's window: %v %v, want at least a dispatcher step's run (500)", ok, w)
	}
	recs := records("KAFKA_FLOP", 1, 300, flightKeys...)
	for i := range recs {
		recs[i].Value = append(recs[i].Value, strings.Repeat(" ", 2500)...) // one record per 4 KB batch
	}
	n, err := s.Send(context.Background(), recs)
	if err != nil || n != len(recs) {
		t.Fatalf("Send(%d records) = %d, %v", len(recs), n, err)
	}
	if r := requests.Load(); r < 50 {
		t.Errorf("%d produce requests for %d records of one batch each; the window did not travel in many", r, len(recs))
	}
	checkPerKeyOrder(t, consumeAll(t, c.ListenAddrs(), len(recs)), recs)
}

// produceHooks hands the client's produce hooks to the functions a test sets.
type produceHooks struct {
	buffered   func(*kgo.Record)
	unbuffered func(*kgo.Record, error)
}

// OnProduceRecordBuffered implements kgo.HookProduceRecordBuffered.
func (h produceHooks) OnProduceRecordBuffered(r *kgo.Record) {
	if h.buffered != nil {
		h.buffered(r)
	}
}

// OnProduceRecordUnbuffered implements kgo.HookProduceRecordUnbuffered.
func (h produceHooks) OnProduceRecordUnbuffered(r *kgo.Record, err error) {
	if h.unbuffered != nil {
		h.unbuffered(r, err)
	}
}

// A Send that gives up during an outage leaves its records in the client: their produce
// request has no answer yet, so the idempotent client may neither fail nor drop them, and the
// dispatcher sends the same events again after its backoff. When the outage's answer comes (a
// refusal, after the records' time is up), the client fails every record it holds for the
// partition at once. Had the retry produced its records by then, it would lose the ones before
// that moment and deliver the ones after it: a flight's later events in Kafka ahead of its
// earlier ones, which only a retry after them brings, out of order for good (CI saw
// TestKafkaWindowThroughTheDispatcher fail so: "flight 103: event 3 after 299"). The answer
// here comes exactly half-way through the retry's records; every flight's events must still
// first arrive in event order.
func TestKafkaRetryDuringAnUnansweredSendKeepsFlightOrder(t *testing.T) {
	c := newKfake(t)
	var failing atomic.Bool
	answer := make(chan struct{}) // closed: the first produce request of the outage is answered
	release := sync.OnceFunc(func() { close(answer) })
	t.Cleanup(release)
	var holding atomic.Bool
	c.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if !failing.Load() {
			return nil, nil, false
		}
		if holding.CompareAndSwap(false, true) {
			c.SleepControl(func() { <-answer }) // the broker answers late: Send gives up first
		}
		return notEnoughReplicas(req), nil, true
	})

	recs := records("KAFKA_FLOP", 1, 40, flightKeys...)
	var retrying atomic.Bool
	var produced atomic.Int64
	dropped := make(chan struct{}) // closed: the client failed a record it had buffered
	dropOnce := sync.OnceFunc(func() { close(dropped) })
	hooks := produceHooks{
		buffered: func(*kgo.Record) {
			if !retrying.Load() || produced.Add(1) != int64(len(recs)/2) {
				return
			}
			// Half-way through the retry's records: the refusal arrives, the client fails
			// what it holds, and the broker is back.
			release()
			select {
			case <-dropped:
			case <-time.After(10 * time.Second):
				t.Error("the client failed none of the records of the send that gave up")
			}
			failing.Store(false)
		},
		unbuffered: func(_ *kgo.Record, err error) {
			if err != nil {
				dropOnce()
			}
		},
	}
	cfg := Config{Sink: targetconf.SinkKafka, Brokers: c.ListenAddrs(), Topic: testTopic, Timeout: time.Second, MaxRecordBytes: DefaultKafkaMaxRecordBytes}
	cl, err := kgo.NewClient(append(kafkaOpts(cfg, nil), kgo.WithHooks(hooks))...)
	if err != nil {
		t.Fatal(err)
	}
	s := &kafkaSink{name: "KAFKA_FLOP", topic: testTopic, timeout: cfg.Timeout, maxBytes: cfg.MaxRecordBytes, cl: cl}
	defer s.Close()
	ctx := context.Background()

	failing.Store(true)
	sent, err := s.Send(ctx, recs)
	if err == nil || sent != 0 {
		t.Fatalf("Send during the outage = %d, %v; want 0 and an error", sent, err)
	}
	retrying.Store(true)
	n, err := s.Send(ctx, recs) // the dispatcher's retry, while the first request is unanswered
	if err == nil {
		t.Fatalf("retry during the outage = %d, nil; want an error", n)
	}
	if pipeline.ClassOf(err) != pipeline.Infra {
		t.Errorf("retry during the outage: class %s, want INFRA: %v", pipeline.ClassOf(err), err)
	}
	sent += n
	release()
	failing.Store(false)
	for attempt := 0; sent < len(recs); attempt++ {
		if attempt == 10 {
			t.Fatalf("still failing after the outage: %d of %d sent", sent, len(recs))
		}
		n, err := s.Send(ctx, recs[sent:])
		sent += n
		if err != nil {
			t.Logf("retry %d after the outage: %v", attempt, err)
		}
	}

	// At least once: a record may arrive twice, but its first arrival keeps its flight's order.
	checkPerKeyOrder(t, consumeFirsts(t, c.ListenAddrs(), len(recs)), recs)
}
