package app

import (
	"context"
	"log/slog"
	"path/filepath"
	"time"

	"msgx/internal/config"
	"msgx/internal/jobs"
	"msgx/internal/pipeline"
	"msgx/internal/store"
)

// jobRunner is the pump's job runner as config sets it up: ARCHIVE, HISTORY_SWEEP to
// Elasticsearch (history.elasticsearch.url) or to JSON lines under <data-dir>/history, and
// RETENTION.
func jobRunner(cfg config.Config, db *store.DB, flights jobs.FlightHistory, clock pipeline.Clock, log *slog.Logger) (*jobs.Runner, error) {
	var sink jobs.HistorySink = &jobs.FileHistory{Dir: filepath.Join(cfg.DataDir, "history")}
	if es := cfg.History.Elasticsearch; es.URL != "" {
		h, err := jobs.NewESHistory(jobs.ESHistoryConfig{URL: es.URL, Index: es.Index, Username: es.Username, Password: es.Password, Timeout: es.Timeout})
		if err != nil {
			return nil, ExitError{Code: ExitConfig, Msg: "msgx serve: config: " + err.Error()}
		}
		sink = h
	}
	return &jobs.Runner{
		DB: db.Archiver, Clock: clock,
		Purge: db.Archiver, EventsAge: cfg.Retention.Events, ArchivedAge: cfg.Retention.Archive,
		DeadPurge: db.Triage, DeadAge: cfg.Retention.DeadLetters,
		Flights: flights, History: sink, Location: cfg.Location(), KeepDays: cfg.History.KeepDays,
		Logger: log,
	}, nil
}

// knownJobs creates the jobs' metric series of every kind at zero and sets each kind's last
// success from the stored jobs (the newest DONE job of each kind among the last 200), so a
// restart neither hides a job kind nor makes a daily job look stale. A database that does not
// answer leaves the series at zero (logged).
func knownJobs(ctx context.Context, db store.Jobs, log *slog.Logger) {
	last := map[string]time.Time{}
	list, err := db.ListJobs(ctx, 200)
	if err != nil {
		log.Warn("cannot read the last jobs; their last-success metrics start at zero", "err", err.Error())
	}
	for _, j := range list {
		if j.State == store.JobDone && j.FinishedAt != nil && j.FinishedAt.After(last[j.Kind]) {
			last[j.Kind] = *j.FinishedAt
		}
	}
	jobs.Known(jobs.Kinds, last)
}
