package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"msgx/internal/pipeline"
)

// Retention, scheduled jobs and trace ids (migration 00008): the purges of the RETENTION job,
// the scheduler's idempotent enqueue, and the trace id stored with a message.

// Retention is what the RETENTION job needs of the store: the chunked purges of delivered
// events and of finished messages archived long enough ago.
type Retention interface {
	PurgeSentEvents(ctx context.Context, before time.Time, progress func(deleted int)) (int, error)
	PurgeArchived(ctx context.Context, before time.Time, progress func(deleted int)) (PurgeResult, error)
}

// Scheduling is the scheduler's side of PUMP_JOB: an enqueue that happens once per key.
type Scheduling interface {
	EnqueueScheduledJob(ctx context.Context, kind, key string, now time.Time) (j *Job, created bool, err error)
}

var (
	_ Retention  = (*DB)(nil)
	_ Scheduling = (*DB)(nil)
)

// PurgeChunk bounds the rows one purge transaction deletes: a purge of millions of rows is
// many short transactions, never one that holds locks for long.
const PurgeChunk = 500

// TraceIDWidth is the width of PROC_STATE.TRACE_ID: a W3C trace id is 32 hex digits.
const TraceIDWidth = 32

// SetTraceHook sets a function told the trace id of every message the store reads or stores
// with one (the log correlation's memory of msg_id → trace_id). Call it before use.
func (d *DB) SetTraceHook(fn func(msgID int64, traceID string)) { d.traceHook = fn }

func (d *DB) traced(id int64, trace string) {
	if d.traceHook != nil {
		d.traceHook(id, trace)
	}
}

// InsertMessagesTraced is InsertMessages that also stores each message's trace id (traces[i]
// for raws[i], "" for none; cut to TraceIDWidth) in PROC_STATE.TRACE_ID.
func (d *DB) InsertMessagesTraced(ctx context.Context, raws, traces []string, now time.Time) ([]int64, error) {
	if len(traces) != len(raws) {
		return nil, fmt.Errorf("insert messages: %d trace ids for %d messages", len(traces), len(raws))
	}
	fitted := make([]string, len(traces))
	for i, t := range traces {
		if r := []rune(t); len(r) > TraceIDWidth {
			t = string(r[:TraceIDWidth])
		}
		fitted[i] = t
	}
	ids, err := d.insertMessages(ctx, raws, fitted, now)
	if err != nil {
		return nil, err
	}
	for i, id := range ids {
		if fitted[i] != "" {
			d.traced(id, fitted[i])
		}
	}
	return ids, nil
}

// EnqueueScheduledJob enqueues a job as EnqueueJob does, under key (the scheduler's kind and
// local day), unless a job with that key exists already: then it returns created false and no
// error. The key is unique in PUMP_JOB, so two instances or a restart never enqueue twice.
func (d *DB) EnqueueScheduledJob(ctx context.Context, kind, key string, now time.Time) (*Job, bool, error) {
	var j *Job
	err := d.Tx(ctx, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM PUMP_JOB WHERE SCHEDULE_KEY = ?`, key).Scan(&n); err != nil {
			return Unavailable(err)
		}
		if n > 0 {
			return nil
		}
		var max sql.NullInt64
		if err := tx.QueryRowContext(ctx, `SELECT MAX(CMINMSGS_ID) FROM PROC_STATE`).Scan(&max); err != nil {
			return Unavailable(err)
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO PUMP_JOB (KIND, AFTER_MSG_ID, STATE, ATTEMPTS, CREATED_AT, SCHEDULE_KEY) VALUES (?, ?, ?, 0, ?, ?)`,
			kind, max.Int64, JobPending, T(now), key)
		if IsUniqueViolation(err) {
			return nil // another instance enqueued it between our read and our insert
		}
		if err != nil {
			return Unavailable(fmt.Errorf("enqueue scheduled job %s: %w", key, err))
		}
		id, _ := res.LastInsertId()
		j = &Job{ID: id, Kind: kind, AfterMsgID: max.Int64, State: JobPending, CreatedAt: now, ScheduleKey: key}
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	return j, j != nil, nil
}

// PurgeSentEvents deletes the SENT events delivered before `before`, PurgeChunk rows per
// statement, target by target in EVENT_ID order, and returns how many it deleted; progress,
// when set, is told the running total after each chunk. PENDING and DEAD events are never
// touched. A target's events are delivered in EVENT_ID order, so its walk stops at the first
// SENT event that is not old enough (one replayed and delivered late waits for its own age).
// It stops between chunks when ctx ends, keeping what it deleted.
func (d *DB) PurgeSentEvents(ctx context.Context, before time.Time, progress func(int)) (int, error) {
	total := 0
	target := ""
	for ctx.Err() == nil {
		// The next target: one seek on IDX_EVT_HEAD (TARGET, STATE, EVENT_ID) per target.
		var next sql.NullString
		if err := d.SQL.QueryRowContext(ctx, `SELECT MIN(TARGET) FROM MSG_EVENT WHERE TARGET > ?`, target).Scan(&next); err != nil {
			return total, Unavailable(fmt.Errorf("purge events: next target: %w", err))
		}
		if !next.Valid {
			return total, nil
		}
		target = next.String
		var after int64
		for ctx.Err() == nil {
			n, last, done, err := d.purgeEventChunk(ctx, target, after, before)
			total += n
			if err != nil {
				return total, err
			}
			if n > 0 && progress != nil {
				progress(total)
			}
			if done {
				break
			}
			after = last
		}
	}
	return total, ctx.Err()
}

