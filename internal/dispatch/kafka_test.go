package dispatch_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
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
)

// TestKafkaOutageThroughTheDispatcher runs the real dispatcher on the real Kafka sink against
// a kfake cluster that refuses every produce request for a while: the head backs off and
// blocks the target, nothing is lost, and once the cluster recovers every event arrives,
// each flight's events in EVENT_ID order.
func TestKafkaOutageThroughTheDispatcher(t *testing.T) {
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
		clock := newClock()
		d := dispatch.New(db, map[string]target.Sink{"KAFKA_FLOP": sink}, dispatch.Options{
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
		d := dispatch.New(db, map[string]target.Sink{schd: sink}, dispatch.Options{
			SchdTarget: schd, FlushLimit: 2000, Policy: policy, Clock: newClock(),
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
				res, err := tx.Exec(`INSERT INTO MSG_EVENT (CMINMSGS_ID, TYPE_TAG, TARGET, KIND, FLIGHT_KEY, PAYLOAD, STATE, ATTEMPTS, CREATED_AT)
VALUES (?, 'SCHD-DNLD', ?, 'schd', ?, ?, 'PENDING', 0, ?)`, 7, schd, key, fmt.Sprintf(`{"FLID":%q,"v":%d,"pad":%q}`, key, i, pad), store.T(t0))
				if err != nil {
					return err
				}
				id, err := res.LastInsertId()
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
