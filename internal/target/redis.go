package target

import (
	"context"
	"crypto/tls"
	"fmt"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"msgx/internal/legacyflop"
	"msgx/internal/pipeline"
	"msgx/internal/targetconf"
)

// redisSink publishes each record's value to one pub/sub channel; with format legacy, the
// legacy's FLOP notification built from it instead (internal/legacyflop).
type redisSink struct {
	name    string
	channel string
	legacy  bool
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
	return &redisSink{name: name, channel: c.Channel, legacy: c.Format == targetconf.FormatLegacy, timeout: c.Timeout, rdb: rdb}
}

// Send publishes recs in order in one pipeline (one round trip on one connection, so Redis
// executes them in order). A PUBLISH that nobody listens to is still a success: pub/sub
// keeps nothing. It returns the count of leading PUBLISH commands Redis answered. Every
// failure is INFRA (retried): connection refused, a timeout, an error reply (NOAUTH,
// WRONGPASS, LOADING, OOM, READONLY) are states of the server or of msgx's configuration;
// PUBLISH has no way to refuse an event for its content.
//
// With format legacy each record becomes the legacy's notification; the schedule events of
// one message that follow each other in recs become one notification naming all their
// flights, and an event the legacy has no notification for (FLOP VIPF) publishes nothing and
// counts as delivered. A record that is not a notify event is REJECTED (DEAD at once): a
// configuration mistake that no retry mends.
func (s *redisSink) Send(ctx context.Context, recs []Record) (int, error) {
	if len(recs) == 0 {
		return 0, nil
	}
	pubs, convErr := s.publications(recs)
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	if !slices.ContainsFunc(pubs, func(p publication) bool { return p.payload != nil }) {
		return s.done(pubs, len(pubs)-1, recs, convErr) // nothing to publish
	}
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.IntCmd, len(pubs))
	for i, p := range pubs {
		if p.payload != nil {
			cmds[i] = pipe.Publish(ctx, s.channel, p.payload)
		}
	}
	_, execErr := pipe.Exec(ctx)
	for i, cmd := range cmds {
		if cmd == nil {
			continue
		}
		if err := cmd.Err(); err != nil {
			first := pubs[i].first
			if err == redis.ErrClosed {
				return first, closedErr(targetconf.SinkRedis, s.name)
			}
			return first, eventErr(targetconf.SinkRedis, s.name, recs[first], fmt.Errorf("publish to channel %s: %w", s.channel, err))
		}
	}
	if execErr != nil {
		// The pipeline failed before any command ran: go-redis reports a failure to set up
		// the connection (AUTH or SELECT refused) on Exec alone, leaving the commands
		// without an error, as if published. Nothing was.
		return 0, eventErr(targetconf.SinkRedis, s.name, recs[0], fmt.Errorf("publish to channel %s: %w", s.channel, execErr))
	}
	return s.done(pubs, len(pubs)-1, recs, convErr)
}

// publication is one PUBLISH: the records recs[first:end] it delivers. A nil payload
// publishes nothing (a legacy-format event with no legacy notification).
type publication struct {
	payload    []byte
	first, end int
}

// done returns the count of records delivered by pubs[:last+1], with convErr when the
// conversion stopped before the end of recs.
func (s *redisSink) done(pubs []publication, last int, recs []Record, convErr error) (int, error) {
	n := 0
	if last >= 0 {
		n = pubs[last].end
	}
	if convErr != nil {
		return n, eventErr(targetconf.SinkRedis, s.name, recs[n], convErr)
	}
	return n, nil
}

// publications turns recs into what to publish, in order. It stops at the first record the
// legacy format cannot convert and returns that error (REJECTED) with what came before.
func (s *redisSink) publications(recs []Record) ([]publication, error) {
	pubs := make([]publication, 0, len(recs))
	if !s.legacy {
		for i, r := range recs {
			pubs = append(pubs, publication{payload: r.Value, first: i, end: i + 1})
		}
		return pubs, nil
	}
	var cur *legacyflop.Notification
	var curMsg int64
	flush := func(end int) error {
		if cur == nil {
			return nil
		}
		b, err := cur.Marshal()
		if err != nil {
			return err
		}
		pubs[len(pubs)-1].payload, pubs[len(pubs)-1].end = b, end
		cur = nil
		return nil
	}
	for i, r := range recs {
		e, err := legacyflop.ParseEvent(r.Value)
		var n legacyflop.Notification
		ok := false
		if err == nil {
			n, ok, err = legacyflop.Convert(e)
		}
		if err != nil {
			if ferr := flush(i); ferr != nil {
				return pubs[:len(pubs)-1], pipeline.Wrap(pipeline.Rejected, ferr)
			}
			return pubs, pipeline.Wrap(pipeline.Rejected, fmt.Errorf("format legacy: %w", err))
		}
		if cur != nil && ok && legacyflop.Merge(cur, curMsg, n, e.MsgID) {
			continue
		}
		if err := flush(i); err != nil {
			return pubs[:len(pubs)-1], pipeline.Wrap(pipeline.Rejected, err)
		}
		if !ok {
			pubs = append(pubs, publication{first: i, end: i + 1})
			continue
		}
		pubs = append(pubs, publication{first: i, end: i + 1})
		cur, curMsg = &n, e.MsgID
	}
	if err := flush(len(recs)); err != nil {
		return pubs[:len(pubs)-1], pipeline.Wrap(pipeline.Rejected, err)
	}
	return pubs, nil
}

// Close closes the client's connections.
func (s *redisSink) Close() error {
	if err := s.rdb.Close(); err != nil && err != redis.ErrClosed {
		return fmt.Errorf("redis target %s: close: %w", s.name, err)
	}
	return nil
}