// purgeEventChunk deletes the old SENT events among the next PurgeChunk SENT events of target
// after EVENT_ID after. done says the walk of this target is over.
func (d *DB) purgeEventChunk(ctx context.Context, target string, after int64, before time.Time) (deleted int, last int64, done bool, err error) {
	rows, err := d.SQL.QueryContext(ctx, `SELECT EVENT_ID, COALESCE(SENT_AT, CREATED_AT) FROM MSG_EVENT
		WHERE TARGET = ? AND STATE = ? AND EVENT_ID > ? ORDER BY EVENT_ID LIMIT ?`, target, pipeline.EventSent, after, PurgeChunk)
	if err != nil {
		return 0, 0, false, Unavailable(fmt.Errorf("purge events of %s: select: %w", target, err))
	}
	var ids []any
	seen := 0
	for rows.Next() {
		var id int64
		var sent NullTime
		if err := rows.Scan(&id, &sent); err != nil {
			rows.Close()
			return 0, 0, false, Unavailable(err)
		}
		seen++
		last = id
		if !sent.Valid || !sent.Time.Before(before) {
			done = true
			break
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, 0, false, Unavailable(err)
	}
	if seen < PurgeChunk {
		done = true
	}
	if len(ids) == 0 {
		return 0, last, done, nil
	}
	res, err := d.SQL.ExecContext(ctx, `DELETE FROM MSG_EVENT WHERE EVENT_ID IN (`+placeholders(len(ids))+`) AND STATE = ?`,
		append(ids, pipeline.EventSent)...)
	if err != nil {
		return 0, 0, false, Unavailable(fmt.Errorf("purge events of %s: delete %d: %w", target, len(ids), err))
	}
	n, _ := res.RowsAffected()
	return int(n), last, done, nil
}

// PurgeResult counts the rows a purge of archived messages deleted, per table.
type PurgeResult struct {
	ProcState int `json:"PROC_STATE"`
	History   int `json:"CMINMSGS_HST"`
}

// PurgeArchived deletes the messages that finished for good (SUCCEEDED or SKIPPED) and were
// archived (ARCHIVED_AT, see Archive) before `before`: their PROC_STATE row, their text in
// CMINMSGS_HST and the flights they named (MSG_FLIGHT), PurgeChunk messages per transaction. DEAD and unfinished messages, and
// CMINMSGS_HST rows without a PROC_STATE row (the legacy's own history), are never touched.
// Once purged, a message is unknown to the API, and its identity is free again: a message
// with the same SNDR|TYPE|STYP|SEQN arriving later is processed, not SKIPPED. progress, when
// set, is told the PROC_STATE rows deleted so far after each chunk.
func (d *DB) PurgeArchived(ctx context.Context, before time.Time, progress func(int)) (PurgeResult, error) {
	var total PurgeResult
	for ctx.Err() == nil {
		var r PurgeResult
		found := 0
		err := d.Tx(ctx, func(tx *sql.Tx) error {
			r, found = PurgeResult{}, 0
			ids, err := queryIDs(ctx, tx, "purge archived", `SELECT CMINMSGS_ID FROM PROC_STATE WHERE ARCHIVED_AT < ? AND STATE IN (?, ?) LIMIT ?`,
				T(before), pipeline.Succeeded, pipeline.Skipped, PurgeChunk)
			if err != nil {
				return err
			}
			if found = len(ids); found == 0 {
				return nil
			}
			in := `(` + placeholders(len(ids)) + `)`
			// CMINMSGS_HST is the legacy's in shadow mode: msgx forgets its own states only.
			if !d.Shadow() {
				res, err := tx.ExecContext(ctx, `DELETE FROM CMINMSGS_HST WHERE CMINMSGS_ID IN `+in, ids...)
				if err != nil {
					return Unavailable(fmt.Errorf("purge archived: delete %d history rows: %w", len(ids), err))
				}
				n, _ := res.RowsAffected()
				r.History = int(n)
			}
			res, err := tx.ExecContext(ctx, `DELETE FROM PROC_STATE WHERE CMINMSGS_ID IN `+in+` AND STATE IN (?, ?)`,
				append(ids, pipeline.Succeeded, pipeline.Skipped)...)
			if err != nil {
				return Unavailable(fmt.Errorf("purge archived: delete %d states: %w", len(ids), err))
			}
			n, _ := res.RowsAffected()
			r.ProcState = int(n)
			// The flights they named (MSG_FLIGHT), of the rows just deleted only: one that
			// an operator replayed meanwhile keeps its state and its flights.
			if _, err := tx.ExecContext(ctx, `DELETE FROM MSG_FLIGHT WHERE CMINMSGS_ID IN `+in+
				` AND CMINMSGS_ID NOT IN (SELECT CMINMSGS_ID FROM PROC_STATE WHERE CMINMSGS_ID IN `+in+`)`, append(ids, ids...)...); err != nil {
				return Unavailable(fmt.Errorf("purge archived: delete the flights of %d messages: %w", len(ids), err))
			}
			return nil
		})
		if err != nil {
			return total, err
		}
		total.ProcState += r.ProcState
		total.History += r.History
		if found > 0 && progress != nil {
			progress(total.ProcState)
		}
		if found < PurgeChunk || r.ProcState == 0 {
			break
		}
	}
	return total, ctx.Err()
}
