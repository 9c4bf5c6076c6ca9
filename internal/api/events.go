package api

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"msgx/client"
	"msgx/internal/pipeline"
	"msgx/internal/store"
)

// ReplayOrderNote is what every event replay answers (and docs/api.md says): a replayed event
// goes back into its target's queue by its EVENT_ID, behind nothing that is already sent, so
// the receiver gets it after newer events of the target that were delivered meanwhile.
const ReplayOrderNote = "replayed events are delivered again in EVENT_ID order among the target's PENDING events; newer events of the target already delivered were delivered before them, so a receiver sees these after newer ones (deduplicate and order by event_id)"

// eventRoutes adds the outbox routes:
//
//	GET  /api/v1/events?target=&state=&flid=&msg_id=&limit=&after=&before=&order= (large payloads elided)
//	GET  /api/v1/events/stream?target=&state=&flid=&msg_id=&after=   (live: stream.go)
//	GET  /api/v1/events/{id}/payload                                 (the payload as delivered)
//	POST /api/v1/events/replay {"target":"…","ids":[…],"dry_run":bool}
func (s *Server) eventRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/v1/events", s.listEvents)
	mux.HandleFunc("GET /api/v1/events/stream", s.streamEvents)
	mux.HandleFunc("GET /api/v1/events/{id}/payload", s.eventPayload)
	mux.HandleFunc("POST /api/v1/events/replay", s.replayEvents)
}

// listEvents is GET /api/v1/events.
func (s *Server) listEvents(w http.ResponseWriter, r *http.Request) {
	if !allowParams(w, r, "target", "state", "flid", "msg_id", "limit", "after", "before", "order") {
		return
	}
	q := r.URL.Query()
	f, ok := eventFilter(w, q)
	if !ok {
		return
	}
	c, ok := page(w, q)
	if !ok {
		return
	}
	f.Limit, f.AfterID, f.BeforeID, f.Newest = c.limit, c.after, c.before, c.newest
	evs, err := s.DB.SearchEvents(r.Context(), f)
	if err != nil {
		writeStoreError(w, err)
		return
	}
	writeList(w, "events", s.events(evs), c, func(e client.Event) int64 { return e.EventID })
}

// eventFilter reads the filters of the events listing and stream (target, state, flid,
// msg_id), answering 400 to a bad one.
func eventFilter(w http.ResponseWriter, q url.Values) (store.EventQuery, bool) {
	f := store.EventQuery{Target: q.Get("target"), State: pipeline.EventStatus(strings.ToUpper(q.Get("state")))}
	switch f.State {
	case "", pipeline.EventPending, pipeline.EventSent, pipeline.EventDead:
	default:
		writeError(w, http.StatusBadRequest, "bad_state", fmt.Sprintf("state %q is not PENDING, SENT or DEAD", q.Get("state")))
		return f, false
	}
	for name, dst := range map[string]*int64{"flid": &f.FLID, "msg_id": &f.MsgID} {
		if v := q.Get(name); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n <= 0 {
				writeError(w, http.StatusBadRequest, "bad_"+name, fmt.Sprintf("%s %q is not a positive integer", name, v))
				return f, false
			}
			*dst = n
		}
	}
	return f, true
}

// eventPayload is GET /api/v1/events/{id}/payload[?target=T]: the payload as target T is
// delivered (a stored canonical event rendered for T's family); without a target, the event
// as stored (a shared event's canonical encoding).
func (s *Server) eventPayload(w http.ResponseWriter, r *http.Request) {
	target := r.URL.Query().Get("target")
	if target != "" && !s.knownTarget(w, target) {
		return
	}
	writeStored(w, r, "event", "application/json", []string{"target"}, func(ctx context.Context, id int64) ([]byte, bool, error) {
		return s.DB.EventPayload(ctx, id, target, s.Families)
	})
}

// replayEvents is POST /api/v1/events/replay.
func (s *Server) replayEvents(w http.ResponseWriter, r *http.Request) {
	var req client.EventReplayRequest
	if !readJSON(w, r, &req) {
		return
	}
	if req.Target != "" && !s.knownTarget(w, req.Target) {
		return
	}
	if len(req.IDs) > MaxIDs {
		writeError(w, http.StatusBadRequest, "too_many_ids", fmt.Sprintf("%d ids; one replay takes at most %d", len(req.IDs), MaxIDs))
		return
	}
	if req.DryRun {
		n, ids, items, err := s.deadEvents(r.Context(), req.Target, req.IDs)
		if err != nil {
			writeStoreError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"moved": n, "skipped": max(0, len(req.IDs)-n), "ids": ids, "items": items,
			"dry_run": true, "note": ReplayOrderNote})
		return
	}
	moved, skipped, err := s.DB.ReplayEvents(r.Context(), req.Target, req.IDs)
	if err != nil {
		writeStoreError(w, err)
		return
	}
	s.audit(r, "events.replay", or(req.Target, "all targets"), fmt.Sprintf("ids %v: moved %d, skipped %d", req.IDs, moved, skipped))
	if moved > 0 {
		s.kickDispatcher()
	}
	writeJSON(w, http.StatusOK, map[string]any{"moved": moved, "skipped": skipped, "dry_run": false, "note": ReplayOrderNote})
}

// deadEvents counts the DEAD events an event replay of target and ids would move (not
// MALFORMED ones), with the ids of up to MaxLimit of them and a description of up to
// MaxPreviewItems.
func (s *Server) deadEvents(ctx context.Context, target string, ids []int64) (int, []int64, []client.ReplayItem, error) {
	want := map[int64]bool{}
	for _, id := range ids {
		want[id] = true
	}
	now := s.Clock.Now()
	n, out, items := 0, []int64{}, []client.ReplayItem{}
	var after int64
	for {
		evs, err := s.DB.SearchEvents(ctx, store.EventQuery{Target: target, State: pipeline.EventDead, AfterID: after, Limit: MaxLimit, InlineMax: 1})
		if err != nil {
			return 0, nil, nil, err
		}
		for _, e := range evs {
			after = e.EventID
			if e.ErrorClass != nil && *e.ErrorClass == string(pipeline.Malformed) || len(want) > 0 && !want[e.EventID] {
				continue
			}
			n++
			if len(out) < MaxLimit {
				out = append(out, e.EventID)
			}
			if len(items) < MaxPreviewItems {
				items = append(items, eventPreview(&e.Event, now))
			}
		}
		if len(evs) < MaxLimit {
			return n, out, items, nil
		}
	}
}
