package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"msgx/internal/api"
	"msgx/internal/pipeline"
	"msgx/internal/store"
	"msgx/internal/store/storetest"
)

// sseEvent is one event of a text/event-stream.
type sseEvent struct {
	id, name, data string
}

// readEvents sends the events (and, as name ":", the comment lines) read from body until it ends.
func readEvents(body *bufio.Reader, out chan<- sseEvent) {
	defer close(out)
	var ev sseEvent
	for {
		line, err := body.ReadString('\n')
		if err != nil {
			return
		}
		line = strings.TrimRight(line, "\n")
		switch {
		case line == "":
			if ev.name != "" || ev.data != "" {
				out <- ev
			}
			ev = sseEvent{}
		case strings.HasPrefix(line, ":"):
			out <- sseEvent{name: ":", data: line}
		case strings.HasPrefix(line, "id: "):
			ev.id = line[4:]
		case strings.HasPrefix(line, "event: "):
			ev.name = line[7:]
		case strings.HasPrefix(line, "data: "):
			ev.data = line[6:]
		}
	}
}

// await returns the first event of events that match takes, failing after 2 s.
func await(t *testing.T, what string, events <-chan sseEvent, match func(sseEvent) bool) sseEvent {
	t.Helper()
	deadline := time.After(2 * time.Second)
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatalf("%s: the stream ended", what)
			}
			if match(ev) {
				return ev
			}
		case <-deadline:
			t.Fatalf("%s: not within 2 s", what)
		}
	}
}

// The messages stream sends a message taken while it is open within 2 s, then its state
// change, keeps the connection with heartbeats, resumes after Last-Event-ID, and ends at
// the server's shutdown without holding it.
func TestMessageStreamFollowsArrivals(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := newFixture(t, db, nil, api.InboxRule{})
		f.srv.StreamHeartbeat = 200 * time.Millisecond
		ts := httptest.NewUnstartedServer(f.h)
		ts.Config.RegisterOnShutdown(f.srv.StopStreams)
		ts.Start()
		t.Cleanup(ts.Close)
		open := func(lastID string) <-chan sseEvent {
			t.Helper()
			req, _ := http.NewRequest("GET", ts.URL+"/api/v1/messages/stream", nil)
			if lastID != "" {
				req.Header.Set("Last-Event-ID", lastID)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { resp.Body.Close() })
			if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
				t.Fatalf("stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
			}
			events := make(chan sseEvent, 100)
			go readEvents(bufio.NewReader(resp.Body), events)
			return events
		}
		live := open("")
		await(t, "the opening comment", live, func(e sseEvent) bool { return e.name == ":" && strings.Contains(e.data, "after 3") })
		ctx := context.Background()
		ids, err := db.Intake.InsertMessages(ctx, []string{"<new/>"}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		ev := await(t, "the new message", live, func(e sseEvent) bool { return e.name == "message" })
		var m struct {
			ID    int64  `json:"id"`
			State string `json:"state"`
		}
		if err := json.Unmarshal([]byte(ev.data), &m); err != nil || m.ID != ids[0] || m.State != "PENDING" || ev.id != "4" {
			t.Fatalf("arrival: %+v (%v), want message %d PENDING with id 4", ev, err, ids[0])
		}
		if err := db.Processor.Record(ctx, ids[0], store.Outcome{State: pipeline.Dead, Class: pipeline.Orphan, Attempts: 1, LastError: "no flight"}, time.Now()); err != nil {
			t.Fatal(err)
		}
		ev = await(t, "the state change", live, func(e sseEvent) bool { return e.name == "update" })
		if json.Unmarshal([]byte(ev.data), &m); m.ID != ids[0] || m.State != "DEAD" || ev.id != "" {
			t.Errorf("update: %+v, want message %d DEAD without an id", ev, ids[0])
		}
		await(t, "a heartbeat", live, func(e sseEvent) bool { return e.data == ": heartbeat" })

		resumed := open("2")
		ev = await(t, "the message after Last-Event-ID 2", resumed, func(e sseEvent) bool { return e.name == "message" })
		if ev.id != "3" {
			t.Errorf("resumed after 2: first %+v, want message 3", ev)
		}

		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		start := time.Now()
		if err := ts.Config.Shutdown(sctx); err != nil || time.Since(start) > 2*time.Second {
			t.Errorf("shutdown with 2 open streams: %v after %v, want done at once", err, time.Since(start))
		}
		deadline := time.After(2 * time.Second)
		for ended := false; !ended; {
			select {
			case _, ok := <-live:
				ended = !ok
			case <-deadline:
				t.Fatal("the stream did not end at shutdown within 2 s")
			}
		}
	})
}

// The stream asks what the messages listing asks: a token (any role) when tokens are set.
func TestMessageStreamNeedsAViewer(t *testing.T) {
	t.Parallel()
	f := newFixture(t, storetest.SQLite(t), testTokens, api.InboxRule{})
	ts := httptest.NewServer(f.h)
	t.Cleanup(ts.Close)
	for secret, want := range map[string]int{"": 401, "wrong": 401, viewerSecret: 200} {
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL+"/api/v1/messages/stream", nil)
		if secret != "" {
			req.Header.Set("Authorization", "Bearer "+secret)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != want || (want == 200) != (resp.Header.Get("Content-Type") == "text/event-stream") {
			t.Errorf("token %q: %d %s, want %d", secret, resp.StatusCode, resp.Header.Get("Content-Type"), want)
		}
		cancel()
		resp.Body.Close()
	}
}
