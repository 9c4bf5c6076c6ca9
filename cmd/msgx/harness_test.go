package main_test

// The end-to-end harness: it builds the msgx binary once, starts `msgx serve` processes on a
// free port, and talks to them over HTTP the way a user would.
//
// Writing an end-to-end test on it:
//
//	func TestSomething(t *testing.T) {
//		eachDB(t, func(t *testing.T, db dbEnv) {
//			s := db.start(t, "MSGX_PIPELINE_POLL_INTERVAL=50ms")
//			id := s.post(body)
//			s.await(id, "SUCCEEDED", state("SUCCEEDED", ""))
//			// the API through the typed client, as a program that imports msgx/client reads it:
//			board, err := s.api().Board(t.Context(), day)
//			st := s.status() // and s.message, s.events, s.ref, s.metrics…: the same, failing t
//			// a restarted or second server on the same database and data directory:
//			s.stop()
//			s2 := db.start(t)
//			// the database itself, through the store, on whichever dialect this is:
//			sqlDB := db.open(t)
//		})
//	}
//
// eachDB runs the body twice, as the subtests `sqlite` (the embedded default: a SQLite file
// in the data directory) and `mariadb` (a private database on the MariaDB server from
// storetest.MySQLDSN, dropped when the subtest ends; the subtest fails under
// MSGX_TEST_REQUIRE_SERVICES=1 when MariaDB is absent and skips otherwise). The two run in
// parallel: they share nothing. Extra environment given to db.start comes after the
// database's own, so it wins (MSGX_PIPELINE_AUTOSTART=false starts a pump-less API node on
// either). start(t, dataDir, env...) still starts a server on SQLite alone, for the few tests
// that are about something other than the database.
//
// Every top-level test calls t.Parallel() first: each has its own data directory, port,
// database, Redis key prefix or channel and private servers, and none sets the environment
// of the test process, so they share nothing and go test runs them -parallel at a time
// (GOMAXPROCS by default). A test that cannot share the process must not call it, and say
// why. Waiting is by polling for the outcome (await, waitFor, ogWaitFor) up to a deadline;
// a fixed sleep is only for a negative check or a real timeout, and its comment says so.
//
// The API is read through the typed client (s.api(), and the helpers on it); a raw HTTP call
// is for what the client does not show: the status codes of bad input and of the probes,
// headers, content types, streams, body limits.

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"msgx/client"
	"msgx/internal/store"
	"msgx/internal/store/storetest"
	"msgx/internal/testkit"
)

var binary string

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() && flag.Lookup("test.skip").Value.String() == "" {
		// The race run of .ci/run: only the tests of this package's own code, none that runs
		// the binary (see endToEndTests), so no binary to build.
		skip, err := endToEndTests()
		if err != nil {
			fmt.Fprintf(os.Stderr, "listing the end-to-end tests: %v\n", err)
			os.Exit(1)
		}
		flag.Set("test.skip", skip)
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "msgx-e2e")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "msgx")
	out, err := exec.Command("go", "build", "-tags", "msgxtesthooks", "-o", binary, ".").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "building msgx: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// dbEnv is the database one end-to-end subtest runs msgx on. Every server started through
// the same dbEnv uses the same database and the same data directory (file outboxes), so a
// restarted or second server sees what the first one wrote.
type dbEnv struct {
	Name    string   // the subtest's name: "sqlite" or "mariadb"
	Driver  string   // the store driver: "sqlite" or "mysql"
	DSN     string   // what store.Open takes: the SQLite file, or the private MariaDB database's DSN
	DataDir string   // MSGX_DATA_DIR: the file outboxes, and the SQLite file on sqlite
	Env     []string // the MSGX_* variables that point `msgx serve` at this database
}

// eachDB runs fn as the subtests "sqlite" and "mariadb", in parallel, each on a fresh
// database and data directory of its own. See the comment at the top of this file.
func eachDB(t *testing.T, fn func(t *testing.T, db dbEnv)) {
	t.Helper()
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		data := t.TempDir()
		fn(t, dbEnv{Name: "sqlite", Driver: "sqlite", DSN: filepath.Join(data, "msgx.db"), DataDir: data})
	})
	t.Run("mariadb", func(t *testing.T) {
		t.Parallel()
		dsn := storetest.MySQLDSN(t) // dropped after every server of the subtest has stopped
		fn(t, dbEnv{Name: "mariadb", Driver: "mysql", DSN: dsn, DataDir: t.TempDir(), Env: []string{
			"MSGX_DATABASE_DRIVER=mysql",
			"MSGX_DATABASE_DSN=" + dsn,
			// Off by default on mysql (production turns it on explicitly); the tests want the pump.
			"MSGX_PIPELINE_AUTOSTART=true",
		}})
	})
}

