package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	mysqldrv "github.com/go-sql-driver/mysql"

	"msgx/internal/store"
)

// The database refusing a request's input (here MariaDB's "Data too long") is the caller's
// 400, never 503 database_unavailable, though the store wraps every read's error as
// unavailable; an unavailable database stays 503.
func TestInputCausedStoreErrorIs400(t *testing.T) {
	refused := store.Unavailable(fmt.Errorf("search messages for %q: %w", strings.Repeat("x", 5000),
		&mysqldrv.MySQLError{Number: 1406, Message: "Data too long for column 'x' at row 1"}))
	w := httptest.NewRecorder()
	writeStoreError(w, refused)
	var e ErrorBody
	json.Unmarshal(w.Body.Bytes(), &e)
	if w.Code != http.StatusBadRequest || e.Code != "bad_input" || w.Header().Get("Retry-After") != "" {
		t.Fatalf("input refused: %d %s", w.Code, w.Body)
	}
	if strings.Contains(e.Error, strings.Repeat("x", MaxEcho)) || !strings.Contains(e.Error, "…") {
		t.Errorf("the answer quotes the whole input: %d characters", len(e.Error))
	}
	w = httptest.NewRecorder()
	writeStoreError(w, store.Unavailable(errors.New("dial tcp: connection refused")))
	if w.Code != http.StatusServiceUnavailable {
		t.Fatalf("database down: %d", w.Code)
	}
}

// clipEcho cuts each quoted input to MaxEcho characters and leaves short ones and the
// message's own words alone, whatever quotes it holds.
func TestClipEcho(t *testing.T) {
	long := strings.Repeat("é", 300)
	for _, c := range []struct{ in, want string }{
		{"short %q stays", "short %q stays"},
		{fmt.Sprintf("state %q is not a state", long), fmt.Sprintf("state %q is not a state", strings.Repeat("é", MaxEcho-1)+"…")},
		{fmt.Sprintf(`send {"token":"…"}, not %q or %q`, long, "ok"), fmt.Sprintf(`send {"token":"…"}, not %q or %q`, strings.Repeat("é", MaxEcho-1)+"…", "ok")},
		{`unterminated "` + long, `unterminated "` + long},
	} {
		if got := clipEcho(c.in); got != c.want {
			t.Errorf("clipEcho(%.60q…) = %.300q", c.in, got)
		}
	}
	if n := len([]rune(clipEcho(strings.Repeat("word ", 1000)))); n != maxErrorText {
		t.Errorf("a 5000-character text is cut to %d, want %d", n, maxErrorText)
	}
}
