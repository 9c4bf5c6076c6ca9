package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"msgx/client"
	"msgx/internal/api"
	"msgx/internal/jobs"
	"msgx/internal/pipeline"
	"msgx/internal/requests"
	"msgx/internal/store"
	"msgx/internal/store/storetest"
)

// liveServer is the fixture's API (with the data-request routes) on a test server whose
// streams read the store every 50 ms.
func liveServer(t *testing.T, db *store.DB, tokens []api.Token) (*fixture, *httptest.Server, *requests.Service) {
	t.Helper()
	f := newFixture(t, db, tokens, api.InboxRule{})
	svc := requests.New(db.RequestTracker, requests.Options{Clock: pipeline.SystemClock{}, Location: time.UTC, Timeout: time.Minute, MaxResends: 1})
	f.srv.Extra = append(f.srv.Extra, f.srv.RequestRoutes(svc, db.RequestTracker))
	f.srv.StreamPoll = 50 * time.Millisecond
	ts := httptest.NewUnstartedServer(f.srv.Handler())
	ts.Config.RegisterOnShutdown(f.srv.StopStreams)
	ts.Start()
	t.Cleanup(ts.Close)
	return f, ts, svc
}

// openStream opens path on ts with the token secret ("" for none) and returns its events once
// its opening comment came; a refused stream fails the test.
func openStream(t *testing.T, ts *httptest.Server, path, secret string) <-chan sseEvent {
	t.Helper()
	resp := streamRequest(t, ts, path, secret)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("%s: %d %s, want a stream", path, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	events := make(chan sseEvent, 100)
	go readEvents(bufio.NewReader(resp.Body), events)
	await(t, path+": the opening comment", events, func(e sseEvent) bool { return e.name == ":" && strings.Contains(e.data, " after ") })
	return events
}

func streamRequest(t *testing.T, ts *httptest.Server, path, secret string) *http.Response {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL+path, nil)
	if secret != "" {
		req.Header.Set("Authorization", "Bearer "+secret)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); resp.Body.Close() })
	return resp
}

// row decodes an event's data.
func row[T any](t *testing.T, ev sseEvent) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(ev.data), &v); err != nil {
		t.Fatalf("event %+v: %v", ev, err)
	}
	return v
}

type eventRow struct {
	EventID int64  `json:"event_id"`
	Target  string `json:"target"`
	State   string `json:"state"`
}

// The events stream sends each new event of its target, and one that the state filter leaves
// out until it comes to match (a PENDING event that goes DEAD) as an update.
func TestEventStreamFollowsTheOutbox(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		_, ts, _ := liveServer(t, db, nil)
		all := openStream(t, ts, "/api/v1/events/stream?target=KAFKA_FLOP", "")
		dead := openStream(t, ts, "/api/v1/events/stream?target=KAFKA_FLOP&state=DEAD", "")
		ctx := context.Background()
		ids, err := db.Intake.InsertMessages(ctx, []string{"<more/>"}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		ev := func(target string) pipeline.Event {
			return pipeline.Event{Target: target, Kind: "flop", Key: "7002", Payload: json.RawMessage(`{"FLID":7002}`)}
		}
		if _, _, err := db.Processor.Succeed(ctx, ids[0], store.Success{TypeTag: "FLOP-STND", Identity: "X|FLOP|STND|2", Decision: pipeline.Decision{Events: []pipeline.Event{
			ev("OTHER"), ev("KAFKA_FLOP"),
		}}}, nil, time.Now()); err != nil {
			t.Fatal(err)
		}
		got := row[eventRow](t, await(t, "the new event", all, func(e sseEvent) bool { return e.name == "message" }))
		if got.Target != "KAFKA_FLOP" || got.State != "PENDING" {
			t.Fatalf("first event of the KAFKA_FLOP stream: %+v, want the new PENDING KAFKA_FLOP event", got)
		}
		pending, err := db.Outbox.PendingEvents(ctx, "KAFKA_FLOP", 10)
		if err != nil || len(pending) == 0 {
			t.Fatalf("pending: %v %v", pending, err)
		}
		last := pending[len(pending)-1]
		if err := db.Outbox.EventTx(ctx, func(tx store.EventTx) error {
			_, err := tx.Change([]*store.Event{&last}, store.EventChange{State: pipeline.EventDead, Class: pipeline.Rejected, LastError: "no"})
			return err
		}); err != nil {
			t.Fatal(err)
		}
		// Sent as an update when the stream read it PENDING (not sent then), else as an arrival.
		first := await(t, "the event gone DEAD", dead, func(e sseEvent) bool { return e.name != ":" })
		if got := row[eventRow](t, first); got.EventID != last.EventID || got.State != "DEAD" {
			t.Errorf("first of the DEAD stream: %s %+v, want event %d DEAD", first.name, got, last.EventID)
		}
		if up := row[eventRow](t, await(t, "the update", all, func(e sseEvent) bool { return e.name == "update" })); up.EventID != last.EventID || up.State != "DEAD" {
			t.Errorf("update on the unfiltered stream: %+v, want event %d DEAD", up, last.EventID)
		}
	})
}

