package main_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"msgx/internal/openapicheck"
)

// apiAnswers checks every answer the end-to-end tests receive from msgx over HTTP against the
// OpenAPI document (docs/openapi/openapi.json): the tests' own calls (http.Get, http.Post)
// and the typed client (s.api(), and s.post through it) all go through http.DefaultTransport,
// which is wrapped here once for the test binary. A server's answers that do not match fail
// the test that started it (checkAPIAnswers, at its cleanup). The CLI (s.cli) runs in a
// process of its own and is not seen here.
var apiAnswers = &openapicheck.Recorder{}

func init() {
	http.DefaultTransport = apiAnswers.Transport(http.DefaultTransport)
}

// checkAPIAnswers fails t with every answer of the server at serverURL that did not match the
// document.
func checkAPIAnswers(t *testing.T, serverURL string) {
	u, err := url.Parse(serverURL)
	if err != nil {
		t.Errorf("server URL %q: %v", serverURL, err)
		return
	}
	failures, checked := apiAnswers.Take(u.Host)
	t.Logf("%d API answers of %s checked against docs/openapi/openapi.json", checked, serverURL)
	if len(failures) > 0 {
		t.Errorf("%d of the %d API answers of %s do not match docs/openapi/openapi.json:\n%s",
			len(failures), checked, serverURL, strings.Join(failures, "\n"))
	}
}
