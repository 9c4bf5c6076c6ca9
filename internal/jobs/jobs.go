// Package jobs runs the pump's jobs (PUMP_JOB rows), which share the message order (a job
// runs after every message accepted before it was enqueued, and before any later one):
//
//   - ARCHIVE moves finished messages older than a day from CMINMSGS to CMINMSGS_HST;
//   - HISTORY_SWEEP writes the flights of local days older than history.keep-days to the
//     history sink (Elasticsearch, or JSON-lines files) and deletes from the flight store only
//     the flights whose write succeeded (invariant I4);
//   - RETENTION purges, in short chunks, SENT events older than retention.events, finished
//     messages archived longer than retention.archive, and DEAD events and messages
//     acknowledged longer than retention.dead-letters ago.
//
// The Scheduler (schedule.go) enqueues them daily at their local times. Each job reports what
// it did (rows per table, duration) in its result, in the metrics (metrics.go), and while it
// runs what it is doing (Runner.Current).
package jobs

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"msgx/client"
	"msgx/internal/flight"
	"msgx/internal/jobs/jobkind"
	"msgx/internal/pipeline"
	"msgx/internal/store"
)

// The job kinds, as jobkind declares them (the CLI names them there without importing the
// jobs).
const (
	Archive           = jobkind.Archive
	HistorySweep      = jobkind.HistorySweep
	Retention         = jobkind.Retention
	ProjectionRebuild = jobkind.ProjectionRebuild
	ConsistencyCheck  = jobkind.ConsistencyCheck
	RedisRestore      = jobkind.RedisRestore
)

// Kinds lists the job kinds an operator may enqueue (POST /api/v1/jobs).
var Kinds = jobkind.Kinds

// DeadPurger deletes the DEAD events and messages acknowledged before a time
// (store.DeadLetters).
type DeadPurger interface {
	PurgeAckedEvents(ctx context.Context, before time.Time, progress func(deleted int)) (int, error)
	PurgeAckedMessages(ctx context.Context, before time.Time, progress func(deleted int)) (store.PurgeResult, error)
}

// FlightHistory is what HISTORY_SWEEP needs of the flight store: the old days, their flights
// in chunks, and the delete of the flights written to history (flight.Store implements it).
type FlightHistory interface {
	HistoryDays(ctx context.Context, before string) ([]flight.HistoryDay, error)
	HistoryChunk(ctx context.Context, day string, afterFLID int64, limit int) ([]flight.HistoryFlight, error)
	DeleteHistory(ctx context.Context, flights []flight.HistoryFlight) (int, error)
}

// Runner executes jobs for the pump. The zero values of the optional fields switch their job
// off: a job of a kind the runner cannot run fails UNSUPPORTED.
type Runner struct {
	DB        store.Archive
	Clock     pipeline.Clock
	Retention time.Duration // ARCHIVE keeps messages younger than this; default 24h

	// Purge runs RETENTION; EventsAge and ArchivedAge are retention.events and
	// retention.archive (0: that purge is off).
	Purge       store.Retention
	EventsAge   time.Duration
	ArchivedAge time.Duration
	// DeadPurge and DeadAge purge the acknowledged DEAD events and messages
	// (retention.dead-letters; nil or 0: off).
	DeadPurge DeadPurger
	DeadAge   time.Duration

	// Flights and History run HISTORY_SWEEP: flights of local days (in Location) older than
	// KeepDays are written to History and deleted when written.
	Flights  FlightHistory
	History  HistorySink
	Location *time.Location
	KeepDays int
	// Chunk is how many flights one history write carries; default 500.
	Chunk int

	// Rebuild runs PROJECTION_REBUILD with the job's parameters (params.go), telling its
	// progress through doing; it returns its summary and rows per table. Nil: the job fails
	// UNSUPPORTED.
	Rebuild func(ctx context.Context, params string, doing func(format string, args ...any)) (summary string, rows map[string]int, err error)
	// Restore runs REDIS_RESTORE (phase A) as Rebuild runs PROJECTION_REBUILD. Nil: UNSUPPORTED.
	Restore func(ctx context.Context, params string, doing func(format string, args ...any)) (summary string, rows map[string]int, err error)
	// Consistency runs CONSISTENCY_CHECK and returns its summary. Nil: UNSUPPORTED.
	Consistency func(ctx context.Context) (summary string, err error)

	Logger *slog.Logger

	mu  sync.Mutex
	cur *Progress
}

