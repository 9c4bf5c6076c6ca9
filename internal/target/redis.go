package target

import (
	"context"
	"crypto/tls"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisSink publishes each record's value to one pub/sub channel.
type redisSink struct {
	name    string
	channel string
	timeout time.Duration
	rdb     *redis.Client
}

func openRedis(name string, c Config, tlsCfg *tls.Config) Sink {
	rdb := redis.NewClient(&redis.Options{
		Addr:                  c.Addr,
		Username:              c.Username,
		Password:              c.Password,
		DB:                    c.DB,
		TLSConfig:             tlsCfg,
		DialTimeout:           c.Timeout,
		ContextTimeoutEnabled: true, // the per-send deadline bounds reads and writes too
	})
	return &redisSink{name: name, channel: c.Channel, timeout: c.Timeout, rdb: rdb}
}

// Send publishes recs in order in one pipeline (one round trip on one connection, so Redis
// executes them in order). A PUBLISH that nobody listens to is still a success: pub/sub
// keeps nothing. It returns the count of leading PUBLISH commands Redis answered. Every
// failure is INFRA (retried): connection refused, a timeout, an error reply (NOAUTH,
// WRONGPASS, LOADING, OOM, READONLY) are states of the server or of msgx's configuration;
// PUBLISH has no way to refuse an event for its content.
func (s *redisSink) Send(ctx context.Context, recs []Record) (int, error) {
	if len(recs) == 0 {
		return 0, nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.IntCmd, len(recs))
	for i, r := range recs {
		cmds[i] = pipe.Publish(ctx, s.channel, r.Value)
	}
	_, execErr := pipe.Exec(ctx)
	for i, cmd := range cmds {
		if err := cmd.Err(); err != nil {
			if err == redis.ErrClosed {
				return i, closedErr(SinkRedis, s.name)
			}
			return i, eventErr(SinkRedis, s.name, recs[i], fmt.Errorf("publish to channel %s: %w", s.channel, err))
		}
	}
	if execErr != nil {
		// The pipeline failed before any command ran: go-redis reports a failure to set up
		// the connection (AUTH or SELECT refused) on Exec alone, leaving the commands
		// without an error, as if published. Nothing was.
		return 0, eventErr(SinkRedis, s.name, recs[0], fmt.Errorf("publish to channel %s: %w", s.channel, execErr))
	}
	return len(recs), nil
}

// Close closes the client's connections.
func (s *redisSink) Close() error {
	if err := s.rdb.Close(); err != nil && err != redis.ErrClosed {
		return fmt.Errorf("redis target %s: close: %w", s.name, err)
	}
	return nil
}
