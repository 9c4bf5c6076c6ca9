package app

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"net/http"
	"slices"

	"msgx/client"
	"msgx/internal/api"
	"msgx/internal/api/reply"
	"msgx/internal/config"
	"msgx/internal/flight"
	"msgx/internal/flight/redisflight"
	"msgx/internal/handler"
	"msgx/internal/jobs"
	"msgx/internal/pipeline"
	"msgx/internal/pump"
	"msgx/internal/store"
	"msgx/internal/target"
)

// flightStores is the flight side of a serve as the phase sets it up: what the API reads,
// what the history sweep sweeps, and what to close.
type flightStores struct {
	reader  api.FlightReader
	history jobs.FlightHistory
	close   func()
	// routes are the sentinel's (GET/POST /api/v1/consistency; phase A, or phase B with
	// REDIS_FLIGHT); start runs what it starts with the server (the check on start-up).
	routes func(*http.ServeMux)
	start  func(ctx context.Context)
	// rebuild is PROJECTION_REBUILD (jobs.Runner.Rebuild); nil in phase B without REDIS_FLIGHT.
	rebuild func(ctx context.Context, params string, doing func(format string, args ...any)) (string, map[string]int, error)
	// consistency is CONSISTENCY_CHECK, the sentinel's daily sample (jobs.Runner.Consistency).
	consistency func(ctx context.Context) (string, error)
	// redis is phase A's Redis side: the guard against a Redis that lost data and
	// REDIS_RESTORE (redismark.go); nil in phase B.
	redis *phaseARedis
}

// phaseStores returns the flight stores of cfg's phase. In phase B they are the SQL store
// (with the REDIS_FLIGHT target, Redis beside it as its projection: projectionStores). In
// phase A Redis is authoritative (docs/redis-flights.md): the pump writes it first
// (Options.Authority) and the handlers, the API and the history sweep read it, while the SQL
// store becomes FLIGHT_STATE's mirror, written in the success transaction; the pump batches
// as in phase B (pipeline.batch-size, a Redis script per message, one SQL transaction per
// batch).
func phaseStores(cfg config.Config, db *store.DB, sqlFlights *flight.Store, clock pipeline.Clock, log *slog.Logger, opt *pump.Options) flightStores {
	if cfg.Phase != "A" {
		if tc, ok := cfg.FlightProjection(); ok {
			return projectionStores(cfg, tc, db, sqlFlights, clock, log)
		}
		return flightStores{reader: sqlFlights, history: sqlFlights, close: func() {}, routes: func(*http.ServeMux) {}, start: func(context.Context) {}}
	}
	rs := redisflight.New(redisflight.Options{Addr: cfg.Redis.Addr, DB: cfg.Redis.DB, Password: cfg.Redis.Password,
		Prefix: cfg.Redis.KeyPrefix, MarkerTTL: cfg.Redis.MarkerTTL, Clock: clock, Location: cfg.Location(),
		Timeout: cfg.Redis.Timeout, SentinelMaster: cfg.Redis.Sentinel.Master, SentinelAddrs: cfg.Redis.Sentinel.Addrs,
		SentinelPassword: cfg.Redis.Sentinel.Password})
	if err := rs.Ping(context.Background()); err != nil {
		// Not fatal: the messages that write flights wait (INFRA) until Redis answers.
		log.Warn("phase A: Redis does not answer; flight messages will fail with INFRA and wait until it does", "addr", rs.Where(), "err", err.Error())
	}
	log.Info("phase A: flights in Redis, FLIGHT_STATE mirrors them", "addr", rs.Where(), "timeout", cfg.Redis.Timeout.String(), "db", cfg.Redis.DB, "key_prefix", cfg.Redis.KeyPrefix,
		"batch_size", cfg.Pipeline.BatchSize)
	opt.Authority = rs
	opt.View = redisflight.WithRefs(rs, sqlFlights)
	// Batches: flights read from Redis (every message before in the batch applied there),
	// reference data through the batch transaction.
	opt.ViewIn = func(tx *sql.Tx) handler.View { return redisflight.WithRefs(rs, sqlFlights.InTx(tx)) }
	// A batch remembers the flights it read and wrote: one round trip fewer per script.
	opt.BatchFlights = func() pump.BatchFlights { return rs.Batch() }
	sen := sentinel(cfg, rs, sqlFlights, clock, log)
	span := *sen.Days
	// PROJECTION_REBUILD: FLIGHT_STATE rebuilt from Redis for the active days, in chunks
	// (redismark.go: rebuildFromRedis).
	rebuild := func(ctx context.Context, params string, doing func(string, ...any)) (string, map[string]int, error) {
		return rebuildFromRedis(ctx, rs, sqlFlights, span.Days(clock.Now(), cfg.Location()), clock.Now(), params, doing)
	}
	return flightStores{reader: rs, history: sweepBoth{rs, sqlFlights}, close: func() { rs.Close() }, routes: consistencyRoutes(sen),
		start: sentinelStart(cfg, sen, log), rebuild: rebuild, consistency: dailySample(cfg, sen),
		redis: newPhaseARedis(cfg, rs, sqlFlights, clock, log)}
}

