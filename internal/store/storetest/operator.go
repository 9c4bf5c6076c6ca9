package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"msgx/internal/pipeline"
	"msgx/internal/store"
)

var opNow = time.Date(2026, 12, 2, 9, 30, 0, 0, time.UTC)

func parkSetsAside(t *testing.T, db *store.DB) {
	ctx := context.Background()
	ids, err := db.Intake.InsertMessages(ctx, []string{"<p/>", "<f/>", "<s/>", "<k/>", "<d/>"}, opNow)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Processor.Record(ctx, ids[1], store.Outcome{State: pipeline.Failed, Class: pipeline.Infra, Attempts: 2, LastError: "db down"}, opNow); err != nil {
		t.Fatal(err)
	}
	if _, _, err := db.Processor.Succeed(ctx, ids[2], store.Success{TypeTag: "STTS-ADD", Identity: "A|STTS|ADD|9"}, nil, opNow); err != nil {
		t.Fatal(err)
	}
	if err := db.Processor.Record(ctx, ids[3], store.Outcome{State: pipeline.Skipped, LastError: "duplicate-of:1"}, opNow); err != nil {
		t.Fatal(err)
	}
	if err := db.Processor.Record(ctx, ids[4], store.Outcome{State: pipeline.Dead, Class: pipeline.Exhausted, Attempts: 5, LastError: "gave up"}, opNow); err != nil {
		t.Fatal(err)
	}
	// A reason longer than the column, with CJK and 4-byte text, is cut, never refused.
	reason := "下游维护 🛫 " + strings.Repeat("長", store.LastErrorWidth)
	for i, id := range []int64{ids[0], ids[1], ids[4]} {
		res, err := db.Operations.Park(ctx, id, reason, "ops-李", opNow)
		if err != nil {
			t.Fatalf("park %d: %v", id, err)
		}
		if res.State != pipeline.Dead || res.Class != pipeline.Parked || res.From != []pipeline.ProcStatus{pipeline.Pending, pipeline.Failed, pipeline.Dead}[i] {
			t.Errorf("park %d: %+v", id, res)
		}
		m, _ := db.Operations.GetMessage(ctx, id)
		if m.State != pipeline.Dead || m.Class() != pipeline.Parked || m.LastError == nil || !strings.HasPrefix(*m.LastError, "parked by ops-李: 下游维护 🛫") {
			t.Errorf("message %d after park: %+v", id, m)
		}
		if m.LastError != nil && (!utf8.ValidString(*m.LastError) || utf8.RuneCountInString(*m.LastError) > store.LastErrorWidth) {
			t.Errorf("last error of %d not fitted: %d runes", id, utf8.RuneCountInString(*m.LastError))
		}
	}
	for _, id := range []int64{ids[2], ids[3]} {
		var refused store.ParkRefused
		if _, err := db.Operations.Park(ctx, id, "no", "ops", opNow); !errors.As(err, &refused) {
			t.Errorf("park of finished %d: %v, want ParkRefused", id, err)
		}
	}
	if _, err := db.Operations.Park(ctx, ids[4]+100, "no", "ops", opNow); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("park of unknown: %v, want ErrNotFound", err)
	}
	// Parked messages are replayable by their class.
	res, err := db.Operations.Replay(ctx, []pipeline.ErrorClass{pipeline.Parked}, nil, opNow)
	if err != nil || res.Moved != 3 {
		t.Fatalf("replay PARKED: %+v %v", res, err)
	}
}

