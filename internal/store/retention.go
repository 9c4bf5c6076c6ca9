package store

import (
	"context"
	"database/sql"
	"fmt"
	"math"
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
	_ Retention  = (*Archiver)(nil)
	_ Scheduling = (*JobQueue)(nil)
)

// PurgeChunk bounds the rows one purge transaction deletes: a purge of millions of rows is
// many short transactions, never one that holds locks for long.
const PurgeChunk = 500

// TraceIDWidth is the width of PROC_STATE.TRACE_ID: a W3C trace id is 32 hex digits.
const TraceIDWidth = 32

// SetTraceHook sets a function told the trace id of every message the store reads or stores
// with one (the log correlation's memory of msg_id → trace_id). Call it before use.
func (p *Processor) SetTraceHook(fn func(msgID int64, traceID string)) { p.traceHook = fn }

func (p *Processor) traced(id int64, trace string) {
	if p.traceHook != nil {
		p.traceHook(id, trace)
	}
}

// InsertMessagesTraced is InsertMessages that also stores each message's trace id (traces[i]
// for raws[i], "" for none; cut to TraceIDWidth) in PROC_STATE.TRACE_ID.
func (in *Intake) InsertMessagesTraced(ctx context.Context, raws, traces []string, now time.Time) ([]int64, error) {
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
	ids, err := in.insertMessages(ctx, raws, fitted, now)
	if err != nil {
		return nil, err
	}
	for i, id := range ids {
		if fitted[i] != "" {
			in.db.Processor.traced(id, fitted[i])
		}
	}
	return ids, nil
}

