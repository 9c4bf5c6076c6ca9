package openapicheck_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"msgx/internal/openapicheck"
)

// The transport checks what a server answers: an answer as the document says passes, one
// whose field has the wrong type, a field too many, a status the operation does not list, an
// answer to a path the document lacks and an error out of shape are each reported, and the
// caller reads every body unchanged.
func TestTransportReportsWhatTheDocumentDoesNotSay(t *testing.T) {
	msg := `{"id":7,"state":"DEAD","error_class":"PARKED","attempts":0,"last_error":"parked","type_tag":"FLOP-CHOT",` +
		`"identity":"AODB|FLOP|CHOT|7","received_at":"2026-12-06T05:00:00Z","processed_at":null,"next_attempt_at":null,` +
		`"first_failed_at":null,"note":"","warnings":null}`
	answers := map[string]struct {
		status int
		body   string
	}{
		"/api/v1/messages/7":      {200, msg},
		"/api/v1/messages/8":      {200, strings.Replace(msg, `"attempts":0`, `"attempts":"0"`, 1)},
		"/api/v1/messages/9":      {200, strings.Replace(msg, `"note":""`, `"note":"","colour":"red"`, 1)},
		"/api/v1/messages/10":     {418, `{"error":"teapot","code":"teapot"}`},
		"/api/v1/nothing":         {200, `{}`},
		"/api/v1/messages/11":     {404, `{"error":"no message 11"}`},
		"/api/v1/messages/stream": {200, ""},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a := answers[r.URL.Path]
		w.Header().Set("Content-Type", "application/json")
		if strings.HasSuffix(r.URL.Path, "/stream") {
			w.Header().Set("Content-Type", "text/event-stream")
		}
		w.WriteHeader(a.status)
		io.WriteString(w, a.body)
	}))
	defer srv.Close()
	rec := &openapicheck.Recorder{}
	c := &http.Client{Transport: rec.Transport(nil)}
	for path, a := range answers {
		resp, err := c.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != a.body {
			t.Errorf("%s: the caller read %q, the server sent %q", path, b, a.body)
		}
	}
	u, _ := url.Parse(srv.URL)
	failures, checked := rec.Take(u.Host)
	if checked != len(answers) {
		t.Errorf("%d answers checked, want %d", checked, len(answers))
	}
	all := strings.Join(failures, "\n")
	for _, want := range []string{"/api/v1/messages/8 answered 200", "/api/v1/messages/9 answered 200", "/api/v1/messages/10 answered 418",
		"/api/v1/nothing answered 200", "/api/v1/messages/11 answered 404"} {
		if !strings.Contains(all, want) {
			t.Errorf("not reported: %s", want)
		}
	}
	for _, good := range []string{"/api/v1/messages/7 ", "/api/v1/messages/stream "} {
		if strings.Contains(all, good) {
			t.Errorf("reported although it matches: %s", good)
		}
	}
	if len(failures) != 5 {
		t.Errorf("%d failures, want 5:\n%s", len(failures), all)
	}
}
