package store

// Several messages' writes in one round trip (MySQL, where each statement sent is one).
//
// A message whose success is a few statements that need nothing read back (the identity bind
// with SUCCEEDED, reference upserts, the guarded write of a flight its handler read) is queued
// (Queue) instead of being written at once; SendQueued writes the queue in message order as
// one multi-statement query per part (queueBytes), led by a SAVEPOINT, after reading in one
// query every reference record the queue upserts that the batch does not know yet. MySQL runs
// the statements of a multi-statement query in order and stops at the first that fails, and
// returns the rows each one changed: when every statement changed the rows it must, the part
// is done. Otherwise the part goes back to that savepoint and is done again message by
// message, each under a savepoint of its own exactly as Succeed does it (its own reads, each
// statement checked), which names the message that fails and why (duplicate identity, changed
// row, refused value): the messages before it stay, it is rolled back to its savepoint, and
// the ones after it are not written (their decisions saw its effects; the caller decides them
// again). The driver does not say which statement of a multi-statement query failed, so a
// savepoint per message in the part would never be gone back to: the part has one, which is
// a third fewer statements for the server to run per FLOP.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"msgx/internal/pipeline"
)

// refID names a REF_DATA record.
type refID struct{ typ, key string }

// refState is what the batch knows of a REF_DATA record: its stored fields and version, or
// that it is not stored (as the batch's own writes left it).
type refState struct {
	cur   storedRef
	found bool
}

// Bounds of a queue: SendQueued sends at most queueBytes (estimated) per round trip, well under
// MariaDB's default max_allowed_packet of 16 MB; QueueFull says the caller should send it.
const (
	queueMax   = 100
	queueBytes = 1 << 20
)

// queued is a message's success waiting to be sent.
type queued struct {
	id      int64
	s       Success
	flight  *qstmt // the guarded write of its flight, made when it was queued; nil: none
	now     time.Time
	size    int
	sp      string  // the name of the savepoint its part leads with, if it is the first
	stmts   []qstmt // its statements, made by SendQueued
	changes int     // reference records its statements change
	// deferred says it was done again alone (sendPart), which left its events and back-fill
	// to Flush already.
	deferred bool
}

// qstmt is one statement of a queued message.
type qstmt struct {
	q    string
	args []any
}

// QueuedResult is what a queued message's success wrote, as Succeed returns it.
type QueuedResult struct {
	Events, RefChanged int
}

// Queue queues message id's success to be written by SendQueued, several messages per round
// trip, when it can be (MySQL with DeferWrites; not a RESP, which may answer a data request;
// reference changes that are upserts of keyed records; at most one flight write, which the
// flight store gives as one statement: FlightStatementer). ok false: nothing was queued, and
// the caller sends the queue and then calls Succeed.
//
// A flight statement is made from what the flight store's view read of the flight, so the
// store counts it written from here on: a caller whose queued message is not written (a
// SendQueued failure) must not decide further messages on that view.
func (b *Batch) Queue(id int64, s Success, flights FlightWriter, now time.Time) (ok bool) {
	if b.d.Dialect != MySQL || b.later == nil || strings.EqualFold(s.Meta.STYP, "RESP") || len(s.Decision.Kept) > 0 {
		return false // a message out of order (rare) also writes its history: the plain path
	}
	dec := s.Decision
	size := 600 + len(s.Identity) + len(s.Note)
	for _, w := range s.Warnings {
		size += len(w) + 8
	}
	for _, ch := range dec.Ref {
		if ch.Op != pipeline.RefUpsert || ch.Record.Key == "" {
			return false
		}
		size += 200 + 2*len(ch.Record.Fields)
	}
	q := &queued{id: id, s: s, now: now}
	switch len(dec.Flights) {
	case 0:
	case 1:
		fs, isFS := flights.(FlightStatementer)
		if !isFS {
			return false
		}
		w, args, one := fs.FlightStatement(b.tx, id, dec.Flights[0], now)
		if !one {
			return false
		}
		q.flight = &qstmt{q: w, args: args}
		size += 200 + 2*len(dec.Flights[0].Record)
	default:
		return false
	}
	q.size = size
	b.queue = append(b.queue, q)
	b.queueBytes += size
	return true
}

// QueueFull says the queue holds as much as one round trip should carry: send it.
func (b *Batch) QueueFull() bool { return len(b.queue) >= queueMax || b.queueBytes >= queueBytes }