// EnqueueScheduledJob enqueues a job as EnqueueJob does, under key (the scheduler's kind and
// local day), unless a job with that key exists already: then it returns created false and no
// error. The key is unique in PUMP_JOB, so two instances or a restart never enqueue twice.
func (q *JobQueue) EnqueueScheduledJob(ctx context.Context, kind, key string, now time.Time) (*Job, bool, error) {
	var j *Job
	err := q.db.Tx(ctx, func(tx *sql.Tx) error {
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
// The events SENT by the delivery mark (see EventView) go by the age of the mark's raise that
// covered them (purgeMarked). It stops between chunks when ctx ends, keeping what it deleted.
func (a *Archiver) PurgeSentEvents(ctx context.Context, before time.Time, progress func(int)) (int, error) {
	bound, total, err := a.purgeShared(ctx, before, progress)
	if err != nil {
		return total, err
	}
	targets, err := eventTargets(ctx, a.db.long())
	if err != nil {
		return total, Unavailable(fmt.Errorf("purge events: the targets: %w", err))
	}
	for _, target := range targets {
		if ctx.Err() != nil {
			break
		}
		n, err := a.purgeMarked(ctx, target, before, bound, func(n int) {
			if progress != nil {
				progress(total + n)
			}
		})
		total += n
		if err != nil {
			return total, err
		}
		var after int64
		for ctx.Err() == nil {
			n, last, done, err := a.purgeEventChunk(ctx, target, after, before)
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

// purgeShared deletes the shared rows every target that takes them has sent before `before`
// (PurgeChunk per transaction) and returns the id up to which none is left (below the first
// one left), with how many it deleted. A target bounds it at the highest raise of its mark older than before (oldRaises),
// or at its range's start when that is higher (the rows below are not its); a target whose
// range ended with none of it left to send (sharedLeft) bounds nothing. A row a target has its
// own row of (DEAD, replayed) goes too: the own row holds the payload.
func (a *Archiver) purgeShared(ctx context.Context, before time.Time, progress func(int)) (int64, int, error) {
	type rng struct {
		target string
		takes
	}
	rows, err := a.db.long().QueryContext(ctx, `SELECT TARGET, UPTO_EVENT_ID, FROM_EVENT_ID, COALESCE(TO_EVENT_ID, `+noEnd+`) FROM MSG_EVENT_SENT`)
	if err != nil {
		return 0, 0, Unavailable(fmt.Errorf("purge shared events: read the targets: %w", err))
	}
	var rs []rng
	for rows.Next() {
		r := rng{takes: takes{found: true}}
		if err := rows.Scan(&r.target, &r.mark, &r.from, &r.to); err != nil {
			rows.Close()
			return 0, 0, Unavailable(fmt.Errorf("purge shared events: read the targets: %w", err))
		}
		rs = append(rs, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, 0, Unavailable(fmt.Errorf("purge shared events: read the targets: %w", err))
	}
	bound, bounded := int64(0), false
	for _, r := range rs {
		if r.to != math.MaxInt64 {
			// An ended target holds nothing once none of its range is pending for it. Its
			// mark need not have reached its end for that: a range that ended empty (a target
			// configured and removed before any event) or whose last rows went DEAD or were
			// sent beyond a gap (rows of its own) leaves the mark below the end for good.
			left, err := a.sharedLeft(ctx, r.target, r.takes)
			if err != nil {
				return 0, 0, err
			}
			if !left {
				continue
			}
		}
		old, err := a.oldRaises(ctx, r.target, before)
		if err != nil {
			return 0, 0, err
		}
		if b := max(old, r.from); !bounded || b < bound {
			bound, bounded = b, true
		}
	}
	total := 0
	for bounded && ctx.Err() == nil { // no target: nobody has taken them
		var ids []any
		deleted := 0
		err := a.db.longTx(ctx, func(tx *sql.Tx) error {
			var err error
			ids, deleted = nil, 0
			ids, err = queryIDs(ctx, tx, "purge shared events", `SELECT EVENT_ID FROM MSG_EVENT
WHERE TARGET = `+shared+` AND STATE = 'PENDING' AND EVENT_ID <= ? ORDER BY EVENT_ID LIMIT ?`, bound, PurgeChunk)
			if err != nil || len(ids) == 0 {
				return err
			}
			res, err := tx.ExecContext(ctx, `DELETE FROM MSG_EVENT WHERE TARGET = `+shared+` AND EVENT_ID IN (`+placeholders(len(ids))+`)`, ids...)
			if err != nil {
				return Unavailable(fmt.Errorf("purge shared events: delete %d: %w", len(ids), err))
			}
			n, _ := res.RowsAffected()
			deleted = int(n)
			return nil
		})
		total += deleted
		if err != nil {
			return bound, total, err
		}
		if len(ids) > 0 && progress != nil {
			progress(total)
		}
		if len(ids) < PurgeChunk {
			break
		}
	}
	// The tombstones of the shared rows gone go with them.
	for _, r := range rs {
		if _, err := a.db.long().ExecContext(ctx, `DELETE FROM MSG_EVENT WHERE TARGET = ? AND STATE = '`+eventPurged+`' AND EVENT_ID <= ?`, r.target, bound); err != nil {
			return 0, total, Unavailable(fmt.Errorf("purge shared events: the tombstones of %s: %w", r.target, err))
		}
	}
	var low sql.NullInt64
	if err := a.db.long().QueryRowContext(ctx, `SELECT MIN(EVENT_ID) FROM MSG_EVENT WHERE TARGET = `+shared+` AND STATE = 'PENDING'`).Scan(&low); err != nil {
		return 0, total, Unavailable(fmt.Errorf("purge shared events: the first left: %w", err))
	}
	if !low.Valid {
		return math.MaxInt64, total, ctx.Err()
	}
	return low.Int64 - 1, total, ctx.Err()
}

// sharedLeft reports whether target has any shared row of its range r left to send.
func (a *Archiver) sharedLeft(ctx context.Context, target string, r takes) (bool, error) {
	if r.mark >= r.to {
		return false, nil
	}
	cond, args := r.sharedAbove(target, r.lo())
	var n int
	if err := a.db.long().QueryRowContext(ctx, `SELECT COUNT(*) FROM (SELECT e.EVENT_ID FROM MSG_EVENT e WHERE `+cond+` LIMIT 1) p`, args...).Scan(&n); err != nil {
		return false, Unavailable(fmt.Errorf("purge shared events: what %s has left to send: %w", target, err))
	}
	return n > 0, nil
}

// purgeMarked deletes the PENDING rows of target that its delivery mark covers and whose
// raise (MSG_EVENT_MARK) is older than before, PurgeChunk per statement, walking the raises in
// order up to the first that is not old enough; then the raises that no longer cover a row:
// none above sharedGone, the id up to which no shared row is left (purgeShared), as the
// shared rows above it still need their sent times and the next purge its raises.
// progress is told its running total after each chunk.
func (a *Archiver) purgeMarked(ctx context.Context, target string, before time.Time, sharedGone int64, progress func(int)) (int, error) {
	// The raises older than before, up to the first that is not (a clock that ran behind can
	// leave an old raise above a young one), found by the database: the raises of a day are
	// not all sent to msgx to stop at the first young one.
	upto, err := a.oldRaises(ctx, target, before)
	if err != nil {
		return 0, err
	}
	if upto == 0 {
		return 0, nil
	}
	total := 0
	for ctx.Err() == nil {
		var ids []any
		deleted := 0
		err := a.db.longTx(ctx, func(tx *sql.Tx) error {
			var err error
			ids, deleted = nil, 0
			ids, err = queryIDs(ctx, tx, "purge events of "+target, `SELECT EVENT_ID FROM MSG_EVENT
WHERE TARGET = ? AND STATE = 'PENDING' AND EVENT_ID <= ? ORDER BY EVENT_ID LIMIT ?`, target, upto, PurgeChunk)
			if err != nil || len(ids) == 0 {
				return err
			}
			res, err := tx.ExecContext(ctx, `DELETE FROM MSG_EVENT WHERE TARGET = ? AND EVENT_ID IN (`+placeholders(len(ids))+`) AND STATE = 'PENDING'`,
				append([]any{target}, ids...)...)
			if err != nil {
				return Unavailable(fmt.Errorf("purge events of %s: delete %d: %w", target, len(ids), err))
			}
			n, _ := res.RowsAffected()
			deleted = int(n)
			return nil
		})
		total += deleted
		if err != nil {
			return total, err
		}
		if len(ids) > 0 {
			progress(total)
		}
		if len(ids) < PurgeChunk {
			if _, err := a.db.long().ExecContext(ctx, `DELETE FROM MSG_EVENT_MARK WHERE TARGET = ? AND UPTO_EVENT_ID <= ?`, target, min(upto, sharedGone)); err != nil {
				return total, Unavailable(fmt.Errorf("purge events of %s: delete the delivery marks up to %d: %w", target, upto, err))
			}
			return total, nil
		}
	}
	return total, nil
}

// SetBetweenRaiseReads sets a function run by RETENTION between its two reads of a target's
// delivery marks (oldRaises): a test's seam, to commit a delivery there.
func (a *Archiver) SetBetweenRaiseReads(fn func()) { a.betweenRaiseReads = fn }

// oldRaises returns the highest raise of target's delivery mark below its first raise made at
// or after before (in EVENT_ID order), 0 when there is none: the events up to it were sent
// before `before`. Both reads see one snapshot: a raise committed between them (a delivery a
// moment ago, above every old raise) would otherwise count as the highest old one.
func (a *Archiver) oldRaises(ctx context.Context, target string, before time.Time) (int64, error) {
	var young, upto sql.NullInt64
	err := a.db.readSnapshotOn(ctx, a.db.long(), func(tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, `SELECT UPTO_EVENT_ID FROM MSG_EVENT_MARK WHERE TARGET = ? AND SENT_AT >= ?
ORDER BY UPTO_EVENT_ID LIMIT 1`, target, T(before)).Scan(&young)
		if err != nil && err != sql.ErrNoRows {
			return err
		}
		if a.betweenRaiseReads != nil {
			a.betweenRaiseReads()
		}
		q, args := `SELECT MAX(UPTO_EVENT_ID) FROM MSG_EVENT_MARK WHERE TARGET = ?`, []any{target}
		if young.Valid {
			q, args = q+` AND UPTO_EVENT_ID < ?`, append(args, young.Int64)
		}
		return tx.QueryRowContext(ctx, q, args...).Scan(&upto)
	})
	if err != nil {
		return 0, Unavailable(fmt.Errorf("purge events of %s: read the delivery marks: %w", target, err))
	}
	return upto.Int64, nil
}

// purgeEventChunk deletes the old SENT events among the next PurgeChunk SENT events of target
// after EVENT_ID after. done says the walk of this target is over. A SENT row of the target's
// own above its delivery mark whose shared row is still there (one sent beyond a gap) ends the
// walk too, whatever its age: without it the shared row would be the target's again, pending
// above the mark, and delivered twice. The mark is read first: it only rises, so a row below
// it stays below.
func (a *Archiver) purgeEventChunk(ctx context.Context, target string, after int64, before time.Time) (deleted int, last int64, done bool, err error) {
	r, err := readTakes(ctx, a.db.long(), a.db.Dialect, target, false)
	if err != nil {
		return 0, 0, false, err
	}
	rows, err := a.db.long().QueryContext(ctx, `SELECT e.EVENT_ID, COALESCE(e.SENT_AT, e.CREATED_AT),
		CASE WHEN e.EVENT_ID > ? AND EXISTS (SELECT 1 FROM MSG_EVENT s WHERE s.EVENT_ID = e.EVENT_ID AND s.TARGET = `+shared+`) THEN 1 ELSE 0 END
		FROM MSG_EVENT e WHERE e.TARGET = ? AND e.STATE = ? AND e.EVENT_ID > ? ORDER BY e.EVENT_ID LIMIT ?`, r.mark, target, pipeline.EventSent, after, PurgeChunk)
	if err != nil {
		return 0, 0, false, Unavailable(fmt.Errorf("purge events of %s: select: %w", target, err))
	}
	var ids []any
	seen := 0
	for rows.Next() {
		var id int64
		var sent NullTime
		var shadows bool
		if err := rows.Scan(&id, &sent, &shadows); err != nil {
			rows.Close()
			return 0, 0, false, Unavailable(err)
		}
		seen++
		last = id
		if !sent.Valid || !sent.Time.Before(before) || shadows {
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
	n, err := dropOwn(ctx, a.db.long(), target, ids, pipeline.EventSent)
	if err != nil {
		return 0, 0, false, Unavailable(fmt.Errorf("purge events of %s: delete %d: %w", target, len(ids), err))
	}
	return n, last, done, nil
}

// dropOwn deletes the own rows (of target, or of any target but the shared rows for "") in
// state with the ids, and returns how many it dropped: a row whose shared row is still there
// becomes a tombstone instead (eventPurged: no payload, shown nowhere), which keeps its target
// from taking the shared row again (a DEAD event it would send again, a SENT one beyond its
// mark); the tombstone goes with the shared row (purgeShared).
func dropOwn(ctx context.Context, q interface {
	querier
	execer
}, target string, ids []any, state pipeline.EventStatus) (int, error) {
	sharedIDs, err := queryIDs(ctx, q, "shared rows", `SELECT EVENT_ID FROM MSG_EVENT WHERE TARGET = `+shared+` AND EVENT_ID IN (`+placeholders(len(ids))+`)`, ids...)
	if err != nil {
		return 0, err
	}
	isShared := map[int64]bool{}
	for _, id := range sharedIDs {
		isShared[id.(int64)] = true
	}
	var tomb, gone []any
	for _, id := range ids {
		if isShared[id.(int64)] {
			tomb = append(tomb, id)
		} else {
			gone = append(gone, id)
		}
	}
	tgt, targs := `TARGET <> `+shared, []any(nil)
	if target != "" {
		tgt, targs = `TARGET = ?`, []any{target}
	}
	n := 0
	for _, w := range []struct {
		q   string
		ids []any
	}{{`UPDATE MSG_EVENT SET STATE = '` + eventPurged + `', PAYLOAD = '', ERROR_CLASS = NULL, LAST_ERROR = NULL, NEXT_ATTEMPT_AT = NULL WHERE `, tomb},
		{`DELETE FROM MSG_EVENT WHERE `, gone}} {
		if len(w.ids) == 0 {
			continue
		}
		res, err := q.ExecContext(ctx, w.q+tgt+` AND STATE = ? AND EVENT_ID IN (`+placeholders(len(w.ids))+`)`,
			append(append(targs, string(state)), w.ids...)...)
		if err != nil {
			return n, err
		}
		k, _ := res.RowsAffected()
		n += int(k)
	}
	return n, nil
}

// PurgeResult counts the rows a purge of messages deleted, per table.
type PurgeResult struct {
	ProcState int
	History   int
	Inbox     int
}

func (r *PurgeResult) plus(o PurgeResult) {
	r.ProcState, r.History, r.Inbox = r.ProcState+o.ProcState, r.History+o.History, r.Inbox+o.Inbox
}

// PurgeArchived deletes the messages that finished for good (SUCCEEDED or SKIPPED) and were
// archived (ARCHIVED_AT, see Archive) before `before`, with all they own (purgeMessages),
// PurgeChunk messages per transaction. DEAD and unfinished messages, and CMINMSGS_HST rows
// without a PROC_STATE row (the legacy's own history), are never touched. Once purged, a
// message is unknown to the API, and its identity is free again: a message with the same
// SNDR|TYPE|STYP|SEQN arriving later is processed, not SKIPPED. progress, when set, is told
// the PROC_STATE rows deleted so far after each chunk.
func (a *Archiver) PurgeArchived(ctx context.Context, before time.Time, progress func(int)) (PurgeResult, error) {
	return a.purgeMessagesChunked(ctx, "purge archived", `SELECT CMINMSGS_ID FROM PROC_STATE WHERE ARCHIVED_AT < ? AND STATE IN (?, ?) LIMIT ?`,
		[]any{T(before), pipeline.Succeeded, pipeline.Skipped, PurgeChunk}, []any{pipeline.Succeeded, pipeline.Skipped}, progress)
}

// PurgeAckedMessages deletes the DEAD messages an operator acknowledged (AckDead) before
// `before`, with all they own (purgeMessages, their acknowledgement too), as PurgeArchived
// deletes finished ones. A message replayed after its acknowledgement is not DEAD: it stays.
// Unacknowledged DEAD messages are never touched; PROBLEM_LOG keeps their record.
func (tr *Triage) PurgeAckedMessages(ctx context.Context, before time.Time, progress func(int)) (PurgeResult, error) {
	return tr.db.Archiver.purgeMessagesChunked(ctx, "purge acknowledged messages", `SELECT a.REF_ID FROM DEAD_ACK a JOIN PROC_STATE p ON p.CMINMSGS_ID = a.REF_ID
		WHERE a.KIND = ? AND a.ACKED_AT < ? AND p.STATE = ? LIMIT ?`,
		[]any{DeadMessage, T(before), pipeline.Dead, PurgeChunk}, []any{pipeline.Dead}, progress)
}

// purgeMessagesChunked deletes the messages pick (a query of at most PurgeChunk ids, with
// args) finds, one transaction per chunk, until a chunk finds fewer or deletes none; a message
// whose state left states meanwhile stays. progress is told the PROC_STATE rows deleted so far.
func (a *Archiver) purgeMessagesChunked(ctx context.Context, what, pick string, args, states []any, progress func(int)) (PurgeResult, error) {
	var total PurgeResult
	for ctx.Err() == nil {
		var r PurgeResult
		found := 0
		err := a.db.longTx(ctx, func(tx *sql.Tx) error {
			r, found = PurgeResult{}, 0
			ids, err := queryIDs(ctx, tx, what, pick, args...)
			if err != nil || len(ids) == 0 {
				return err
			}
			found = len(ids)
			r, err = a.purgeMessages(ctx, tx, what, ids, states)
			return err
		})
		if err != nil {
			return total, err
		}
		total.plus(r)
		if found > 0 && progress != nil {
			progress(total.ProcState)
		}
		if found < PurgeChunk || r.ProcState == 0 {
			break
		}
	}
	return total, ctx.Err()
}

// purgeMessages deletes, inside tx, the messages among ids whose PROC_STATE is in one of
// states, and then what they own: their text (CMINMSGS, CMINMSGS_HST), their history
// (MSG_HISTORY), the flights they named (MSG_FLIGHT) and their acknowledgement (DEAD_ACK).
// Only the rows of messages whose state went are deleted: one that an operator replayed
// meanwhile keeps its state and all it owns. CMINMSGS and CMINMSGS_HST are the legacy's in
// shadow mode: msgx forgets its own rows only.
func (a *Archiver) purgeMessages(ctx context.Context, tx *sql.Tx, what string, ids, states []any) (PurgeResult, error) {
	var r PurgeResult
	in := `(` + placeholders(len(ids)) + `)`
	res, err := tx.ExecContext(ctx, `DELETE FROM PROC_STATE WHERE CMINMSGS_ID IN `+in+` AND STATE IN (`+placeholders(len(states))+`)`,
		append(append([]any{}, ids...), states...)...)
	if err != nil {
		return r, Unavailable(fmt.Errorf("%s: delete %d states: %w", what, len(ids), err))
	}
	n, _ := res.RowsAffected()
	if r.ProcState = int(n); n == 0 {
		return r, nil
	}
	type owned struct {
		table, col, kind string
		count            *int
	}
	tables := []owned{{"MSG_FLIGHT", "CMINMSGS_ID", "", nil}, {"MSG_HISTORY", "CMINMSGS_ID", "", nil}, {"DEAD_ACK", "REF_ID", DeadMessage, nil}}
	if !a.db.Intake.Shadow() {
		tables = append(tables, owned{"CMINMSGS_HST", "CMINMSGS_ID", "", &r.History}, owned{"CMINMSGS", "CMINMSGS_ID", "", &r.Inbox})
	}
	for _, o := range tables {
		q := `DELETE FROM ` + o.table + ` WHERE ` + o.col + ` IN ` + in + ` AND ` + o.col +
			` NOT IN (SELECT CMINMSGS_ID FROM PROC_STATE WHERE CMINMSGS_ID IN ` + in + `)`
		args := append(append([]any{}, ids...), ids...)
		if o.kind != "" {
			q, args = q+` AND KIND = ?`, append(args, o.kind)
		}
		res, err := tx.ExecContext(ctx, q, args...)
		if err != nil {
			return r, Unavailable(fmt.Errorf("%s: delete the %s rows of %d messages: %w", what, o.table, len(ids), err))
		}
		if o.count != nil {
			n, _ := res.RowsAffected()
			*o.count = int(n)
		}
	}
	return r, nil
}
