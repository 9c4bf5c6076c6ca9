package cli_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"msgx/client"
	"msgx/internal/cli"
)

// msgx board --json prints the answer to BoardPath; its table is drawn from the same path: it
// must be what the typed client asks for the same day, time and --utc.
func TestBoardPathIsTheClients(t *testing.T) {
	var asked string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked = r.URL.RequestURI()
		w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	c := &client.Client{URL: srv.URL, HTTP: srv.Client()}
	ctx := context.Background()
	for _, q := range []struct {
		day, at string
		utc     bool
	}{{"", "", false}, {"2026-12-06", "", false}, {"", "", true}, {"", "08:15", false}, {"2026-12-06", "08:15", true}} {
		if q.at == "" {
			c.Board(ctx, q.day)
		} else {
			c.BoardAsOf(ctx, q.day, q.at, q.utc)
		}
		if got := cli.BoardPath(q.day, q.at, q.utc); got != asked {
			t.Errorf("%+v: BoardPath %s, the client asks %s", q, got, asked)
		}
	}
}
