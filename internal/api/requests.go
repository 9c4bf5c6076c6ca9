package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"msgx/client"
	"msgx/internal/store"
)

// Requests is the data-request service (*requests.Service): it validates and creates what an
// operator asks for (an invalid request is a store.ErrBadRequest), and shows a request as the
// API answers it.
type Requests interface {
	Create(ctx context.Context, spec client.RequestSpec) (*store.Request, error)
	Show(r *store.Request) client.Request
}

// RequestRoutes adds the data-request routes (docs/sis-format.md §4.3):
//
//   - POST /api/v1/requests {"type":"RQRD","ref_type":"AIRL"} or
//     {"type":"RQFD","from":"2026-12-03","to":"2026-12-04"} → 201 with the request;
//   - GET /api/v1/requests?state=&limit=&after= and GET /api/v1/requests/{id}; a REGISTERED
//     request carries waiting_for_gateway_since and waiting_for_gateway_s (its age);
//   - GET /api/v1/requests/stream?state=&after=, the live list (stream.go);
//   - POST /view/admin/data-request, the legacy admin contract: {"RQRD":"AIRL"} or
//     {"RQFD":"","STDB":"…","STDE":"…"} → 200 {"success":true,"request_id":N}.
//
// A bad TYPE or window answers 400 naming the problem; in shadow mode 409 shadow_mode.
func (s *Server) RequestRoutes(svc Requests, db store.Requests) func(*http.ServeMux) {
	return func(mux *http.ServeMux) {
		mux.HandleFunc("GET /api/v1/requests/stream", func(w http.ResponseWriter, r *http.Request) {
			s.streamRequests(w, r, svc, db)
		})
		mux.HandleFunc("POST /api/v1/requests", func(w http.ResponseWriter, r *http.Request) {
			var spec client.RequestSpec
			if !readJSON(w, r, &spec) {
				return
			}
			req, err := svc.Create(r.Context(), spec)
			if err != nil {
				writeRequestError(w, err)
				return
			}
			writeJSON(w, http.StatusCreated, svc.Show(req))
		})
		mux.HandleFunc("GET /api/v1/requests", func(w http.ResponseWriter, r *http.Request) {
			q := r.URL.Query()
			state, ok := requestState(w, q)
			if !ok {
				return
			}
			f := store.RequestFilter{State: state}
			c, ok := page(w, q)
			if !ok {
				return
			}
			f.Limit, f.AfterID, f.BeforeID, f.Newest = c.limit, c.after, c.before, c.newest
			list, err := db.ListRequests(r.Context(), f)
			if err != nil {
				writeStoreError(w, err)
				return
			}
			shown := make([]client.Request, len(list))
			for i, req := range list {
				shown[i] = svc.Show(req)
			}
			writeList(w, "requests", shown, c, func(s client.Request) int64 { return s.ID })
		})
		mux.HandleFunc("GET /api/v1/requests/{id}", func(w http.ResponseWriter, r *http.Request) {
			id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
			if err != nil {
				writeError(w, http.StatusBadRequest, "bad_id", fmt.Sprintf("request id %q is not a number", r.PathValue("id")))
				return
			}
			req, err := db.GetRequest(r.Context(), id)
			if err != nil {
				writeStoreError(w, err)
				return
			}
			if req == nil {
				writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("no request %d", id))
				return
			}
			writeJSON(w, http.StatusOK, svc.Show(req))
		})
		mux.HandleFunc("POST /view/admin/data-request", func(w http.ResponseWriter, r *http.Request) {
			spec, err := legacySpec(w, r)
			if err != nil {
				writeError(w, http.StatusBadRequest, "invalid_request", err.Error())
				return
			}
			req, err := svc.Create(r.Context(), spec)
			if err != nil {
				writeRequestError(w, err)
				return
			}
			writeJSON(w, http.StatusOK, map[string]any{"success": true, "request_id": req.ID})
		})
	}
}

// requestState reads the state filter of the requests listing and stream, answering 400 to a
// bad one.
func requestState(w http.ResponseWriter, q url.Values) (string, bool) {
	state := strings.ToUpper(q.Get("state"))
	switch state {
	case "", store.ReqRegistered, store.ReqSent, store.ReqDone, store.ReqExpired:
		return state, true
	}
	writeError(w, http.StatusBadRequest, "bad_state", fmt.Sprintf("state %q is not REGISTERED, SENT, DONE or EXPIRED", q.Get("state")))
	return "", false
}

// legacySpec reads the legacy admin body: {"RQRD":"<TYPE>"} or {"RQFD":"","STDB":"…","STDE":"…"}
// (the RQFD key present with an empty value).
func legacySpec(w http.ResponseWriter, r *http.Request) (client.RequestSpec, error) {
	var body map[string]json.RawMessage
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16))
	if err := dec.Decode(&body); err != nil {
		return client.RequestSpec{}, fmt.Errorf("the body is not a JSON object: %v", err)
	}
	str := func(key string) (string, bool, error) {
		raw, ok := body[key]
		if !ok {
			return "", false, nil
		}
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", true, fmt.Errorf("%s must be a string", key)
		}
		return s, true, nil
	}
	rqrd, hasRQRD, err := str("RQRD")
	if err != nil {
		return client.RequestSpec{}, err
	}
	rqfd, hasRQFD, err := str("RQFD")
	if err != nil {
		return client.RequestSpec{}, err
	}
	for key := range body {
		switch key {
		case "RQRD", "RQFD", "STDB", "STDE":
		default:
			return client.RequestSpec{}, fmt.Errorf("unknown key %q: send {\"RQRD\":\"<TYPE>\"} or {\"RQFD\":\"\",\"STDB\":\"…\",\"STDE\":\"…\"}", key)
		}
	}
	switch {
	case hasRQRD && hasRQFD:
		return client.RequestSpec{}, errors.New("RQRD and RQFD together: send one request at a time")
	case hasRQRD:
		if strings.TrimSpace(rqrd) == "" {
			return client.RequestSpec{}, errors.New("RQRD: missing the reference TYPE")
		}
		return client.RequestSpec{Type: store.ReqReference, RefType: rqrd}, nil
	case hasRQFD:
		if rqfd != "" {
			return client.RequestSpec{}, fmt.Errorf("RQFD must be empty (the window goes in STDB and STDE), got %q", rqfd)
		}
		stdb, _, err := str("STDB")
		if err != nil {
			return client.RequestSpec{}, err
		}
		stde, _, err := str("STDE")
		if err != nil {
			return client.RequestSpec{}, err
		}
		return client.RequestSpec{Type: store.ReqSchedule, From: stdb, To: stde}, nil
	}
	return client.RequestSpec{}, errors.New(`neither RQRD nor RQFD: send {"RQRD":"<TYPE>"} or {"RQFD":"","STDB":"…","STDE":"…"}`)
}

// writeRequestError answers a failed request: 400 for what the operator asked, 409 in shadow
// mode, else as any store error.
func writeRequestError(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, store.ErrBadRequest):
		writeError(w, http.StatusBadRequest, "invalid_request", err.Error())
	case errors.Is(err, store.ErrShadow):
		writeError(w, http.StatusConflict, "shadow_mode", err.Error())
	default:
		writeStoreError(w, err)
	}
}
