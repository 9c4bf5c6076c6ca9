package api

import (
	"net/http"

	"msgx/client"
	"msgx/internal/jobs/jobkind"
)

// jobKinds answers GET /api/v1/jobs/kinds (every role): {"kinds":[{"kind","runnable",
// "reason"}…]}, so that the console and `msgx job run` offer only what can run.
func (s *Server) jobKinds(w http.ResponseWriter, r *http.Request) {
	if !allowParams(w, r) {
		return
	}
	writeJSON(w, http.StatusOK, client.JobKinds{Kinds: s.kinds()})
}

// kinds is every job kind with whether it can run here (Deps.Jobs; without it every kind is
// taken to run).
func (s *Server) kinds() []client.JobKind {
	if s.Jobs != nil {
		return s.Jobs.Kinds()
	}
	out := make([]client.JobKind, 0, len(jobkind.Kinds))
	for _, k := range jobkind.Kinds {
		out = append(out, client.JobKind{Kind: k, Runnable: true})
	}
	return out
}

// cannotRun answers 409 job_cannot_run with the reason when a job of kind cannot run in this
// configuration (it would fail UNSUPPORTED at once and go DEAD), and reports whether it did.
func (s *Server) cannotRun(w http.ResponseWriter, kind string) bool {
	for _, k := range s.kinds() {
		if k.Kind == kind && !k.Runnable {
			writeError(w, http.StatusConflict, "job_cannot_run", kind+" cannot run here: "+k.Reason)
			return true
		}
	}
	return false
}
