package pump_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"msgx/internal/handler"
	"msgx/internal/jobs"
	"msgx/internal/pipeline"
	"msgx/internal/pump"
	"msgx/internal/store"
	"msgx/internal/store/storetest"
	"msgx/internal/testkit"
)

func refMsg(typ, styp, seqn, records string, recs int) string {
	return fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8"?>
<MSG><META><SNDR>AODB</SNDR><SEQN>%s</SEQN><DTTM>20261201080000</DTTM><TYPE>%s</TYPE><STYP>%s</STYP></META>
<RECS>%d</RECS>%s</MSG>`, seqn, typ, styp, recs, records)
}

func stts(code, desc string) string {
	return fmt.Sprintf("<STTS><STTC>%s</STTC><STTD>%s</STTD><ABNS>N</ABNS></STTS>", code, desc)
}

const unknownType = `<MSG><META><SNDR>AODB</SNDR><SEQN>9</SEQN><DTTM>20261201080000</DTTM><TYPE>ZZZZ</TYPE><STYP>ADD</STYP></META></MSG>`

type env struct {
	db    *store.DB
	clock *testkit.Clock
	pump  *pump.Pump
	t     *testing.T
}

func newEnv(t *testing.T, db *store.DB, policy pipeline.RetryPolicy) *env {
	clock := testkit.NewClock(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	p := pump.New(storetest.Pump(db), handler.Default(handler.Options{}), pump.Options{
		Policy: policy, Clock: clock, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Jobs: &jobs.Runner{DB: db.Archiver, Clock: clock},
	})
	return &env{db: db, clock: clock, pump: p, t: t}
}

func (e *env) post(raws ...string) []int64 {
	e.t.Helper()
	ids, err := e.db.Intake.InsertMessages(context.Background(), raws, e.clock.Now())
	if err != nil {
		e.t.Fatal(err)
	}
	return ids
}

// drain steps the pump until it reports a wait.
func (e *env) drain() time.Duration {
	e.t.Helper()
	for i := 0; i < 100; i++ {
		wait, err := e.pump.Step(context.Background())
		if err != nil {
			e.t.Fatal(err)
		}
		if wait > 0 {
			return wait
		}
	}
	e.t.Fatal("pump never settled")
	return 0
}

func (e *env) msg(id int64) *store.Message {
	e.t.Helper()
	m, err := e.db.Operations.GetMessage(context.Background(), id)
	if err != nil || m == nil {
		e.t.Fatalf("message %d: %v", id, err)
	}
	return m
}

func (e *env) want(id int64, state pipeline.ProcStatus, class pipeline.ErrorClass) *store.Message {
	e.t.Helper()
	m := e.msg(id)
	if m.State != state || m.Class() != class {
		last := ""
		if m.LastError != nil {
			last = *m.LastError
		}
		e.t.Fatalf("message %d: %s/%s (%s), want %s/%s", id, m.State, m.Class(), last, state, class)
	}
	return m
}

var defaultPolicy = pipeline.RetryPolicy{MaxAttempts: 5, Steps: pipeline.DefaultBackoff, Cap: time.Minute, HeadDeadline: 10 * time.Minute}

func TestFailedHeadBlocksThenExhaustsAndReplays(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db, defaultPolicy)
		ids := e.post(unknownType, refMsg("STTS", "ADD", "1", stts("DEP", "departed"), 1))
		e.drain()
		m := e.want(ids[0], pipeline.Failed, pipeline.Unsupported)
		if m.Attempts != 1 || !m.NextAttemptAt.Equal(e.clock.Now().Add(time.Second)) {
			t.Fatalf("after first failure: attempts %d next %v", m.Attempts, m.NextAttemptAt)
		}
		e.want(ids[1], pipeline.Pending, "") // behind a FAILED head: waits
		for i, gap := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second} {
			e.clock.Add(gap - time.Millisecond)
			e.drain()
			if got := e.msg(ids[0]).Attempts; got != i+1 {
				t.Fatalf("retried before its backoff of %s was due (attempts %d)", gap, got)
			}
			e.want(ids[1], pipeline.Pending, "")
			e.clock.Add(time.Millisecond)
			e.drain()
		}
		e.want(ids[0], pipeline.Dead, pipeline.Exhausted)
		if e.msg(ids[0]).Attempts != 5 {
			t.Fatalf("attempts %d, want 5", e.msg(ids[0]).Attempts)
		}
		e.want(ids[1], pipeline.Succeeded, "") // the queue moved on

		res, err := db.Operations.Replay(context.Background(), []pipeline.ErrorClass{pipeline.Exhausted}, nil, e.clock.Now())
		if err != nil || res.Moved != 1 {
			t.Fatalf("replay: %+v %v", res, err)
		}
		m = e.want(ids[0], pipeline.Pending, pipeline.Exhausted) // class kept for audit
		if m.Attempts != 0 || m.NextAttemptAt != nil || m.LastError == nil {
			t.Fatalf("replayed row: %+v", m)
		}
	})
}

func TestHeadDeadlineFiresFromFirstFailure(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		policy := defaultPolicy
		policy.MaxAttempts = 1000 // only the deadline can end it
		e := newEnv(t, db, policy)
		ids := e.post(unknownType)
		e.drain()
		for i := 0; i < 30 && e.msg(ids[0]).State == pipeline.Failed; i++ {
			e.clock.Add(time.Minute) // every step is due; the last update is always recent
			e.drain()
		}
		m := e.want(ids[0], pipeline.Dead, pipeline.Exhausted)
		if !strings.Contains(*m.LastError, "head deadline") {
			t.Fatalf("last error %q does not say why", *m.LastError)
		}
		if elapsed := e.clock.Now().Sub(*m.FirstFailedAt); elapsed <= 10*time.Minute || elapsed > 12*time.Minute {
			t.Fatalf("escalated %s after the first failure, want just past 10m", elapsed)
		}
	})
}

func TestMalformedDuplicateAndReplayRules(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db, defaultPolicy)
		a := refMsg("STTS", "ADD", "7", stts("ARR", "arrived"), 1)
		ids := e.post("<MSG><META>", "plain text, no XML", a, a, refMsg("STTS", "UPD", "8", stts("ARR", "arrived"), 1))
		e.drain()
		e.want(ids[0], pipeline.Dead, pipeline.Malformed)
		e.want(ids[1], pipeline.Dead, pipeline.Malformed)
		e.want(ids[2], pipeline.Succeeded, "")
		dup := e.want(ids[3], pipeline.Skipped, "")
		if *dup.LastError != fmt.Sprintf("duplicate-of:%d", ids[2]) {
			t.Fatalf("duplicate last error %q", *dup.LastError)
		}
		e.want(ids[4], pipeline.Succeeded, "")
		ref, err := db.RefData.RefGet(context.Background(), "STTS", "ARR")
		if err != nil || ref == nil || ref.Version != 1 {
			t.Fatalf("an unchanged UPD must not advance the version: %+v %v", ref, err)
		}
		res, err := db.Operations.Replay(context.Background(), []pipeline.ErrorClass{pipeline.Malformed, pipeline.Exhausted}, []int64{ids[0], ids[1], ids[2]}, e.clock.Now())
		if err != nil || res.Moved != 0 || res.Skipped != 3 {
			t.Fatalf("MALFORMED and SUCCEEDED rows must be left alone: %+v %v", res, err)
		}
		e.want(ids[0], pipeline.Dead, pipeline.Malformed)
	})
}

func TestReferenceReplaceAndGuards(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db, defaultPolicy)
		ctx := context.Background()
		ids := e.post(
			refMsg("STTS", "DNLD", "1", stts("A", "one")+stts("B", "two")+stts("C", "three"), 3),
			refMsg("STTS", "DNLD", "2", stts("A", "one")+stts("C", "three, changed"), 2),
			refMsg("STTS", "DNLD", "3", "", 0),
			refMsg("STTS", "DEL", "4", "<STTS><STTC>A</STTC></STTS>", 1),
			refMsg("STTS", "ADD", "5", stts("D", "four")+stts("E", "five"), 1), // RECS lies on an ADD: applied, with a warning
			refMsg("STTS", "DNLD", "6", stts("C", "three, truncated"), 2),      // fewer records than RECS on a replace
		)
		e.drain()
		e.want(ids[0], pipeline.Succeeded, "")
		e.want(ids[1], pipeline.Succeeded, "")
		m := e.want(ids[2], pipeline.Skipped, "")
		if !strings.Contains(*m.LastError, "empty") {
			t.Fatalf("empty DNLD skip reason: %q", *m.LastError)
		}
		e.want(ids[3], pipeline.Succeeded, "")
		if m := e.want(ids[4], pipeline.Succeeded, ""); !strings.Contains(strings.Join(m.Warnings, " "), "RECS") {
			t.Fatalf("RECS mismatch on an ADD must be a warning: %+v", m.Warnings)
		}
		e.want(ids[5], pipeline.Dead, pipeline.Malformed)
		list, err := db.RefData.RefList(ctx, "STTS")
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		for _, r := range list {
			keys = append(keys, fmt.Sprintf("%s@%d", r.Key, r.Version))
		}
		if got := strings.Join(keys, ","); got != "C@2,D@1,E@1" {
			t.Fatalf("STTS after replace, empty DNLD, DEL, ADD and a truncated DNLD = %s, want C@2,D@1,E@1", got)
		}
	})
}

func TestJobRunsBetweenMessagesInOrder(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db, defaultPolicy)
		ctx := context.Background()
		ids := e.post(unknownType, refMsg("STTS", "ADD", "1", stts("A", "x"), 1))
		job, err := db.JobQueue.EnqueueJob(ctx, jobs.Archive, "", e.clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		later := e.post(refMsg("STTS", "ADD", "2", stts("B", "y"), 1))
		e.drain()
		jl, _ := db.JobQueue.ListJobs(ctx, 10)
		if jl[0].ID != job.ID || jl[0].State != store.JobPending {
			t.Fatalf("the job ran while a message before it was FAILED: %+v", jl[0])
		}
		e.want(later[0], pipeline.Pending, "")
		// Let the head exhaust; then message 2, the job and message 3 run in that order.
		for i := 0; i < 6; i++ {
			e.clock.Add(time.Minute)
			e.drain()
		}
		e.want(ids[0], pipeline.Dead, pipeline.Exhausted)
		jl, _ = db.JobQueue.ListJobs(ctx, 10)
		if jl[0].State != store.JobDone {
			t.Fatalf("job state %s", jl[0].State)
		}
		m2, m3 := e.msg(ids[1]), e.msg(later[0])
		if !(m2.ProcessedAt.Before(*jl[0].FinishedAt) || m2.ProcessedAt.Equal(*jl[0].FinishedAt)) ||
			!(jl[0].FinishedAt.Before(*m3.ProcessedAt) || jl[0].FinishedAt.Equal(*m3.ProcessedAt)) {
			t.Fatalf("order broken: msg2 %v job %v msg3 %v", m2.ProcessedAt, jl[0].FinishedAt, m3.ProcessedAt)
		}
	})
}

func TestAdoptsRowsInsertedByTheLegacyGateway(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db, defaultPolicy)
		_, err := db.SQL.Exec(`INSERT INTO CMINMSGS (CMINMSGS_CLOB_MSG, CMINMSGS_DATE_RECEIVED, CMINMSGS_STATUS) VALUES (?, ?, 'VALID'), (?, ?, 'INVALID')`,
			refMsg("STTS", "ADD", "11", stts("G", "gateway"), 1), store.T(e.clock.Now()), refMsg("STTS", "ADD", "12", stts("H", "no"), 1), store.T(e.clock.Now()))
		if err != nil {
			t.Fatal(err)
		}
		e.drain()
		ms, err := db.Operations.ListMessages(context.Background(), store.MessageFilter{})
		if err != nil || len(ms) != 1 || ms[0].State != pipeline.Succeeded {
			t.Fatalf("adopted: %+v %v", ms, err)
		}
		var name, typ string
		var seq int64
		if err := db.SQL.QueryRow(`SELECT CMINMSGS_SUBSYSTEM_NAME, CMINMSGS_SUBSYSTEM_TYPE, CMINMSGS_SUBSYSTEM_SEQUENCE FROM CMINMSGS WHERE CMINMSGS_ID = ?`, ms[0].ID).Scan(&name, &typ, &seq); err != nil {
			t.Fatal(err)
		}
		if name != "AODB" || typ != "STTS" || seq != 11 {
			t.Fatalf("back-fill: %s %s %d", name, typ, seq)
		}
	})
}

func TestGatewayRowIsNotOvertakenByALaterInboxMessage(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db, defaultPolicy)
		e.drain() // the pump has started and looked once
		same := refMsg("STTS", "ADD", "21", stts("Q", "same identity"), 1)
		res, err := db.SQL.Exec(`INSERT INTO CMINMSGS (CMINMSGS_CLOB_MSG, CMINMSGS_DATE_RECEIVED, CMINMSGS_STATUS) VALUES (?, ?, 'VALID')`, same, store.T(e.clock.Now()))
		if err != nil {
			t.Fatal(err)
		}
		gateway, _ := res.LastInsertId()
		inbox := e.post(same)[0] // at once, within the same poll interval
		e.drain()
		e.want(gateway, pipeline.Succeeded, "")
		if m := e.want(inbox, pipeline.Skipped, ""); *m.LastError != fmt.Sprintf("duplicate-of:%d", gateway) {
			t.Fatalf("the later inbox message won: %s", *m.LastError)
		}
	})
}

func TestAppliedMessageIsNotAppliedAgainAfterALostCommitAnswer(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db, defaultPolicy)
		id := e.post(refMsg("STTS", "ADD", "31", stts("Z", "once"), 1))[0]
		e.drain()
		e.want(id, pipeline.Succeeded, "")
		// The commit went through but its answer was lost: the pump recorded a failure.
		if err := db.Processor.Record(context.Background(), id, store.Outcome{State: pipeline.Failed, Class: pipeline.Infra, Attempts: 1, LastError: "commit: connection reset"}, e.clock.Now()); err != nil {
			t.Fatal(err)
		}
		if _, err := db.SQL.Exec(`UPDATE REF_DATA SET FIELDS = '{"changed":"since"}' WHERE REF_TYPE = 'STTS'`); err != nil {
			t.Fatal(err)
		}
		e.clock.Add(time.Minute)
		e.drain()
		e.want(id, pipeline.Succeeded, "")
		ref, _ := db.RefData.RefGet(context.Background(), "STTS", "Z")
		if string(ref.Fields) != `{"changed":"since"}` {
			t.Fatalf("the message was applied a second time: %s", ref.Fields)
		}
	})
}

type failingJobs struct{}

func (failingJobs) RunJob(context.Context, *store.Job) (string, error) {
	return "", fmt.Errorf("archive volume not mounted")
}

func TestFailingJobHitsTheHeadDeadline(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		clock := testkit.NewClock(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
		policy := defaultPolicy
		policy.MaxAttempts = 1000
		p := pump.New(storetest.Pump(db), handler.Default(handler.Options{}), pump.Options{
			Policy: policy, Clock: clock, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Jobs: failingJobs{},
		})
		ctx := context.Background()
		if _, err := db.JobQueue.EnqueueJob(ctx, jobs.Archive, "", clock.Now()); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 30; i++ {
			if _, err := p.Step(ctx); err != nil {
				t.Fatal(err)
			}
			clock.Add(time.Minute)
		}
		jl, _ := db.JobQueue.ListJobs(ctx, 1)
		if jl[0].State != store.JobDead || jl[0].FirstFailedAt == nil || !strings.Contains(*jl[0].LastError, "head deadline") {
			t.Fatalf("job after 30 minutes of failures: %+v", jl[0])
		}
		if d := jl[0].FinishedAt.Sub(*jl[0].FirstFailedAt); d <= 10*time.Minute || d > 12*time.Minute {
			t.Fatalf("escalated %s after the first failure", d)
		}
	})
}

func TestGatewayRowAfterStartIsAdoptedAtOnce(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db, defaultPolicy)
		first := e.post(refMsg("STTS", "ADD", "41", stts("M", "inbox"), 1))[0]
		e.drain() // the start-up sweep is done; the clock does not move, so no other sweep
		res, err := db.SQL.Exec(`INSERT INTO CMINMSGS (CMINMSGS_CLOB_MSG, CMINMSGS_DATE_RECEIVED, CMINMSGS_STATUS) VALUES (?, ?, 'VALID')`,
			refMsg("STTS", "ADD", "42", stts("N", "gateway"), 1), store.T(e.clock.Now()))
		if err != nil {
			t.Fatal(err)
		}
		gateway, _ := res.LastInsertId()
		e.drain()
		e.want(first, pipeline.Succeeded, "")
		e.want(gateway, pipeline.Succeeded, "")
	})
}

// stepThree is a store whose servers give out ids three apart, as the nodes of a Galera
// cluster of three do (1, 4, 7… on one node), and which notes the ids the pump looks for again.
type stepThree struct {
	storetest.PumpStore
	asked []int64
}

func (s *stepThree) IDStep(context.Context) (int64, error) { return 3, nil }

func (s *stepThree) Visible(ctx context.Context, ids []int64) ([]int64, []int64, error) {
	s.asked = append(s.asked, ids...)
	return s.PumpStore.Visible(ctx, ids)
}

// On a Galera cluster the ids of the nodes nothing is written through are never looked for
// again (two in three of all ids: they filled the gaps and cost a read of thousands of ids per
// step), while a row a node written through commits after higher ids is adopted within a step,
// and a row of a node not written through yet, committed late, by the sweep.
func TestIDsNoNodeGaveOutAreNotLookedFor(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		sdb := &stepThree{PumpStore: storetest.Pump(db)}
		e := newEnv(t, db, defaultPolicy)
		e.pump = pump.New(sdb, handler.Default(handler.Options{}), pump.Options{
			Policy: defaultPolicy, Clock: e.clock, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		})
		e.drain() // started, the start-up sweep done; the clock does not move until said
		gateway := func(id int64) {
			t.Helper()
			if _, err := db.SQL.Exec(`INSERT INTO CMINMSGS (CMINMSGS_ID, CMINMSGS_CLOB_MSG, CMINMSGS_DATE_RECEIVED, CMINMSGS_STATUS) VALUES (?, ?, ?, 'VALID')`,
				id, refMsg("STTS", "ADD", fmt.Sprint(id), stts(fmt.Sprint("K", id), "gateway"), 1), store.T(e.clock.Now())); err != nil {
				t.Fatal(err)
			}
		}
		stated := func(id int64) bool {
			ms, err := db.Operations.ListMessages(context.Background(), store.MessageFilter{})
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range ms {
				if m.ID == id {
					return true
				}
			}
			return false
		}
		for _, id := range []int64{3001, 3004, 3010} { // one node's ids; 3007's transaction still open
			gateway(id)
		}
		e.drain()
		for _, id := range []int64{3001, 3004, 3010} {
			e.want(id, pipeline.Succeeded, "")
		}
		gateway(3007) // committed after 3010
		e.step()
		e.want(3007, pipeline.Succeeded, "")
		gateway(3016)
		e.drain()
		gateway(3014) // another node's first row, committed after 3016
		e.drain()
		if stated(3014) {
			t.Fatal("a row of a node no id came from before was looked for as a gap")
		}
		for _, id := range sdb.asked {
			if id%3 != 3001%3 {
				t.Fatalf("looked for id %d, which no node gave out (asked %v)", id, sdb.asked)
			}
		}
		if !slices.Contains(sdb.asked, 3007) {
			t.Fatalf("the open transaction's id 3007 was not looked for (asked %v)", sdb.asked)
		}
		e.clock.Add(time.Minute)
		e.drain()
		e.want(3014, pipeline.Succeeded, "")
	})
}
