package cli_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"msgx/client"
	"msgx/internal/cli"
)

// env is a run of a program "msgx" with the environment environ, writing to the buffers it
// returns.
func env(environ ...string) (*cli.Env, *bytes.Buffer, *bytes.Buffer) {
	var o, e bytes.Buffer
	return &cli.Env{Program: &cli.Program{Name: "msgx"}, Stdout: &o, Stderr: &e, Environ: environ}, &o, &e
}

// A mistyped value is answered with the one probably meant, as a usage error naming the
// command; a good one is read as the API takes it.
func TestChecks(t *testing.T) {
	e, _, _ := env()
	if cl, err := e.Classes("replay", " orphan,INFRA ,"); err != nil || strings.Join(cl, " ") != "ORPHAN INFRA" {
		t.Errorf("Classes: %q, %v", cl, err)
	}
	var usage cli.UsageError
	if _, err := e.Classes("replay", "exhusted"); !errors.As(err, &usage) || !strings.HasPrefix(err.Error(), `msgx replay: unknown class "exhusted" (did you mean EXHAUSTED?); the classes are `) {
		t.Errorf("Classes(exhusted): %v", err)
	}
	if k, err := e.JobKind("jobs", " archive "); err != nil || k != "ARCHIVE" {
		t.Errorf("JobKind: %q, %v", k, err)
	}
	if _, err := e.JobKind("job", "retension"); err == nil || !strings.HasPrefix(err.Error(), `msgx job: unknown job kind "retension" (did you mean RETENTION?)`) {
		t.Errorf("JobKind(retension): %v", err)
	}
	for in, want := range map[string]string{"": "", "a": "A", "Arrivals": "A", "dep": "D", "D": "D"} {
		if got, err := e.Movement("board", in); err != nil || got != want {
			t.Errorf("Movement(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := e.Movement("board", "Q"); err == nil || err.Error() != `msgx board: --movement "Q" is neither A (arrivals) nor D (departures)` {
		t.Errorf("Movement(Q): %v", err)
	}
	if ids, err := e.IDs("ack", []string{"4", "5, 6"}, 3); err != nil || len(ids) != 3 || ids[2] != 6 {
		t.Errorf("IDs: %v, %v", ids, err)
	}
	if _, err := e.IDs("ack", []string{"4,x"}, 3); err == nil || err.Error() != `msgx ack: "x" is not an id` {
		t.Errorf("IDs(4,x): %v", err)
	}
	if _, err := e.IDs("ack", []string{"1,2,3,4"}, 3); err == nil || err.Error() != "msgx ack: 4 ids; at most 3 at a time" {
		t.Errorf("IDs over the most: %v", err)
	}
	if got, err := e.Choice("events", "state", "sent", []string{"PENDING", "SENT"}); err != nil || got != "SENT" {
		t.Errorf("Choice: %q, %v", got, err)
	}
}

// The paging flags make the API's query; a limit over a page is capped and said on stderr;
// jobs, listed by the server newest first, are paged here the same way.
func TestListing(t *testing.T) {
	e, out, errOut := env()
	fs := e.Flags("jobs")
	page := e.ListFlags(fs, "jobs", 2)
	if err := fs.Parse([]string{"--order", "ASC", "--after", "1", "--limit", "5000"}); err != nil {
		t.Fatal(err)
	}
	q, err := page.Query()
	if err != nil || q.Encode() != "after=1&limit=1000&order=asc" {
		t.Errorf("Query: %q, %v", q.Encode(), err)
	}
	if errOut.String() != "msgx jobs: --limit 5000 is more than a page holds: showing at most 1000 (page on with --after)\n" {
		t.Errorf("stderr %q", errOut)
	}
	page.Limit = 2
	var jobs []client.Job
	for _, id := range []int64{5, 4, 3, 2, 1} {
		jobs = append(jobs, client.Job{JobRow: client.JobRow{ID: id}})
	}
	list, more := page.Jobs(jobs)
	if len(list) != 2 || list[0].ID != 2 || list[1].ID != 3 || more != "--after 3 --order asc" {
		t.Errorf("Jobs ascending after 1: %v, %q", list, more)
	}
	next := "before=41"
	page.More(client.Page{Next: &next})
	if out.String() != "more: --before 41 --order asc\n" {
		t.Errorf("More: %q", out)
	}
	page.Order, page.After, page.Before = "desc", 0, 5
	if list, more = page.Jobs(jobs); len(list) != 2 || list[0].ID != 4 || more != "--before 3" {
		t.Errorf("Jobs descending before 5: %v, %q", list, more)
	}
	page.Order = "sideways"
	if _, err := page.Query(); err == nil || !strings.Contains(err.Error(), `--order "sideways" is neither desc`) {
		t.Errorf("Query of a bad order: %v", err)
	}
}

// The server's address: --server, else MSGX_SERVER, else the config file's http.addr
// (http.admin-addr for the API), else the default; a config file that cannot be read is a
// ConfigError naming it. --token's default is MSGX_TOKEN.
func TestRemote(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "msgx.yaml")
	if err := os.WriteFile(cfg, []byte("http:\n  addr: 127.0.0.1:9001\n  admin-addr: 127.0.0.1:9002\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		environ   []string
		args      []string
		api, inbx string
	}{
		{nil, []string{"--server", "aodb-gw:8080"}, "http://aodb-gw:8080", "http://aodb-gw:8080"},
		{[]string{"MSGX_SERVER=https://msgx.example/"}, nil, "https://msgx.example", "https://msgx.example"},
		{[]string{"MSGX_CONFIG=" + cfg}, nil, "http://127.0.0.1:9002", "http://127.0.0.1:9001"},
		{nil, []string{"--config", cfg}, "http://127.0.0.1:9002", "http://127.0.0.1:9001"},
		{[]string{"MSGX_HTTP_ADDR=:9090"}, nil, "http://127.0.0.1:9090", "http://127.0.0.1:9090"},
	} {
		e, _, _ := env(append([]string{"MSGX_TOKEN=secret"}, c.environ...)...)
		fs, r := e.RemoteFlags("status", cli.ServerUsage, true)
		if err := fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		api, err := r.API()
		if err != nil {
			t.Fatal(err)
		}
		inbox, err := r.Inbox()
		if err != nil {
			t.Fatal(err)
		}
		if api.URL != c.api || inbox.URL != c.inbx || api.Token != "secret" {
			t.Errorf("%v %v: API %s, inbox %s, token %q; want %s and %s", c.environ, c.args, api.URL, inbox.URL, api.Token, c.api, c.inbx)
		}
	}
	e, _, errOut := env("MSGX_CONFIG=" + filepath.Join(dir, "missing.yaml"))
	fs, r := e.RemoteFlags("status", cli.APIServerUsage, false)
	r.UTCFlag(fs)
	if err := fs.Parse([]string{"--utc"}); err != nil {
		t.Fatal(err)
	}
	var bad cli.ConfigError
	if _, err := r.API(); !errors.As(err, &bad) || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("a missing config file: %v", err)
	}
	if z := r.Zone(context.Background()); z != cli.UTC || errOut.Len() > 0 {
		t.Errorf("--utc: zone %s, stderr %q", z.Name(), errOut)
	}
	if fs.Lookup("token") != nil {
		t.Error("--token where it was not asked for")
	}
}
