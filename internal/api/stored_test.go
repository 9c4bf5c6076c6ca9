package api_test

import (
	"fmt"
	"strings"
	"testing"

	"msgx/internal/api"
	"msgx/internal/store/storetest"
)

// GET /api/v1/messages/{id}/raw answers the stored text as plain text a browser neither sniffs
// nor renders (a sandbox CSP), and /api/v1/events/{id}/payload the stored payload as JSON;
// an id with nothing stored is 404 naming it.
func TestStoredBodiesAnswerAsStored(t *testing.T) {
	t.Parallel()
	f := newFixture(t, storetest.SQLite(t), nil, api.InboxRule{})
	get := func(path string) (int, map[string]string, string) {
		w := f.do(t, call{method: "GET", path: path, remote: "127.0.0.1:1", host: "127.0.0.1"})
		h := map[string]string{}
		for _, k := range []string{"Content-Type", "X-Content-Type-Options", "Content-Security-Policy", "Content-Length"} {
			h[k] = w.Header().Get(k)
		}
		return w.Code, h, w.Body.String()
	}
	code, h, body := get("/api/v1/messages/1/raw")
	if code != 200 || body != "<dead/>" || h["Content-Type"] != "text/plain; charset=utf-8" || h["X-Content-Type-Options"] != "nosniff" ||
		h["Content-Security-Policy"] != "sandbox" || h["Content-Length"] != "7" {
		t.Errorf("raw: %d %v %q", code, h, body)
	}
	code, h, body = get(fmt.Sprintf("/api/v1/events/%d/payload", f.ev))
	if code != 200 || body == "" || body[0] != '{' || h["Content-Type"] != "application/json" || h["X-Content-Type-Options"] != "nosniff" ||
		h["Content-Security-Policy"] != "" || h["Content-Length"] != fmt.Sprint(len(body)) {
		t.Errorf("payload: %d %v %q", code, h, body)
	}
	for path, want := range map[string]string{"/api/v1/messages/999/raw": "no message 999", "/api/v1/events/99999/payload": "no event 99999"} {
		if code, _, body := get(path); code != 404 || !strings.Contains(body, want) {
			t.Errorf("%s: %d %s, want 404 %q", path, code, body, want)
		}
	}
}