// SendQueued writes the queued successes in order and empties the queue. It returns the
// results of the messages written, in order; when fewer than were queued, err is why the next
// one failed, as Succeed would return it (ErrIdentityTaken, ErrChanged, a classified error),
// that message is rolled back to its savepoint and the ones after it are not written. An
// error wrapping ErrBatchBroken says the transaction cannot go on.
func (b *Batch) SendQueued(ctx context.Context) ([]QueuedResult, error) {
	queue := b.queue
	b.queue, b.queueBytes = nil, 0
	if len(queue) == 0 {
		return nil, nil
	}
	if err := b.readRefs(ctx, queue); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBatchBroken, err)
	}
	for _, q := range queue {
		b.build(q)
	}
	out := make([]QueuedResult, 0, len(queue))
	for start := 0; start < len(queue); {
		end, size := start, 0
		for end < len(queue) && (end == start || size+queue[end].size <= queueBytes) {
			size += queue[end].size
			end++
		}
		part := queue[start:end]
		n, err := b.sendPart(ctx, part)
		for _, q := range part[:n] {
			if !q.deferred {
				b.later.add(q.id, q.s.TypeTag, q.s.Decision.Events, q.s.Meta, q.s.Flights, q.now)
			}
			out = append(out, QueuedResult{Events: len(q.s.Decision.Events), RefChanged: q.changes})
		}
		if err != nil {
			b.refs = nil // what it knew counted statements that were rolled back
			return out, err
		}
		start = end
	}
	return out, nil
}

// build makes q's statements: a savepoint (sent for the first of a part only), the identity
// bind with SUCCEEDED, the writes of its reference records over what the batch knows of them
// (which each write advances), and its flight's statement. The note of a reference message
// that changed nothing (known here, from what the batch knows of its records) goes in the
// bind: one statement and one row write instead of a second UPDATE of its row.
func (b *Batch) build(q *queued) {
	b.n++
	q.sp = fmt.Sprintf("msgx_sp%d", b.n)
	q.stmts = append(q.stmts[:0], qstmt{q: "SAVEPOINT " + q.sp}, qstmt{})
	q.changes = 0
	for _, ch := range q.s.Decision.Ref {
		k := refID{ch.Type, ch.Record.Key}
		st := b.refs[k]
		w, wargs := refWrite(q.id, ch.Type, ch.Record, st.cur, st.found, q.now)
		if w == "" {
			continue
		}
		q.stmts = append(q.stmts, qstmt{q: w, args: wargs})
		v := int64(1)
		if st.found {
			v = st.cur.version + 1
		}
		b.refs[k] = refState{cur: storedRef{fields: string(ch.Record.Fields), version: v}, found: true}
		q.changes++
	}
	if q.flight != nil {
		q.stmts = append(q.stmts, *q.flight)
	}
	s := q.s
	if len(s.Decision.Ref) > 0 && q.changes == 0 && q.flight == nil && len(s.Decision.Events) == 0 {
		s.Note = unchangedNote(s.Note)
	}
	bind, args := bindSucceeded(q.id, s, q.now)
	q.stmts[1] = qstmt{q: bind, args: args}
}

// sendPart sends part in one round trip and returns how many of its messages are written;
// see SendQueued.
func (b *Batch) sendPart(ctx context.Context, part []*queued) (int, error) {
	var sb strings.Builder
	var args []any
	var want []int64
	for j, q := range part {
		for i, st := range q.stmts {
			if i == 0 && j > 0 {
				continue // only the part's first savepoint is gone back to (below)
			}
			if sb.Len() > 0 {
				sb.WriteString("; ")
			}
			sb.WriteString(st.q)
			args = append(args, st.args...)
			if i == 0 {
				want = append(want, 0) // the savepoint
			} else {
				want = append(want, 1) // every other statement changes exactly one row
			}
		}
	}
	rows, err := b.execAll(ctx, sb.String(), args)
	if err == nil && len(rows) == len(want) {
		same := true
		for i := range rows {
			if rows[i] != want[i] {
				same = false
				break
			}
		}
		if same {
			return len(part), nil
		}
	}
	// Something failed or found no row: back to the part's first savepoint, then message by
	// message, each exactly as Succeed (which tells which one and why).
	if _, rerr := b.tx.ExecContext(ctx, `ROLLBACK TO SAVEPOINT `+part[0].sp); rerr != nil {
		return 0, fmt.Errorf("%w: rollback to savepoint after %w: %w", ErrBatchBroken, err, Unavailable(rerr))
	}
	b.refs = nil
	for i, q := range part {
		err := b.step(ctx, func(lead string) error {
			var fw FlightWriter
			if q.flight != nil {
				fw = stmtFlight{*q.flight}
			}
			_, n, err := b.d.Processor.succeedTx(ctx, b.tx, lead, q.id, q.s, fw, b.later, q.now)
			q.changes = n
			return err
		})
		if err != nil {
			if errors.Is(err, ErrBatchBroken) {
				return i, err
			}
			return i, effectsError(q.id, err)
		}
		q.deferred = true // succeedTx left its events and back-fill to Flush
	}
	return len(part), nil
}

// stmtFlight is the FlightWriter of a queued message done again alone: its one flight
// statement (made when it was queued, from the version its handler read), checked.
type stmtFlight struct{ st qstmt }

func (f stmtFlight) WriteFlights(ctx context.Context, tx *sql.Tx, _ int64, writes []pipeline.FlightWrite, _ time.Time) error {
	res, err := tx.ExecContext(ctx, f.st.q, f.st.args...)
	if err != nil {
		return Unavailable(fmt.Errorf("write flight %d: %w", writes[0].FLID, err))
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return pipeline.Errorf(pipeline.Infra, "flight %d changed under us", writes[0].FLID)
	}
	return nil
}

// refChunk is how many reference keys one read asks for.
const refChunk = 500

// readRefs reads, in as few queries as refChunk allows, every reference record the queue
// upserts that the batch knows nothing of, and notes each one stored or not.
//
// A key is matched exactly here, where MySQL compares keys by their column's collation
// (case and trailing spaces aside): a record stored under a key that is only equal by
// collation counts as not stored, so its message's INSERT fails on the primary key and the
// part is done again message by message, through the read of each record that Succeed makes.
func (b *Batch) readRefs(ctx context.Context, queue []*queued) error {
	if b.refs == nil {
		b.refs = map[refID]refState{}
	}
	var ask []refID
	asked := map[refID]bool{}
	for _, q := range queue {
		for _, ch := range q.s.Decision.Ref {
			k := refID{ch.Type, ch.Record.Key}
			if _, known := b.refs[k]; known || asked[k] {
				continue
			}
			asked[k] = true
			ask = append(ask, k)
		}
	}
	for start := 0; start < len(ask); start += refChunk {
		part := ask[start:min(start+refChunk, len(ask))]
		byType := map[string][]any{}
		var types []string
		for _, k := range part {
			if _, ok := byType[k.typ]; !ok {
				types = append(types, k.typ)
			}
			byType[k.typ] = append(byType[k.typ], k.key)
		}
		var q strings.Builder
		var args []any
		for i, t := range types {
			if i > 0 {
				q.WriteString(" UNION ALL ")
			}
			keys := byType[t]
			q.WriteString(`SELECT REF_TYPE, REF_KEY, FIELDS, VERSION FROM REF_DATA WHERE REF_TYPE = ? AND REF_KEY IN (` + placeholders(len(keys)) + `)`)
			args = append(append(args, t), keys...)
		}
		for _, k := range part {
			b.refs[k] = refState{} // not stored, unless read below
		}
		rows, err := b.tx.QueryContext(ctx, q.String(), args...)
		if err != nil {
			return Unavailable(fmt.Errorf("read %d reference records: %w", len(part), err))
		}
		for rows.Next() {
			var k refID
			var st refState
			if err := rows.Scan(&k.typ, &k.key, &st.cur.fields, &st.cur.version); err != nil {
				rows.Close()
				return Unavailable(fmt.Errorf("read reference records: %w", err))
			}
			if asked[k] {
				st.found = true
				b.refs[k] = st
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return Unavailable(fmt.Errorf("read reference records: %w", err))
		}
	}
	return nil
}

// Queues says Queue can queue in this batch (MySQL, with DeferWrites).
func (b *Batch) Queues() bool { return b.d.Dialect == MySQL && b.later != nil }

// BoundAmong returns, for each of identities that a message holds, read through the batch,
// that message's id, keyed by IdentityKey: a batch that queues its messages' writes finds
// the duplicates among them ahead, instead of by the unique index in the middle of a queue.
func (b *Batch) BoundAmong(ctx context.Context, identities []string) (map[string]int64, error) {
	out := map[string]int64{}
	keys := make([]any, 0, len(identities))
	seen := map[string]bool{}
	for _, id := range identities {
		k := IdentityKey(id)
		if !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	for start := 0; start < len(keys); start += refChunk {
		part := keys[start:min(start+refChunk, len(keys))]
		rows, err := b.tx.QueryContext(ctx, `SELECT IDENTITY_KEY, CMINMSGS_ID FROM PROC_STATE WHERE IDENTITY_KEY IN (`+placeholders(len(part))+`)`, part...)
		if err != nil {
			return nil, Unavailable(fmt.Errorf("read %d identities: %w", len(part), err))
		}
		for rows.Next() {
			var k string
			var id int64
			if err := rows.Scan(&k, &id); err != nil {
				rows.Close()
				return nil, Unavailable(fmt.Errorf("read identities: %w", err))
			}
			out[k] = id
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, Unavailable(fmt.Errorf("read identities: %w", err))
		}
	}
	return out, nil
}
