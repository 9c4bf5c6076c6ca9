package storetest

import (
	"context"
	"database/sql"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"msgx/internal/pipeline"
	"msgx/internal/store"
)

// A trace id at PROC_STATE.TRACE_ID's width reads back whole and one a character over it cut
// to the width at a character boundary, 4-byte and CJK text included.
func traceIDsAtAndOverTheirWidth(t *testing.T, db *store.DB) {
	ctx := context.Background()
	now := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	at := strings.Repeat("航", store.TraceIDWidth-1) + "🛫"
	over := at + "x"
	ids, err := db.Intake.InsertMessagesTraced(ctx, []string{"<at/>", "<over/>"}, []string{at, over}, now)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{at, at} {
		m, err := db.Operations.GetMessage(ctx, ids[i])
		if err != nil || m == nil || m.TraceID != want {
			t.Fatalf("message %d: trace %+v (%v), want %q", i, m, err, want)
		}
	}
}

// The largest signed MEDIUMINT, the type of the legacy CMINMSGS_SUBSYSTEM_SEQUENCE.
const mediumIntMax = 8388607

// A SEQN at the legacy MEDIUMINT's largest value is back-filled into
// CMINMSGS_SUBSYSTEM_SEQUENCE as it is on every table (msgx's own has a BIGINT), and one over
// it is kept whole where the column holds it and left NULL where it does not, never cut to
// another number (MySQL outside strict mode would store the largest value instead); both
// messages succeed.
func sequenceAtAndOverTheMediumIntMaximum(t *testing.T, db *store.DB) {
	ctx := context.Background()
	now := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	seqns := []string{strconv.Itoa(mediumIntMax), strconv.Itoa(mediumIntMax + 1)}
	ids, err := db.Intake.InsertMessages(ctx, []string{"<at/>", "<over/>"}, now)
	if err != nil {
		t.Fatal(err)
	}
	for i, seqn := range seqns {
		meta := store.Backfill{SNDR: "AODB", TYPE: "FLOP", STYP: "CTOT", SEQN: seqn, DTTM: now}
		s := store.Success{TypeTag: "FLOP-CTOT", Identity: "AODB|FLOP|CTOT|" + seqn, Meta: meta}
		if _, _, err := db.Processor.Succeed(ctx, ids[i], s, nil, now); err != nil {
			t.Fatalf("SEQN %s: %v", seqn, err)
		}
	}
	seq := func(id int64) sql.NullString {
		var v sql.NullString
		if err := db.SQLDB().QueryRow(`SELECT CAST(CMINMSGS_SUBSYSTEM_SEQUENCE AS CHAR) FROM CMINMSGS WHERE CMINMSGS_ID = ?`, id).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	if got := seq(ids[0]); !got.Valid || got.String != seqns[0] {
		t.Errorf("SEQN %s back-filled as %+v, want it whole", seqns[0], got)
	}
	if got := seq(ids[1]); got.Valid && got.String != seqns[1] {
		t.Errorf("SEQN %s back-filled as %q, want it whole or NULL", seqns[1], got.String)
	}
	for _, id := range ids {
		if m, err := db.Operations.GetMessage(ctx, id); err != nil || m == nil || m.State != pipeline.Succeeded {
			t.Fatalf("message %d: %+v %v, want SUCCEEDED", id, m, err)
		}
	}
}

// A message, an event and a job whose optional columns are all NULL (as a legacy row, a row
// written before a column existed, or a hand edit leaves them) read back with those fields
// absent: nil pointers, "" and no warnings, never an error or a made-up value.
func nullColumnsReadBackAsAbsent(t *testing.T, db *store.DB) {
	ctx := context.Background()
	now := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	ids, err := db.Intake.InsertMessages(ctx, []string{"<a/>", "<b/>"}, now)
	if err != nil {
		t.Fatal(err)
	}
	ev := pipeline.Event{Target: "KAFKA_FLOP", Kind: "update", Payload: json.RawMessage(`{}`)} // no flight key
	if _, _, err := db.Processor.Succeed(ctx, ids[1], store.Success{TypeTag: "FLOP-CTOT", Identity: "b", Decision: pipeline.Decision{Events: []pipeline.Event{ev}}}, nil, now); err != nil {
		t.Fatal(err)
	}
	if _, err := db.JobQueue.EnqueueJob(ctx, "ARCHIVE", "", now); err != nil {
		t.Fatal(err)
	}
	Exec(t, db,
		`UPDATE CMINMSGS SET CMINMSGS_DATE_RECEIVED = NULL`,
		`UPDATE PROC_STATE SET ERROR_CLASS = NULL, NEXT_ATTEMPT_AT = NULL, FIRST_FAILED_AT = NULL, LAST_ERROR = NULL,
			TYPE_TAG = NULL, IDENTITY = NULL, PROCESSED_AT = NULL, NOTE = NULL, WARNINGS = NULL, TRACE_ID = NULL`,
		`UPDATE MSG_EVENT SET FLIGHT_KEY = NULL, NEXT_ATTEMPT_AT = NULL, FIRST_FAILED_AT = NULL, ERROR_CLASS = NULL,
			LAST_ERROR = NULL, SENT_AT = NULL`,
		`UPDATE PUMP_JOB SET PARAMS = NULL, NEXT_ATTEMPT_AT = NULL, LAST_ERROR = NULL, RESULT = NULL,
			FINISHED_AT = NULL, FIRST_FAILED_AT = NULL, SCHEDULE_KEY = NULL`)

	absent := func(what string, m *store.Message) {
		t.Helper()
		if m.ErrorClass != nil || m.Class() != "" || m.LastError != nil || m.TypeTag != nil || m.Identity != nil ||
			m.ReceivedAt != nil || m.ProcessedAt != nil || m.NextAttemptAt != nil || m.FirstFailedAt != nil ||
			m.Note != "" || len(m.Warnings) != 0 || m.TraceID != "" || m.AnsweredRequest != nil {
			t.Fatalf("%s of message %d with NULL columns: %+v", what, m.ID, *m)
		}
	}
	for _, id := range ids {
		m, err := db.Operations.GetMessage(ctx, id)
		if err != nil {
			t.Fatalf("GetMessage %d: %v", id, err)
		}
		absent("GetMessage", m)
	}
	list, err := db.Operations.ListMessages(ctx, store.MessageFilter{})
	if err != nil || len(list) != 2 {
		t.Fatalf("ListMessages: %d %v", len(list), err)
	}
	for _, m := range list {
		absent("ListMessages", m)
	}

	evs, err := db.Outbox.ListEvents(ctx, store.EventFilter{})
	if err != nil || len(evs) != 1 {
		t.Fatalf("ListEvents: %d %v", len(evs), err)
	}
	e := evs[0]
	if e.FlightKey != nil || e.Key() != "" || e.NextAttemptAt != nil || e.FirstFailedAt != nil || e.ErrorClass != nil ||
		e.LastError != nil || e.SentAt != nil || e.MsgID != ids[1] || string(e.Payload) != `{}` {
		t.Fatalf("event with NULL columns: %+v", e)
	}

	jobs, err := db.JobQueue.ListJobs(ctx, 10)
	if err != nil || len(jobs) != 1 {
		t.Fatalf("ListJobs: %d %v", len(jobs), err)
	}
	head, err := db.JobQueue.HeadJob(ctx)
	if err != nil || head == nil {
		t.Fatalf("HeadJob: %v %v", head, err)
	}
	for _, j := range []*store.Job{jobs[0], head} {
		if j.Params != "" || j.NextAttemptAt != nil || j.LastError != nil || j.Result != nil || j.FinishedAt != nil ||
			j.FirstFailedAt != nil || j.ScheduleKey != "" || j.Kind != "ARCHIVE" {
			t.Fatalf("job with NULL columns: %+v", *j)
		}
	}
}

// Each width-limited text keeps a value of exactly its width whole, in ASCII, CJK and 4-byte
// characters, and cuts one character more to the width with "…" last, leaving valid UTF-8 on
// every dialect (MariaDB's utf8mb4 would refuse a cut 4-byte character; SQLite would keep it
// broken).
func widthLimitedTextsAtAndOneOver(t *testing.T, db *store.DB) {
	ctx := context.Background()
	now := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	kinds := []string{"a", "机", "\U0001F6EB"}
	check := func(what, in, got string, width int) {
		t.Helper()
		n := utf8.RuneCountInString(in)
		switch {
		case !utf8.ValidString(got):
			t.Fatalf("%s of %d characters read back as invalid UTF-8 %q", what, n, got)
		case n <= width && got != in:
			t.Fatalf("%s of %d characters (width %d) changed to %d characters", what, n, width, utf8.RuneCountInString(got))
		case n > width && (utf8.RuneCountInString(got) != width || !strings.HasSuffix(got, "…") ||
			!strings.HasPrefix(in, strings.TrimSuffix(got, "…"))):
			t.Fatalf("%s of %d characters (width %d) read back as %d characters %q", what, n, width, utf8.RuneCountInString(got), got)
		}
	}
	at := func(k string, width, extra int) string { return strings.Repeat(k, width+extra) }

	// TYPE_TAG and LAST_ERROR of a message.
	for _, k := range kinds {
		for _, extra := range []int{0, 1} {
			ids, err := db.Intake.InsertMessages(ctx, []string{"<a/>", "<b/>"}, now)
			if err != nil {
				t.Fatal(err)
			}
			tag := at(k, store.TypeTagWidth, extra)
			if _, _, err := db.Processor.Succeed(ctx, ids[0], store.Success{TypeTag: tag, Identity: tag + "|" + k}, nil, now); err != nil {
				t.Fatalf("type tag of %d %q: %v", store.TypeTagWidth+extra, k, err)
			}
			m, err := db.Operations.GetMessage(ctx, ids[0])
			if err != nil || m.TypeTag == nil {
				t.Fatalf("GetMessage: %v %v", m, err)
			}
			check("TYPE_TAG", tag, *m.TypeTag, store.TypeTagWidth)

			last := at(k, store.LastErrorWidth, extra)
			if err := db.Processor.Record(ctx, ids[1], store.Outcome{State: pipeline.Dead, Class: pipeline.CodecError, Attempts: 1, LastError: last}, now); err != nil {
				t.Fatalf("last error of %d %q: %v", store.LastErrorWidth+extra, k, err)
			}
			if m, err = db.Operations.GetMessage(ctx, ids[1]); err != nil || m.LastError == nil {
				t.Fatalf("GetMessage: %v %v", m, err)
			}
			check("LAST_ERROR", last, *m.LastError, store.LastErrorWidth)

			// ACTOR and DETAIL of the message's history.
			actor, detail := at(k, store.ActorWidth, extra), at(k, store.DetailWidth, extra)
			if err := db.Operations.AddHistory(ctx, []int64{ids[1]}, store.Action{State: pipeline.Dead, Detail: detail, Actor: actor}, now); err != nil {
				t.Fatalf("history of actor %d, detail %d %q: %v", store.ActorWidth+extra, store.DetailWidth+extra, k, err)
			}
			h, err := db.Operations.MessageHistory(ctx, ids[1])
			if err != nil || len(h) == 0 {
				t.Fatalf("MessageHistory: %d %v", len(h), err)
			}
			newest := h[len(h)-1]
			check("MSG_HISTORY.ACTOR", actor, newest.Actor, store.ActorWidth)
			check("MSG_HISTORY.DETAIL", detail, newest.Detail, store.DetailWidth)
		}
	}
}