// projectionStores are the flight stores of phase B with the REDIS_FLIGHT target (sink
// redis-flights): FLIGHT_STATE is the flight store, which the handlers, the API and the
// history sweep read, and Redis its projection, kept by the target's events. The sentinel
// compares the two (FLIGHT_STATE authoritative) and PROJECTION_REBUILD rewrites Redis's active
// days from FLIGHT_STATE, in chunks, marked with the newest event id so that no event
// produced before the rebuild overwrites it when delivered after.
func projectionStores(cfg config.Config, tc target.Config, db *store.DB, sqlFlights *flight.Store, clock pipeline.Clock, log *slog.Logger) flightStores {
	ro := target.ProjectionOptions(tc)
	ro.Clock, ro.Location = clock, cfg.Location()
	rs := redisflight.New(ro)
	if err := rs.Ping(context.Background()); err != nil {
		// Not fatal: REDIS_FLIGHT's events wait until Redis answers; the sentinel and the
		// rebuild fail until then.
		log.Warn("phase B: the Redis of REDIS_FLIGHT does not answer; its events wait until it does", "addr", rs.Where(), "err", err.Error())
	}
	log.Info("phase B with REDIS_FLIGHT: FLIGHT_STATE is the flight store, Redis its projection", "addr", rs.Where(), "db", tc.DB, "key_prefix", tc.KeyPrefix)
	sen := sentinel(cfg, sqlFlights, rs, clock, log)
	span := *sen.Days
	rebuild := func(ctx context.Context, params string, doing func(string, ...any)) (string, map[string]int, error) {
		if err := jobs.CheckParams(params); err != nil {
			return "", nil, err
		}
		now := clock.Now()
		days := span.Days(now, cfg.Location())
		// The pump runs the job in the message order: no event is produced while it runs,
		// so every event not yet delivered is at or below the mark.
		mark, err := db.Outbox.LastEventID(ctx)
		if err != nil {
			return "", nil, err
		}
		written, deleted, err := rs.RebuildFrom(ctx, sqlFlights, days, mark, redisflight.DefaultRebuildChunk, rebuildProgress("Redis from FLIGHT_STATE", days, doing))
		rows := map[string]int{"REDIS_FLIGHT": written + deleted}
		return fmt.Sprintf("rebuilt Redis from FLIGHT_STATE for %s … %s: %d flights written, %d deleted; REDIS_FLIGHT events up to %d are in it", days[0], days[len(days)-1], written, deleted, mark), rows, err
	}
	return flightStores{reader: sqlFlights, history: sweepProjection{sqlFlights, rs}, close: func() { rs.Close() }, routes: consistencyRoutes(sen),
		start: sentinelStart(cfg, sen, log), rebuild: rebuild, consistency: dailySample(cfg, sen)}
}

// sentinel returns the consistency sentinel comparing auth and mirror over jobs.rebuild-days.
func sentinel(cfg config.Config, auth, mirror flight.Reader, clock pipeline.Clock, log *slog.Logger) *flight.Sentinel {
	from, to := cfg.RebuildDays()
	span := flight.DayRange{From: from, To: to} // jobs.rebuild-days
	return &flight.Sentinel{Auth: auth, Mirror: mirror, Clock: clock, Location: cfg.Location(), Logger: log, Days: &span}
}

