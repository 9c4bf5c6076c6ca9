package target

// How each sink classes its failures (issue 8): only a refusal of the event itself is
// REJECTED (DEAD at once); anything else, an outage above all, is INFRA and keeps the event
// PENDING, retried until the delivery head deadline.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"msgx/internal/pipeline"
	"msgx/internal/targetconf"
)

func TestWebhookClassification(t *testing.T) {
	for _, tc := range []struct {
		code int
		want pipeline.ErrorClass
	}{
		{400, pipeline.Rejected}, {401, pipeline.Infra}, {403, pipeline.Infra}, {404, pipeline.Rejected},
		{409, pipeline.Rejected}, {413, pipeline.Rejected}, {415, pipeline.Rejected}, {422, pipeline.Rejected},
		{408, pipeline.Infra}, {429, pipeline.Infra},
		{500, pipeline.Infra}, {502, pipeline.Infra}, {503, pipeline.Infra}, {504, pipeline.Infra},
		{301, pipeline.Infra}, {307, pipeline.Infra},
	} {
		t.Run(fmt.Sprint(tc.code), func(t *testing.T) {
			_, srv := newHook(t, func(int64) int { return tc.code })
			_, err := mustOpen(t, "WEBHOOK_OPS", webhookConfig(srv.URL)).Send(context.Background(), records("WEBHOOK_OPS", 1, 1, "A"))
			if err == nil || pipeline.ClassOf(err) != tc.want {
				t.Fatalf("HTTP %d: %v (class %s), want %s", tc.code, err, pipeline.ClassOf(err), tc.want)
			}
		})
	}
	t.Run("connection refused", func(t *testing.T) {
		_, err := mustOpen(t, "WEBHOOK_OPS", webhookConfig("http://"+closedAddr(t)+"/hook")).Send(context.Background(), records("WEBHOOK_OPS", 1, 1, "A"))
		if err == nil || pipeline.ClassOf(err) != pipeline.Infra {
			t.Fatalf("connection refused: %v, want INFRA", err)
		}
	})
}

func TestElasticsearchClassification(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int                              // whole request
		item   func(i int, a bulkAction) string // per item
		want   pipeline.ErrorClass
	}{
		{"whole request 500", 500, nil, pipeline.Infra},
		{"whole request 429", 429, nil, pipeline.Infra},
		{"whole request 401 (credentials)", 401, nil, pipeline.Infra},
		{"whole request 403 (privileges)", 403, nil, pipeline.Infra},
		{"item 400 (mapping error)", 0, func(int, bulkAction) string {
			return `{"status":400,"error":{"type":"mapper_parsing_exception","reason":"failed to parse"}}`
		}, pipeline.Rejected},
		{"item 429 (queue full)", 0, func(int, bulkAction) string {
			return `{"status":429,"error":{"type":"es_rejected_execution_exception","reason":"queue full"}}`
		}, pipeline.Infra},
		{"item 403 (index read-only, disk full)", 0, func(int, bulkAction) string {
			return `{"status":403,"error":{"type":"cluster_block_exception","reason":"read-only-allow-delete"}}`
		}, pipeline.Infra},
		{"item 503 (no shard)", 0, func(int, bulkAction) string {
			return `{"status":503,"error":{"type":"unavailable_shards_exception","reason":"primary shard is not active"}}`
		}, pipeline.Infra},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, cfg := newBulkServer(t)
			b.status, b.answer = tc.status, tc.item
			_, err := mustOpen(t, "ES_FLIGHT", cfg).Send(context.Background(), records("ES_FLIGHT", 1, 1, "A"))
			if err == nil || pipeline.ClassOf(err) != tc.want {
				t.Fatalf("%v (class %s), want %s", err, pipeline.ClassOf(err), tc.want)
			}
		})
	}
	t.Run("unreachable", func(t *testing.T) {
		cfg := Config{Sink: targetconf.SinkElasticsearch, Addresses: []string{"http://" + closedAddr(t)}, Index: testIndex, Timeout: time.Second}
		if _, err := mustOpen(t, "ES_FLIGHT", cfg).Send(context.Background(), records("ES_FLIGHT", 1, 1, "A")); pipeline.ClassOf(err) != pipeline.Infra {
			t.Fatalf("unreachable: %v, want INFRA", err)
		}
	})
}

