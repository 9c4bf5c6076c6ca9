package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"msgx/client"
	"msgx/internal/handler"
	"msgx/internal/pipeline"
	"msgx/internal/store"
)

// The operators' routes (docs/api.md has every shape): searches by flight, a message's raw
// text and history, a flight's history, parking, pausing the pump and targets, the audit log.

// Bounds of every listing: at most MaxLimit items and about MaxListBytes of JSON; a page cut
// by the byte bound says so (truncated) and gives the cursor of the next (next).
const (
	MaxLimit     = store.MaxPageLimit
	MaxListBytes = 4 << 20
	// MaxIDs bounds the ids of one replay (POST /api/v1/replay, /api/v1/events/replay).
	MaxIDs = 1000
)

// allowParams answers 400 naming the query parameters of r that are not in allowed.
func allowParams(w http.ResponseWriter, r *http.Request, allowed ...string) bool {
	var unknown []string
	for k := range r.URL.Query() {
		if !slices.Contains(allowed, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) == 0 {
		return true
	}
	sort.Strings(unknown)
	writeError(w, http.StatusBadRequest, "unknown_parameter", fmt.Sprintf("unknown query parameter(s) %s; this route takes %s",
		strings.Join(unknown, ", "), strings.Join(allowed, ", ")))
	return false
}

// cursor is the paging of a listing: at most limit items (default 100, clamped to
// 1..MaxLimit) with ids above after and below before (0: no bound), newest first unless the
// caller asked order=asc.
type cursor struct {
	limit         int
	after, before int64
	newest        bool
}

// page reads the paging of every listing (limit, after, before, order), answering 400 and
// returning ok=false when a cursor is not a non-negative integer or order not asc/desc.
func page(w http.ResponseWriter, q url.Values) (c cursor, ok bool) {
	l, err := intParam(q.Get("limit"), 100)
	if err != nil {
		writeError(w, http.StatusBadRequest, "bad_limit", "limit: "+err.Error())
		return c, false
	}
	c.limit = min(max(l, 1), MaxLimit)
	for name, dst := range map[string]*int64{"after": &c.after, "before": &c.before} {
		v := q.Get(name)
		if v == "" {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			writeError(w, http.StatusBadRequest, "bad_"+name, fmt.Sprintf("%s: %q is not a non-negative integer", name, v))
			return c, false
		}
		*dst = n
	}
	switch strings.ToLower(q.Get("order")) {
	case "", "desc":
		c.newest = true
	case "asc":
	default:
		writeError(w, http.StatusBadRequest, "bad_order", fmt.Sprintf("order: %q is neither asc nor desc (the default, newest first)", q.Get("order")))
		return c, false
	}
	return c, true
}

// links are the cursors of the pages beside one: next goes on in the listing's order (older
// rows when newest first), prev back (newer rows when newest first), each a query fragment
// ("before=41") or nil when there is surely nothing there. prev is given even when no newer
// row exists yet, so a client following the listing asks it again for what arrives.
// nextAfter is the former cursor of an oldest-first listing (next_after).
func (c cursor) links(n int, first, last int64, more bool) (next, prev *string, nextAfter *int64) {
	frag := func(name string, id int64) *string {
		s := name + "=" + strconv.FormatInt(id, 10)
		return &s
	}
	// A page read towards its cursor (newer rows of a newest-first listing, older ones of an
	// oldest-first one) has rows beyond it on the other side: the cursor's own.
	toward := (c.newest && c.after > 0 && c.before == 0) || (!c.newest && c.before > 0 && c.after == 0)
	forward, backward := "before", "after"
	if !c.newest {
		forward, backward = "after", "before"
	}
	switch {
	case n == 0 && c.newest:
		return nil, frag("after", max(c.after, c.before-1, 0)), nil
	case n == 0:
		return frag("after", max(c.after, c.before-1, 0)), nil, nil
	}
	if more || toward {
		next = frag(forward, last)
	}
	if c.newest || c.after > 0 || c.before > 0 {
		prev = frag(backward, first)
	}
	if !c.newest && more {
		nextAfter = &last
	}
	return next, prev, nextAfter
}

// writeList answers {key: items…, "count", "limit", "order", "truncated", "next", "prev",
// "next_after"} with as many items as fit in MaxListBytes (at least one); next and prev are
// the cursors of the pages beside (cursor.links).
func writeList[T any](w http.ResponseWriter, key string, items []T, c cursor, id func(T) int64) {
	var buf bytes.Buffer
	buf.WriteString(`{"` + key + `":[`)
	n := 0
	truncated := false
	for i, it := range items {
		b, err := json.Marshal(it)
		if err != nil {
			writeError(w, http.StatusInternalServerError, "internal", err.Error())
			return
		}
		if n > 0 && buf.Len()+len(b) > MaxListBytes {
			truncated = true
			break
		}
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.Write(b)
		n++
	}
	var first, last int64
	if n > 0 {
		first, last = id(items[0]), id(items[n-1])
	}
	next, prev, nextAfter := c.links(n, first, last, truncated || len(items) >= c.limit)
	order := "desc"
	if !c.newest {
		order = "asc"
	}
	tail, _ := json.Marshal(client.Page{Count: n, Limit: c.limit, Order: order, Truncated: truncated, Next: next, Prev: prev, NextAfter: nextAfter})
	buf.WriteString("],")
	buf.Write(tail[1:])
	buf.WriteByte('\n')
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.Write(buf.Bytes())
}

func pathID(w http.ResponseWriter, r *http.Request, name string) (int64, bool) {
	id, err := strconv.ParseInt(r.PathValue(name), 10, 64)
	if err != nil || id <= 0 {
		writeError(w, http.StatusBadRequest, "bad_id", fmt.Sprintf("%s %q is not a positive integer", name, r.PathValue(name)))
		return 0, false
	}
	return id, true
}

// timeParam reads an RFC 3339 time or a date (UTC midnight).
func timeParam(w http.ResponseWriter, q url.Values, name string) (time.Time, bool) {
	s := q.Get(name)
	if s == "" {
		return time.Time{}, true
	}
	for _, layout := range []string{time.RFC3339Nano, time.DateOnly} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, true
		}
	}
	writeError(w, http.StatusBadRequest, "bad_time", fmt.Sprintf("%s: %q is not an RFC 3339 time (2026-12-01T08:00:00Z) or a date (2026-12-01)", name, s))
	return time.Time{}, false
}

