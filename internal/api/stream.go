package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"msgx/internal/pipeline"
	"msgx/internal/store"
)

// The live messages list: GET /api/v1/messages/stream is a text/event-stream of every message
// taken after the cursor (after=, or the Last-Event-ID a reconnecting EventSource sends, or
// else the newest message when the stream opens), each as a "message" event with the row
// GET /api/v1/messages lists and the id as the event's id, oldest first; a later state change
// of a message sent while it was unfinished follows as an "update" event. The store is read
// every StreamPoll; a comment line goes out every StreamHeartbeat so that proxies keep the
// connection. The stream ends when the client goes and when the server shuts down.

// Defaults of Server.StreamPoll and Server.StreamHeartbeat.
const (
	DefaultStreamPoll      = 500 * time.Millisecond
	DefaultStreamHeartbeat = 15 * time.Second
	// streamWatch bounds the unfinished messages whose state changes a stream follows.
	streamWatch = 500
)

// StopStreams ends every open stream (the servers' shutdown calls it: Shutdown waits for
// idle connections, and a stream never is one).
func (s *Server) StopStreams() {
	s.streamsOnce.Do(func() { s.streamsDone = make(chan struct{}) })
	s.stopOnce.Do(func() { close(s.streamsDone) })
}

func (s *Server) streamsStopped() <-chan struct{} {
	s.streamsOnce.Do(func() { s.streamsDone = make(chan struct{}) })
	return s.streamsDone
}

// streamStart is the stream's first cursor: after=, Last-Event-ID, or the newest message.
func (s *Server) streamStart(w http.ResponseWriter, r *http.Request) (int64, bool) {
	v := r.URL.Query().Get("after")
	if v == "" {
		v = r.Header.Get("Last-Event-ID")
	}
	if v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			writeError(w, http.StatusBadRequest, "bad_after", fmt.Sprintf("after: %q is not a non-negative integer", v))
			return 0, false
		}
		return n, true
	}
	ms, err := s.DB.SearchMessages(r.Context(), store.MessageQuery{Newest: true, Limit: 1})
	if err != nil {
		writeStoreError(w, err)
		return 0, false
	}
	if len(ms) == 0 {
		return 0, true
	}
	return ms[0].ID, true
}

func (s *Server) streamMessages(w http.ResponseWriter, r *http.Request) {
	if !allowParams(w, r, "after") {
		return
	}
	after, ok := s.streamStart(w, r)
	if !ok {
		return
	}
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	fmt.Fprintf(w, "retry: 2000\n: msgx messages after %d\n\n", after)
	if err := rc.Flush(); err != nil {
		return
	}
	poll, beat := or0(s.StreamPoll, DefaultStreamPoll), or0(s.StreamHeartbeat, DefaultStreamHeartbeat)
	tick, heart := time.NewTicker(poll), time.NewTicker(beat)
	defer tick.Stop()
	defer heart.Stop()
	st := &streamState{after: after, watched: map[int64]pipeline.ProcStatus{}}
	for {
		select {
		case <-r.Context().Done():
			return
		case <-s.streamsStopped():
			return
		case <-heart.C:
			if _, err := fmt.Fprint(w, ": heartbeat\n\n"); err != nil || rc.Flush() != nil {
				return
			}
		case <-tick.C:
			if err := s.streamStep(r.Context(), w, st); err != nil {
				s.Log.Debug("message stream ends", "err", err.Error())
				return
			}
			if rc.Flush() != nil {
				return
			}
		}
	}
}

// streamState is what a stream has sent: the cursor and the unfinished messages it follows.
type streamState struct {
	after   int64
	watched map[int64]pipeline.ProcStatus
}

// streamStep sends the messages taken since the cursor, then the state changes of the
// unfinished messages sent earlier. A store error is no reason to end the stream: the next
// step asks again.
func (s *Server) streamStep(ctx context.Context, w http.ResponseWriter, st *streamState) error {
	ms, err := s.DB.SearchMessages(ctx, store.MessageQuery{AfterID: st.after, Limit: MaxLimit})
	if err != nil {
		return nil
	}
	for _, m := range ms {
		if err := sendEvent(w, "message", m); err != nil {
			return err
		}
		st.after = m.ID
		if !m.State.Terminal() && len(st.watched) < streamWatch {
			st.watched[m.ID] = m.State
		}
	}
	if len(st.watched) == 0 {
		return nil
	}
	low := st.after
	for id := range st.watched {
		low = min(low, id)
	}
	// One range read (ids from the oldest followed to the cursor) rather than one per message.
	ms, err = s.DB.SearchMessages(ctx, store.MessageQuery{AfterID: low - 1, BeforeID: st.after + 1, Limit: MaxLimit})
	if err != nil {
		return nil
	}
	for _, m := range ms {
		was, ok := st.watched[m.ID]
		if !ok || was == m.State {
			continue
		}
		if err := sendEvent(w, "update", m); err != nil {
			return err
		}
		st.watched[m.ID] = m.State
		if m.State.Terminal() {
			delete(st.watched, m.ID)
		}
	}
	if len(ms) == MaxLimit {
		clear(st.watched) // followed messages too far behind: the list's refresh shows them
	}
	return nil
}

func sendEvent(w http.ResponseWriter, name string, m *store.Message) error {
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("message %d: %w", m.ID, err)
	}
	// Only an arrival moves the client's Last-Event-ID: a reconnection resumes after it.
	id := ""
	if name == "message" {
		id = "id: " + strconv.FormatInt(m.ID, 10) + "\n"
	}
	if _, err := fmt.Fprintf(w, "%sevent: %s\ndata: %s\n\n", id, name, b); err != nil {
		return fmt.Errorf("send message %d: %w", m.ID, err)
	}
	return nil
}

func or0(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}