func historyKeepsEveryOutcome(t *testing.T, db *store.DB) {
	ctx := context.Background()
	ids, err := db.Intake.InsertMessages(ctx, []string{"<h/>"}, opNow)
	if err != nil {
		t.Fatal(err)
	}
	id := ids[0]
	long := "https://ops:pa55@hook.example/x " + strings.Repeat("错", store.DetailWidth)
	steps := []store.Outcome{
		{State: pipeline.Failed, Class: pipeline.Infra, Attempts: 1, LastError: "first"},
		{State: pipeline.Failed, Class: pipeline.Infra, Attempts: 2, LastError: long},
	}
	for i, o := range steps {
		if err := db.Processor.Record(ctx, id, o, opNow.Add(time.Duration(i)*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Operations.Park(ctx, id, "poison", "alice", opNow.Add(3*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := db.Operations.AddHistory(ctx, []int64{id}, store.Action{State: pipeline.Pending, Detail: "replayed", Actor: "bob"}, opNow.Add(4*time.Second)); err != nil {
		t.Fatal(err)
	}
	h, err := db.Operations.MessageHistory(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != 4 {
		t.Fatalf("history: %d entries, want 4: %+v", len(h), h)
	}
	if h[0].State != "FAILED" || h[0].Attempts != 1 || h[0].Detail != "first" || h[0].Actor != "" || !h[0].At.Equal(opNow) {
		t.Errorf("entry 0: %+v", h[0])
	}
	if strings.Contains(h[1].Detail, "pa55") || utf8.RuneCountInString(h[1].Detail) > store.DetailWidth {
		t.Errorf("entry 1 not redacted or not fitted: %.80s… (%d runes)", h[1].Detail, utf8.RuneCountInString(h[1].Detail))
	}
	if h[2].State != "DEAD" || h[2].Class == nil || *h[2].Class != "PARKED" || h[2].Actor != "alice" {
		t.Errorf("entry 2: %+v", h[2])
	}
	if h[3].State != "PENDING" || h[3].Actor != "bob" {
		t.Errorf("entry 3: %+v", h[3])
	}
	if m, _ := db.Operations.GetMessage(ctx, id); m == nil || m.LastError == nil || strings.Contains(*m.LastError, "pa55") {
		t.Errorf("stored last error keeps the password: %v", m)
	}
}

func pausesAreDurable(t *testing.T, db *store.DB) {
	ctx := context.Background()
	if p, err := db.Operations.Pause(ctx, store.PumpPause); err != nil || p != nil {
		t.Fatalf("fresh pause: %v %v", p, err)
	}
	name := store.TargetPause(strings.Repeat("T", 64))
	if err := db.Operations.SetPause(ctx, name, "运维 🛠 "+strings.Repeat("x", 100), "维护", opNow); err != nil {
		t.Fatal(err)
	}
	if err := db.Operations.SetPause(ctx, name, "second", "again", opNow.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	p, err := db.Operations.Pause(ctx, name)
	if err != nil || p == nil {
		t.Fatalf("pause: %v %v", p, err)
	}
	if !strings.HasPrefix(p.By, "运维 🛠") || p.Reason != "维护" || !p.At.Equal(opNow) {
		t.Errorf("the second pause changed the first: %+v", p)
	}
	if err := db.Operations.SetPause(ctx, store.PumpPause, "a", "", opNow); err != nil {
		t.Fatal(err)
	}
	all, err := db.Operations.Pauses(ctx)
	if err != nil || len(all) != 2 || all[0].Name != store.PumpPause {
		t.Fatalf("pauses: %+v %v", all, err)
	}
	if ok, err := db.Operations.ClearPause(ctx, name); err != nil || !ok {
		t.Errorf("resume: %v %v", ok, err)
	}
	if ok, err := db.Operations.ClearPause(ctx, name); err != nil || ok {
		t.Errorf("second resume: %v %v", ok, err)
	}
	if p, _ := db.Operations.Pause(ctx, name); p != nil {
		t.Errorf("still paused: %+v", p)
	}
}

func auditKeepsEdgeValues(t *testing.T, db *store.DB) {
	ctx := context.Background()
	in := []store.AuditEntry{
		{At: opNow, Actor: "ops", Role: "operator", Action: "park", Subject: "message 1", Detail: `{"reason":"x"}`, Remote: "10.0.0.1:5555"},
		{At: opNow.Add(time.Second), Actor: strings.Repeat("名", 100), Role: "admin", Action: "pump.pause",
			Subject: strings.Repeat("🛫", 200), Detail: "url https://u:secretpw@h/ " + strings.Repeat("d", 5000), Remote: "[::1]:1"},
	}
	for _, a := range in {
		if err := db.Operations.AddAudit(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	out, err := db.Operations.ListAudit(ctx, store.AuditQuery{Limit: 10})
	if err != nil || len(out) != 2 {
		t.Fatalf("audit: %+v %v", out, err)
	}
	if out[0].Actor != "ops" || out[0].Action != "park" || out[0].Subject != "message 1" || !out[0].At.Equal(opNow) {
		t.Errorf("entry 0: %+v", out[0])
	}
	if utf8.RuneCountInString(out[1].Actor) != store.ActorWidth || utf8.RuneCountInString(out[1].Subject) != store.SubjectWidth ||
		strings.Contains(out[1].Detail, "secretpw") {
		t.Errorf("entry 1 not fitted or not redacted: %d %d %.60s", utf8.RuneCountInString(out[1].Actor), utf8.RuneCountInString(out[1].Subject), out[1].Detail)
	}
	if page, _ := db.Operations.ListAudit(ctx, store.AuditQuery{AfterID: out[0].ID, Limit: 10}); len(page) != 1 || page[0].ID != out[1].ID {
		t.Errorf("after paging: %+v", page)
	}
}

// succeedWithEvents commits message id with events.
func succeedWithEvents(t *testing.T, db *store.DB, id int64, tag string, evs ...pipeline.Event) {
	t.Helper()
	if _, _, err := db.Processor.Succeed(context.Background(), id, store.Success{TypeTag: tag, Identity: tag + "|" + time.Duration(id).String(),
		Decision: pipeline.Decision{Events: evs}}, nil, opNow); err != nil {
		t.Fatal(err)
	}
}

// succeedNaming commits message id with events, naming flights.
func succeedNaming(t *testing.T, db *store.DB, id int64, tag string, flids []int64, evs ...pipeline.Event) {
	t.Helper()
	if _, _, err := db.Processor.Succeed(context.Background(), id, store.Success{TypeTag: tag, Identity: tag + "|" + time.Duration(id).String(),
		Decision: pipeline.Decision{Events: evs}, Flights: flids}, nil, opNow); err != nil {
		t.Fatal(err)
	}
}

func flopEvent(flid, field, old, cur string) pipeline.Event {
	return pipeline.Event{Target: "KAFKA_FLOP", Kind: "flop", Key: flid,
		Payload: json.RawMessage(`{"FLID":` + flid + `,"op":"update","changes":{"` + field + `":{"old":` + old + `,"new":` + cur + `}}}`)}
}

func searchByFlight(t *testing.T, db *store.DB) {
	ctx := context.Background()
	ids, err := db.Intake.InsertMessages(ctx, []string{"<a/>", "<b/>", "<c/>", "<d/>"}, opNow)
	if err != nil {
		t.Fatal(err)
	}
	succeedNaming(t, db, ids[0], "SCHD-DNLD", []int64{7001, 7002}, flopEvent("7001", "STND", "null", `"A1"`), flopEvent("7002", "STND", "null", `"B2"`),
		pipeline.Event{Target: "REDIS_NOTIFY", Kind: "notify", Key: "7001", Payload: json.RawMessage(`{"type":"schedule"}`)})
	succeedNaming(t, db, ids[1], "FLOP-STND", []int64{7001}, flopEvent("7001", "STND", `"A1"`, `"登机口 🛫"`))
	succeedWithEvents(t, db, ids[2], "STTS-ADD")
	if err := db.Processor.Record(ctx, ids[3], store.Outcome{State: pipeline.Dead, Class: pipeline.Orphan, Attempts: 1, LastError: "no flight 7001 stored", TypeTag: "FLOP-CHOT",
		Flights: []int64{7001}}, opNow); err != nil {
		t.Fatal(err)
	}
	got := func(q store.MessageQuery) []int64 {
		t.Helper()
		ms, err := db.Operations.SearchMessages(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		out := []int64{}
		for _, m := range ms {
			out = append(out, m.ID)
		}
		return out
	}
	eq := func(what string, a, b []int64) {
		t.Helper()
		if len(a) != len(b) {
			t.Errorf("%s: %v, want %v", what, a, b)
			return
		}
		for i := range a {
			if a[i] != b[i] {
				t.Errorf("%s: %v, want %v", what, a, b)
				return
			}
		}
	}
	eq("flid 7001", got(store.MessageQuery{FLID: 7001}), []int64{ids[0], ids[1], ids[3]})
	eq("flid 7001 DEAD", got(store.MessageQuery{FLID: 7001, State: pipeline.Dead}), ids[3:])
	eq("flid 7001 paged", got(store.MessageQuery{FLID: 7001, AfterID: ids[0], Limit: 1}), ids[1:2])
	eq("flid 7002", got(store.MessageQuery{FLID: 7002}), ids[:1])
	eq("flid 9", got(store.MessageQuery{FLID: 9}), nil)
	eq("tag FLOP", got(store.MessageQuery{Tag: "FLOP"}), []int64{ids[1], ids[3]})
	eq("tag FLOP-STND", got(store.MessageQuery{Tag: "FLOP-STND"}), ids[1:2])
	eq("tag with LIKE characters", got(store.MessageQuery{Tag: "F%"}), nil)
	eq("text", got(store.MessageQuery{Text: "no flight 7001"}), ids[3:])
	eq("state+class", got(store.MessageQuery{State: pipeline.Dead, Class: pipeline.Orphan}), ids[3:])
	eq("from", got(store.MessageQuery{From: opNow}), ids)
	eq("to", got(store.MessageQuery{To: opNow}), nil)
	eq("limit", got(store.MessageQuery{Limit: 1, AfterID: ids[0]}), ids[1:2])

	h, err := db.Operations.FlightHistory(ctx, 7001, "KAFKA_FLOP", 0, 0)
	if err != nil || len(h) != 2 {
		t.Fatalf("flight history: %+v %v", h, err)
	}
	if h[0].MsgID != ids[0] || h[1].MsgID != ids[1] || h[1].Op != "update" || h[1].TypeTag != "FLOP-STND" ||
		!strings.Contains(string(h[1].Changes), `"new":"登机口 🛫"`) || !strings.Contains(string(h[1].Changes), `"old":"A1"`) {
		t.Errorf("flight history: %+v / %s", h, h[1].Changes)
	}
	evs, err := db.Operations.SearchEvents(ctx, store.EventQuery{FLID: 7001})
	if err != nil || len(evs) != 3 {
		t.Fatalf("events of 7001: %d %v", len(evs), err)
	}
	if evs, _ := db.Operations.SearchEvents(ctx, store.EventQuery{FLID: 7001, Target: "REDIS_NOTIFY", State: pipeline.EventPending}); len(evs) != 1 {
		t.Errorf("events of 7001 to REDIS_NOTIFY: %d", len(evs))
	}
}

func eventListingsElideLargePayloads(t *testing.T, db *store.DB) {
	ctx := context.Background()
	ids, err := db.Intake.InsertMessages(ctx, []string{"<big/>"}, opNow)
	if err != nil {
		t.Fatal(err)
	}
	big := `{"FLID":1,"v":"` + strings.Repeat("航", 200_000) + `"}` // 600 kB
	succeedWithEvents(t, db, ids[0], "SCHD-DNLD",
		pipeline.Event{Target: "KAFKA_SCHD", Kind: "schd", Key: "1", Payload: json.RawMessage(big)},
		pipeline.Event{Target: "KAFKA_SCHD", Kind: "schd", Key: "2", Payload: json.RawMessage(`{"FLID":2}`)})
	evs, err := db.Operations.SearchEvents(ctx, store.EventQuery{MsgID: ids[0], Limit: 2147483647})
	if err != nil || len(evs) != 2 {
		t.Fatalf("events: %d %v", len(evs), err)
	}
	if !evs[0].PayloadElided || evs[0].Payload != nil || evs[0].PayloadBytes != int64(len(big)) {
		t.Errorf("big payload: elided %v, %d bytes shown, size %d (want %d)", evs[0].PayloadElided, len(evs[0].Payload), evs[0].PayloadBytes, len(big))
	}
	if evs[1].PayloadElided || string(evs[1].Payload) != `{"FLID":2}` {
		t.Errorf("small payload: %+v", evs[1])
	}
	b, ok, err := db.Operations.EventPayload(ctx, evs[0].EventID, "", nil)
	if err != nil || !ok || string(b) != big {
		t.Errorf("payload route: %d bytes, %v %v", len(b), ok, err)
	}
	if _, ok, err := db.Operations.EventPayload(ctx, evs[1].EventID+10, "", nil); ok || err != nil {
		t.Errorf("unknown event payload: %v %v", ok, err)
	}
}

func replayPreviewMovesNothing(t *testing.T, db *store.DB) {
	ctx := context.Background()
	ids, err := db.Intake.InsertMessages(ctx, []string{"<a/>", "<b/>", "<c/>"}, opNow)
	if err != nil {
		t.Fatal(err)
	}
	db.Processor.Record(ctx, ids[0], store.Outcome{State: pipeline.Dead, Class: pipeline.Orphan, Attempts: 1, LastError: "x"}, opNow)
	db.Processor.Record(ctx, ids[1], store.Outcome{State: pipeline.Dead, Class: pipeline.Malformed, Attempts: 1, LastError: "x"}, opNow)
	res, err := db.Operations.ReplayPreview(ctx, nil, ids)
	if err != nil || res.Moved != 1 || res.Skipped != 2 || len(res.IDs) != 1 || res.IDs[0] != ids[0] {
		t.Fatalf("preview: %+v %v", res, err)
	}
	if m, _ := db.Operations.GetMessage(ctx, ids[0]); m.State != pipeline.Dead {
		t.Errorf("the preview moved message %d: %s", ids[0], m.State)
	}
}