func (s *Server) searchMessages(w http.ResponseWriter, r *http.Request) {
	if !allowParams(w, r, "state", "class", "flid", "tag", "from", "to", "q", "limit", "after", "before", "order") {
		return
	}
	q := r.URL.Query()
	var f store.MessageQuery
	var ok bool
	if f.State, f.Class, ok = stateAndClass(w, q); !ok {
		return
	}
	if v := q.Get("flid"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			writeError(w, http.StatusBadRequest, "bad_flid", fmt.Sprintf("flid %q is not a positive integer", v))
			return
		}
		f.FLID = n
	}
	f.Tag, f.Text = strings.ToUpper(q.Get("tag")), q.Get("q")
	// q is looked for in the bodies too, those of the newest DefaultBodyScan messages: a
	// body scan has no index, so it is bounded (docs/api.md says so).
	f.BodyWithin = store.DefaultBodyScan
	if f.From, ok = timeParam(w, q, "from"); !ok {
		return
	}
	if f.To, ok = timeParam(w, q, "to"); !ok {
		return
	}
	c, ok := page(w, q)
	if !ok {
		return
	}
	f.Limit, f.AfterID, f.BeforeID, f.Newest = c.limit, c.after, c.before, c.newest
	ms, err := s.DB.SearchMessages(r.Context(), f)
	if err != nil {
		writeStoreError(w, err)
		return
	}
	writeList(w, "messages", messages(ms), c, func(m client.Message) int64 { return m.ID })
}

func classNames() string {
	var out []string
	for _, c := range pipeline.Classes {
		out = append(out, string(c))
	}
	return strings.Join(out, ", ")
}

func (s *Server) messageRaw(w http.ResponseWriter, r *http.Request) {
	// Plain text, never rendered: an XML body could hold markup a browser would run.
	writeStored(w, r, "message", "text/plain; charset=utf-8", nil, func(ctx context.Context, id int64) ([]byte, bool, error) {
		raw, found, err := s.DB.Raw(ctx, id)
		return []byte(raw), found, err
	}, "Content-Security-Policy", "sandbox")
}

