package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"msgx/internal/secret"
)

// Job states.
const (
	JobPending = "PENDING"
	JobDone    = "DONE"
	JobFailed  = "FAILED"
	JobDead    = "DEAD"
)

// Job is one PUMP_JOB row. A job runs in the message order: after every message up to
// AfterMsgID is finished and before any later message (DESIGN.md §3, U15).
type Job struct {
	ID            int64
	Kind          string
	AfterMsgID    int64
	Params        string
	State         string
	Attempts      int
	NextAttemptAt *time.Time
	FirstFailedAt *time.Time
	LastError     *string
	Result        *string
	CreatedAt     time.Time
	FinishedAt    *time.Time
	// ScheduleKey is the scheduler's key (kind/local day) of a job it enqueued; "" for one
	// enqueued by hand.
	ScheduleKey string
}

// EnqueueJob adds a job ordered after every message accepted so far.
func (q *JobQueue) EnqueueJob(ctx context.Context, kind, params string, now time.Time) (*Job, error) {
	var j *Job
	err := q.db.Tx(ctx, func(tx *sql.Tx) error {
		var max sql.NullInt64
		if err := tx.QueryRowContext(ctx, `SELECT MAX(CMINMSGS_ID) FROM PROC_STATE`).Scan(&max); err != nil {
			return Unavailable(err)
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO PUMP_JOB (KIND, AFTER_MSG_ID, PARAMS, STATE, ATTEMPTS, CREATED_AT) VALUES (?, ?, ?, ?, 0, ?)`,
			kind, max.Int64, nullStr(params), JobPending, T(now))
		if err != nil {
			return Unavailable(fmt.Errorf("enqueue job %s: %w", kind, err))
		}
		id, _ := res.LastInsertId()
		j = &Job{ID: id, Kind: kind, AfterMsgID: max.Int64, Params: params, State: JobPending, CreatedAt: now}
		return nil
	})
	return j, err
}

const jobCols = `JOB_ID, KIND, AFTER_MSG_ID, PARAMS, STATE, ATTEMPTS, NEXT_ATTEMPT_AT, FIRST_FAILED_AT, LAST_ERROR, RESULT, CREATED_AT, FINISHED_AT, SCHEDULE_KEY`

func scanJob(row interface{ Scan(...any) error }) (*Job, error) {
	var j Job
	var params, lastErr, result, key sql.NullString
	var next, first, created, fin NullTime
	if err := row.Scan(&j.ID, &j.Kind, &j.AfterMsgID, &params, &j.State, &j.Attempts, &next, &first, &lastErr, &result, &created, &fin, &key); err != nil {
		return nil, err
	}
	j.ScheduleKey = key.String
	j.Params = params.String
	j.FirstFailedAt = first.Ptr()
	j.NextAttemptAt, j.LastError, j.Result, j.CreatedAt, j.FinishedAt = next.Ptr(), redactedPtr(lastErr), redactedPtr(result), created.Time, fin.Ptr()
	return &j, nil
}

// HeadJob returns the first unfinished job in the order (lowest AfterMsgID, then id), or nil.
func (q *JobQueue) HeadJob(ctx context.Context) (*Job, error) {
	j, err := scanJob(q.db.SQL.QueryRowContext(ctx, `SELECT `+jobCols+` FROM PUMP_JOB WHERE STATE IN (?, ?) ORDER BY AFTER_MSG_ID, JOB_ID LIMIT 1`, JobPending, JobFailed))
	if err == sql.ErrNoRows {
		return nil, nil
	}
	if err != nil {
		return nil, Unavailable(err)
	}
	return j, nil
}

// ListJobs returns the newest jobs first.
func (q *JobQueue) ListJobs(ctx context.Context, limit int) ([]*Job, error) {
	if limit <= 0 || limit > 1000 {
		limit = 100
	}
	rows, err := q.db.SQL.QueryContext(ctx, fmt.Sprintf(`SELECT `+jobCols+` FROM PUMP_JOB ORDER BY JOB_ID DESC LIMIT %d`, limit))
	if err != nil {
		return nil, Unavailable(err)
	}
	defer rows.Close()
	out := []*Job{}
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, j)
	}
	return out, rows.Err()
}

// GetJob returns the job id, or ErrNotFound.
func (q *JobQueue) GetJob(ctx context.Context, id int64) (*Job, error) {
	j, err := scanJob(q.db.SQL.QueryRowContext(ctx, `SELECT `+jobCols+` FROM PUMP_JOB WHERE JOB_ID = ?`, id))
	if err == sql.ErrNoRows {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, Unavailable(fmt.Errorf("job %d: %w", id, err))
	}
	return j, nil
}

// JobOutcome is what FinishJob records of a job's run.
type JobOutcome struct {
	State       string    // JobDone, JobFailed or JobDead
	Attempts    int       // the attempts made so far
	Next        time.Time // when a FAILED job is tried again (zero: NULL)
	FirstFailed time.Time // when it first failed (zero: NULL)
	Result      string    // a DONE job's result ("": NULL)
	LastErr     string    // the last failure's error ("": NULL)
}

// FinishJob records a job's outcome: DONE with its result, or FAILED/DEAD with the error and
// the time of its first failure.
func (q *JobQueue) FinishJob(ctx context.Context, id int64, o JobOutcome, now time.Time) error {
	var fin any
	if o.State == JobDone || o.State == JobDead {
		fin = T(now)
	}
	_, err := q.db.SQL.ExecContext(ctx, `UPDATE PUMP_JOB SET STATE = ?, ATTEMPTS = ?, NEXT_ATTEMPT_AT = ?, FIRST_FAILED_AT = ?, RESULT = ?, LAST_ERROR = ?, FINISHED_AT = ? WHERE JOB_ID = ?`,
		o.State, o.Attempts, T(o.Next), T(o.FirstFailed), nullStr(secret.Redact(o.Result)), nullStr(secret.Redact(o.LastErr)), fin, id)
	if err != nil {
		return Unavailable(err)
	}
	return nil
}