// The dead letters stream sends each message that goes DEAD (dead or parked, recorded as a
// recent problem) as its message, and nothing for another outcome, an operator's action or a
// message no longer DEAD.
func TestDeadStreamSendsMessagesGoneDead(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		_, ts, _ := liveServer(t, db, nil)
		live := openStream(t, ts, "/api/v1/dead/stream", "")
		ctx := context.Background()
		now := time.Now()
		for _, p := range []store.Problem{
			{At: now, Kind: "action", Actor: "ops", Subject: "pump", Note: "paused"},
			{At: now, Kind: "outcome", MsgID: 2, State: "SUCCEEDED", Note: "warning"},
			{At: now, Kind: "outcome", MsgID: 3, State: "DEAD", Class: "INFRA"}, // replayed since: PENDING
			{At: now, Kind: "outcome", MsgID: 1, State: "PARKED", Class: "ORPHAN"},
		} {
			if err := db.Triage.AddProblem(ctx, p); err != nil {
				t.Fatal(err)
			}
		}
		ev := await(t, "the dead letter", live, func(e sseEvent) bool { return e.name != ":" })
		m := row[struct {
			ID    int64  `json:"id"`
			State string `json:"state"`
		}](t, ev)
		if ev.name != "message" || m.ID != 1 || m.State != "DEAD" || ev.id == "" {
			t.Errorf("first event: %+v, want message 1 DEAD with the problem's id", ev)
		}
	})
}

// The audit stream sends each action as it is audited.
func TestAuditStreamSendsActions(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		_, ts, _ := liveServer(t, db, testTokens)
		live := openStream(t, ts, "/api/v1/audit/stream", adminSecret)
		req, _ := http.NewRequest("POST", ts.URL+"/api/v1/pump/pause", strings.NewReader(`{"reason":"live"}`))
		req.Header.Set("Authorization", "Bearer "+operatorSecret)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("pause: %d", resp.StatusCode)
		}
		a := row[struct {
			Actor  string `json:"actor"`
			Action string `json:"action"`
		}](t, await(t, "the audited pause", live, func(e sseEvent) bool { return e.name == "message" }))
		if a.Actor != "ops" || !strings.Contains(a.Action, "pause") {
			t.Errorf("audit entry: %+v, want ops's pause", a)
		}
	})
}

// The requests stream sends each new request, and, filtered on SENT, a request once the
// gateway sent it.
func TestRequestStreamFollowsRequests(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		_, ts, svc := liveServer(t, db, nil)
		all := openStream(t, ts, "/api/v1/requests/stream", "")
		sent := openStream(t, ts, "/api/v1/requests/stream?state=sent", "")
		ctx := context.Background()
		req, err := svc.Create(ctx, requests.Spec{Type: "RQRD", RefType: "AIRL"})
		if err != nil {
			t.Fatal(err)
		}
		type reqRow struct {
			ID    int64  `json:"id"`
			State string `json:"state"`
		}
		if got := row[reqRow](t, await(t, "the new request", all, func(e sseEvent) bool { return e.name == "message" })); got.ID != req.ID || got.State != "REGISTERED" {
			t.Fatalf("arrival: %+v, want request %d REGISTERED", got, req.ID)
		}
		storetest.Exec(t, db, fmt.Sprintf(`UPDATE COUTMSGS SET COUTMSGS_DATE_SENT = '%s' WHERE COUTMSGS_ID = %d`, db.Intake.LegacyNow(time.Now()), req.CoutmsgsID))
		if _, err := db.RequestTracker.MarkSent(ctx, time.Minute, time.Now()); err != nil {
			t.Fatal(err)
		}
		// Sent as an update when the stream read it REGISTERED (not sent then), else as an arrival.
		ev := await(t, "the sent request", sent, func(e sseEvent) bool { return e.name != ":" })
		if got := row[reqRow](t, ev); got.ID != req.ID || got.State != "SENT" {
			t.Errorf("first of the SENT stream: %s %+v, want request %d SENT", ev.name, got, req.ID)
		}
		if up := row[reqRow](t, await(t, "the update", all, func(e sseEvent) bool { return e.name == "update" })); up.ID != req.ID || up.State != "SENT" {
			t.Errorf("update on the unfiltered stream: %+v, want request %d SENT", up, req.ID)
		}
	})
}

