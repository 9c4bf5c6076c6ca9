package redisflight

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"msgx/internal/flight"
	"msgx/internal/pipeline"
)

// MarkStore is the SQL side of the marks (flight.Store: table REDIS_MARK).
type MarkStore interface {
	RedisMark(ctx context.Context, prefix string) (flight.Mark, bool, error)
	SetRedisMark(ctx context.Context, prefix string, m flight.Mark, now time.Time) error
	HasFlights(ctx context.Context) (bool, error)
	// MirrorVersions reads the versions FLIGHT_STATE holds of flids, through tx when not nil
	// (lostflight.go).
	MirrorVersions(ctx context.Context, tx *sql.Tx, flids []int64) (map[int64]int64, error)
}

// Guard keeps phase A from applying messages to a Redis that lost data. Redis and SQL each
// keep an epoch and a high-water mark (mark.go, flight.Mark); every script of the pump raises
// Redis's mark and checks both atomically, and each batch raises SQL's in its transaction
// (Commit). Before each step the pump asks Check: Redis without the epoch (restarted empty,
// flushed), with another one, or with a mark below SQL's (a failover to a replica that had
// not received the last scripts, an older snapshot) stops the pump, with the reason, until
// REDIS_RESTORE writes FLIGHT_STATE back into Redis with the marks (Restored). A single flight
// Redis lost (a stray DEL, an eviction) leaves the marks agreeing: the guard learns of it when
// a message's decision finds the flight absent (LostFlights) or the consistency sentinel does
// (Store.NoteMissing), and Check stops the pump for it the same way (lostflight.go).
type Guard struct {
	s      *Store
	sql    MarkStore
	clock  pipeline.Clock
	log    *slog.Logger
	mu     sync.Mutex
	loaded bool // the SQL mark was read
	has    bool // there is one
	mark   flight.Mark
	// lost holds the flights Redis lost and the mirror holds, with the mirror's version: Check
	// reports them until Redis holds each again or the mirror no longer does (lostflight.go).
	lost map[int64]int64
}

// NewGuard turns the guard on for s: from now on its scripts carry the marks, and refuse to
// run until Check has verified them.
func NewGuard(s *Store, sqlMarks MarkStore, clock pipeline.Clock, log *slog.Logger) *Guard {
	if log == nil {
		log = slog.Default()
	}
	if clock == nil {
		clock = pipeline.SystemClock{}
	}
	s.guard = &guard{}
	return &Guard{s: s, sql: sqlMarks, clock: clock, log: log}
}

// Check compares the marks of Redis and SQL. halt is why the pump must not apply ("" when
// they agree); err says the check could not be made (Redis or the database does not answer).
// On the first start (no mark in SQL) it gives an empty Redis a new epoch and records it in
// SQL; an empty Redis beside a FLIGHT_STATE that holds flights is a Redis that lost its data
// before the marks were kept.
func (g *Guard) Check(ctx context.Context) (halt string, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.loaded {
		if g.mark, g.has, err = g.sql.RedisMark(ctx, g.s.p); err != nil {
			return "", err
		}
		g.loaded = true
	}
	rm, err := g.s.Marks(ctx)
	if err != nil {
		return "", err
	}
	if !g.has {
		if halt, err := g.first(ctx, &rm); halt != "" || err != nil {
			return halt, err
		}
	}
	switch {
	case !rm.HasEpoch:
		return fmt.Sprintf("Redis lost its data: mark %s in SQL, none in Redis", Thousands(g.mark.MsgID)), nil
	case rm.Epoch != g.mark.Epoch:
		return fmt.Sprintf("Redis holds another flight picture: epoch %s in Redis, %s in SQL (mark %s in SQL, %s in Redis)",
			rm.Epoch, g.mark.Epoch, Thousands(g.mark.MsgID), markText(rm)), nil
	case !rm.HasMark || rm.Mark < g.mark.MsgID:
		return fmt.Sprintf("Redis lost data: mark %s in SQL, %s in Redis (a failover to a replica that missed the last writes, or an older snapshot)",
			Thousands(g.mark.MsgID), markText(rm)), nil
	}
	g.s.adopt(rm.Epoch, rm.Mark)
	return g.lostFlights(ctx, rm)
}