// writeStored answers GET …/{id}/… with the stored bytes get reads (404 naming what when there
// are none), as ctype, never sniffed, with the headers given in pairs; params are the query
// parameters the route takes.
func writeStored(w http.ResponseWriter, r *http.Request, what, ctype string, params []string, get func(context.Context, int64) ([]byte, bool, error), headers ...string) {
	if !allowParams(w, r, params...) {
		return
	}
	id, ok := pathID(w, r, "id")
	if !ok {
		return
	}
	b, found, err := get(r.Context(), id)
	if err != nil {
		writeStoreError(w, err)
		return
	}
	if !found {
		writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("no %s %d", what, id))
		return
	}
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	for i := 0; i+1 < len(headers); i += 2 {
		w.Header().Set(headers[i], headers[i+1])
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.Write(b)
}

func (s *Server) messageHistory(w http.ResponseWriter, r *http.Request) {
	if !allowParams(w, r) {
		return
	}
	m, ok := s.messageOf(w, r)
	if !ok {
		return
	}
	id := m.ID
	h, err := s.DB.MessageHistory(r.Context(), id)
	if err != nil {
		writeStoreError(w, err)
		return
	}
	// A success is the row itself (the history keeps what did not succeed and what operators did).
	if m.State == pipeline.Succeeded && m.ProcessedAt != nil {
		h = append(h, store.HistoryEntry{At: *m.ProcessedAt, State: string(m.State), Attempts: m.Attempts, Detail: m.Note})
	}
	writeJSON(w, http.StatusOK, client.MessageHistory{ID: id, Message: new(message(m)), History: history(h)})
}

// readOptionalJSON reads a JSON body into v; an empty body leaves v as it is.
func readOptionalJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
	if err != nil {
		writeError(w, http.StatusRequestEntityTooLarge, "too_large", "the body is over 1 MiB")
		return false
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return true
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		writeError(w, http.StatusBadRequest, "bad_json", "the body is not the expected JSON: "+err.Error())
		return false
	}
	return true
}

func (s *Server) park(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r, "id")
	if !ok {
		return
	}
	var req client.ReasonRequest
	if !readJSON(w, r, &req) {
		return
	}
	if strings.TrimSpace(req.Reason) == "" {
		writeError(w, http.StatusBadRequest, "bad_request", `say why: {"reason":"…"}`)
		return
	}
	res, err := s.DB.Park(r.Context(), id, req.Reason, PrincipalOf(r).Name, s.Clock.Now())
	var refused store.ParkRefused
	switch {
	case errors.Is(err, store.ErrNotFound):
		writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("no message %d", id))
		return
	case errors.As(err, &refused):
		writeError(w, http.StatusConflict, "finished", fmt.Sprintf("message %d: %s", id, refused.Error()))
		return
	case errors.Is(err, store.ErrChanged):
		writeError(w, http.StatusConflict, "changed", fmt.Sprintf("message %d changed while it was being parked; look again", id))
		return
	case err != nil:
		writeStoreError(w, err)
		return
	}
	s.audit(r, "message.park", "message "+strconv.FormatInt(id, 10), req.Reason)
	s.wakePump()
	writeJSON(w, http.StatusOK, parked(res))
}

func (s *Server) setPause(w http.ResponseWriter, r *http.Request, name string, pause bool, wake func()) {
	var req client.ReasonRequest
	if !readOptionalJSON(w, r, &req) {
		return
	}
	ctx := r.Context()
	before, err := s.DB.Pause(ctx, name)
	if err != nil {
		writeStoreError(w, err)
		return
	}
	if pause {
		err = s.DB.SetPause(ctx, name, PrincipalOf(r).Name, req.Reason, s.Clock.Now())
	} else {
		_, err = s.DB.ClearPause(ctx, name)
	}
	if err != nil {
		writeStoreError(w, err)
		return
	}
	after, err := s.DB.Pause(ctx, name)
	if err != nil {
		writeStoreError(w, err)
		return
	}
	action := "resume"
	if pause {
		action = "pause"
	}
	changed := (before == nil) == pause
	if changed {
		s.audit(r, strings.SplitN(name, ":", 2)[0]+"."+action, name, req.Reason)
	}
	if !pause && wake != nil {
		wake()
	}
	writeJSON(w, http.StatusOK, client.PauseAnswer{Name: name, Paused: after != nil, Pause: pauseOf(after), Changed: changed})
}

