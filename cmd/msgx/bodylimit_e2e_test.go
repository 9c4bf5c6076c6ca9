package main_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// The inbox's body limit fits the database (issue 33): on MariaDB it is the smaller of
// http.max-body-bytes (32 MiB by default) and max_allowed_packet less headroom, logged at the
// start and shown in GET /api/v1/config as http.effective-max-body-bytes; a body over it is
// 413 too_large naming the limit and stores nothing. SQLite keeps http.max-body-bytes. (The
// server's max_allowed_packet is its own: MariaDB's session value is read-only, so the test
// takes it as it is, 16 MiB on a stock server, under the default 32 MiB.)
func TestBodyLimitFitsTheDatabase(t *testing.T) {
	eachDB(t, func(t *testing.T, d dbEnv) {
		want := int64(32 << 20)
		if d.Driver == "mysql" {
			var packet int64
			if err := d.open(t).SQL.QueryRow(`SELECT @@max_allowed_packet`).Scan(&packet); err != nil {
				t.Fatal(err)
			}
			if packet >= 32<<20 {
				t.Skipf("max_allowed_packet %d is not under http.max-body-bytes: nothing to lower", packet)
			}
			want = packet - packet/8 - 4<<10
		}
		s := d.start(t)
		cfg, err := s.api().Config(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		httpCfg, _ := cfg["http"].(map[string]any)
		if got := httpCfg["effective-max-body-bytes"]; got != float64(want) {
			t.Errorf("http.effective-max-body-bytes %v, want %d", got, want)
		}
		if !strings.Contains(s.logs.String(), fmt.Sprintf(`"effective_max_body_bytes":%d`, want)) {
			t.Errorf("the start did not log the effective limit %d:\n%s", want, s.logs)
		}
		if d.Driver != "mysql" {
			return
		}
		// Just over the limit, under max_allowed_packet itself: the inbox's 413, not the database's error.
		body := "<a>" + strings.Repeat("x", int(want)-6) + "</a>"
		resp, err := http.Post(s.url+"/cminmsgs/send", "application/xml", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var e struct{ Code, Error string }
		json.Unmarshal(b, &e)
		if resp.StatusCode != 413 || e.Code != "too_large" || !strings.Contains(e.Error, fmt.Sprint(want)) {
			t.Fatalf("a body of %d bytes (limit %d): %d %s", len(body), want, resp.StatusCode, b)
		}
		// Nothing was stored: the next message gets the first id.
		if id := s.post(`<MSG><META><SNDR>AODB</SNDR></META></MSG>`); id != 1 {
			t.Errorf("the next message got id %d, want 1: the refused body was stored", id)
		}
	})
}
