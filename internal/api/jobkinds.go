package api

import (
	"net/http"

	"msgx/internal/jobs"
)

// JobKinds is the answer of GET /api/v1/jobs/kinds: every job kind an operator may enqueue,
// whether this server's configuration can run it, and why not.
type JobKinds struct {
	Kinds []jobs.KindInfo `json:"kinds"`
}

// jobKinds answers GET /api/v1/jobs/kinds (every role): {"kinds":[{"kind","runnable",
// "reason"}…]}, so that the console and `msgx job run` offer only what can run.
func (s *Server) jobKinds(w http.ResponseWriter, r *http.Request) {
	if !allowParams(w, r) {
		return
	}
	writeJSON(w, http.StatusOK, JobKinds{Kinds: s.kinds()})
}

// kinds is every job kind with whether it can run here (Server.JobKinds; without it every
// kind is taken to run).
func (s *Server) kinds() []jobs.KindInfo {
	if s.JobKinds != nil {
		return s.JobKinds()
	}
	out := make([]jobs.KindInfo, 0, len(jobs.Kinds))
	for _, k := range jobs.Kinds {
		out = append(out, jobs.KindInfo{Kind: k, Runnable: true})
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
