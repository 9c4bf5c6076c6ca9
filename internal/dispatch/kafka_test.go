package dispatch_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
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

	"msgx/internal/dispatch"
	"msgx/internal/pipeline"
	"msgx/internal/store"
	"msgx/internal/store/storetest"
	"msgx/internal/target"
	"msgx/internal/testkit"
)

// TestKafkaOutageThroughTheDispatcher runs the real dispatcher on the real Kafka sink against
// a kfake cluster that refuses every produce request for a while: the head backs off and
// blocks the target, nothing is lost, and once the cluster recovers every event arrives,
// each flight's events in EVENT_ID order.
func TestKafkaOutageThroughTheDispatcher(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		const topic = "msgx.flop"
		c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, topic))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		var failing atomic.Bool
		c.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
			c.KeepControl()
			if !failing.Load() {
				return nil, nil, false
			}
			preq := req.(*kmsg.ProduceRequest)
			resp := preq.ResponseKind().(*kmsg.ProduceResponse)
			for _, rt := range preq.Topics {
				st := kmsg.NewProduceResponseTopic()
				st.Topic = rt.Topic
				for _, rp := range rt.Partitions {
					sp := kmsg.NewProduceResponseTopicPartition()
					sp.Partition, sp.ErrorCode = rp.Partition, kerr.NotEnoughReplicas.Code
					st.Partitions = append(st.Partitions, sp)
				}
				resp.Topics = append(resp.Topics, st)
			}
			return resp, nil, true
		})
		sink, err := target.Open(context.Background(), "KAFKA_FLOP", target.Config{Sink: "kafka", Brokers: c.ListenAddrs(), Topic: topic, Timeout: time.Second}, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		defer sink.Close()
		clock := testkit.NewClock(t0)
		d := dispatch.New(db.Outbox, map[string]target.Sink{"KAFKA_FLOP": sink}, dispatch.Options{
			Policy: pipeline.RetryPolicy{MaxAttempts: 100, Steps: pipeline.DefaultBackoff, Cap: time.Minute, HeadDeadline: time.Hour},
			Clock:  clock,
		})
		keys := []string{"101", "102", "103", "104"}
		var want []int64
		for i := 0; i < 40; i++ {
			want = append(want, insert(t, db, ev{target: "KAFKA_FLOP", key: keys[i%4], payload: fmt.Sprintf(`{"n":%d}`, i)}))
		}
		ctx := context.Background()

		failing.Store(true)
		if sent, wait, err := d.DeliverOnce(ctx, "KAFKA_FLOP"); err != nil || sent != 0 || wait <= 0 {
			t.Fatalf("during the outage: sent %d, wait %s, err %v", sent, wait, err)
		}
		head := get(t, db, want[0])
		if head.State != "PENDING" || head.Attempts != 1 {
			t.Fatalf("head after a failed send: %+v", head)
		}
		if sent, _, _ := d.DeliverOnce(ctx, "KAFKA_FLOP"); sent != 0 || get(t, db, want[0]).Attempts != 1 {
			t.Fatal("the head was retried before its backoff was due")
		}

		failing.Store(false)
		deadline := time.Now().Add(60 * time.Second)
		total := 0
		for total < len(want) {
			if time.Now().After(deadline) {
				t.Fatalf("only %d of %d delivered after the outage", total, len(want))
			}
			clock.Add(16 * time.Second)
			sent, _, err := d.DeliverOnce(ctx, "KAFKA_FLOP")
			if err != nil {
				t.Fatal(err)
			}
			total += sent
		}
		wantState(t, db, "SENT", want...)

		cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		seen := map[int64]bool{}
		lastByKey := map[string]int64{}
		fctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		for len(seen) < len(want) && fctx.Err() == nil {
			fetches := cl.PollFetches(fctx)
			fetches.EachRecord(func(r *kgo.Record) {
				var env struct {
					EventID int64 `json:"event_id"`
				}
				if err := json.Unmarshal(r.Value, &env); err != nil {
					t.Errorf("record value %s: %v", r.Value, err)
					return
				}
				if seen[env.EventID] {
					return // at least once: a repeat is allowed, never a step back
				}
				if env.EventID < lastByKey[string(r.Key)] {
					t.Errorf("flight %s: event %d after %d", r.Key, env.EventID, lastByKey[string(r.Key)])
				}
				seen[env.EventID], lastByKey[string(r.Key)] = true, env.EventID
			})
		}
		for _, id := range want {
			if !seen[id] {
				t.Fatalf("event %d never reached Kafka", id)
			}
		}
	})
}

