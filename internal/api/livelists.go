package api

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"

	"msgx/client"
	"msgx/internal/pipeline"
	"msgx/internal/store"
)

// The streams of the lists other than the messages (stream.go says what a stream sends):
// each takes its list's filters, parsed as the list parses them, and the access control of
// its list (routeRole). A filter on what never changes in a row (target, flight, message) is
// the store's; one on a state is applied here, so that a row that comes to match is sent.

// newestID returns the id of the first of rows, a newest-first read (0 when there is none).
func newestID[T any](rows []T, err error, id func(T) int64) (int64, error) {
	if err != nil || len(rows) == 0 {
		return 0, err
	}
	return id(rows[0]), nil
}

// streamEvents is GET /api/v1/events/stream?target=&state=&flid=&msg_id=&after=: the
// outbox, a PENDING event followed until it is SENT or DEAD.
func (s *Server) streamEvents(w http.ResponseWriter, r *http.Request) {
	if !allowParams(w, r, "target", "state", "flid", "msg_id", "after") {
		return
	}
	f, ok := eventFilter(w, r.URL.Query())
	if !ok {
		return
	}
	state := f.State
	f.State = ""
	id := func(e client.Event) int64 { return e.EventID }
	serveFeed(s, w, r, feed[client.Event]{
		what: "events",
		newest: func(ctx context.Context) (int64, error) {
			q := f
			q.Newest, q.Limit = true, 1
			es, err := s.DB.SearchEvents(ctx, q)
			return newestID(s.events(es), err, id)
		},
		read: func(ctx context.Context, after, before int64) ([]client.Event, error) {
			q := f
			q.AfterID, q.BeforeID, q.Limit = after, before, MaxLimit
			es, err := s.DB.SearchEvents(ctx, q)
			return s.events(es), err
		},
		id: id,
		change: func(e client.Event) (string, bool) {
			return fmt.Sprintf("%s/%d", e.State, e.Attempts), e.State == string(pipeline.EventPending)
		},
		match: func(e client.Event) bool { return state == "" || e.State == string(state) },
	})
}

// streamAudit is GET /api/v1/audit/stream (admins only, as the audit log).
func (s *Server) streamAudit(w http.ResponseWriter, r *http.Request) {
	if !allowParams(w, r, "after") {
		return
	}
	id := func(a client.AuditEntry) int64 { return a.ID }
	serveFeed(s, w, r, feed[client.AuditEntry]{
		what: "audit",
		newest: func(ctx context.Context) (int64, error) {
			as, err := s.DB.ListAudit(ctx, store.AuditQuery{Newest: true, Limit: 1})
			return newestID(auditEntries(as), err, id)
		},
		read: func(ctx context.Context, after, before int64) ([]client.AuditEntry, error) {
			as, err := s.DB.ListAudit(ctx, store.AuditQuery{AfterID: after, BeforeID: before, Limit: MaxLimit})
			return auditEntries(as), err
		},
		id: id,
	})
}

// streamRequests is GET /api/v1/requests/stream?state=&after=: the data requests, one
// REGISTERED or SENT followed until it is DONE or EXPIRED.
func (s *Server) streamRequests(w http.ResponseWriter, r *http.Request, svc Requests, db store.Requests) {
	if !allowParams(w, r, "state", "after") {
		return
	}
	state, ok := requestState(w, r.URL.Query())
	if !ok {
		return
	}
	id := func(q client.Request) int64 { return q.ID }
	list := func(ctx context.Context, f store.RequestFilter) ([]client.Request, error) {
		rs, err := db.ListRequests(ctx, f)
		shown := make([]client.Request, len(rs))
		for i, req := range rs {
			shown[i] = svc.Show(req)
		}
		return shown, err
	}
	serveFeed(s, w, r, feed[client.Request]{
		what: "requests",
		newest: func(ctx context.Context) (int64, error) {
			rs, err := list(ctx, store.RequestFilter{Newest: true, Limit: 1})
			return newestID(rs, err, id)
		},
		read: func(ctx context.Context, after, before int64) ([]client.Request, error) {
			return list(ctx, store.RequestFilter{AfterID: after, BeforeID: before, Limit: MaxLimit})
		},
		id: id,
		change: func(q client.Request) (string, bool) {
			return q.State + "/" + strconv.Itoa(q.Resends), q.State == store.ReqRegistered || q.State == store.ReqSent // still open
		},
		match: func(q client.Request) bool { return state == "" || q.State == state },
	})
}

