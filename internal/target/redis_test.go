package target

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"msgx/internal/targetconf"
	"msgx/internal/testkit"
)

const testRedisAddr = "127.0.0.1:6379"

// redisOrSkip returns a client of the test Redis, or skips the test when Redis is not
// reachable (fails instead under MSGX_TEST_REQUIRE_SERVICES=1).
func redisOrSkip(t *testing.T) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: testRedisAddr, DialTimeout: time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		rdb.Close()
		testkit.RequireService(t, "Redis at "+testRedisAddr+" (start redis-server to run this test)", err)
	}
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

func TestRedisPublishesInOrder(t *testing.T) {
	rdb := redisOrSkip(t)
	ctx := context.Background()
	channel := fmt.Sprintf("msgx:test:%s:%d", t.Name(), time.Now().UnixNano())
	sub := rdb.Subscribe(ctx, channel)
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil { // the subscription confirmation
		t.Fatal(err)
	}
	msgs := sub.Channel()

	s := mustOpen(t, "REDIS_NOTIFY", Config{Sink: targetconf.SinkRedis, Addr: testRedisAddr, Channel: channel})
	recs := records("REDIS_NOTIFY", 1, 50, flightKeys...)
	for _, batch := range [][]Record{recs[:1], recs[1:30], recs[30:]} {
		if n, err := s.Send(ctx, batch); err != nil || n != len(batch) {
			t.Fatalf("Send(%d) = %d, %v", len(batch), n, err)
		}
	}
	timeout := time.After(10 * time.Second)
	for i, r := range recs {
		select {
		case m := <-msgs:
			if m.Channel != channel || m.Payload != string(r.Value) {
				t.Fatalf("message %d: %s %s, want %s %s", i, m.Channel, m.Payload, channel, r.Value)
			}
		case <-timeout:
			t.Fatalf("received %d of %d messages", i, len(recs))
		}
	}
}

func TestRedisUnreachableIsRetryableError(t *testing.T) {
	s := mustOpen(t, "REDIS_NOTIFY", Config{Sink: targetconf.SinkRedis, Addr: closedAddr(t), Channel: "msgx:notify", Timeout: time.Second})
	n, err := s.Send(context.Background(), records("REDIS_NOTIFY", 5, 2, "A"))
	if err == nil || n != 0 {
		t.Fatalf("Send to a closed port = %d, %v; want 0 and an error", n, err)
	}
	if !strings.Contains(err.Error(), "redis target REDIS_NOTIFY: event 5") {
		t.Errorf("error %q does not name the target and event", err)
	}
}

func TestRedisSendAfterClose(t *testing.T) {
	s, err := Open(context.Background(), "REDIS_NOTIFY", Config{Sink: targetconf.SinkRedis, Channel: "c"}, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if n, err := s.Send(context.Background(), records("REDIS_NOTIFY", 1, 1)); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("Send after Close = %d, %v; want a closed error", n, err)
	}
}