// TestKafkaSchdBatchSplitsUnderTheRecordLimit sends a schedule batch of 1,000 big flight
// records (about 3 MB, three times Kafka's default record limit) through the real Kafka
// sink: it arrives whole, split into several records each within the limit, all with the
// configured key in one partition, in order, newest record per flight.
func TestKafkaSchdBatchSplitsUnderTheRecordLimit(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		const topic = "msgx.schd"
		c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, topic))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		sink, err := target.Open(context.Background(), schd, target.Config{Sink: "kafka", Brokers: c.ListenAddrs(),
			Topic: topic, Timeout: 20 * time.Second, Key: "schd-batches"}, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		defer sink.Close()
		d := dispatch.New(db.Outbox, map[string]target.Sink{schd: sink}, dispatch.Options{
			SchdTarget: schd, FlushLimit: 2000, Policy: policy, Clock: testkit.NewClock(t0),
		})

		// 1,000 flights of about 3 KB, then a newer record for every tenth: 1,100 events.
		pad := strings.Repeat("x", 3000)
		var all []int64
		newest := map[string]int64{}
		err = db.Tx(context.Background(), func(tx *sql.Tx) error {
			for i := range 1100 {
				f := i % 1000
				if i >= 1000 {
					f = (i - 1000) * 10
				}
				key := fmt.Sprintf("F%04d", f)
				id, err := storetest.TakeEventIDs(tx, 1)
				if err != nil {
					return err
				}
				_, err = tx.Exec(`INSERT INTO MSG_EVENT (EVENT_ID, CMINMSGS_ID, TYPE_TAG, TARGET, KIND, FLIGHT_KEY, PAYLOAD, STATE, ATTEMPTS, CREATED_AT)
VALUES (?, ?, 'SCHD-DNLD', ?, 'schd', ?, ?, 'PENDING', 0, ?)`, id, 7, schd, key, fmt.Sprintf(`{"FLID":%q,"v":%d,"pad":%q}`, key, i, pad), store.T(t0))
				if err != nil {
					return err
				}
				all = append(all, id)
				newest[key] = id
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		var want []int64 // the newest event per flight, in event order
		for _, id := range all {
			if newest[fmt.Sprintf("F%04d", idxFlight(all, id))] == id {
				want = append(want, id)
			}
		}

		sent, _, err := d.FlushSchd(context.Background(), true)
		if err != nil || sent != len(all) {
			t.Fatalf("FlushSchd: sent %d, %v; want %d", sent, err, len(all))
		}
		wantState(t, db, "SENT", all...)

		cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxBytes(64<<20), kgo.FetchMaxPartitionBytes(64<<20))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		var got []target.Record
		partitions := map[int32]bool{}
		var lastOffset int64 = -1
		fctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for n := 0; n < len(want) && fctx.Err() == nil; {
			cl.PollFetches(fctx).EachRecord(func(r *kgo.Record) {
				if string(r.Key) != "schd-batches" {
					t.Errorf("record at offset %d has key %q, want the configured key", r.Offset, r.Key)
				}
				if len(r.Value) > target.DefaultKafkaMaxRecordBytes {
					t.Errorf("record at offset %d is %d bytes, over the limit %d", r.Offset, len(r.Value), target.DefaultKafkaMaxRecordBytes)
				}
				partitions[r.Partition] = true
				if r.Offset <= lastOffset {
					t.Errorf("offset %d after %d", r.Offset, lastOffset)
				}
				lastOffset = r.Offset
				got = append(got, target.Record{EventID: headerID(t, r), Value: r.Value})
				var arr []json.RawMessage
				if err := json.Unmarshal(r.Value, &arr); err != nil {
					t.Fatalf("record at offset %d: %v", r.Offset, err)
				}
				n += len(arr)
			})
		}
		if len(got) < 4 {
			t.Fatalf("%d records; 3 MB cannot fit in fewer than 4 of 1 MB", len(got))
		}
		if len(partitions) != 1 {
			t.Errorf("records in partitions %v, want one", partitions)
		}
		for i := 1; i < len(got); i++ {
			if got[i].EventID <= got[i-1].EventID {
				t.Errorf("record %d has event_id %d after %d", i, got[i].EventID, got[i-1].EventID)
			}
		}
		if p, w := payloads(t, got), storedPayloads(t, db, want); !slices.Equal(p, w) {
			t.Fatalf("the records carry %d payloads, want the %d newest per flight in event order", len(p), len(w))
		}
	})
}

