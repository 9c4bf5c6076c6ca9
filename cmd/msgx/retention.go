package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"msgx/internal/pump"
	"os"
	"path/filepath"
	"time"

	"msgx/internal/config"
	"msgx/internal/jobs"
	"msgx/internal/logship"
	"msgx/internal/pipeline"
	"msgx/internal/secret"
	"msgx/internal/store"
)

// traceMemory is how many messages' trace ids the log correlation remembers.
const traceMemory = 100000

// serveLogger is serve's logger: newLogger's, and with log.logstash.addr set a copy of every
// line to logstash through a bounded queue (logship); every line with a msg_id of a traced
// message gets its trace_id. stop ends the shipping (writing what is queued for a moment).
func serveLogger(cfg config.Config) (log *slog.Logger, traces *logship.Traces, stop func()) {
	traces = logship.NewTraces(traceMemory)
	h := newLogger(cfg).Handler()
	stop = func() {}
	if addr := cfg.Log.Logstash.Addr; addr != "" {
		var level slog.Level
		level.UnmarshalText([]byte(cfg.Log.Level))
		ship := logship.New(addr, cfg.Log.Logstash.QueueSize)
		down := false
		ship.OnState = func(connected bool, err error) {
			// Straight to stderr, once per change: a line about logstash must not go through
			// logstash.
			switch {
			case err != nil && !down:
				fmt.Fprintf(os.Stderr, "msgx: logstash %s: %v (lines are queued, then dropped and counted in msgx_log_dropped_total; connecting again)\n", addr, err)
			case connected && down:
				fmt.Fprintf(os.Stderr, "msgx: logstash %s: connected again\n", addr)
			}
			down = !connected
		}
		shipped := slog.NewJSONHandler(ship, &slog.HandlerOptions{Level: level, ReplaceAttr: secret.ReplaceAttr}).WithAttrs([]slog.Attr{slog.String("service", cfg.ServiceName)})
		h = logship.Tee(h, shipped)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { ship.Run(ctx); close(done) }()
		stop = func() { cancel(); <-done }
	}
	return slog.New(logship.Correlate(h, traces)), traces, stop
}

// jobRunner is the pump's job runner as config sets it up: ARCHIVE, HISTORY_SWEEP to
// Elasticsearch (history.elasticsearch.url) or to JSON lines under <data-dir>/history, and
// RETENTION.
func jobRunner(cfg config.Config, db *store.DB, flights jobs.FlightHistory, clock pipeline.Clock, log *slog.Logger) (*jobs.Runner, error) {
	var sink jobs.HistorySink = &jobs.FileHistory{Dir: filepath.Join(cfg.DataDir, "history")}
	if es := cfg.History.Elasticsearch; es.URL != "" {
		h, err := jobs.NewESHistory(jobs.ESHistoryConfig{URL: es.URL, Index: es.Index, Username: es.Username, Password: es.Password, Timeout: es.Timeout})
		if err != nil {
			return nil, exitError{code: exitConfig, msg: "msgx serve: config: " + err.Error()}
		}
		sink = h
	}
	return &jobs.Runner{
		DB: db, Clock: clock,
		Purge: db, EventsAge: cfg.Retention.Events, ArchivedAge: cfg.Retention.Archive,
		Flights: flights, History: sink, Location: cfg.Location(), KeepDays: cfg.History.KeepDays,
		Logger: log,
	}, nil
}

// lastJobs is the status section "last_jobs": the newest job of each kind, with its result.
func lastJobs(db store.Jobs) func(ctx context.Context) (any, error) {
	return func(ctx context.Context) (any, error) {
		list, err := db.ListJobs(ctx, 50)
		if err != nil {
			return nil, err
		}
		out := []*store.Job{}
		seen := map[string]bool{}
		for _, j := range list {
			if !seen[j.Kind] {
				seen[j.Kind] = true
				out = append(out, j)
			}
		}
		return out, nil
	}
}

// printJobs prints, for msgx status, the job in hand and the last job of each kind, and takes
// their sections out of extra.
func printJobs(extra map[string]json.RawMessage) {
	if raw, ok := extra["job"]; ok {
		var j *jobs.Progress
		if err := json.Unmarshal(raw, &j); err == nil && j != nil {
			fmt.Printf("job in hand: %s (job %d) for %s: %s\n", j.Kind, j.JobID, j.RunningFor, j.Doing)
		}
		delete(extra, "job")
	}
	if raw, ok := extra["in_hand"]; ok {
		var h *pump.InHand
		if err := json.Unmarshal(raw, &h); err == nil && h != nil {
			fmt.Printf("message in hand: %d %s for %s: %s\n", h.MsgID, h.Tag, h.RunningFor, h.Doing)
		}
		delete(extra, "in_hand")
	}
	if raw, ok := extra["last_jobs"]; ok {
		var list []store.Job
		if err := json.Unmarshal(raw, &list); err == nil && len(list) > 0 {
			fmt.Println("last jobs:")
			for _, j := range list {
				what := ""
				switch {
				case j.Result != nil:
					what = *j.Result
				case j.LastError != nil:
					what = *j.LastError
				}
				when := j.CreatedAt.Format(time.RFC3339)
				if j.FinishedAt != nil {
					when = j.FinishedAt.Format(time.RFC3339)
				}
				fmt.Printf("  %-13s job %d %s %s: %s\n", j.Kind, j.ID, j.State, when, what)
			}
		}
		delete(extra, "last_jobs")
	}
}