// start runs `msgx serve` on this database with env added after the database's own.
func (d dbEnv) start(t *testing.T, env ...string) *server {
	t.Helper()
	s := start(t, d.DataDir, append(append([]string(nil), d.Env...), env...)...)
	if d.Driver == "mysql" {
		// A harness that silently fell back to the embedded default would test SQLite twice:
		// the server must have migrated the private database.
		var tables int
		err := d.open(t).SQL.QueryRow(`SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'PROC_STATE'`).Scan(&tables)
		if err != nil || tables == 0 {
			t.Fatalf("msgx serve on %s did not migrate its database (%d PROC_STATE tables, %v)\n%s", d.Name, tables, err, s.logs)
		}
	}
	return s
}

// command returns an unstarted `msgx args…` on this database, on a free port, for runs
// that are expected to end by themselves (a second instance refused, say). One that has not
// ended after 30 seconds is killed, so a run that hangs fails the test instead of stalling it.
func (d dbEnv) command(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	cmd := dieWithTest(exec.CommandContext(ctx, binary, args...))
	cmd.Env = append(os.Environ(), "MSGX_HTTP_ADDR="+freeAddr(t), "MSGX_DATA_DIR="+d.DataDir)
	cmd.Env = append(cmd.Env, d.Env...)
	return cmd
}

