package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"msgx/internal/api"
	"msgx/internal/event"
	"msgx/internal/pipeline"
	"msgx/internal/store"
	"msgx/internal/store/storetest"
)

// A canonical event (kind change) is shown by the operator's view as the row the handler
// renders for the same change: the events listing and its stream give its target's kind
// and payload, GET /api/v1/events/{id}/payload the payload's bytes, and the flight's history
// the changes of its KAFKA_FLOP row. One that does not render is shown as stored.
func TestCanonicalEventsShowAsRendered(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := newFixture(t, db, nil, api.InboxRule{})
		f.srv.Families = map[string]string{"KAFKA_FLOP": event.TargetFlop, "KAFKA_SCHD": event.TargetSchd, "REDIS_NOTIFY": event.TargetNotify,
			"ES_FLIGHT": event.TargetES, "WEBHOOK_OPS": event.TargetFlop}
		ctx := context.Background()
		c := event.FlightChange{FLID: 7002, Op: event.Delete, Record: json.RawMessage(`{"FLID":7002,"REMC":"延误 <1h>"}`),
			Changes: []event.Change{{Key: "FLID", Old: json.RawMessage(`7002`), New: json.RawMessage(`null`)},
				{Key: "REMC", Old: json.RawMessage(`"延误 \u003c1h\u003e"`), New: json.RawMessage(`null`)}}}
		enc, err := event.Encode(&c)
		if err != nil {
			t.Fatal(err)
		}
		note, _ := event.Notify(&c)
		esKind, es := event.ES(&c)
		rendered := []struct{ target, kind, payload string }{
			{"KAFKA_FLOP", event.KindFlop, string(event.Flop(&c))}, {"KAFKA_SCHD", event.KindSchd, string(event.Schd(&c))},
			{"REDIS_NOTIFY", event.KindNotify, string(note)}, {"ES_FLIGHT", esKind, string(es)},
			{"WEBHOOK_OPS", event.KindFlop, string(event.Flop(&c))},
		}
		var evs []pipeline.Event
		for _, r := range rendered {
			evs = append(evs, pipeline.Event{Target: r.target, Kind: r.kind, Key: "7002", Payload: json.RawMessage(r.payload)},
				pipeline.Event{Target: r.target, Kind: event.KindChange, Key: "7002", Payload: enc})
		}
		corrupt := strings.Replace(string(enc), `{"v":1`, `{"v":9`, 1)
		evs = append(evs, pipeline.Event{Target: "KAFKA_FLOP", Kind: event.KindChange, Key: "7002", Payload: json.RawMessage(corrupt)})
		ids, err := db.Intake.InsertMessages(ctx, []string{"<c/>"}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := db.Processor.Succeed(ctx, ids[0], store.Success{TypeTag: "FLOP-CHOT", Identity: "X|FLOP|CHOT|9",
			Decision: pipeline.Decision{Events: evs}}, nil, time.Now()); err != nil {
			t.Fatal(err)
		}

		type row struct {
			EventID int64           `json:"event_id"`
			Target  string          `json:"target"`
			Kind    string          `json:"kind"`
			Payload json.RawMessage `json:"payload"`
		}
		w := f.do(t, call{method: "GET", path: "/api/v1/events?flid=7002&limit=100&order=asc", remote: "127.0.0.1:1", host: "127.0.0.1"})
		var list struct{ Events []row }
		if err := json.Unmarshal(w.Body.Bytes(), &list); err != nil || w.Code != 200 || len(list.Events) != len(evs) {
			t.Fatalf("events listing: %d %s (%v)", w.Code, w.Body, err)
		}
		payload := func(id int64) string {
			w := f.do(t, call{method: "GET", path: fmt.Sprintf("/api/v1/events/%d/payload", id), remote: "127.0.0.1:1", host: "127.0.0.1"})
			if w.Code != 200 {
				t.Fatalf("payload of %d: %d %s", id, w.Code, w.Body)
			}
			return w.Body.String()
		}
		byTarget := map[string][]row{} // each target's events in EVENT_ID order
		for _, r := range list.Events {
			byTarget[r.Target] = append(byTarget[r.Target], r)
		}
		for _, r := range rendered {
			rows := byTarget[r.target]
			if len(rows) < 2 || rows[0].Kind != r.kind {
				t.Fatalf("%s: the rendered event listed as %+v", r.target, rows)
			}
			// The listing's JSON escapes HTML characters in a payload, the rendered one's too.
			got, want := rows[1], rows[0]
			if got.Kind != want.Kind || string(got.Payload) != string(want.Payload) {
				t.Errorf("%s: the canonical event listed as %s %s, want %s %s", r.target, got.Kind, got.Payload, want.Kind, want.Payload)
			}
			if p := payload(got.EventID); p != r.payload {
				t.Errorf("%s: the canonical event's payload %s, want %s", r.target, p, r.payload)
			}
		}
		bad := byTarget["KAFKA_FLOP"][2]
		if bad.Kind != event.KindChange || !strings.HasPrefix(string(bad.Payload), `{"v":9,`) || payload(bad.EventID) != corrupt {
			t.Errorf("corrupt canonical event shown as %s %s, want it as stored", bad.Kind, bad.Payload)
		}

		w = f.do(t, call{method: "GET", path: "/api/v1/flights/7002/history", remote: "127.0.0.1:1", host: "127.0.0.1"})
		var hist struct {
			Changes []struct {
				Op      string          `json:"op"`
				Changes json.RawMessage `json:"changes"`
			}
		}
		if err := json.Unmarshal(w.Body.Bytes(), &hist); err != nil || len(hist.Changes) != 3 {
			t.Fatalf("history: %d %s (%v)", w.Code, w.Body, err)
		}
		if h0, h1 := hist.Changes[0], hist.Changes[1]; h1.Op != h0.Op || string(h1.Changes) != string(h0.Changes) || h0.Op != "delete" {
			t.Errorf("history of the canonical event: %s %s, want the rendered one's %s %s", h1.Op, h1.Changes, h0.Op, h0.Changes)
		}

		ts := httptest.NewServer(f.h)
		t.Cleanup(ts.Close)
		resp, err := http.Get(ts.URL + fmt.Sprintf("/api/v1/events/stream?target=ES_FLIGHT&after=%d", list.Events[0].EventID-1))
		if err == nil && resp.StatusCode != 200 {
			t.Fatalf("stream: %s", resp.Status)
		}
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		stream := make(chan sseEvent, 100)
		go readEvents(bufio.NewReader(resp.Body), stream)
		for want := 0; want < 2; want++ {
			ev := await(t, "an ES_FLIGHT event", stream, func(e sseEvent) bool { return e.name == "message" })
			var r row
			if err := json.Unmarshal([]byte(ev.data), &r); err != nil || r.Kind != esKind || string(r.Payload) != string(byTarget["ES_FLIGHT"][0].Payload) {
				t.Errorf("streamed %s (%v), want %s %s", ev.data, err, esKind, es)
			}
		}
	})
}
