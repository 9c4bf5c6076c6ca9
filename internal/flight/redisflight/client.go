package redisflight

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultTimeout bounds each Redis call when Options.Timeout is not set (redis.timeout).
const DefaultTimeout = 2 * time.Second

// NoAnswerError says Redis did not answer a call within the timeout (redis.timeout): a Redis
// stalled (CLIENT PAUSE, a long script, a slow disk), unreachable or failing over. Where names
// the server (its address, or the Sentinel master and the sentinels).
type NoAnswerError struct {
	Where   string
	Timeout time.Duration
	Err     error
}

func (e *NoAnswerError) Error() string {
	return fmt.Sprintf("Redis does not answer (%s) within %s: %v", e.Where, e.Timeout, e.Err)
}

func (e *NoAnswerError) Unwrap() error { return e.Err }

// newClient returns the client of opt: Sentinel's failover client when opt.SentinelMaster is
// set, else one of opt.Addr. Every call is bounded by opt.Timeout (dial, write, read, a
// connection from the pool), is not retried by the client (the pump retries a message by its
// backoff, and a retried script could overlap the one that timed out), and a call that times
// out fails with *NoAnswerError.
func newClient(opt Options) (*redis.Client, string, *atomic.Uint64) {
	t := opt.Timeout
	if t <= 0 {
		t = DefaultTimeout
	}
	var rdb *redis.Client
	where := opt.Addr
	if opt.SentinelMaster != "" {
		where = "master " + opt.SentinelMaster + " via sentinels " + strings.Join(opt.SentinelAddrs, ",")
		rdb = redis.NewFailoverClient(&redis.FailoverOptions{
			MasterName: opt.SentinelMaster, SentinelAddrs: opt.SentinelAddrs, SentinelPassword: opt.SentinelPassword,
			Password: opt.Password, DB: opt.DB,
			DialTimeout: t, ReadTimeout: t, WriteTimeout: t, PoolTimeout: t, MaxRetries: -1,
		})
	} else {
		rdb = redis.NewClient(&redis.Options{Addr: opt.Addr, DB: opt.DB, Password: opt.Password,
			DialTimeout: t, ReadTimeout: t, WriteTimeout: t, PoolTimeout: t, MaxRetries: -1})
	}
	dials := new(atomic.Uint64)
	rdb.AddHook(noAnswerHook{where: where, timeout: t, dials: dials})
	return rdb, where, dials
}

// noAnswerHook turns a call's timeout into *NoAnswerError, and counts the connections made
// (Store.Dials).
type noAnswerHook struct {
	where   string
	timeout time.Duration
	dials   *atomic.Uint64
}

func (h noAnswerHook) wrap(err error) error {
	if !isTimeout(err) {
		return err
	}
	var na *NoAnswerError
	if errors.As(err, &na) {
		return err
	}
	return &NoAnswerError{Where: h.where, Timeout: h.timeout, Err: err}
}

func (h noAnswerHook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := next(ctx, network, addr)
		if err == nil {
			h.dials.Add(1)
		}
		return c, h.wrap(err)
	}
}

func (h noAnswerHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if w := h.wrap(err); w != err {
			cmd.SetErr(w)
			return w
		}
		return err
	}
}

func (h noAnswerHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, c := range cmds {
			if w := h.wrap(c.Err()); w != c.Err() {
				c.SetErr(w)
			}
		}
		return h.wrap(err)
	}
}

// isTimeout says err is a call that ran out of time: a network timeout, a deadline, or no
// connection free in the pool.
func isTimeout(err error) bool {
	if err == nil {
		return false
	}
	var ne net.Error
	return errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, redis.ErrPoolTimeout) || (errors.As(err, &ne) && ne.Timeout())
}