// open opens this database through the store (not migrated: a server has done that, or the
// test sets up tables first); it is closed when t ends.
func (d dbEnv) open(t *testing.T) *store.DB {
	t.Helper()
	db, err := store.Open(context.Background(), d.Driver, d.DSN)
	if err != nil {
		t.Fatalf("open the %s database: %v", d.Name, err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// outbox is the JSON-lines file a file sink writes target's events to.
func (d dbEnv) outbox(target string) string {
	return filepath.Join(d.DataDir, "outbox", target+".jsonl")
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// server is a running `msgx serve` process.
type server struct {
	t    *testing.T
	cmd  *exec.Cmd
	url  string
	logs *syncBuffer
	done chan error
}

// syncBuffer collects a process's output; the test reads it while the process writes.
type syncBuffer struct{ testkit.Buffer }

// start runs msgx serve with the given extra environment and waits for /healthz. With no
// MSGX_DATABASE_* in env it runs on the SQLite file in dataDir; dbEnv.start runs it on the
// subtest's database.
func start(t *testing.T, dataDir string, env ...string) *server {
	t.Helper()
	addr := freeAddr(t)
	cmd := dieWithTest(exec.Command(binary, "serve"))
	cmd.Env = append(os.Environ(), "MSGX_HTTP_ADDR="+addr, "MSGX_DATA_DIR="+dataDir)
	// The daily jobs would be enqueued at start or not depending on the time of day the test
	// runs: off, unless a test turns them on.
	cmd.Env = append(cmd.Env, "MSGX_JOBS_ARCHIVE_AT=off", "MSGX_JOBS_HISTORY_SWEEP_AT=off", "MSGX_JOBS_RETENTION_AT=off")
	cmd.Env = append(cmd.Env, env...)
	logs := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &server{t: t, cmd: cmd, url: "http://" + addr, logs: logs, done: make(chan error, 1)}
	go func() { s.done <- cmd.Wait() }()
	t.Cleanup(func() { checkAPIAnswers(t, s.url) })
	t.Cleanup(func() { s.stop() })
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-s.done:
			s.done <- err
			t.Fatalf("msgx serve exited early: %v\n%s", err, logs)
		default:
		}
		c := s.api()
		code := answered(c)
		if _, err := c.Health(context.Background()); err == nil && code() == http.StatusOK {
			s.awaitStartLogs()
			return s
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("msgx serve did not answer /healthz\n%s", logs)
	return nil
}

// awaitStartLogs waits (a few seconds at most) until the start-up lines are in s.logs: the
// listener is bound before the start is done and may answer /healthz as soon as it is served,
// before the pipe has carried the lines logged just before, which a test may look for.
func (s *server) awaitStartLogs() {
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if strings.Contains(s.logs.String(), "msgx serving") {
			return
		}
	}
}

// stop sends SIGTERM and waits; it returns the exit error.
func (s *server) stop() error {
	if s.cmd.ProcessState != nil {
		return nil
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-s.done:
		s.done <- err
		return err
	case <-time.After(20 * time.Second):
		s.cmd.Process.Kill()
		return fmt.Errorf("did not stop on SIGTERM")
	}
}

// post posts body to s's inbox and returns the id answered, failing the test when it is not.
func (s *server) post(body string) int64 {
	s.t.Helper()
	id, err := s.send(body)
	if err != nil {
		s.t.Fatalf("POST /cminmsgs/send: %v", err)
	}
	return id
}

// send posts body to s's inbox and returns the id answered, or why not: for a goroutine other
// than the test's, which must not call t.Fatal. The inbox answers a durable message 200, and
// another 2xx is an error here, though the client would take it.
func (s *server) send(body string) (int64, error) {
	c := s.api()
	code := answered(c)
	id, err := c.Send(context.Background(), []byte(body))
	if err == nil && code() != http.StatusOK {
		return 0, fmt.Errorf("answered %d (id %d), want 200", code(), id)
	}
	return id, err
}

// answered makes c keep the HTTP status code of its answers and returns the last one's (0
// before any): the typed client takes any 2xx for success, and a test that wants one exact
// code (200, not 201 or 204) reads it here. The calls still go through http.DefaultTransport.
func answered(c *client.Client) func() int {
	rec := &statusRecorder{}
	hc := *c.HTTP
	rec.next, hc.Transport = hc.Transport, rec
	c.HTTP = &hc
	return func() int { return int(rec.code.Load()) }
}

// statusRecorder is a transport that keeps the status code of the last answer through it.
type statusRecorder struct {
	next http.RoundTripper // nil: http.DefaultTransport, as it is when the call is made
	code atomic.Int32
}

// RoundTrip sends r through the next transport and keeps its answer's status code.
func (rec *statusRecorder) RoundTrip(r *http.Request) (*http.Response, error) {
	next := rec.next
	if next == nil {
		next = http.DefaultTransport
	}
	resp, err := next.RoundTrip(r)
	if err == nil {
		rec.code.Store(int32(resp.StatusCode))
	}
	return resp, err
}

// message is a message as the API shows it (the typed client's).
type message = client.Message

// api is the typed client of s (msgx/client), as the msgx command's.
func (s *server) api() *client.Client { return client.New(s.url, "") }

func (s *server) message(id int64) message {
	ctx := context.Background()
	s.t.Helper()
	m, err := s.api().Message(ctx, id)
	if err != nil {
		s.t.Fatalf("GET message %d: %v", id, err)
	}
	return m
}

// status is s's GET /api/v1/status.
func (s *server) status() client.Status {
	s.t.Helper()
	st, err := s.api().Status(context.Background())
	if err != nil {
		s.t.Fatalf("GET status: %v", err)
	}
	return st
}

// health is s's GET /healthz.
func (s *server) health() client.Health {
	s.t.Helper()
	h, err := s.api().Health(context.Background())
	if err != nil {
		s.t.Fatalf("GET /healthz: %v", err)
	}
	return h
}

// ref is s's reference record typ/key, failing the test when it is not stored.
func (s *server) ref(typ, key string) client.RefRecord {
	s.t.Helper()
	r, err := s.api().Ref(context.Background(), typ, key)
	if err != nil {
		s.t.Fatalf("GET ref %s/%s: %v", typ, key, err)
	}
	return r
}

// section decodes the extra section name of st into v, failing t when st has none or it
// does not decode.
func section(t *testing.T, st client.Status, name string, v any) {
	t.Helper()
	if ok, err := st.Section(name, v); !ok || err != nil {
		t.Fatalf("the status's section %s: present %v, %v", name, ok, err)
	}
}

// await polls message id until cond holds.
func (s *server) await(id int64, what string, cond func(message) bool) message {
	s.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	var m message
	for time.Now().Before(deadline) {
		if m = s.message(id); cond(m) {
			return m
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.t.Fatalf("message %d never became %s; last %+v\n%s", id, what, m, s.logs)
	return m
}

func state(st, class string) func(message) bool {
	return func(m message) bool { return m.State == st && m.Class() == class }
}

type listedEvent = client.Event

func (s *server) events(query string) []listedEvent {
	ctx := context.Background()
	s.t.Helper()
	filters, err := url.ParseQuery("order=asc&limit=1000&" + query)
	if err != nil {
		s.t.Fatal(err)
	}
	evs, err := s.api().Events(ctx, filters)
	if err != nil {
		s.t.Fatalf("GET events %s: %v", query, err)
	}
	return evs.Events
}

func readLines(t *testing.T, path string) [][]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines [][]byte
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		lines = append(lines, append([]byte(nil), sc.Bytes()...))
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return lines
}

// tomorrow is the start of tomorrow in the airport's zone: flights on it are never in the
// past, even if the local day turns while a test runs.
func tomorrow(t *testing.T) time.Time {
	t.Helper()
	zone, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().In(zone)
	return time.Date(now.Year(), now.Month(), now.Day()+1, 0, 0, 0, 0, zone)
}