// A request the node refuses as too large is split until it fits; a record too large alone
// is REJECTED, after the records before it were delivered.
func TestElasticsearchRequestTooLarge(t *testing.T) {
	b, cfg := newBulkServer(t)
	b.maxActions = 2
	s := mustOpen(t, "ES_FLIGHT", cfg)
	n, err := s.Send(context.Background(), records("ES_FLIGHT", 1, 7, "A", "B", "C"))
	if err != nil || n != 7 {
		t.Fatalf("Send = %d, %v; want all 7 in smaller requests", n, err)
	}
	var sent []int64
	for _, req := range b.requests {
		if len(req) > 2 {
			continue // refused
		}
		for _, a := range req {
			sent = append(sent, int64(a.meta["version"].(float64)))
		}
	}
	if fmt.Sprint(sent) != "[1 2 3 4 5 6 7]" {
		t.Fatalf("delivered versions %v, want 1..7 once each in order", sent)
	}

	b.maxActions = 0
	b.status = http.StatusRequestEntityTooLarge
	n, err = s.Send(context.Background(), records("ES_FLIGHT", 10, 1, "A"))
	if n != 0 || pipeline.ClassOf(err) != pipeline.Rejected {
		t.Fatalf("one record too large: %d, %v; want 0 and REJECTED", n, err)
	}
	n, err = s.Send(context.Background(), records("ES_FLIGHT", 10, 4, "A"))
	if n != 0 || pipeline.ClassOf(err) != pipeline.Rejected || !strings.Contains(err.Error(), "event 10") {
		t.Fatalf("every request too large: %d, %v; want 0 and REJECTED for event 10", n, err)
	}
}

func TestKafkaClassification(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{kerr.MessageTooLarge, true},
		{kerr.RecordListTooLarge, true},
		{kerr.InvalidRecord, true},
		{kerr.NotEnoughReplicas, false},
		{kerr.NotLeaderForPartition, false},
		{kerr.UnknownTopicOrPartition, false},
		{kerr.TopicAuthorizationFailed, false},
		{kerr.RequestTimedOut, false},
		{kgo.ErrRecordTimeout, false},
		{kgo.ErrClientClosed, false},
		{context.DeadlineExceeded, false},
		{errors.New("dial tcp 127.0.0.1:9092: connect: connection refused"), false},
	} {
		err := fmt.Errorf("kafka target K: event 1: produce to topic t: %w", tc.err)
		if got := kafkaRefused(err); got != tc.want {
			t.Errorf("%v: refused %v, want %v", tc.err, got, tc.want)
		}
	}
}

func TestRedisClassification(t *testing.T) {
	t.Run("connection refused", func(t *testing.T) {
		s := mustOpen(t, "REDIS_NOTIFY", Config{Sink: targetconf.SinkRedis, Addr: closedAddr(t), Channel: "c", Timeout: time.Second})
		if _, err := s.Send(context.Background(), records("REDIS_NOTIFY", 1, 2, "A")); err == nil || pipeline.ClassOf(err) != pipeline.Infra {
			t.Fatalf("%v, want INFRA", err)
		}
	})
	t.Run("closed", func(t *testing.T) {
		s := mustOpen(t, "REDIS_NOTIFY", Config{Sink: targetconf.SinkRedis, Addr: closedAddr(t), Channel: "c"})
		s.Close()
		if _, err := s.Send(context.Background(), records("REDIS_NOTIFY", 1, 1, "A")); err == nil || pipeline.ClassOf(err) != pipeline.Infra {
			t.Fatalf("%v, want INFRA", err)
		}
	})
	t.Run("error reply", func(t *testing.T) {
		redisOrSkip(t)
		// Credentials the server refuses: an error reply, a fault of the configuration,
		// never of the event.
		s := mustOpen(t, "REDIS_NOTIFY", Config{Sink: targetconf.SinkRedis, Addr: testRedisAddr, Username: "msgx-no-such-user", Password: "wrong",
			Channel: "c", Timeout: time.Second})
		// go-redis reports this on Exec alone; the sink once took the commands' missing
		// errors for success and reported the events delivered.
		n, err := s.Send(context.Background(), records("REDIS_NOTIFY", 1, 2, "A"))
		if n != 0 || err == nil || pipeline.ClassOf(err) != pipeline.Infra {
			t.Fatalf("Send = %d, %v; want 0 and INFRA", n, err)
		}
	})
}

func TestFileClassification(t *testing.T) {
	t.Run("not one line", func(t *testing.T) {
		s := mustOpen(t, "F", Config{Sink: targetconf.SinkFile, Path: t.TempDir() + "/f.jsonl"})
		recs := records("F", 1, 1, "A")
		recs[0].Value = []byte("{\n}")
		if _, err := s.Send(context.Background(), recs); pipeline.ClassOf(err) != pipeline.Rejected {
			t.Fatalf("%v, want REJECTED", err)
		}
	})
	t.Run("disk full", func(t *testing.T) {
		if _, err := os.Stat("/dev/full"); err != nil {
			t.Skip("no /dev/full")
		}
		s := mustOpen(t, "F", Config{Sink: targetconf.SinkFile, Path: "/dev/full"})
		n, err := s.Send(context.Background(), records("F", 1, 1, "A"))
		if n != 0 || err == nil || pipeline.ClassOf(err) != pipeline.Infra {
			t.Fatalf("%d, %v; want 0 and INFRA", n, err)
		}
	})
}