func (s *Server) knownTarget(w http.ResponseWriter, name string) bool {
	known := s.targetNames()
	if slices.Contains(known, name) {
		return true
	}
	writeError(w, http.StatusBadRequest, "unknown_target", fmt.Sprintf("target %q is not known; the targets are %s", name, strings.Join(known, ", ")))
	return false
}

func (s *Server) targetNames() []string {
	if len(s.Targets) > 0 {
		return s.Targets
	}
	return handler.Targets
}

// flightHistory answers GET /api/v1/flights/{flid}/history: every change of the flight with
// the message that made it and each field's old and new value.
func (s *Server) flightHistory(w http.ResponseWriter, r *http.Request) {
	if !allowParams(w, r, "limit", "after") {
		return
	}
	flid, ok := pathID(w, r, "flid")
	if !ok {
		return
	}
	// A flight's history reads as a story, oldest first; before and order are not taken.
	c, ok := page(w, r.URL.Query())
	if !ok {
		return
	}
	c.newest = false
	cs, err := s.DB.FlightHistory(r.Context(), flid, handler.TargetFlop, c.after, c.limit)
	if err != nil {
		writeStoreError(w, err)
		return
	}
	writeList(w, "changes", flightChanges(cs), c, func(c client.FlightChange) int64 { return c.EventID })
}

func (s *Server) listAudit(w http.ResponseWriter, r *http.Request) {
	if !allowParams(w, r, "limit", "after", "before", "order") {
		return
	}
	c, ok := page(w, r.URL.Query())
	if !ok {
		return
	}
	as, err := s.DB.ListAudit(r.Context(), store.AuditQuery{AfterID: c.after, BeforeID: c.before, Newest: c.newest, Limit: c.limit})
	if err != nil {
		writeStoreError(w, err)
		return
	}
	writeList(w, "audit", auditEntries(as), c, func(a client.AuditEntry) int64 { return a.ID })
}

// operatorRoutes adds the routes of this file (the store must implement store.Operator).
func (s *Server) operatorRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/v1/messages/{id}/raw", s.messageRaw)
	mux.HandleFunc("GET /api/v1/messages/{id}/history", s.messageHistory)
	mux.HandleFunc("POST /api/v1/messages/{id}/park", s.park)
	mux.HandleFunc("GET /api/v1/flights/{flid}/history", s.flightHistory)
	mux.HandleFunc("GET /api/v1/audit", s.listAudit)
	mux.HandleFunc("GET /api/v1/audit/stream", s.streamAudit)
	mux.HandleFunc("POST /api/v1/pump/pause", func(w http.ResponseWriter, r *http.Request) {
		s.setPause(w, r, store.PumpPause, true, nil)
	})
	mux.HandleFunc("POST /api/v1/pump/resume", func(w http.ResponseWriter, r *http.Request) {
		s.setPause(w, r, store.PumpPause, false, s.wakePump)
	})
	mux.HandleFunc("POST /api/v1/targets/{name}/pause", func(w http.ResponseWriter, r *http.Request) {
		if s.knownTarget(w, r.PathValue("name")) {
			s.setPause(w, r, store.TargetPause(r.PathValue("name")), true, nil)
		}
	})
	mux.HandleFunc("POST /api/v1/targets/{name}/resume", func(w http.ResponseWriter, r *http.Request) {
		if s.knownTarget(w, r.PathValue("name")) {
			s.setPause(w, r, store.TargetPause(r.PathValue("name")), false, s.kickDispatcher)
		}
	})
	mux.HandleFunc("GET /api/v1/pauses", func(w http.ResponseWriter, r *http.Request) {
		if !allowParams(w, r) {
			return
		}
		ps, err := s.DB.Pauses(r.Context())
		if err != nil {
			writeStoreError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"pauses": pauses(ps)})
	})
}

// auditEntry builds the audit row of an action.
func auditEntry(now time.Time, p Principal, action, subject, detail, remote string) store.AuditEntry {
	return store.AuditEntry{At: now, Actor: p.Name, Role: p.Role, Action: action, Subject: subject, Detail: detail, Remote: remote}
}