// The jobs stream sends a new job, follows a job queued before it opened, and sends its
// progress while it runs and its end.
func TestJobStreamFollowsProgress(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f, ts, _ := liveServer(t, db, nil)
		var cur atomic.Pointer[jobs.Progress]
		f.srv.Jobs = jobInHand{&cur}
		ctx := context.Background()
		old, err := db.JobQueue.EnqueueJob(ctx, "ARCHIVE", "", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		live := openStream(t, ts, "/api/v1/jobs/stream", "")
		type jobRow struct {
			ID       int64          `json:"id"`
			State    string         `json:"state"`
			Progress *jobs.Progress `json:"progress"`
		}
		cur.Store(&jobs.Progress{JobID: old.ID, Kind: "ARCHIVE", Doing: "moving 10 messages"})
		got := row[jobRow](t, await(t, "the progress", live, func(e sseEvent) bool { return e.name == "update" }))
		if got.ID != old.ID || got.Progress == nil || got.Progress.Doing != "moving 10 messages" {
			t.Fatalf("update: %+v, want job %d moving 10 messages", got, old.ID)
		}
		cur.Store(nil)
		if err := db.JobQueue.FinishJob(ctx, old.ID, store.JobOutcome{State: store.JobDone, Result: "moved 10"}, time.Now()); err != nil {
			t.Fatal(err)
		}
		// The progress gone may be told first (an update of the job, still PENDING, without
		// it) when the stream polls between the two; the end is the update that says DONE.
		got = row[jobRow](t, await(t, "the end", live, func(e sseEvent) bool {
			return e.name == "update" && row[jobRow](t, e).State != "PENDING"
		}))
		if got.ID != old.ID || got.State != "DONE" {
			t.Errorf("update: %+v, want job %d DONE", got, old.ID)
		}
		j, err := db.JobQueue.EnqueueJob(ctx, "RETENTION", "", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		ev := await(t, "the new job", live, func(e sseEvent) bool { return e.name == "message" })
		if got = row[jobRow](t, ev); got.ID != j.ID || ev.id != fmt.Sprint(j.ID) {
			t.Errorf("arrival: %+v, want job %d", ev, j.ID)
		}
	})
}

// Each stream asks what its list asks: a token when tokens are set, an admin's for the
// audit log; a bad filter is refused as the list refuses it.
func TestListStreamsNeedTheirListsRole(t *testing.T) {
	t.Parallel()
	_, ts, _ := liveServer(t, storetest.SQLite(t), testTokens)
	for _, c := range []struct {
		path   string
		secret string
		want   int
	}{
		{"/api/v1/events/stream", "", 401},
		{"/api/v1/events/stream", viewerSecret, 200},
		{"/api/v1/events/stream?state=LOST", viewerSecret, 400},
		{"/api/v1/dead/stream", "", 401},
		{"/api/v1/dead/stream", viewerSecret, 200},
		{"/api/v1/requests/stream", "", 401},
		{"/api/v1/requests/stream?state=LOST", viewerSecret, 400},
		{"/api/v1/requests/stream", viewerSecret, 200},
		{"/api/v1/jobs/stream", "", 401},
		{"/api/v1/jobs/stream", viewerSecret, 200},
		{"/api/v1/audit/stream", viewerSecret, 403},
		{"/api/v1/audit/stream", operatorSecret, 403},
		{"/api/v1/audit/stream", adminSecret, 200},
	} {
		resp := streamRequest(t, ts, c.path, c.secret)
		if resp.StatusCode != c.want || (c.want == 200) != (resp.Header.Get("Content-Type") == "text/event-stream") {
			t.Errorf("%s with %q: %d %s, want %d", c.path, c.secret, resp.StatusCode, resp.Header.Get("Content-Type"), c.want)
		}
	}
}

// jobInHand is a job runner whose job in hand the test sets; it lists no kinds.
type jobInHand struct {
	cur *atomic.Pointer[jobs.Progress]
}

func (j jobInHand) Current() *client.JobProgress { return j.cur.Load() }
func (j jobInHand) Kinds() []client.JobKind      { return nil }
