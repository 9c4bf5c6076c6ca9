package api

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"msgx/client"
	"msgx/internal/store"
)

// Dead letters as a work queue: an operator acknowledges DEAD messages and events (kept for
// audit, left out of the counts that call for attention), and the recent problems (the pump's
// parked and dead messages, the operators' actions) survive restarts.

func (s *Server) deadRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /api/v1/dead/ack", s.ackDead)
	mux.HandleFunc("GET /api/v1/dead", s.deadSummary)
	mux.HandleFunc("GET /api/v1/dead/stream", s.streamDead)
	mux.HandleFunc("GET /api/v1/problems", s.problems)
}

// MaxAckIDs bounds one acknowledgement.
const MaxAckIDs = 1000

func (s *Server) ackDead(w http.ResponseWriter, r *http.Request) {
	var req client.AckRequest
	if !readJSON(w, r, &req) {
		return
	}
	if req.Kind != store.DeadMessage && req.Kind != store.DeadEvent {
		writeError(w, http.StatusBadRequest, "bad_kind", fmt.Sprintf("kind %q: want %q or %q", req.Kind, store.DeadMessage, store.DeadEvent))
		return
	}
	if len(req.IDs) == 0 || len(req.IDs) > MaxAckIDs {
		writeError(w, http.StatusBadRequest, "bad_ids", fmt.Sprintf("ids: give 1 to %d ids, got %d", MaxAckIDs, len(req.IDs)))
		return
	}
	p := PrincipalOf(r)
	res, err := s.DB.AckDead(r.Context(), req.Kind, req.IDs, p.Name, req.Note, s.Clock.Now())
	if err != nil {
		writeStoreError(w, err)
		return
	}
	if len(res.Acked) > 0 {
		s.audit(r, "dead.ack", fmt.Sprintf("%d %s(s)", len(res.Acked), req.Kind), fmt.Sprintf("ids %v: %s", res.Acked, req.Note))
	}
	writeJSON(w, http.StatusOK, client.AckResult(res))
}

func (s *Server) deadSummary(w http.ResponseWriter, r *http.Request) {
	if !allowParams(w, r, "kind", "limit") {
		return
	}
	q := r.URL.Query()
	kind := strings.TrimSpace(q.Get("kind"))
	if kind != "" && kind != store.DeadMessage && kind != store.DeadEvent {
		writeError(w, http.StatusBadRequest, "bad_kind", fmt.Sprintf("kind %q: want %q or %q", kind, store.DeadMessage, store.DeadEvent))
		return
	}
	limit, ok := limitParam(w, q.Get("limit"))
	if !ok {
		return
	}
	counts, err := s.DB.DeadCounts(r.Context())
	if err != nil {
		writeStoreError(w, err)
		return
	}
	list, err := s.DB.ListAcks(r.Context(), kind, limit)
	if err != nil {
		writeStoreError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, client.DeadSummary{DeadCounts: DeadCounts(counts), Acks: acks(list)})
}

func (s *Server) problems(w http.ResponseWriter, r *http.Request) {
	if !allowParams(w, r, "limit") {
		return
	}
	limit, ok := limitParam(w, r.URL.Query().Get("limit"))
	if !ok {
		return
	}
	ps, err := s.DB.RecentProblems(r.Context(), limit)
	if err != nil {
		writeStoreError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"problems": Problems(ps)})
}

// limitParam reads a listing's limit: empty for the default (100), else 1 to
// store.MaxPageLimit; a larger one is refused, never cut silently.
func limitParam(w http.ResponseWriter, v string) (int, bool) {
	if v == "" {
		return 100, true
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > store.MaxPageLimit {
		writeError(w, http.StatusBadRequest, "bad_limit", fmt.Sprintf("limit %q: want 1 to %d", v, store.MaxPageLimit))
		return 0, false
	}
	return n, true
}
