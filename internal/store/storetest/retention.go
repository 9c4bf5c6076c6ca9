package storetest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"msgx/internal/pipeline"
	"msgx/internal/store"
)

// insertEvent adds one MSG_EVENT row of message msgID in state st, delivered at sent (when
// not zero), and returns its id.
func insertEvent(t *testing.T, db *store.DB, msgID int64, target string, st pipeline.EventStatus, created, sent time.Time) int64 {
	t.Helper()
	id, err := TakeEventIDs(db.SQLDB(), 1)
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.SQLDB().Exec(`INSERT INTO MSG_EVENT (EVENT_ID, CMINMSGS_ID, TYPE_TAG, TARGET, KIND, FLIGHT_KEY, PAYLOAD, STATE, ATTEMPTS, CREATED_AT, SENT_AT)
		VALUES (?, ?, 'FLOP-CHOT', ?, 'update', '航班1', '{"航":"✈🛫"}', ?, 0, ?, ?)`, id, msgID, target, st, store.T(created), store.T(sent))
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func eventIDs(t *testing.T, db *store.DB) map[int64]bool {
	t.Helper()
	rows, err := db.SQLDB().Query(`SELECT EVENT_ID FROM MSG_EVENT`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[int64]bool{}
	for rows.Next() {
		var id int64
		rows.Scan(&id)
		out[id] = true
	}
	return out
}

func purgeSentEventsDeletesOnlyOldSentEvents(t *testing.T, db *store.DB) {
	ctx := context.Background()
	now := time.Date(2026, 11, 30, 4, 0, 0, 0, time.UTC)
	old, young := now.Add(-8*24*time.Hour), now.Add(-time.Hour)
	bound := now.Add(-7 * 24 * time.Hour)
	ids, err := db.Intake.InsertMessages(ctx, []string{"<m/>"}, old)
	if err != nil {
		t.Fatal(err)
	}
	m := ids[0]
	oldSent := insertEvent(t, db, m, "KAFKA_FLOP", pipeline.EventSent, old, old)
	oldSent2 := insertEvent(t, db, m, "REDIS_NOTIFY", pipeline.EventSent, old, old)
	oldPending := insertEvent(t, db, m, "KAFKA_FLOP", pipeline.EventPending, old, time.Time{})
	oldDead := insertEvent(t, db, m, "KAFKA_FLOP", pipeline.EventDead, old, time.Time{})
	youngSent := insertEvent(t, db, m, "KAFKA_FLOP", pipeline.EventSent, young, young)
	atBound := insertEvent(t, db, m, "REDIS_NOTIFY", pipeline.EventSent, bound, bound)
	var seen []int
	n, err := db.Archiver.PurgeSentEvents(ctx, bound, func(done int) { seen = append(seen, done) })
	if err != nil || n != 2 {
		t.Fatalf("purged %d (%v), want the 2 SENT events delivered before the bound", n, err)
	}
	if len(seen) == 0 || seen[len(seen)-1] != 2 {
		t.Fatalf("progress: %v", seen)
	}
	left := eventIDs(t, db)
	for id, want := range map[int64]bool{oldSent: false, oldSent2: false, oldPending: true, oldDead: true, youngSent: true, atBound: true} {
		if left[id] != want {
			t.Fatalf("event %d kept: %v, want %v (left: %v)", id, left[id], want, left)
		}
	}
	if n, err := db.Archiver.PurgeSentEvents(ctx, bound, nil); err != nil || n != 0 {
		t.Fatalf("a second purge deleted %d (%v)", n, err)
	}
}

func purgeSentEventsWorksInChunks(t *testing.T, db *store.DB) {
	ctx := context.Background()
	now := time.Date(2026, 11, 30, 4, 0, 0, 0, time.UTC)
	old := now.Add(-30 * 24 * time.Hour)
	ids, err := db.Intake.InsertMessages(ctx, []string{"<m/>"}, old)
	if err != nil {
		t.Fatal(err)
	}
	total := 2*store.PurgeChunk + 3
	var vals []string
	for i := 0; i < total; i++ {
		vals = append(vals, fmt.Sprintf(`(%d, 'X-Y', 'T', 'k', '{}', 'SENT', 0, '%s', '%s')`, ids[0], store.T(old), store.T(old.Add(time.Duration(i)*time.Second))))
	}
	// One DEAD event in the middle and one young SENT event at the end.
	vals = append(vals[:store.PurgeChunk], append([]string{fmt.Sprintf(`(%d, 'X-Y', 'T', 'k', '{}', 'DEAD', 5, '%s', NULL)`, ids[0], store.T(old))}, vals[store.PurgeChunk:]...)...)
	vals = append(vals, fmt.Sprintf(`(%d, 'X-Y', 'T', 'k', '{}', 'SENT', 0, '%s', '%s')`, ids[0], store.T(now), store.T(now)))
	first, err := TakeEventIDs(db.SQLDB(), len(vals))
	if err != nil {
		t.Fatal(err)
	}
	for i := range vals {
		vals[i] = fmt.Sprintf("(%d, ", first+int64(i)) + vals[i][1:]
	}
	Exec(t, db, `INSERT INTO MSG_EVENT (EVENT_ID, CMINMSGS_ID, TYPE_TAG, TARGET, KIND, PAYLOAD, STATE, ATTEMPTS, CREATED_AT, SENT_AT) VALUES `+strings.Join(vals, ","))
	var calls int
	n, err := db.Archiver.PurgeSentEvents(ctx, now.Add(-time.Hour), func(int) { calls++ })
	if err != nil || n != total {
		t.Fatalf("purged %d (%v), want %d", n, err, total)
	}
	if calls < 3 {
		t.Fatalf("%d progress reports for %d chunks", calls, 3)
	}
	var left, dead int
	db.SQLDB().QueryRow(`SELECT COUNT(*), SUM(CASE WHEN STATE = 'DEAD' THEN 1 ELSE 0 END) FROM MSG_EVENT`).Scan(&left, &dead)
	if left != 2 || dead != 1 {
		t.Fatalf("left %d events (%d DEAD), want the DEAD and the young one", left, dead)
	}
}

func purgeArchivedDeletesOnlyFinishedArchivedMessages(t *testing.T, db *store.DB) {
	ctx := context.Background()
	t0 := time.Date(2026, 8, 1, 8, 0, 0, 0, time.UTC)
	ids, err := db.Intake.InsertMessages(ctx, []string{"<a/>", "<b/>", "<c/>", "<d/>", "<e/>", "<f/>"}, t0)
	if err != nil {
		t.Fatal(err)
	}
	record := func(id int64, o store.Outcome) {
		t.Helper()
		if err := db.Processor.Record(ctx, id, o, t0); err != nil {
			t.Fatal(err)
		}
	}
	record(ids[0], store.Outcome{State: pipeline.Succeeded, TypeTag: "FLOP-CHOT", Identity: "AODB|FLOP|CHOT|1", Flights: []int64{8801}})
	record(ids[1], store.Outcome{State: pipeline.Skipped, LastError: "duplicate-of:1", Flights: []int64{8801, 8802}})
	record(ids[2], store.Outcome{State: pipeline.Dead, Class: pipeline.Orphan, LastError: "no flight", Flights: []int64{8801}})
	record(ids[3], store.Outcome{State: pipeline.Failed, Class: pipeline.Infra, Attempts: 1, LastError: "down"})
	record(ids[4], store.Outcome{State: pipeline.Succeeded})
	// ids[5] stays PENDING. ARCHIVE moves ids 0, 1 and 4 on day t0+2d.
	archivedAt := t0.Add(48 * time.Hour)
	if n, err := db.Archiver.Archive(ctx, ids[5], t0.Add(time.Hour), archivedAt, nil); err != nil || n != 3 {
		t.Fatalf("archive: %d %v", n, err)
	}
	// ids[4] is archived later (its ARCHIVED_AT is young); a DEAD row an older msgx archived
	// and a legacy history row without a state stay whatever their age.
	Exec(t, db, fmt.Sprintf(`UPDATE PROC_STATE SET ARCHIVED_AT = '%s' WHERE CMINMSGS_ID = %d`, store.T(archivedAt.Add(100*24*time.Hour)), ids[4]),
		fmt.Sprintf(`INSERT INTO CMINMSGS_HST (CMINMSGS_ID, CMINMSGS_CLOB_MSG, CMINMSGS_STATUS) SELECT CMINMSGS_ID, CMINMSGS_CLOB_MSG, CMINMSGS_STATUS FROM CMINMSGS WHERE CMINMSGS_ID = %d`, ids[2]),
		fmt.Sprintf(`DELETE FROM CMINMSGS WHERE CMINMSGS_ID = %d`, ids[2]),
		`INSERT INTO CMINMSGS_HST (CMINMSGS_ID, CMINMSGS_CLOB_MSG, CMINMSGS_STATUS) VALUES (900000001, '<legacy>旧</legacy>', 'VALID')`)
	before := archivedAt.Add(90 * 24 * time.Hour)
	if h, err := db.Operations.MessageHistory(ctx, ids[1]); err != nil || len(h) == 0 {
		t.Fatalf("the SKIPPED message has no history to purge: %v %v", h, err)
	}
	res, err := db.Archiver.PurgeArchived(ctx, before, nil)
	if err != nil || res.ProcState != 2 || res.History != 2 {
		t.Fatalf("purged %+v (%v), want the SUCCEEDED and the SKIPPED message archived before the bound", res, err)
	}
	var orphans int
	if err := db.SQLDB().QueryRow(`SELECT COUNT(*) FROM MSG_HISTORY WHERE CMINMSGS_ID NOT IN (SELECT CMINMSGS_ID FROM PROC_STATE)`).Scan(&orphans); err != nil || orphans != 0 {
		t.Fatalf("%d history rows of purged messages left (%v)", orphans, err)
	}
	for i, id := range ids {
		m, err := db.Operations.GetMessage(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if want := i != 0 && i != 1; (m != nil) != want {
			t.Fatalf("message %d (%d) kept: %v, want %v", i, id, m != nil, want)
		}
	}
	if _, ok, _ := db.Processor.Raw(ctx, ids[0]); ok {
		t.Fatal("the text of a purged message is still in CMINMSGS_HST")
	}
	// The flights the purged messages named go with them; the kept DEAD one keeps its own.
	var flightRows int
	if err := db.SQLDB().QueryRow(`SELECT COUNT(*) FROM MSG_FLIGHT`).Scan(&flightRows); err != nil || flightRows != 1 {
		t.Fatalf("%d MSG_FLIGHT rows after the purge (%v), want the DEAD message's one", flightRows, err)
	}
	if ms, err := db.Operations.SearchMessages(ctx, store.MessageQuery{FLID: 8801}); err != nil || len(ms) != 1 || ms[0].ID != ids[2] {
		t.Fatalf("flight 8801 after the purge: %v %v, want the DEAD message", ms, err)
	}
	if raw, ok, _ := db.Processor.Raw(ctx, ids[2]); !ok || raw != "<c/>" {
		t.Fatal("the archived DEAD message lost its text")
	}
	if raw, ok, _ := db.Processor.Raw(ctx, 900000001); !ok || raw != "<legacy>旧</legacy>" {
		t.Fatal("a legacy history row without a state was purged")
	}
	// The identity of a purged message is free again.
	if _, bound, err := db.Processor.BoundTo(ctx, "AODB|FLOP|CHOT|1"); err != nil || bound {
		t.Fatalf("identity still bound after the purge: %v %v", bound, err)
	}
	if res, err := db.Archiver.PurgeArchived(ctx, before, nil); err != nil || res.ProcState != 0 {
		t.Fatalf("second purge: %+v %v", res, err)
	}
}

func purgeArchivedWorksInChunks(t *testing.T, db *store.DB) {
	ctx := context.Background()
	t0 := time.Date(2026, 8, 1, 8, 0, 0, 0, time.UTC)
	raws := make([]string, 2*store.PurgeChunk+5)
	for i := range raws {
		raws[i] = fmt.Sprintf(`<m n="%d">航</m>`, i)
	}
	ids, err := db.Intake.InsertMessages(ctx, raws, t0)
	if err != nil {
		t.Fatal(err)
	}
	Exec(t, db, fmt.Sprintf(`UPDATE PROC_STATE SET STATE = 'SUCCEEDED', PROCESSED_AT = '%s'`, store.T(t0)))
	if n, err := db.Archiver.Archive(ctx, ids[len(ids)-1], t0.Add(time.Hour), t0.Add(24*time.Hour), nil); err != nil || n != len(ids) {
		t.Fatalf("archive: %d %v", n, err)
	}
	var reports []int
	res, err := db.Archiver.PurgeArchived(ctx, t0.Add(48*time.Hour), func(done int) { reports = append(reports, done) })
	if err != nil || res.ProcState != len(ids) || res.History != len(ids) {
		t.Fatalf("purged %+v (%v), want %d", res, err, len(ids))
	}
	if len(reports) != 3 || reports[2] != len(ids) {
		t.Fatalf("progress per chunk: %v", reports)
	}
	var states, hst int
	db.SQLDB().QueryRow(`SELECT COUNT(*) FROM PROC_STATE`).Scan(&states)
	db.SQLDB().QueryRow(`SELECT COUNT(*) FROM CMINMSGS_HST`).Scan(&hst)
	if states != 0 || hst != 0 {
		t.Fatalf("left %d states and %d history rows", states, hst)
	}
}

// purgeAckedMessages: RETENTION purges a DEAD message acknowledged before the bound, in the
// inbox or archived, with every row it owns; the young acknowledgement, the unacknowledged
// DEAD message, the one replayed since its acknowledgement and the finished one stay, and the
// recent problems keep the record of the purged one.
func purgeAckedMessages(t *testing.T, db *store.DB) {
	ctx := context.Background()
	t0 := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	ids, err := db.Intake.InsertMessages(ctx, []string{"<old/>", "<young/>", "<unacked/>", "<replayed/>", "<ok/>", "<archived>航🛫</archived>"}, t0)
	if err != nil {
		t.Fatal(err)
	}
	old, young, unacked, replayed, ok, archived := ids[0], ids[1], ids[2], ids[3], ids[4], ids[5]
	for _, id := range []int64{old, young, unacked, replayed, archived} {
		if err := db.Processor.Record(ctx, id, store.Outcome{State: pipeline.Dead, Class: pipeline.Orphan, LastError: "no flight", Flights: []int64{7701, 7702}}, t0); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Processor.Record(ctx, ok, store.Outcome{State: pipeline.Succeeded, TypeTag: "FLOP-CHOT", Flights: []int64{7701}}, t0); err != nil {
		t.Fatal(err)
	}
	// A DEAD message an older msgx archived has its text in CMINMSGS_HST.
	Exec(t, db, fmt.Sprintf(`INSERT INTO CMINMSGS_HST (CMINMSGS_ID, CMINMSGS_CLOB_MSG, CMINMSGS_STATUS) SELECT CMINMSGS_ID, CMINMSGS_CLOB_MSG, CMINMSGS_STATUS FROM CMINMSGS WHERE CMINMSGS_ID = %d`, archived),
		fmt.Sprintf(`DELETE FROM CMINMSGS WHERE CMINMSGS_ID = %d`, archived))
	if err := db.Triage.AddProblem(ctx, store.Problem{At: t0, Kind: "outcome", MsgID: old, State: "DEAD", Class: "ORPHAN"}); err != nil {
		t.Fatal(err)
	}
	for id, at := range map[int64]time.Time{old: t0, archived: t0, replayed: t0, young: t0.Add(2 * time.Hour)} {
		if res, err := db.Triage.AckDead(ctx, store.DeadMessage, []int64{id}, "ops", "seen", at); err != nil || len(res.Acked) != 1 {
			t.Fatalf("ack %d: %+v %v", id, res, err)
		}
	}
	if _, err := db.Operations.Replay(ctx, nil, []int64{replayed}, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	var told int
	res, err := db.Triage.PurgeAckedMessages(ctx, t0.Add(time.Hour), func(d int) { told = d })
	if want := (store.PurgeResult{ProcState: 2, History: 1, Inbox: 1}); err != nil || res != want || told != 2 {
		t.Fatalf("purge: %+v (told %d) %v, want %+v", res, told, err, want)
	}
	for id, kept := range map[int64]bool{old: false, archived: false, young: true, unacked: true, replayed: true, ok: true} {
		m, err := db.Operations.GetMessage(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if _, text, _ := db.Processor.Raw(ctx, id); (m != nil) != kept || text != kept {
			t.Errorf("message %d: state kept %v, text kept %v, want %v", id, m != nil, text, kept)
		}
	}
	// Nothing of a purged message is left behind.
	for _, q := range []string{
		`SELECT COUNT(*) FROM CMINMSGS WHERE CMINMSGS_ID NOT IN (SELECT CMINMSGS_ID FROM PROC_STATE)`,
		`SELECT COUNT(*) FROM CMINMSGS_HST WHERE CMINMSGS_ID NOT IN (SELECT CMINMSGS_ID FROM PROC_STATE)`,
		`SELECT COUNT(*) FROM MSG_FLIGHT WHERE CMINMSGS_ID NOT IN (SELECT CMINMSGS_ID FROM PROC_STATE)`,
		`SELECT COUNT(*) FROM MSG_HISTORY WHERE CMINMSGS_ID NOT IN (SELECT CMINMSGS_ID FROM PROC_STATE)`,
		`SELECT COUNT(*) FROM DEAD_ACK WHERE KIND = 'message' AND REF_ID NOT IN (SELECT CMINMSGS_ID FROM PROC_STATE)`,
	} {
		var n int
		if err := db.SQLDB().QueryRow(q).Scan(&n); err != nil || n != 0 {
			t.Errorf("%s: %d (%v), want no orphan rows", q, n, err)
		}
	}
	if h, err := db.Operations.MessageHistory(ctx, young); err != nil || len(h) == 0 {
		t.Errorf("the young acknowledged message lost its history: %v %v", h, err)
	}
	if c, err := db.Triage.DeadCounts(ctx); err != nil || c.Messages != (store.DeadCount{Dead: 2, Acknowledged: 1, Unacknowledged: 1}) {
		t.Errorf("dead counts after the purge: %+v %v", c, err)
	}
	if acks, err := db.Triage.ListAcks(ctx, store.DeadMessage, 10); err != nil || len(acks) != 2 {
		t.Errorf("acknowledgements after the purge: %+v %v, want the young and the replayed one", acks, err)
	}
	if ps, err := db.Triage.RecentProblems(ctx, 10); err != nil || len(ps) != 1 || ps[0].MsgID != old {
		t.Errorf("recent problems after the purge: %+v %v", ps, err)
	}
	if res, err := db.Triage.PurgeAckedMessages(ctx, t0.Add(time.Hour), nil); err != nil || res.ProcState != 0 {
		t.Fatalf("a second purge: %+v %v", res, err)
	}
	// Once old enough, the young one goes too; the unacknowledged one never does.
	if res, err := db.Triage.PurgeAckedMessages(ctx, t0.Add(100*24*time.Hour), nil); err != nil || res.ProcState != 1 {
		t.Fatalf("the later purge: %+v %v, want the young one", res, err)
	}
	if m, err := db.Operations.GetMessage(ctx, unacked); err != nil || m == nil || m.State != pipeline.Dead {
		t.Fatalf("the unacknowledged DEAD message: %+v %v", m, err)
	}
}

func scheduledJobIsEnqueuedOncePerKey(t *testing.T, db *store.DB) {
	ctx := context.Background()
	now := time.Date(2026, 11, 30, 19, 0, 0, 0, time.UTC)
	ids, err := db.Intake.InsertMessages(ctx, []string{"<a/>", "<b/>"}, now)
	if err != nil {
		t.Fatal(err)
	}
	key := "HISTORY_SWEEP/2026-12-01"
	j, created, err := db.JobQueue.EnqueueScheduledJob(ctx, "HISTORY_SWEEP", key, now)
	if err != nil || !created || j.AfterMsgID != ids[1] || j.ScheduleKey != key {
		t.Fatalf("first enqueue: %+v %v %v", j, created, err)
	}
	if _, err := db.Intake.InsertMessages(ctx, []string{"<c/>"}, now); err != nil {
		t.Fatal(err)
	}
	if j2, created, err := db.JobQueue.EnqueueScheduledJob(ctx, "HISTORY_SWEEP", key, now.Add(time.Hour)); err != nil || created || j2 != nil {
		t.Fatalf("second enqueue of the same key: %+v %v %v", j2, created, err)
	}
	// Another day, another kind: new jobs. Jobs enqueued by hand have no key and never clash.
	if _, created, err := db.JobQueue.EnqueueScheduledJob(ctx, "HISTORY_SWEEP", "HISTORY_SWEEP/2026-12-02", now); err != nil || !created {
		t.Fatalf("next day: %v %v", created, err)
	}
	if _, created, err := db.JobQueue.EnqueueScheduledJob(ctx, "ARCHIVE", "ARCHIVE/2026-12-01", now); err != nil || !created {
		t.Fatalf("other kind: %v %v", created, err)
	}
	for i := 0; i < 2; i++ {
		if _, err := db.JobQueue.EnqueueJob(ctx, "ARCHIVE", "", now); err != nil {
			t.Fatal(err)
		}
	}
	jobs, err := db.JobQueue.ListJobs(ctx, 10)
	if err != nil || len(jobs) != 5 {
		t.Fatalf("jobs: %d %v", len(jobs), err)
	}
	if jobs[4].ScheduleKey != key || jobs[0].ScheduleKey != "" {
		t.Fatalf("keys: %q %q", jobs[4].ScheduleKey, jobs[0].ScheduleKey)
	}
}

func traceIDIsStoredWithTheMessage(t *testing.T, db *store.DB) {
	ctx := context.Background()
	now := time.Date(2026, 11, 30, 19, 0, 0, 0, time.UTC)
	told := map[int64]string{}
	db.Processor.SetTraceHook(func(id int64, trace string) { told[id] = trace })
	trace := "4bf92f3577b34da6a3ce929d0e0e4736"
	ids, err := db.Intake.InsertMessagesTraced(ctx, []string{"<a/>", "<b/>", "<c/>"}, []string{trace, "", trace + "ffff"}, now)
	if err != nil {
		t.Fatal(err)
	}
	if told[ids[0]] != trace || len(told) != 2 {
		t.Fatalf("hook told %v", told)
	}
	clear(told)
	for i, want := range []string{trace, "", trace} {
		m, err := db.Operations.GetMessage(ctx, ids[i])
		if err != nil || m.TraceID != want {
			t.Fatalf("message %d trace %q (%v), want %q", i, m.TraceID, err, want)
		}
	}
	head, err := db.Processor.Head(ctx)
	if err != nil || head.TraceID != trace {
		t.Fatalf("head: %+v %v", head, err)
	}
	due, err := db.Processor.Due(ctx, 10)
	if err != nil || len(due) != 3 || due[0].TraceID != trace || due[1].TraceID != "" {
		t.Fatalf("due: %v", err)
	}
	if told[ids[0]] != trace {
		t.Fatalf("reading a traced message did not tell the hook: %v", told)
	}
	if _, err := db.Intake.InsertMessagesTraced(ctx, []string{"<a/>"}, nil, now); err == nil {
		t.Fatal("a trace list of the wrong length was accepted")
	}
}
