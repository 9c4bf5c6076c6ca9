package dispatch_test

import (
	"context"
	"encoding/json"
	"fmt"
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
