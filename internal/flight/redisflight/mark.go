package redisflight

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/redis/go-redis/v9"

	"msgx/internal/pipeline"
)

// The marks, Redis's side (Guard, guard.go, compares them with SQL's):
//
//	{p}epoch  the id msgx gave this Redis's flight picture when it first wrote it: a Redis
//	          that restarted empty, was flushed or evicted it has none
//	{p}mark   the high-water mark: the highest message id whose flight script Redis applied
//
// With the guard on (NewGuard), every script of the pump checks, atomically with its writes,
// that the epoch is the one the pump verified and the mark the one its own scripts left
// (apply.lua): a Redis flushed under a running pump, or a replica promoted without the last
// scripts the old master acknowledged, refuses the next script instead of taking writes on
// top of a hole.

// ErrLostData is wrapped by a script refused because Redis's epoch or mark is not the one the
// pump knows: Redis lost data since (INFRA for the message; the pump's next step stops).
var ErrLostData = errors.New("the Redis flight store lost data")

// guard is the marks as the store's scripts keep them.
type guard struct {
	mu    sync.Mutex
	epoch string // verified by the Guard's check; "" until then
	mark  int64  // Redis's mark as the scripts left it
	known bool   // false after a script whose answer was lost (it may have moved the mark)
	// suspects are the flights the consistency sentinel found in the mirror and not in Redis
	// (NoteMissing), for the Guard's next check to judge (lostflight.go).
	suspects map[int64]bool
}

// RedisMarks are the marks as read from Redis.
type RedisMarks struct {
	Epoch    string
	HasEpoch bool
	Mark     int64
	HasMark  bool
}

// Marks reads the epoch and the mark, in one round trip.
func (s *Store) Marks(ctx context.Context) (RedisMarks, error) {
	vals, err := s.rdb.MGet(ctx, s.p+"epoch", s.p+"mark").Result()
	if err != nil {
		return RedisMarks{}, unavailable("read the marks", err)
	}
	var m RedisMarks
	if v, ok := vals[0].(string); ok {
		m.Epoch, m.HasEpoch = v, true
	}
	if v, ok := vals[1].(string); ok {
		m.Mark, _ = strconv.ParseInt(v, 10, 64)
		m.HasMark = true
	}
	return m, nil
}

// SetMarks writes the epoch and the mark (REDIS_RESTORE, and the first start).
func (s *Store) SetMarks(ctx context.Context, epoch string, mark int64) error {
	if err := s.rdb.MSet(ctx, s.p+"epoch", epoch, s.p+"mark", mark).Err(); err != nil {
		return unavailable("write the marks", err)
	}
	s.adopt(epoch, mark)
	return nil
}

// initMarks gives a Redis without an epoch the epoch and mark 0, unless another writer just
// did (SETNX).
func (s *Store) initMarks(ctx context.Context, epoch string) error {
	pipe := s.rdb.TxPipeline()
	pipe.SetNX(ctx, s.p+"epoch", epoch, 0)
	pipe.SetNX(ctx, s.p+"mark", 0, 0)
	if _, err := pipe.Exec(ctx); err != nil {
		return unavailable("write the marks", err)
	}
	return nil
}

// holdsFlights says whether Redis holds any flight (the set of days is not empty).
func (s *Store) holdsFlights(ctx context.Context) (bool, error) {
	n, err := s.rdb.Exists(ctx, s.p+"days").Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return false, unavailable("read days", err)
	}
	return n > 0, nil
}

// newEpoch returns a fresh random epoch.
func newEpoch() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// adopt makes epoch and mark the ones the scripts check (after the Guard's check found them
// agreeing with SQL, or a restore wrote them).
func (s *Store) adopt(epoch string, mark int64) {
	if s.guard == nil {
		return
	}
	g := s.guard
	g.mu.Lock()
	g.epoch, g.mark, g.known = epoch, mark, true
	g.mu.Unlock()
}

// guardArgs returns what the script of message msgID checks: the epoch ("" without a guard)
// and the mark it expects ("" when unknown).
func (s *Store) guardArgs(msgID int64) (epoch, want string, err error) {
	if s.guard == nil {
		return "", "", nil
	}
	g := s.guard
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.epoch == "" {
		return "", "", pipeline.Wrap(pipeline.Infra, fmt.Errorf("redis flight store: message %d: Redis does not answer: its marks are not verified yet", msgID))
	}
	if g.known {
		want = strconv.FormatInt(g.mark, 10)
	}
	return g.epoch, want, nil
}

// applied notes that the script of msgID moved the mark.
func (s *Store) applied(msgID int64) {
	if s.guard == nil {
		return
	}
	g := s.guard
	g.mu.Lock()
	if msgID > g.mark {
		g.mark = msgID
	}
	g.mu.Unlock()
}

// markUnknown notes that a script's answer was lost: it may have moved the mark.
func (s *Store) markUnknown() {
	if s.guard == nil {
		return
	}
	s.guard.mu.Lock()
	s.guard.known = false
	s.guard.mu.Unlock()
}

// guardMark returns the epoch and the mark the scripts left ("" when not verified).
func (s *Store) guardMark() (string, int64) {
	if s.guard == nil {
		return "", 0
	}
	g := s.guard
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.epoch, g.mark
}

// lost is the error of a script refused by the marks (res: {3, epoch, mark}).
func (s *Store) lost(msgID int64, res []any) error {
	epoch, mark := "none", "none"
	if len(res) > 2 {
		if v, _ := res[1].(string); v != "" {
			epoch = v
		}
		if v, _ := res[2].(string); v != "" {
			mark = v
		}
	}
	want, have := s.guardMark()
	return pipeline.Wrap(pipeline.Infra, fmt.Errorf("redis flight store: message %d not applied: %w: epoch %s and mark %s in Redis, msgx expected %s and %d",
		msgID, ErrLostData, epoch, mark, want, have))
}