// jobsLive is how many of the newest jobs the jobs stream reads (the listing shows 100).
const jobsLive = 100

// streamJobs is GET /api/v1/jobs/stream: the jobs, each one still to finish (queued,
// retried, running) followed, from the start, with its progress: an update goes out when its
// state, attempts or step changes, and every second while it runs.
func (s *Server) streamJobs(w http.ResponseWriter, r *http.Request) {
	if !allowParams(w, r, "after") {
		return
	}
	// The newest jobs, oldest first, with ids in (after, before) (before 0: no bound).
	read := func(ctx context.Context, after, before int64) ([]client.Job, error) {
		js, err := s.DB.ListJobs(ctx, jobsLive)
		if err != nil {
			return nil, err
		}
		cur := s.jobInHand()
		out := []client.Job{}
		for _, j := range slices.Backward(js) {
			if j.ID > after && (before == 0 || j.ID < before) {
				out = append(out, jobInfo(j, cur))
			}
		}
		return out, nil
	}
	id := func(j client.Job) int64 { return j.ID }
	serveFeed(s, w, r, feed[client.Job]{
		what: "jobs",
		newest: func(ctx context.Context) (int64, error) {
			js, err := s.DB.ListJobs(ctx, 1)
			return newestID(js, err, func(j *store.Job) int64 { return j.ID })
		},
		read:   read,
		id:     id,
		change: jobChange,
		seed: func(ctx context.Context, upTo int64) ([]client.Job, error) {
			return read(ctx, 0, upTo+1)
		},
	})
}

// jobChange is what of a job the jobs stream follows, and whether it is still to finish.
func jobChange(j client.Job) (string, bool) {
	was := fmt.Sprintf("%s/%d", j.State, j.Attempts)
	if j.Progress != nil {
		was += fmt.Sprintf("/%s/%d", j.Progress.Doing, int64(j.Progress.RunningSeconds))
	}
	return was, j.Progress != nil || j.State == store.JobPending || j.State == store.JobFailed
}

// deadLetter is a message that went DEAD, as the dead letters stream sends it: the message
// as the messages listing shows it; the cursor is the recent problem that recorded its death.
type deadLetter struct {
	problem int64
	client.Message
}

// streamDead is GET /api/v1/dead/stream: the messages that go DEAD (dead or parked), read
// from the recent problems the pump records (their ids are the stream's cursor), each sent as
// its message while it is still DEAD.
func (s *Server) streamDead(w http.ResponseWriter, r *http.Request) {
	if !allowParams(w, r, "after") {
		return
	}
	serveFeed(s, w, r, feed[deadLetter]{
		what: "dead letters",
		newest: func(ctx context.Context) (int64, error) {
			ps, err := s.DB.RecentProblems(ctx, 1)
			return newestID(ps, err, func(p store.Problem) int64 { return p.ID })
		},
		read: func(ctx context.Context, after, before int64) ([]deadLetter, error) {
			ps, err := s.DB.ProblemsAfter(ctx, after, MaxLimit)
			if err != nil {
				return nil, err
			}
			out := []deadLetter{}
			for _, p := range ps {
				if (before != 0 && p.ID >= before) || p.Kind != "outcome" || p.State == string(pipeline.Succeeded) {
					continue
				}
				m, err := s.DB.GetMessage(ctx, p.MsgID)
				if err != nil {
					return nil, err
				}
				if m != nil && m.State == pipeline.Dead { // else deleted or replayed since
					out = append(out, deadLetter{problem: p.ID, Message: message(m)})
				}
			}
			return out, nil
		},
		id: func(d deadLetter) int64 { return d.problem },
	})
}
