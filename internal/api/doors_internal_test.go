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

	"msgx/client"
	"msgx/internal/api/reply"
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
	var e client.ErrorBody
	json.Unmarshal(w.Body.Bytes(), &e)
	if w.Code != http.StatusBadRequest || e.Code != "bad_input" || w.Header().Get("Retry-After") != "" {
		t.Fatalf("input refused: %d %s", w.Code, w.Body)
	}
	if strings.Contains(e.Error, strings.Repeat("x", reply.MaxEcho)) || !strings.Contains(e.Error, "…") {
		t.Errorf("the answer quotes the whole input: %d characters", len(e.Error))
	}
	w = httptest.NewRecorder()
	writeStoreError(w, store.Unavailable(errors.New("dial tcp: connection refused")))
	if w.Code != http.StatusServiceUnavailable {
		t.Fatalf("database down: %d", w.Code)
	}
}
