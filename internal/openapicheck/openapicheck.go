// Package openapicheck validates the HTTP answers msgx gives against its OpenAPI 3.1 document
// (docs/openapi/openapi.json) with kin-openapi's openapi3filter, whose JSON Schema 2020-12
// validator (santhosh-tekuri/jsonschema) is what OpenAPI 3.1 schemas are. Only tests import
// it: the end-to-end tests wrap their HTTP client's transport with Transport, so that every
// answer they receive is checked, and fail on the answers that do not match.
package openapicheck

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"msgx/docs/openapi"
)

// The document is parsed once per test binary.
var (
	loadOnce sync.Once
	doc      *openapi3.T
	router   routers.Router
	loadErr  error
)

// Load parses and validates the document (once).
func Load() (*openapi3.T, routers.Router, error) {
	loadOnce.Do(func() {
		l := openapi3.NewLoader()
		doc, loadErr = l.LoadFromData(openapi.JSON)
		if loadErr != nil {
			loadErr = fmt.Errorf("load docs/openapi/openapi.json: %w", loadErr)
			return
		}
		if loadErr = doc.Validate(context.Background()); loadErr != nil {
			loadErr = fmt.Errorf("docs/openapi/openapi.json is not a valid OpenAPI document: %w", loadErr)
			return
		}
		router, loadErr = gorillamux.NewRouter(doc)
	})
	return doc, router, loadErr
}

// documented reports whether a path is one the document must describe: the API, the inbox,
// the health routes and the metrics. The console's pages (/, /console/…) are not the API.
func documented(path string) bool {
	switch {
	case strings.HasPrefix(path, "/api/"), strings.HasPrefix(path, "/view/"),
		path == "/cminmsgs/send", path == "/healthz", path == "/livez", path == "/readyz", path == "/metrics":
		return true
	}
	return false
}

// Check validates one answer: its status must be one the operation lists, and a JSON body
// must match that status's schema. body is the whole body (nil for a stream, whose media
// type alone is checked). A request to a path the document does not describe is an error
// when the path is one it must (the API's), and is not checked otherwise.
func Check(req *http.Request, status int, header http.Header, body []byte) error {
	_, rt, err := Load()
	if err != nil {
		return err
	}
	route, params, err := rt.FindRoute(req)
	if err != nil {
		if !documented(req.URL.Path) {
			return nil
		}
		if status >= 400 {
			// No route (404), a method no route takes (405), or the doors in front of the
			// routes (401, 403, 414, 400): in the error shape.
			return checkError(req, status, body)
		}
		return fmt.Errorf("%s %s answered %d but the document has no such operation: %v", req.Method, req.URL.Path, status, err)
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route,
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}},
		Status:  status,
		Header:  header,
		Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	mt, _, _ := mime.ParseMediaType(header.Get("Content-Type"))
	if body == nil {
		in.Options.ExcludeResponseBody = true
		if status == http.StatusOK && mt != "text/event-stream" {
			return fmt.Errorf("%s %s: a stream answered %q", req.Method, req.URL.Path, mt)
		}
	}
	in.SetBodyBytes(body)
	if err := openapi3filter.ValidateResponse(req.Context(), in); err != nil {
		return fmt.Errorf("%s %s answered %d, not as docs/openapi/openapi.json says: %v\nbody: %s", req.Method, req.URL.String(), status, err, clip(body))
	}
	return nil
}

// checkError validates an answer in the error shape against components/schemas/Error.
func checkError(req *http.Request, status int, body []byte) error {
	d, _, _ := Load()
	s := d.Components.Schemas["Error"]
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return fmt.Errorf("%s %s answered %d with a body that is not JSON: %v\nbody: %s", req.Method, req.URL.Path, status, err, clip(body))
	}
	if err := s.Value.VisitJSON(v, openapi3.EnableJSONSchema2020()); err != nil {
		return fmt.Errorf("%s %s answered %d, not in the error shape: %v\nbody: %s", req.Method, req.URL.Path, status, err, clip(body))
	}
	return nil
}

func clip(b []byte) string {
	if len(b) > 2000 {
		return string(b[:2000]) + "…"
	}
	return string(b)
}

// Recorder collects, per server (the request's host:port), the answers that did not match.
type Recorder struct {
	mu       sync.Mutex
	failures map[string][]string
	checked  map[string]int
}

// Take returns (and forgets) what did not match among the answers of host, and how many of
// its answers were checked.
func (r *Recorder) Take(host string) (failures []string, checked int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	failures, checked = r.failures[host], r.checked[host]
	delete(r.failures, host)
	delete(r.checked, host)
	return failures, checked
}

// Observe checks one answer whose body has been read whole (body nil: a stream).
func (r *Recorder) Observe(req *http.Request, status int, header http.Header, body []byte) {
	err := Check(req, status, header, body)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.checked == nil {
		r.failures, r.checked = map[string][]string{}, map[string]int{}
	}
	r.checked[req.URL.Host]++
	if err != nil {
		r.failures[req.URL.Host] = append(r.failures[req.URL.Host], err.Error())
	}
}

// Transport returns a RoundTripper that sends with next (nil: http.DefaultTransport) and
// checks every answer of a path the document must describe: it reads a body whole (and gives it back to the caller unchanged),
// except a stream's (text/event-stream), of which it checks the status and media type.
func (r *Recorder) Transport(next http.RoundTripper) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	return roundTripper{next, r}
}

type roundTripper struct {
	next http.RoundTripper
	rec  *Recorder
}

func (t roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil || !documented(req.URL.Path) {
		return resp, err
	}
	// The request as the server saw it; its body was sent and is not validated.
	seen := req.Clone(context.Background())
	seen.Body = http.NoBody
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt == "text/event-stream" {
		t.rec.Observe(seen, resp.StatusCode, resp.Header, nil)
		return resp, nil
	}
	body, rerr := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if rerr != nil {
		// The caller sees the same failure when it reads; nothing to check.
		resp.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), errReader{rerr}))
		return resp, nil
	}
	t.rec.Observe(seen, resp.StatusCode, resp.Header, body)
	return resp, nil
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }
