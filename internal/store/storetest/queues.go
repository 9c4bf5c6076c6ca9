package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"msgx/internal/pipeline"
	"msgx/internal/store"
)

func getJobReadsOneJob(t *testing.T, db *store.DB) {
	ctx := context.Background()
	now := time.Date(2026, 12, 3, 4, 5, 6, 789000, time.UTC)
	j, err := db.JobQueue.EnqueueJob(ctx, "ARCHIVE", "day=2026-12-01", now)
	if err != nil {
		t.Fatal(err)
	}
	got, err := db.JobQueue.GetJob(ctx, j.ID)
	if err != nil || got.ID != j.ID || got.Kind != "ARCHIVE" || got.State != store.JobPending || got.Params != "day=2026-12-01" ||
		!got.CreatedAt.Equal(now) || got.FinishedAt != nil || got.Result != nil {
		t.Fatalf("GetJob of a new job: %+v %v", got, err)
	}
	// The longest result the column keeps, in 4-byte and CJK text, comes back as written.
	result := "归档 🛫 done"
	if err := db.JobQueue.FinishJob(ctx, j.ID, store.JobOutcome{State: store.JobDone, Attempts: 1, Result: result}, now.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	got, err = db.JobQueue.GetJob(ctx, j.ID)
	if err != nil || got.State != store.JobDone || got.Result == nil || *got.Result != result || got.FinishedAt == nil ||
		!got.FinishedAt.Equal(now.Add(time.Second)) {
		t.Fatalf("GetJob of a finished job: %+v %v", got, err)
	}
	for _, id := range []int64{0, -1, j.ID + 1, 1<<63 - 1} {
		if _, err := db.JobQueue.GetJob(ctx, id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("GetJob(%d): %v, want ErrNotFound", id, err)
		}
	}
}

// deadEvents gives target n events of a new message and marks them DEAD; it returns their ids.
func deadEvents(t *testing.T, db *store.DB, target string, n int, now time.Time) []int64 {
	t.Helper()
	ctx := context.Background()
	ids, err := db.Intake.InsertMessages(ctx, []string{"<e/>"}, now)
	if err != nil {
		t.Fatal(err)
	}
	evs := make([]pipeline.Event, n)
	for i := range evs {
		evs[i] = pipeline.Event{Target: target, Kind: "k", Payload: []byte(`{}`)}
	}
	if _, _, err := db.Processor.Succeed(ctx, ids[0], store.Success{TypeTag: "X-Y", Identity: fmt.Sprintf("dead|%s|%d", target, ids[0]), Decision: pipeline.Decision{Events: evs}}, nil, now); err != nil {
		t.Fatal(err)
	}
	pending, err := db.Outbox.PendingEvents(ctx, target, n)
	if err != nil || len(pending) != n {
		t.Fatalf("pending events: %d %v", len(pending), err)
	}
	out := make([]int64, n)
	err = db.Outbox.EventTx(ctx, func(tx store.EventTx) error {
		ptrs := make([]*store.Event, n)
		for i := range pending {
			ptrs[i], out[i] = &pending[i], pending[i].EventID
		}
		_, err := tx.Change(ptrs, store.EventChange{State: pipeline.EventDead, Class: pipeline.Rejected, LastError: "refused"})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func ackKeepsDeadLetters(t *testing.T, db *store.DB) {
	ctx := context.Background()
	now := time.Date(2026, 12, 3, 10, 0, 0, 123000, time.UTC)
	ids, err := db.Intake.InsertMessages(ctx, []string{"<a/>", "<b/>", "<c/>"}, now)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids[:2] {
		if _, err := db.Operations.Park(ctx, id, "set aside", "ops", now); err != nil {
			t.Fatal(err)
		}
	}
	// The longest actor and note and one more, in 4-byte and CJK text, fit their columns.
	actor := strings.Repeat("操", store.ActorWidth+1)
	note := strings.Repeat("🛬", store.DetailWidth+1)
	res, err := db.Triage.AckDead(ctx, store.DeadMessage, []int64{ids[0], ids[2], ids[2] + 1000, 0, -1}, actor, note, now)
	if err != nil || fmt.Sprint(res.Acked) != fmt.Sprint([]int64{ids[0]}) || len(res.NotDead) != 4 || len(res.Already) != 0 {
		t.Fatalf("ack: %+v %v", res, err)
	}
	if res, err := db.Triage.AckDead(ctx, store.DeadMessage, []int64{ids[0]}, "ops", "", now); err != nil || fmt.Sprint(res.Already) != fmt.Sprint([]int64{ids[0]}) {
		t.Fatalf("second ack: %+v %v", res, err)
	}
	if _, err := db.Triage.AckDead(ctx, "flight", ids, "ops", "", now); err == nil {
		t.Error("an unknown kind was acknowledged")
	}
	evs := deadEvents(t, db, "WEBHOOK", 3, now)
	if res, err := db.Triage.AckDead(ctx, store.DeadEvent, evs[:2], "ops", "sink retired", now); err != nil || len(res.Acked) != 2 {
		t.Fatalf("ack events: %+v %v", res, err)
	}
	c, err := db.Triage.DeadCounts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := store.DeadCounts{Messages: store.DeadCount{Dead: 2, Acknowledged: 1, Unacknowledged: 1}, Events: store.DeadCount{Dead: 3, Acknowledged: 2, Unacknowledged: 1}}
	if c != want {
		t.Fatalf("dead counts %+v, want %+v", c, want)
	}
	acks, err := db.Triage.ListAcks(ctx, store.DeadMessage, 10)
	if err != nil || len(acks) != 1 {
		t.Fatalf("acks of messages: %d %v", len(acks), err)
	}
	if a := acks[0]; a.ID != ids[0] || a.State != "DEAD" || !a.At.Equal(now) || utf8.RuneCountInString(a.By) != store.ActorWidth ||
		!strings.HasPrefix(a.By, "操操") || utf8.RuneCountInString(a.Note) != store.DetailWidth || !strings.HasPrefix(a.Note, "🛬🛬") {
		t.Fatalf("ack of message %d: id %d, state %s, at %s, actor %d runes, note %d runes", ids[0], a.ID, a.State, a.At,
			utf8.RuneCountInString(a.By), utf8.RuneCountInString(a.Note))
	}
	if all, err := db.Triage.ListAcks(ctx, "", 10); err != nil || len(all) != 3 {
		t.Fatalf("every ack: %d %v", len(all), err)
	}
	// A replayed message leaves DEAD: its acknowledgement no longer counts.
	if _, err := db.Operations.Replay(ctx, nil, []int64{ids[0]}, now); err != nil {
		t.Fatal(err)
	}
	if c, err := db.Triage.DeadCounts(ctx); err != nil || c.Messages != (store.DeadCount{Dead: 1, Acknowledged: 0, Unacknowledged: 1}) {
		t.Fatalf("dead counts after a replay: %+v %v", c, err)
	}
	if acks, err := db.Triage.ListAcks(ctx, store.DeadMessage, 10); err != nil || len(acks) != 1 || acks[0].State == "DEAD" {
		t.Fatalf("the ack of a replayed message: %+v %v", acks, err)
	}
}

func purgeAckedEvents(t *testing.T, db *store.DB) {
	ctx := context.Background()
	t0 := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	old := deadEvents(t, db, "ES", 3, t0)
	if _, err := db.Triage.AckDead(ctx, store.DeadEvent, old[:2], "ops", "", t0); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Triage.AckDead(ctx, store.DeadEvent, old[2:], "ops", "", t0.Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	var told int
	n, err := db.Triage.PurgeAckedEvents(ctx, t0.Add(time.Hour), func(d int) { told = d })
	if err != nil || n != 2 || told != 2 {
		t.Fatalf("purge: %d (told %d) %v, want 2", n, told, err)
	}
	left, err := db.Outbox.ListEvents(ctx, store.EventFilter{Target: "ES", Limit: 10})
	if err != nil || len(left) != 1 || left[0].EventID != old[2] {
		t.Fatalf("events left: %+v %v", left, err)
	}
	if c, err := db.Triage.DeadCounts(ctx); err != nil || c.Events != (store.DeadCount{Dead: 1, Acknowledged: 1}) {
		t.Fatalf("counts after the purge: %+v %v", c, err)
	}
	if n, err := db.Triage.PurgeAckedEvents(ctx, t0.Add(time.Hour), nil); err != nil || n != 0 {
		t.Fatalf("a second purge: %d %v", n, err)
	}
}

func recentProblemsKeepTheNewest(t *testing.T, db *store.DB) {
	ctx := context.Background()
	t0 := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	long := strings.Repeat("航", store.DetailWidth+5)
	first := store.Problem{At: t0, Kind: "outcome", MsgID: 1<<63 - 1, TypeTag: "FLOP-STND", State: "DEAD", Class: "ORPHAN", Note: long}
	if err := db.Triage.AddProblem(ctx, first); err != nil {
		t.Fatal(err)
	}
	if err := db.Triage.AddProblem(ctx, store.Problem{At: t0.Add(time.Second), Kind: "action", Actor: strings.Repeat("😀", 70),
		Subject: strings.Repeat("s", 200), Note: "message.park: 🛫"}); err != nil {
		t.Fatal(err)
	}
	ps, err := db.Triage.RecentProblems(ctx, 10)
	if err != nil || len(ps) != 2 {
		t.Fatalf("problems: %+v %v", ps, err)
	}
	if p := ps[0]; p.Kind != "action" || utf8.RuneCountInString(p.Actor) != store.ActorWidth ||
		utf8.RuneCountInString(p.Subject) != store.ProblemSubjectWidth || p.Note != "message.park: 🛫" {
		t.Errorf("newest: kind %s, actor %d runes, subject %d runes, note %q", p.Kind, utf8.RuneCountInString(p.Actor),
			utf8.RuneCountInString(p.Subject), p.Note)
	}
	if p := ps[1]; p.MsgID != first.MsgID || p.TypeTag != "FLOP-STND" || p.State != "DEAD" || p.Class != "ORPHAN" ||
		utf8.RuneCountInString(p.Note) != store.DetailWidth || !strings.HasPrefix(p.Note, "航航") || !p.At.Equal(t0) {
		t.Errorf("oldest: msg %d tag %s state %s class %s note %d runes at %s", p.MsgID, p.TypeTag, p.State, p.Class,
			utf8.RuneCountInString(p.Note), p.At)
	}
	for i := range store.ProblemKeep {
		if err := db.Triage.AddProblem(ctx, store.Problem{At: t0.Add(time.Duration(i+2) * time.Second), Kind: "outcome", MsgID: int64(i + 1)}); err != nil {
			t.Fatal(err)
		}
	}
	ps, err = db.Triage.RecentProblems(ctx, store.MaxPageLimit)
	if err != nil || len(ps) != store.ProblemKeep || ps[0].MsgID != store.ProblemKeep || ps[len(ps)-1].MsgID != 1 {
		t.Fatalf("after %d more: %d kept, newest %+v %v", store.ProblemKeep, len(ps), ps[0], err)
	}
	// A follower reads from its cursor on, oldest first: the trimmed ones are gone.
	after, err := db.Triage.ProblemsAfter(ctx, 0, 3)
	if err != nil || len(after) != 3 || after[0].MsgID != 1 || after[2].MsgID != 3 || after[1].ID <= after[0].ID {
		t.Fatalf("after 0, 3: %+v %v, want messages 1, 2, 3", after, err)
	}
	if rest, err := db.Triage.ProblemsAfter(ctx, ps[1].ID, 10); err != nil || len(rest) != 1 || rest[0].ID != ps[0].ID {
		t.Fatalf("after the one before the newest: %+v %v, want the newest", rest, err)
	}
}
