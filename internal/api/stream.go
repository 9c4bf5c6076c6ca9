package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"msgx/client"
	"msgx/internal/pipeline"
	"msgx/internal/store"
)

// The live lists: GET /api/v1/<list>/stream is a text/event-stream of every row the list
// gains after the cursor (after=, or the Last-Event-ID a reconnecting EventSource sends, or
// else the list's newest row when the stream opens), each as a "message" event with the row
// the list shows and the row's id as the event's id, oldest first; a later change of a row
// sent while it could still change (an unfinished message, event, request or job) follows as
// an "update" event. One mechanism (feed, serveFeed) serves every list; each list's file says
// how it reads its rows (livelists.go). The store is read every StreamPoll; a comment line
// goes out every StreamHeartbeat so that proxies keep the connection. The stream ends when
// the client goes and when the server shuts down.

// Defaults of Server.StreamPoll and Server.StreamHeartbeat.
const (
	DefaultStreamPoll      = 500 * time.Millisecond
	DefaultStreamHeartbeat = 15 * time.Second
	// streamWatch bounds the unfinished rows whose changes a stream follows.
	streamWatch = 500
)

// feed is one list as its stream reads it.
type feed[T any] struct {
	what string // the list's name, in the stream's opening comment
	// newest returns the id of the list's newest row (0: none), where a stream starts when
	// the client names no cursor.
	newest func(ctx context.Context) (int64, error)
	// read returns the rows with ids in (after, before) (before 0: no bound), oldest first,
	// at most MaxLimit, with the list's filters on what never changes in a row.
	read func(ctx context.Context, after, before int64) ([]T, error)
	id   func(T) int64
	// change, when set, returns what of a row may change (an "update" goes out when it does)
	// and whether it still may: the stream follows such rows.
	change func(T) (string, bool)
	// match, when set, is the list's filter on what changes (a state): a row that does not
	// match is not sent but followed while it may change, and sent as an update once it does.
	match func(T) bool
	// seed, when set, returns rows at or below the start cursor to follow from the start (the
	// jobs under way when the stream opens).
	seed func(ctx context.Context, upTo int64) ([]T, error)
}

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

// streamStart is the stream's first cursor: after=, Last-Event-ID, or the newest row.
func streamStart(w http.ResponseWriter, r *http.Request, newest func(context.Context) (int64, error)) (int64, bool) {
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
	n, err := newest(r.Context())
	if err != nil {
		writeStoreError(w, err)
		return 0, false
	}
	return n, true
}

// serveFeed answers a list's stream request (its parameters checked by the caller).
func serveFeed[T any](s *Server, w http.ResponseWriter, r *http.Request, f feed[T]) {
	release, ok := s.openStream(w, r)
	if !ok {
		return
	}
	defer release()
	after, ok := streamStart(w, r, f.newest)
	if !ok {
		return
	}
	// The rows followed from the start are read before the client learns that the stream is
	// open: a change it makes after that is sent.
	st := &streamState{after: after, watched: map[int64]followed{}}
	if f.seed != nil {
		if rows, err := f.seed(r.Context(), after); err == nil {
			for _, row := range rows {
				follow(st, f, row, true)
			}
		}
	}
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	fmt.Fprintf(w, "retry: 2000\n: msgx %s after %d\n\n", f.what, after)
	if err := rc.Flush(); err != nil {
		return
	}
	poll, beat := or0(s.StreamPoll, DefaultStreamPoll), or0(s.StreamHeartbeat, DefaultStreamHeartbeat)
	tick, heart := time.NewTicker(poll), time.NewTicker(beat)
	defer tick.Stop()
	defer heart.Stop()
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
			if err := feedStep(r.Context(), w, f, st); err != nil {
				s.Log.Debug("stream ends", "list", f.what, "err", err.Error())
				return
			}
			if rc.Flush() != nil {
				return
			}
		}
	}
}

// streamState is what a stream has sent: the cursor and the rows it follows.
type streamState struct {
	after   int64
	watched map[int64]followed
}

// followed is a row a stream follows: what of it may change as last read, and whether the
// client has it.
type followed struct {
	was  string
	sent bool
}

// follow starts following row when it may still change (up to streamWatch rows).
func follow[T any](st *streamState, f feed[T], row T, sent bool) {
	if f.change == nil || len(st.watched) >= streamWatch {
		return
	}
	if was, open := f.change(row); open {
		st.watched[f.id(row)] = followed{was: was, sent: sent}
	}
}

// feedStep sends the rows added since the cursor, then the changes of the rows followed. A
// store error is no reason to end the stream: the next step asks again.
func feedStep[T any](ctx context.Context, w http.ResponseWriter, f feed[T], st *streamState) error {
	rows, err := f.read(ctx, st.after, 0)
	if err != nil {
		return nil
	}
	for _, row := range rows {
		sent := f.match == nil || f.match(row)
		if sent {
			if err := sendEvent(w, "message", f.id(row), row); err != nil {
				return err
			}
		}
		st.after = f.id(row)
		follow(st, f, row, sent)
	}
	if len(st.watched) == 0 {
		return nil
	}
	low := st.after
	for id := range st.watched {
		low = min(low, id)
	}
	// One range read (ids from the oldest followed to the cursor) rather than one per row.
	rows, err = f.read(ctx, low-1, st.after+1)
	if err != nil {
		return nil
	}
	for _, row := range rows {
		id := f.id(row)
		fw, ok := st.watched[id]
		if !ok {
			continue
		}
		now, open := f.change(row)
		if now == fw.was {
			continue
		}
		sent := fw.sent || f.match == nil || f.match(row)
		if sent {
			if err := sendEvent(w, "update", id, row); err != nil {
				return err
			}
		}
		st.watched[id] = followed{was: now, sent: sent}
		if !open {
			delete(st.watched, id)
		}
	}
	if len(rows) == MaxLimit {
		clear(st.watched) // followed rows too far behind: the list's refresh shows them
	}
	return nil
}

func sendEvent(w http.ResponseWriter, name string, id int64, row any) error {
	b, err := json.Marshal(row)
	if err != nil {
		return fmt.Errorf("row %d: %w", id, err)
	}
	// Only an arrival moves the client's Last-Event-ID: a reconnection resumes after it.
	line := ""
	if name == "message" {
		line = "id: " + strconv.FormatInt(id, 10) + "\n"
	}
	if _, err := fmt.Fprintf(w, "%sevent: %s\ndata: %s\n\n", line, name, b); err != nil {
		return fmt.Errorf("send row %d: %w", id, err)
	}
	return nil
}

// streamMessages is GET /api/v1/messages/stream.
func (s *Server) streamMessages(w http.ResponseWriter, r *http.Request) {
	if !allowParams(w, r, "after") {
		return
	}
	serveFeed(s, w, r, feed[client.Message]{
		what: "messages",
		newest: func(ctx context.Context) (int64, error) {
			ms, err := s.DB.SearchMessages(ctx, store.MessageQuery{Newest: true, Limit: 1})
			if err != nil || len(ms) == 0 {
				return 0, err
			}
			return ms[0].ID, nil
		},
		read: func(ctx context.Context, after, before int64) ([]client.Message, error) {
			ms, err := s.DB.SearchMessages(ctx, store.MessageQuery{AfterID: after, BeforeID: before, Limit: MaxLimit})
			return messages(ms), err
		},
		id: func(m client.Message) int64 { return m.ID },
		change: func(m client.Message) (string, bool) {
			return m.State, !pipeline.ProcStatus(m.State).Terminal()
		},
	})
}

func or0(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}