// Progress is the job in hand: its kind, what it is doing and since when (the API's wire
// type, as the jobs' answers and the status show it).
type Progress = client.JobProgress

// Current returns the job in hand, or nil when none runs.
func (r *Runner) Current() *Progress {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cur == nil {
		return nil
	}
	p := *r.cur
	d := r.Clock.Now().Sub(p.StartedAt)
	p.RunningFor, p.RunningSeconds = d.Round(time.Millisecond).String(), d.Seconds()
	return &p
}

func (r *Runner) doing(format string, args ...any) {
	r.mu.Lock()
	if r.cur != nil {
		r.cur.Doing = fmt.Sprintf(format, args...)
	}
	r.mu.Unlock()
}

func (r *Runner) log() *slog.Logger {
	if r.Logger == nil {
		return slog.Default()
	}
	return r.Logger
}

// report is what a job did: rows per table (positive: written or moved in, negative:
// deleted), and a summary.
type report struct {
	summary string
	rows    map[string]int
	notes   []string
}

func (rep *report) add(table string, n int) {
	if rep.rows == nil {
		rep.rows = map[string]int{}
	}
	rep.rows[table] += n
}

// text is the job's result: the summary, the rows per table and the duration.
func (rep *report) text(d time.Duration) string {
	var b strings.Builder
	b.WriteString(rep.summary)
	if len(rep.rows) > 0 {
		tables := make([]string, 0, len(rep.rows))
		for t := range rep.rows {
			tables = append(tables, t)
		}
		sort.Strings(tables)
		b.WriteString("; rows")
		for i, t := range tables {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, " %s %+d", t, rep.rows[t])
		}
	}
	for _, n := range rep.notes {
		b.WriteString("; ")
		b.WriteString(n)
	}
	fmt.Fprintf(&b, "; took %s", d.Round(time.Millisecond))
	return b.String()
}

// RunJob executes one job and returns its result: what it did, rows per table, how long it
// took. While it runs, Current tells what it is doing.
func (r *Runner) RunJob(ctx context.Context, j *store.Job) (string, error) {
	start := r.Clock.Now()
	r.mu.Lock()
	r.cur = &Progress{JobID: j.ID, Kind: j.Kind, Doing: "starting", StartedAt: start}
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.cur = nil
		r.mu.Unlock()
	}()
	var rep report
	var err error
	switch j.Kind {
	case Archive:
		err = r.archive(ctx, j, &rep)
	case HistorySweep:
		err = r.historySweep(ctx, &rep)
	case Retention:
		err = r.retention(ctx, &rep)
	case ProjectionRebuild:
		if r.Rebuild == nil {
			return "", r.unsupported(j.Kind)
		}
		var rows map[string]int
		rep.summary, rows, err = r.Rebuild(ctx, j.Params, r.doing)
		for t, n := range rows {
			rep.add(t, n)
		}
	case RedisRestore:
		if r.Restore == nil {
			return "", r.unsupported(j.Kind)
		}
		var rows map[string]int
		rep.summary, rows, err = r.Restore(ctx, j.Params, r.doing)
		for t, n := range rows {
			rep.add(t, n)
		}
	case ConsistencyCheck:
		if r.Consistency == nil {
			return "", r.unsupported(j.Kind)
		}
		rep.summary, err = r.Consistency(ctx)
	default:
		return "", pipeline.Errorf(pipeline.Unsupported, "no runner for job kind %q", j.Kind)
	}
	d := r.Clock.Now().Sub(start)
	observe(j.Kind, rep.rows, d, err == nil, r.Clock.Now())
	if err != nil {
		return "", err
	}
	return rep.text(d), nil
}

