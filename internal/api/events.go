package api

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"msgx/internal/dispatch"
	"msgx/internal/pipeline"
	"msgx/internal/store"
)

// EventRoutes adds the outbox routes: GET /api/v1/events?target=&state=&limit=&after= and
// POST /api/v1/events/replay {"target":"…","ids":[…]}. wake (the dispatcher's) may be nil.
func EventRoutes(db store.Events, wake func()) func(*http.ServeMux) {
	return func(mux *http.ServeMux) {
		mux.HandleFunc("GET /api/v1/events", func(w http.ResponseWriter, r *http.Request) {
			q := r.URL.Query()
			f := dispatch.Filter{Target: q.Get("target"), State: strings.ToUpper(q.Get("state"))}
			switch pipeline.EventStatus(f.State) {
			case "", pipeline.EventPending, pipeline.EventSent, pipeline.EventDead:
			default:
				writeError(w, http.StatusBadRequest, "bad_state", fmt.Sprintf("state %q is not PENDING, SENT or DEAD", q.Get("state")))
				return
			}
			var ok bool
			if f.Limit, f.AfterID, ok = pageParams(w, q); !ok {
				return
			}
			evs, err := dispatch.List(r.Context(), db, f)
			if err != nil {
				writeStoreError(w, err)
				return
			}
			writeJSON(w, http.StatusOK, map[string]any{"events": evs})
		})
		mux.HandleFunc("POST /api/v1/events/replay", func(w http.ResponseWriter, r *http.Request) {
			var req struct {
				Target string  `json:"target"`
				IDs    []int64 `json:"ids"`
			}
			if !readJSON(w, r, &req) {
				return
			}
			moved, skipped, err := dispatch.Replay(r.Context(), db, req.Target, req.IDs)
			if err != nil {
				writeStoreError(w, err)
				return
			}
			if moved > 0 && wake != nil {
				wake()
			}
			writeJSON(w, http.StatusOK, map[string]int{"moved": moved, "skipped": skipped})
		})
	}
}

// TargetStatus is the status section of the delivery targets.
func TargetStatus(db store.Events, clock pipeline.Clock) func(ctx context.Context) (any, error) {
	return func(ctx context.Context) (any, error) {
		return dispatch.Stats(ctx, db, clock.Now())
	}
}
