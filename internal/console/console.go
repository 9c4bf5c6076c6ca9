// Package console serves the operator's web console: one HTML page with its scripts (native
// ES modules: app.js, one module per view under views/, and small shared ones; api.js names
// every API route they call) and style sheet, embedded in the binary, that reads and acts
// through the JSON API of the same server. There is no build step and nothing is loaded from
// elsewhere; the page refuses inline script and any other origin (Content-Security-Policy),
// and its scripts write server data as text, never as markup.
//
// Beside the assets it adds two small read-only routes the console needs and the API lacks:
// the throughput of the last hour and a message decoded to JSON.
package console

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"strconv"
	"time"

	"msgx/client"
	"msgx/internal/api/reply"
	"msgx/internal/pipeline"
	"msgx/internal/sis"
	"msgx/internal/store"
)

//go:embed assets
var assets embed.FS

// Store is what the console's own routes read: when the messages of the last hour finished
// (throughput) and a message's raw text (decoded view). The msgx database implements it.
type Store interface {
	ProcessedBetween(ctx context.Context, from, to time.Time) ([]time.Time, error)
	Raw(ctx context.Context, id int64) (raw string, ok bool, err error)
}

// securityHeaders are sent with every console asset: only this origin's script, style and
// API, no framing, no MIME sniffing.
var securityHeaders = map[string]string{
	"Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
	"X-Content-Type-Options":  "nosniff",
	"X-Frame-Options":         "DENY",
	"Referrer-Policy":         "no-referrer",
	"Cache-Control":           "no-cache",
}

// Routes adds the console to an API mux (api.Server's Extra):
//
//	GET /                                        the console page
//	GET /console/{file}                          its scripts and style sheet
//	GET /api/v1/console/throughput               messages finished per minute, last hour
//	GET /api/v1/console/messages/{id}/decoded    a message decoded as `msgx decode` does
func Routes(db Store, clock pipeline.Clock, opt sis.Options) func(*http.ServeMux) {
	static, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the embedded directory is part of the binary
	}
	files := http.FileServerFS(static)
	return func(mux *http.ServeMux) {
		mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
			setHeaders(w)
			http.ServeFileFS(w, r, static, "index.html")
		})
		mux.Handle("GET /console/", http.StripPrefix("/console/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "" || r.URL.Path == "index.html" {
				http.Redirect(w, r, "/", http.StatusFound)
				return
			}
			setHeaders(w)
			files.ServeHTTP(w, r)
		})))
		mux.HandleFunc("GET /api/v1/console/throughput", func(w http.ResponseWriter, r *http.Request) {
			tp, err := Throughput(r.Context(), db, clock.Now())
			if err != nil {
				writeStoreError(w, err)
				return
			}
			reply.JSON(w, http.StatusOK, tp)
		})
		mux.HandleFunc("GET /api/v1/console/messages/{id}/decoded", func(w http.ResponseWriter, r *http.Request) {
			id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
			if err != nil {
				reply.Error(w, http.StatusBadRequest, "bad_id", fmt.Sprintf("message id %q is not a number", r.PathValue("id")))
				return
			}
			raw, ok, err := db.Raw(r.Context(), id)
			if err != nil {
				writeStoreError(w, err)
				return
			}
			if !ok {
				reply.Error(w, http.StatusNotFound, "not_found", fmt.Sprintf("no message %d", id))
				return
			}
			reply.JSON(w, http.StatusOK, decode(id, raw, opt))
		})
	}
}

func setHeaders(w http.ResponseWriter) {
	for k, v := range securityHeaders {
		w.Header().Set(k, v)
	}
}

// decode is the decoded-message route's answer: the message as the pump's decoder reads it,
// or why it cannot (as processing would record it).
func decode(id int64, raw string, opt sis.Options) (out client.DecodedMessage) {
	out.ID = id
	defer func() {
		// The pump survives a decoder panic by parking the message; the console must too.
		if p := recover(); p != nil {
			out.Decoded, out.Error, out.Class = nil, fmt.Sprintf("panic while decoding: %v", p), string(pipeline.CodecError)
		}
	}()
	m, err := sis.Decode([]byte(raw), opt)
	if err != nil {
		out.Error, out.Class = err.Error(), string(pipeline.ClassOf(err))
		return out
	}
	// Round-trip through JSON here, so an unencodable value is an error in the answer rather
	// than a half-written body.
	b, err := json.Marshal(m)
	if err != nil {
		out.Error, out.Class = "encode the decoded message: "+err.Error(), string(pipeline.CodecError)
		return out
	}
	out.Decoded = json.RawMessage(b)
	return out
}

// Throughput counts the messages finished (SUCCEEDED, SKIPPED or DEAD) in each minute of the
// hour before now: all of them, read through the index on their processing time (the range
// of the hour is all it reads).
func Throughput(ctx context.Context, db Store, now time.Time) (client.Throughput, error) {
	out := client.Throughput{Until: now.UTC(), PerMinute: make([]int, 60)}
	from := now.Add(-time.Hour)
	times, err := db.ProcessedBetween(ctx, from, now)
	if err != nil {
		return out, err
	}
	for _, at := range times {
		if at.Before(from) || at.After(now) {
			continue
		}
		b := 59 - int(now.Sub(at)/time.Minute)
		out.PerMinute[max(b, 0)]++
		out.Total++
	}
	return out, nil
}

func writeStoreError(w http.ResponseWriter, err error) {
	if errors.Is(err, store.ErrUnavailable) {
		w.Header().Set("Retry-After", "5")
		reply.Error(w, http.StatusServiceUnavailable, "database_unavailable", err.Error())
		return
	}
	reply.Error(w, http.StatusInternalServerError, "internal", err.Error())
}
