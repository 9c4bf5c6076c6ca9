package main

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"net/http"

	"msgx/internal/api"
	"msgx/internal/config"
	"msgx/internal/flight"
	"msgx/internal/flight/redisflight"
	"msgx/internal/handler"
	"msgx/internal/jobs"
	"msgx/internal/pipeline"
	"msgx/internal/pump"
)

// testPumpHook changes the pump's options in the end-to-end tests' binary only (the phase A
// crash failpoint, testhooks.go).
var testPumpHook func(*pump.Options)

// flightStores is the flight side of a serve as the phase sets it up: what the API reads,
// what the history sweep sweeps, and what to close.
type flightStores struct {
	reader  api.FlightReader
	history jobs.FlightHistory
	close   func()
	// routes are phase A's (GET/POST /api/v1/consistency); start runs what it starts with
	// the server (the consistency check on start-up).
	routes func(*http.ServeMux)
	start  func(ctx context.Context)
	// rebuild is PROJECTION_REBUILD (jobs.Runner.Rebuild); nil in phase B.
	rebuild func(ctx context.Context, doing func(format string, args ...any)) (string, map[string]int, error)
	// consistency is CONSISTENCY_CHECK, the sentinel's daily sample (jobs.Runner.Consistency).
	consistency func(ctx context.Context) (string, error)
}

// phaseStores returns the flight stores of cfg's phase. In phase B they are the SQL store. In
// phase A Redis is authoritative (docs/redis-flights.md): the pump writes it first
// (Options.Authority) and the handlers, the API and the history sweep read it, while the SQL
// store becomes FLIGHT_STATE's mirror, written in the success transaction; the pump batches
// as in phase B (pipeline.batch-size, a Redis script per message, one SQL transaction per
// batch).
func phaseStores(cfg config.Config, sqlFlights *flight.Store, clock pipeline.Clock, log *slog.Logger, opt *pump.Options) flightStores {
	if cfg.Phase != "A" {
		return flightStores{reader: sqlFlights, history: sqlFlights, close: func() {}, routes: func(*http.ServeMux) {}, start: func(context.Context) {}}
	}
	rs := redisflight.New(redisflight.Options{Addr: cfg.Redis.Addr, DB: cfg.Redis.DB, Password: cfg.Redis.Password,
		Prefix: cfg.Redis.KeyPrefix, MarkerTTL: cfg.Redis.MarkerTTL, Clock: clock, Location: cfg.Location()})
	if err := rs.Ping(context.Background()); err != nil {
		// Not fatal: the messages that write flights wait (INFRA) until Redis answers.
		log.Warn("phase A: Redis does not answer; flight messages will fail with INFRA and wait until it does", "addr", cfg.Redis.Addr, "err", err.Error())
	}
	log.Info("phase A: flights in Redis, FLIGHT_STATE mirrors them", "addr", cfg.Redis.Addr, "db", cfg.Redis.DB, "key_prefix", cfg.Redis.KeyPrefix,
		"batch_size", cfg.Pipeline.BatchSize)
	opt.Authority = rs
	opt.View = redisflight.WithRefs(rs, sqlFlights)
	// Batches: flights read from Redis (every message before in the batch applied there),
	// reference data through the batch transaction.
	opt.ViewIn = func(tx *sql.Tx) handler.View { return redisflight.WithRefs(rs, sqlFlights.InTx(tx)) }
	// A batch remembers the flights it read and wrote: one round trip fewer per script.
	opt.BatchFlights = func() pump.BatchFlights { return rs.Batch() }
	if testPumpHook != nil {
		testPumpHook(opt)
	}
	from, to := cfg.RebuildDays()
	span := flight.DayRange{From: from, To: to} // jobs.rebuild-days
	sen := &flight.Sentinel{Auth: rs, Mirror: sqlFlights, Clock: clock, Location: cfg.Location(), Logger: log, Days: &span}
	start := func(ctx context.Context) {
		if !cfg.ConsistencyCheck.OnStartup {
			return
		}
		go func() {
			if _, err := sen.Check(ctx); err != nil {
				log.Error("consistency check on start-up failed", "err", err.Error())
			}
		}()
	}
	// PROJECTION_REBUILD: FLIGHT_STATE rebuilt from Redis for the active days, a day at a time.
	rebuild := func(ctx context.Context, doing func(string, ...any)) (string, map[string]int, error) {
		now := clock.Now()
		days := span.Days(now, cfg.Location())
		done := 0
		written, deleted, err := sqlFlights.RebuildFrom(ctx, rs, days, now, func(day string, n int) {
			done++
			doing("rebuilding FLIGHT_STATE from Redis: day %s done (%d flights), %d/%d days", day, n, done, len(days))
		})
		rows := map[string]int{"FLIGHT_STATE": written - deleted}
		return fmt.Sprintf("rebuilt FLIGHT_STATE from Redis for %s … %s: %d flights written, %d rows replaced", days[0], days[len(days)-1], written, deleted), rows, err
	}
	return flightStores{reader: rs, history: sweepBoth{rs, sqlFlights}, close: func() { rs.Close() }, routes: consistencyRoutes(sen), start: start, rebuild: rebuild,
		consistency: func(ctx context.Context) (string, error) {
			ratio := cfg.ConsistencyCheck.DailySampleRatio
			rep, err := sen.CheckSample(ctx, ratio)
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("compared %d flights of %s … %s (sample %g), %d mismatches (GET /api/v1/consistency lists them)",
				rep.Checked, rep.Days[0], rep.Days[len(rep.Days)-1], ratio, len(rep.Mismatches)), nil
		}}
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
			api.WriteError(w, http.StatusServiceUnavailable, "unavailable", err.Error())
			return
		}
		api.WriteJSON(w, http.StatusOK, rep)
	}
	return func(mux *http.ServeMux) {
		mux.HandleFunc("GET /api/v1/consistency", func(w http.ResponseWriter, r *http.Request) {
			if last := sen.Last(); last != nil {
				api.WriteJSON(w, http.StatusOK, last)
				return
			}
			check(w, r)
		})
		mux.HandleFunc("POST /api/v1/consistency", check)
	}
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