// idxFlight returns the flight number event id was inserted for (see the test above).
func idxFlight(all []int64, id int64) int {
	i := slices.Index(all, id)
	if i >= 1000 {
		return (i - 1000) * 10
	}
	return i % 1000
}

// headerID returns the event_id header of r.
func headerID(t *testing.T, r *kgo.Record) int64 {
	t.Helper()
	for _, h := range r.Headers {
		if h.Key == "event_id" {
			id, err := strconv.ParseInt(string(h.Value), 10, 64)
			if err != nil {
				t.Fatalf("event_id header %q: %v", h.Value, err)
			}
			return id
		}
	}
	t.Fatalf("record at offset %d has no event_id header", r.Offset)
	return 0
}

// countingSink counts the Send calls of a windowed sink and the records of each.
type countingSink struct {
	target.Sink
	mu    sync.Mutex
	sizes []int
}

func (c *countingSink) Send(ctx context.Context, recs []target.Record) (int, error) {
	c.mu.Lock()
	c.sizes = append(c.sizes, len(recs))
	c.mu.Unlock()
	return c.Sink.Send(ctx, recs)
}

func (c *countingSink) Window() int { return c.Sink.(target.Windowed).Window() }

func (c *countingSink) calls() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.sizes)
}

// TestKafkaWindowThroughTheDispatcher runs the real dispatcher on the real Kafka sink with a
// whole run of events in flight in one Send (the sink's window, where the send batch is 10),
// against a kfake cluster that takes the first produce request and refuses the next ones for
// a while: exactly the leading events the broker acknowledged are SENT, the head's failure is
// recorded on the first one it did not, and after the outage every event arrives, each
// flight's in EVENT_ID order, and an event marked SENT arrives once (a repeat is only ever of
// one that was not acknowledged: at least once).
func TestKafkaWindowThroughTheDispatcher(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		const topic = "msgx.flop"
		c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, topic))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		var failing atomic.Bool
		var passed, refused atomic.Int64
		c.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
			c.KeepControl()
			if !failing.Load() || passed.Add(1) == 1 {
				return nil, nil, false // the first request of the outage round goes through
			}
			refused.Add(1)
			preq := req.(*kmsg.ProduceRequest)
			resp := preq.ResponseKind().(*kmsg.ProduceResponse)
			for _, rt := range preq.Topics {
				st := kmsg.NewProduceResponseTopic()
				st.Topic, st.TopicID = rt.Topic, rt.TopicID
				for _, rp := range rt.Partitions {
					sp := kmsg.NewProduceResponseTopicPartition()
					sp.Partition, sp.ErrorCode = rp.Partition, kerr.NotEnoughReplicas.Code
					st.Partitions = append(st.Partitions, sp)
				}
				resp.Topics = append(resp.Topics, st)
			}
			return resp, nil, true
		})
		// Records of ~2.5 KB under a 4 KB batch limit: one record per produce batch, so the
		// window travels in many requests, several in flight, and the outage cuts it.
		real, err := target.Open(context.Background(), "KAFKA_FLOP", target.Config{Sink: "kafka", Brokers: c.ListenAddrs(), Topic: topic,
			Timeout: time.Second, MaxRecordBytes: 4096}, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		defer real.Close()
		sink := &countingSink{Sink: real}
		clock := testkit.NewClock(t0)
		d := dispatch.New(db.Outbox, map[string]target.Sink{"KAFKA_FLOP": sink}, dispatch.Options{
			Policy:    pipeline.RetryPolicy{MaxAttempts: 100, Steps: pipeline.DefaultBackoff, Cap: time.Minute, HeadDeadline: time.Hour},
			Clock:     clock,
			SendBatch: 10,
			SendRuns:  30,
			Logger:    quiet(),
		})
		keys := []string{"101", "102", "103", "104"}
		var want []int64
		for i := range 300 {
			want = append(want, insert(t, db, ev{target: "KAFKA_FLOP", key: keys[i%4], payload: fmt.Sprintf(`{"n":%d,"pad":"%s"}`, i, strings.Repeat("x", 2000))}))
		}
		ctx := context.Background()

		failing.Store(true)
		sent, wait, err := d.DeliverOnce(ctx, "KAFKA_FLOP")
		if err != nil || wait <= 0 || sent >= len(want) {
			t.Fatalf("during the outage: sent %d, wait %s, err %v", sent, wait, err)
		}
		if got := sink.calls(); !slices.Equal(got, []int{300}) {
			t.Fatalf("Send calls carried %v records, want one Send with the whole run of 300 in flight", got)
		}
		if refused.Load() == 0 {
			t.Fatal("no produce request was refused: the outage did not happen")
		}
		t.Logf("outage round: %d of %d acknowledged, %d produce requests refused", sent, len(want), refused.Load())
		// SENT is exactly the acknowledged prefix; the failure sits on the first event after it.
		wantState(t, db, "SENT", want[:sent]...)
		wantState(t, db, "PENDING", want[sent:]...)
		if head := get(t, db, want[sent]); head.Attempts != 1 || head.Class.String != "INFRA" {
			t.Fatalf("head after the failed window: %+v", head)
		}
		if r := get(t, db, want[len(want)-1]); r.Attempts != 0 {
			t.Fatalf("an event behind the head was charged: %+v", r)
		}
		ackedFirst := map[int64]bool{}
		for _, id := range want[:sent] {
			ackedFirst[id] = true
		}

		failing.Store(false)
		deadline := time.Now().Add(60 * time.Second)
		for total := sent; total < len(want); {
			if time.Now().After(deadline) {
				t.Fatalf("only %d of %d delivered after the outage", total, len(want))
			}
			clock.Add(16 * time.Second)
			n, _, err := d.DeliverOnce(ctx, "KAFKA_FLOP")
			if err != nil {
				t.Fatal(err)
			}
			total += n
		}
		wantState(t, db, "SENT", want...)

		cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		seen := map[int64]int{}
		lastByKey := map[string]int64{}
		fctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		for len(seen) < len(want) && fctx.Err() == nil {
			cl.PollFetches(fctx).EachRecord(func(r *kgo.Record) {
				id := headerID(t, r)
				seen[id]++
				if seen[id] > 1 {
					if ackedFirst[id] {
						t.Errorf("event %d was marked SENT on its first delivery and arrived again", id)
					}
					return
				}
				if id < lastByKey[string(r.Key)] {
					t.Errorf("flight %s: event %d after %d", r.Key, id, lastByKey[string(r.Key)])
				}
				lastByKey[string(r.Key)] = id
			})
		}
		for _, id := range want {
			if seen[id] == 0 {
				t.Fatalf("event %d never reached Kafka", id)
			}
		}
	})
}