func (r *Runner) archive(ctx context.Context, j *store.Job, rep *report) error {
	keep := r.Retention
	if keep <= 0 {
		keep = 24 * time.Hour
	}
	now := r.Clock.Now()
	before := now.Add(-keep)
	r.doing("moving SUCCEEDED and SKIPPED messages up to id %d processed before %s to CMINMSGS_HST", j.AfterMsgID, before.Format(time.RFC3339))
	n, err := r.DB.Archive(ctx, j.AfterMsgID, before, now, func(moved int) {
		r.doing("moving SUCCEEDED and SKIPPED messages up to id %d processed before %s to CMINMSGS_HST: %d moved", j.AfterMsgID, before.Format(time.RFC3339), moved)
	})
	if n > 0 {
		rep.add("CMINMSGS_HST", n)
		rep.add("CMINMSGS", -n)
	}
	rep.summary = fmt.Sprintf("archived %d messages", n)
	return err
}

func (r *Runner) retention(ctx context.Context, rep *report) error {
	if r.Purge == nil {
		return pipeline.Errorf(pipeline.Unsupported, "RETENTION is not configured in this process")
	}
	now := r.Clock.Now()
	var parts []string
	if r.EventsAge > 0 {
		before := now.Add(-r.EventsAge)
		r.doing("purging SENT events delivered before %s", before.Format(time.RFC3339))
		n, err := r.Purge.PurgeSentEvents(ctx, before, func(done int) {
			r.doing("purging SENT events delivered before %s: %d deleted", before.Format(time.RFC3339), done)
		})
		if n > 0 {
			rep.add("MSG_EVENT", -n)
		}
		if err != nil {
			return err
		}
		parts = append(parts, fmt.Sprintf("%d SENT events older than %s", n, r.EventsAge))
	}
	if r.ArchivedAge > 0 {
		before := now.Add(-r.ArchivedAge)
		r.doing("purging finished messages archived before %s", before.Format(time.RFC3339))
		res, err := r.Purge.PurgeArchived(ctx, before, func(done int) {
			r.doing("purging finished messages archived before %s: %d deleted", before.Format(time.RFC3339), done)
		})
		rep.purged(res)
		if err != nil {
			return err
		}
		parts = append(parts, fmt.Sprintf("%d messages archived longer than %s", res.ProcState, r.ArchivedAge))
	}
	if r.DeadPurge != nil && r.DeadAge > 0 {
		done, err := r.purgeDead(ctx, rep, now.Add(-r.DeadAge))
		if err != nil {
			return err
		}
		parts = append(parts, done)
	}
	if len(parts) == 0 {
		rep.summary = "nothing to purge: retention.events, retention.archive and retention.dead-letters are off"
		return nil
	}
	rep.summary = "purged " + strings.Join(parts, " and ")
	return nil
}

// purgeDead purges the DEAD events and messages acknowledged before `before` and says what
// it purged.
func (r *Runner) purgeDead(ctx context.Context, rep *report, before time.Time) (string, error) {
	at := before.Format(time.RFC3339)
	r.doing("purging dead events acknowledged before %s", at)
	n, err := r.DeadPurge.PurgeAckedEvents(ctx, before, func(done int) {
		r.doing("purging dead events acknowledged before %s: %d deleted", at, done)
	})
	if n > 0 {
		rep.add("MSG_EVENT", -n)
	}
	if err != nil {
		return "", err
	}
	r.doing("purging dead messages acknowledged before %s", at)
	res, err := r.DeadPurge.PurgeAckedMessages(ctx, before, func(done int) {
		r.doing("purging dead messages acknowledged before %s: %d deleted", at, done)
	})
	rep.purged(res)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%d dead events and %d dead messages acknowledged longer than %s ago", n, res.ProcState, r.DeadAge), nil
}

// purged adds the rows a purge of messages deleted.
func (rep *report) purged(res store.PurgeResult) {
	for table, n := range map[string]int{"PROC_STATE": res.ProcState, "CMINMSGS_HST": res.History, "CMINMSGS": res.Inbox} {
		if n > 0 {
			rep.add(table, -n)
		}
	}
}