// first starts the marks when SQL has none: the epoch Redis has, or a new one for a Redis
// that has none, at mark 0.
func (g *Guard) first(ctx context.Context, rm *RedisMarks) (halt string, err error) {
	if !rm.HasEpoch {
		inSQL, err := g.sql.HasFlights(ctx)
		if err != nil {
			return "", err
		}
		inRedis, err := g.s.holdsFlights(ctx)
		if err != nil {
			return "", err
		}
		if inSQL && !inRedis {
			return "Redis lost its data: FLIGHT_STATE holds flights, Redis none and no mark (run REDIS_RESTORE)", nil
		}
		if err := g.s.initMarks(ctx, newEpoch()); err != nil {
			return "", err
		}
		if *rm, err = g.s.Marks(ctx); err != nil {
			return "", err
		}
	}
	m := flight.Mark{Epoch: rm.Epoch}
	if err := g.sql.SetRedisMark(ctx, g.s.p, m, g.clock.Now()); err != nil {
		return "", err
	}
	g.mark, g.has = m, true
	g.log.Info("phase A: the Redis marks start", "epoch", m.Epoch, "redis_mark", rm.Mark)
	return "", nil
}

// Commit raises SQL's mark inside tx, the pump's batch transaction, to the mark the batch's
// scripts left in Redis. done is to be called once tx has committed.
func (g *Guard) Commit(ctx context.Context, tx *sql.Tx, now time.Time) (done func(), err error) {
	epoch, mark := g.s.guardMark()
	g.mu.Lock()
	cur := g.mark
	g.mu.Unlock()
	if epoch == "" || epoch != cur.Epoch || mark <= cur.MsgID {
		return func() {}, nil
	}
	if err := flight.RaiseRedisMarkTx(ctx, tx, g.s.p, epoch, mark, now); err != nil {
		return nil, err
	}
	return func() {
		g.mu.Lock()
		if g.mark.Epoch == epoch && mark > g.mark.MsgID {
			g.mark.MsgID = mark
		}
		g.mu.Unlock()
	}, nil
}

// Restore makes Redis and SQL agree on new marks: a fresh epoch and mark, written to Redis
// and then to SQL (REDIS_RESTORE, after it has written FLIGHT_STATE back into Redis).
func (g *Guard) Restore(ctx context.Context, mark int64) (flight.Mark, error) {
	m := flight.Mark{Epoch: newEpoch(), MsgID: mark}
	if err := g.s.SetMarks(ctx, m.Epoch, m.MsgID); err != nil {
		return flight.Mark{}, err
	}
	if err := g.sql.SetRedisMark(ctx, g.s.p, m, g.clock.Now()); err != nil {
		return flight.Mark{}, err
	}
	g.mu.Lock()
	g.mark, g.has, g.loaded = m, true, true
	g.lost = nil // Redis holds FLIGHT_STATE's flights again
	g.mu.Unlock()
	return m, nil
}

// SQLMark returns the mark SQL holds (read now).
func (g *Guard) SQLMark(ctx context.Context) (flight.Mark, bool, error) {
	return g.sql.RedisMark(ctx, g.s.p)
}

func markText(rm RedisMarks) string {
	if !rm.HasMark {
		return "none"
	}
	return Thousands(rm.Mark)
}

// Thousands writes n with a comma between thousands (1,234).
func Thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := n < 0
	if neg {
		s = s[1:]
	}
	out := make([]byte, 0, len(s)+len(s)/3)
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	if neg {
		return "-" + string(out)
	}
	return string(out)
}