// sentinelStart runs the consistency check on start-up (consistency-check.on-startup); Run
// calls it in its run group, which ends it at shutdown and waits for it.
func sentinelStart(cfg config.Config, sen *flight.Sentinel, log *slog.Logger) func(ctx context.Context) {
	return func(ctx context.Context) {
		if !cfg.ConsistencyCheck.OnStartup {
			return
		}
		if _, err := sen.Check(ctx); err != nil && ctx.Err() == nil {
			log.Error("consistency check on start-up failed", "err", err.Error())
		}
	}
}

// dailySample is CONSISTENCY_CHECK: the sentinel on consistency-check.daily-sample-ratio of
// the flights.
func dailySample(cfg config.Config, sen *flight.Sentinel) func(ctx context.Context) (string, error) {
	return func(ctx context.Context) (string, error) {
		ratio := cfg.ConsistencyCheck.DailySampleRatio
		rep, err := sen.CheckSample(ctx, ratio)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("compared %d flights of %s … %s (sample %g), %d mismatches (GET /api/v1/consistency lists them)",
			rep.Checked, rep.Days[0], rep.Days[len(rep.Days)-1], ratio, len(rep.Mismatches)), nil
	}
}

// rebuildProgress tells the job's status (doing) where a rebuild is: after every chunk, the
// day in hand, its flights done so far, and how many days are done.
func rebuildProgress(what string, days []string, doing func(string, ...any)) func(day string, n int) {
	return func(day string, n int) {
		i := slices.Index(days, day)
		doing("rebuilding %s: day %s (%d/%d), %d flights of it done", what, day, i+1, len(days), n)
	}
}

// consistencyRoutes adds the sentinel's routes:
//
//	GET  /api/v1/consistency  the last comparison of Redis and FLIGHT_STATE (one is run first
//	                          when none has been): {"checked_at", "days", "checked", "mismatches"}
//	POST /api/v1/consistency  compare now and answer the report
//
// A mismatch is repaired only by an explicit rebuild, never by the check.
func consistencyRoutes(sen *flight.Sentinel) func(*http.ServeMux) {
	check := func(w http.ResponseWriter, r *http.Request) {
		rep, err := sen.Check(r.Context())
		if err != nil {
			reply.Error(w, http.StatusServiceUnavailable, "unavailable", err.Error())
			return
		}
		reply.JSON(w, http.StatusOK, consistencyReport(rep))
	}
	return func(mux *http.ServeMux) {
		mux.HandleFunc("GET /api/v1/consistency", func(w http.ResponseWriter, r *http.Request) {
			if last := sen.Last(); last != nil {
				reply.JSON(w, http.StatusOK, consistencyReport(*last))
				return
			}
			check(w, r)
		})
		mux.HandleFunc("POST /api/v1/consistency", check)
	}
}

// consistencyReport is rep as the consistency routes answer it.
func consistencyReport(rep flight.Report) client.ConsistencyReport {
	out := client.ConsistencyReport{CheckedAt: rep.CheckedAt, Days: rep.Days, Checked: rep.Checked}
	if rep.Mismatches != nil {
		out.Mismatches = make([]client.Mismatch, len(rep.Mismatches))
		for i, m := range rep.Mismatches {
			out.Mismatches[i] = client.Mismatch(m)
		}
	}
	return out
}

// sweepBoth is the history sweep of phase A: it reads Redis and deletes what it swept from
// Redis and from the FLIGHT_STATE mirror.
type sweepBoth struct {
	*redisflight.Store
	mirror *flight.Store
}

func (s sweepBoth) DeleteHistory(ctx context.Context, fs []flight.HistoryFlight) (int, error) {
	n, err := s.Store.DeleteHistory(ctx, fs)
	if err != nil {
		return n, err
	}
	_, err = s.mirror.DeleteHistory(ctx, fs)
	return n, err
}

// sweepProjection is the history sweep of phase B with REDIS_FLIGHT: it reads FLIGHT_STATE
// and deletes what it swept from the Redis projection first (each flight only while Redis
// holds it at the version swept), then from FLIGHT_STATE, so the projection does not keep
// the swept days for ever. Redis down fails the sweep before FLIGHT_STATE loses anything; it
// is retried.
type sweepProjection struct {
	*flight.Store
	proj *redisflight.Store
}

func (s sweepProjection) DeleteHistory(ctx context.Context, fs []flight.HistoryFlight) (int, error) {
	if _, err := s.proj.DeleteHistory(ctx, fs); err != nil {
		return 0, err
	}
	return s.Store.DeleteHistory(ctx, fs)
}
