package main_test

// End-to-end tests of database outages and of the pump lease's take-over (issue 7, item 6).
// They run the binary TestMain built; their server helpers (prefixed og) start several
// servers by hand, before their database is up.

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"msgx/client"
	"msgx/internal/store/storetest"
)

func ogFreePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// count says how many log lines contain s.
func (l *syncBuffer) count(s string) int { return strings.Count(l.String(), s) }

// ogServer is a running `msgx serve`.
type ogServer struct {
	t    *testing.T
	name string
	cmd  *exec.Cmd
	url  string
	logs *syncBuffer
	done chan struct{}
	err  error // the exit, once done is closed
}

// ogStart runs `msgx serve` with env added to this process's environment; it does not wait
// for the server to answer (see healthy).
func ogStart(t *testing.T, bin, name string, env ...string) *ogServer {
	t.Helper()
	addr := fmt.Sprintf("127.0.0.1:%d", ogFreePort(t))
	cmd := dieWithTest(exec.Command(bin, "serve"))
	cmd.Env = append(append(os.Environ(), "MSGX_HTTP_ADDR="+addr), env...)
	s := &ogServer{t: t, name: name, cmd: cmd, url: "http://" + addr, logs: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = s.logs, s.logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.err = cmd.Wait(); close(s.done) }()
	t.Cleanup(func() {
		s.cmd.Process.Kill()
		<-s.done
		if strings.Contains(s.logs.String(), "WARNING: DATA RACE") { // built with GOFLAGS=-race
			t.Errorf("%s reported a data race", s.name)
		}
		if t.Failed() {
			t.Logf("log of %s:\n%s", s.name, s.logs)
		}
	})
	return s
}

func (s *ogServer) exited() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// healthy waits until /healthz answers 200.
func (s *ogServer) healthy(within time.Duration) {
	s.t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if s.exited() {
			s.t.Fatalf("%s exited: %v", s.name, s.err)
		}
		c := s.api()
		code := answered(c)
		if _, err := c.Health(context.Background()); err == nil && code() == http.StatusOK {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.t.Fatalf("%s did not answer /healthz within %s", s.name, within)
}

// waitLog waits until the log holds want at least n times.
func (s *ogServer) waitLog(want string, n int, within time.Duration) {
	s.t.Helper()
	deadline := time.Now().Add(within)
	for s.logs.count(want) < n {
		if time.Now().After(deadline) {
			s.t.Fatalf("%s never logged %q %d time(s) within %s", s.name, want, n, within)
		}
		if s.exited() {
			s.t.Fatalf("%s exited (%v) before logging %q", s.name, s.err, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// exitCode waits for the process to end and returns its exit code.
func (s *ogServer) exitCode(within time.Duration) int {
	s.t.Helper()
	select {
	case <-s.done:
	case <-time.After(within):
		s.t.Fatalf("%s still runs after %s", s.name, within)
	}
	var ee *exec.ExitError
	if errors.As(s.err, &ee) {
		return ee.ExitCode()
	}
	if s.err != nil {
		s.t.Fatalf("%s: %v", s.name, s.err)
	}
	return 0
}

var ogClient = &http.Client{Timeout: 10 * time.Second}

// ogPosted is the answer to one POST /cminmsgs/send: its status and Retry-After header are
// what the outage tests check, so post sends it raw.
type ogPosted struct {
	code       int
	id         int64
	retryAfter string
	body       string
}

func (s *ogServer) post(body string) (ogPosted, error) {
	resp, err := ogClient.Post(s.url+"/cminmsgs/send", "application/xml", strings.NewReader(body))
	if err != nil {
		return ogPosted{}, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	p := ogPosted{code: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After"), body: string(b)}
	if p.code == 200 {
		if _, err := fmt.Sscanf(p.body, "%d", &p.id); err != nil {
			return p, fmt.Errorf("answer %q is not an id", p.body)
		}
	}
	return p, nil
}

// api is the typed client of s, with ogClient's timeout: a call during an outage fails
// instead of hanging.
func (s *ogServer) api() *client.Client {
	c := client.New(s.url, "")
	c.HTTP = ogClient
	return c
}

// succeededLines counts the "message SUCCEEDED" log lines per message id.
func (s *ogServer) succeededLines() map[int64]int {
	out := map[int64]int{}
	for _, line := range strings.Split(s.logs.String(), "\n") {
		var rec struct {
			Msg   string `json:"msg"`
			MsgID int64  `json:"msg_id"`
		}
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "message SUCCEEDED" {
			out[rec.MsgID]++
		}
	}
	return out
}

// ogAwaitAllFinal waits until no message is PENDING or FAILED, then checks that every id in
// ids is SUCCEEDED and that nothing is DEAD or SKIPPED.
func ogAwaitAllFinal(t *testing.T, s *ogServer, ids map[int64]bool, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	var st client.Status
	for {
		var err error
		if st, err = s.api().Status(t.Context()); err == nil && st.Counts["PENDING"]+st.Counts["FAILED"] == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("messages still waiting after %s: %v", within, st.Counts)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if st.Counts["DEAD"]+st.Counts["SKIPPED"] != 0 {
		t.Fatalf("counts after recovery: %v", st.Counts)
	}
	for id := range ids {
		if m, err := s.api().Message(t.Context(), id); err != nil || m.State != "SUCCEEDED" {
			t.Fatalf("message %d answered 200 is %q (%v)", id, m.State, err)
		}
	}
}

// ogPoster posts messages from a few clients until stopped, and keeps what was answered.
type ogPoster struct {
	mu       sync.Mutex
	accepted map[int64]string // id → kind
	refused  int              // 503 answers, each with Retry-After
	problems []string         // any other answer
	stop     chan struct{}
	wg       sync.WaitGroup
}

// ogPost starts clients posting to the servers in turn, each pausing between posts; body
// makes the n-th message and its kind.
func ogPost(clients int, pause time.Duration, servers []*ogServer, body func(n int) (string, string)) *ogPoster {
	p := &ogPoster{accepted: map[int64]string{}, stop: make(chan struct{})}
	var seq sync.Mutex
	n := 0
	next := func() int { seq.Lock(); defer seq.Unlock(); n++; return n }
	for c := 0; c < clients; c++ {
		p.wg.Go(func() {
			for {
				select {
				case <-p.stop:
					return
				case <-time.After(pause):
				}
				i := next()
				kind, text := body(i)
				s := servers[i%len(servers)]
				if s.exited() {
					continue
				}
				res, err := s.post(text)
				p.mu.Lock()
				switch {
				case err != nil:
					// A killed server or a cut connection: nothing was promised.
				case res.code == 200:
					p.accepted[res.id] = kind
				case res.code == 503 && res.retryAfter != "":
					p.refused++
				default:
					p.problems = append(p.problems, fmt.Sprintf("%d Retry-After=%q %s", res.code, res.retryAfter, res.body))
				}
				p.mu.Unlock()
			}
		})
	}
	return p
}

func (p *ogPoster) counts() (accepted, refused int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.accepted), p.refused
}

func (p *ogPoster) finish(t *testing.T) map[int64]string {
	t.Helper()
	close(p.stop)
	p.wg.Wait()
	if len(p.problems) > 0 {
		t.Fatalf("answers other than 200 or 503 with Retry-After: %q", p.problems)
	}
	return p.accepted
}

func ogWaitFor(t *testing.T, what string, within time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func ogRef(n int) (string, string) {
	return "ref", fmt.Sprintf(`<MSG><META><SNDR>AODB</SNDR><SEQN>%d</SEQN><DTTM>20261203081500</DTTM><TYPE>STTS</TYPE><STYP>ADD</STYP></META>`+
		`<RECS>1</RECS><STTS><STTC>Q%d</STTC><STTD>outage status %d</STTD></STTS></MSG>`, 7100000+n, n, n)
}

// privateMariaDB is a mariadbd of the test's own, on its own data directory and port, that
// the test stops and starts.
type privateMariaDB struct {
	t       *testing.T
	daemon  string
	dir     string
	port    int
	cmd     *exec.Cmd
	done    chan struct{}
	stderrs *syncBuffer
}

// newPrivateMariaDB creates a data directory with mariadb-install-db. It skips when MariaDB
// is not installed, unless MSGX_TEST_REQUIRE_SERVICES=1.
func newPrivateMariaDB(t *testing.T) *privateMariaDB {
	t.Helper()
	daemon, err := exec.LookPath("mariadbd")
	if err != nil {
		daemon, err = exec.LookPath("/usr/sbin/mariadbd")
	}
	install, ierr := exec.LookPath("mariadb-install-db")
	if err != nil || ierr != nil {
		if storetest.RequireServices() {
			t.Fatalf("mariadbd and mariadb-install-db are required (MSGX_TEST_REQUIRE_SERVICES=1): %v %v", err, ierr)
		}
		t.Skipf("mariadbd or mariadb-install-db not installed, skipping (set MSGX_TEST_REQUIRE_SERVICES=1 to fail instead): %v %v", err, ierr)
	}
	// A short directory: the socket path must fit in 108 bytes.
	dir, err := os.MkdirTemp("", "msgx-mdb")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	m := &privateMariaDB{t: t, daemon: daemon, dir: dir, port: ogFreePort(t), stderrs: &syncBuffer{}}
	args := []string{"--no-defaults", "--datadir=" + filepath.Join(dir, "data"), "--auth-root-authentication-method=normal"}
	if os.Geteuid() == 0 {
		args = append(args, "--user=root")
	}
	if out, err := exec.Command(install, args...).CombinedOutput(); err != nil {
		t.Fatalf("mariadb-install-db: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		if m.cmd != nil && !m.exited() {
			m.cmd.Process.Kill()
			<-m.done
		}
		if t.Failed() {
			t.Logf("mariadbd output:\n%s", m.stderrs)
		}
	})
	return m
}

func (m *privateMariaDB) exited() bool {
	select {
	case <-m.done:
		return true
	default:
		return false
	}
}

// start runs mariadbd on the data directory and waits until it answers.
func (m *privateMariaDB) start() {
	m.t.Helper()
	args := []string{"--no-defaults", "--datadir=" + filepath.Join(m.dir, "data"), "--socket=" + filepath.Join(m.dir, "sock"),
		fmt.Sprintf("--port=%d", m.port), "--bind-address=127.0.0.1", "--pid-file=" + filepath.Join(m.dir, "pid"),
		"--innodb-buffer-pool-size=32M", "--skip-log-bin"}
	if os.Geteuid() == 0 {
		args = append(args, "--user=root")
	}
	m.cmd = dieWithTest(exec.Command(m.daemon, args...))
	m.cmd.Stdout, m.cmd.Stderr = m.stderrs, m.stderrs
	if err := m.cmd.Start(); err != nil {
		m.t.Fatal(err)
	}
	m.done = make(chan struct{})
	go func() { m.cmd.Wait(); close(m.done) }()
	db, err := sql.Open("mysql", m.dsn(""))
	if err != nil {
		m.t.Fatal(err)
	}
	defer db.Close()
	ogWaitFor(m.t, "private mariadbd answers", 30*time.Second, func() bool {
		if m.exited() {
			m.t.Fatalf("mariadbd exited:\n%s", m.stderrs)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		return db.PingContext(ctx) == nil
	})
}

// stop sends SIGTERM and waits until mariadbd has exited.
func (m *privateMariaDB) stop() {
	m.t.Helper()
	m.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-m.done:
	case <-time.After(30 * time.Second):
		m.t.Fatal("mariadbd did not stop on SIGTERM")
	}
}

func (m *privateMariaDB) dsn(db string) string {
	return fmt.Sprintf("root@tcp(127.0.0.1:%d)/%s", m.port, db)
}

// TestOutageOfMariaDB runs msgx on a private mariadbd: msgx is started first and waits for
// the database; then, while clients post, mariadbd is stopped (SIGTERM) for longer than the
// lease and started again on the same data. Meanwhile the inbox answers 503 with Retry-After, the process stays up and
// its pump pauses without spinning; afterwards every message answered 200 is SUCCEEDED, once
// (each FLOP with exactly one event).
func TestOutageOfMariaDB(t *testing.T) {
	t.Parallel()
	m := newPrivateMariaDB(t)
	bin := binary // built once by TestMain
	env := []string{"MSGX_DATA_DIR=" + t.TempDir(), "MSGX_DATABASE_DRIVER=mysql", "MSGX_DATABASE_DSN=" + m.dsn("test"),
		"MSGX_PIPELINE_AUTOSTART=true", "MSGX_DATABASE_WAIT_TIMEOUT=40s", "MSGX_PIPELINE_POLL_INTERVAL=100ms"}

	// At start: the database is not up yet; serve waits, saying so at each try.
	s := ogStart(t, bin, "msgx", env...)
	s.waitLog("database not reachable; waiting for it", 2, 10*time.Second)
	m.start()
	s.healthy(15 * time.Second)
	s.waitLog("pump lease acquired", 1, 10*time.Second)

	snapshot, flop := ogFlightMessages()
	if res, err := s.post(snapshot); err != nil || res.code != 200 {
		t.Fatalf("snapshot: %+v %v", res, err)
	}
	p := ogPost(2, 20*time.Millisecond, []*ogServer{s}, flop)
	ogWaitFor(t, "30 messages accepted, 20 SUCCEEDED", 20*time.Second, func() bool {
		a, _ := p.counts()
		st, err := s.api().Status(t.Context())
		return a >= 30 && err == nil && st.Counts["SUCCEEDED"] >= 20
	})

	m.stop()
	stopped := time.Now()
	s.waitLog("pump and dispatcher paused", 1, 10*time.Second)
	res, err := s.post(`<MSG><META><SNDR>AODB</SNDR><SEQN>1</SEQN></META></MSG>`)
	if err != nil || res.code != 503 || res.retryAfter == "" {
		t.Fatalf("inbox during the outage: %+v %v, want 503 with Retry-After", res, err)
	}
	if resp, err := ogClient.Get(s.url + "/healthz"); err != nil || resp.StatusCode != 503 {
		t.Fatalf("healthz during the outage: %v %v, want 503", resp, err)
	} else {
		resp.Body.Close()
	}
	// No hot loop: in three quiet seconds the pump, dispatcher and lease keeper log a
	// handful of lines (the inbox logs each refused post, and the driver each dead
	// connection of its pool it finds).
	quiet := func() int {
		n := 0
		for _, line := range strings.Split(s.logs.String(), "\n") {
			if line != "" && !strings.Contains(line, "inbox commit failed") && !strings.Contains(line, `"mysql driver"`) {
				n++
			}
		}
		return n
	}
	before := quiet()
	time.Sleep(3 * time.Second) // the window measured: a negative check has nothing to wait for
	if n := quiet() - before; n > 10 {
		t.Fatalf("%d log lines in 3 s of outage: a hot loop?\n%s", n, s.logs)
	}
	if s.exited() {
		t.Fatalf("msgx exited during the outage: %v", s.err)
	}
	if _, refused := p.counts(); refused == 0 {
		t.Fatal("no client post was refused with 503 during the outage")
	}

	// Longer than the lease (15 s): the instance must re-take a lease that expired. The lease
	// runs on the wall clock of another process (and of mariadbd), so the test waits it out.
	time.Sleep(time.Until(stopped.Add(17 * time.Second)))
	if s.exited() {
		t.Fatalf("msgx exited during the outage: %v", s.err)
	}
	m.start()
	s.waitLog("pump lease acquired", 2, 20*time.Second)
	s.healthy(10 * time.Second)
	back, _ := p.counts()
	ogWaitFor(t, "posts going on after the return", 10*time.Second, func() bool { n, _ := p.counts(); return n >= back+10 })
	accepted := p.finish(t)
	ids := map[int64]bool{}
	for id := range accepted {
		ids[id] = true
	}
	for i := 0; i < 10; i++ { // and every post after the return is stored
		_, body := ogRef(100000 + i)
		res, err := s.post(body)
		if err != nil || res.code != 200 {
			t.Fatalf("post after the database returned: %+v %v", res, err)
		}
		ids[res.id] = true
	}
	ogAwaitAllFinal(t, s, ids, 30*time.Second)
	// Once: no message was logged SUCCEEDED twice (one whose commit's answer was lost as
	// the server went down has no line: its SUCCEEDED came with the commit), and each FLOP
	// committed exactly one event.
	lines := s.succeededLines()
	for id := range ids {
		if lines[id] > 1 {
			t.Fatalf("message %d logged SUCCEEDED %d times, want once", id, lines[id])
		}
	}
	ogOneEventPerFlop(t, s, accepted)
	s.cmd.Process.Signal(syscall.SIGTERM)
	if code := s.exitCode(20 * time.Second); code != 0 {
		t.Fatalf("SIGTERM after the outage: exit code %d", code)
	}
	_, refused := p.counts()
	t.Logf("%d messages answered 200 and SUCCEEDED; %d posts refused with 503 during the outage", len(ids), refused)
}

// TestOutageAtStartExitCodes checks the distinct exit codes of a start that cannot go on:
// 5 after database.wait-timeout without a database, 4 for a bad configuration value.
func TestOutageAtStartExitCodes(t *testing.T) {
	t.Parallel()
	bin := binary // built once by TestMain
	closed := ogFreePort(t)
	s := ogStart(t, bin, "no database", "MSGX_DATA_DIR="+t.TempDir(), "MSGX_DATABASE_DRIVER=mysql",
		fmt.Sprintf("MSGX_DATABASE_DSN=root@tcp(127.0.0.1:%d)/msgx", closed), "MSGX_PIPELINE_AUTOSTART=true", "MSGX_DATABASE_WAIT_TIMEOUT=2s")
	if code := s.exitCode(15 * time.Second); code != 5 {
		t.Fatalf("no database for 2 s: exit code %d, want 5\n%s", code, s.logs)
	}
	if n := s.logs.count("database not reachable; waiting for it"); n < 2 {
		t.Fatalf("%d tries logged, want one line per try\n%s", n, s.logs)
	}
	if !strings.Contains(s.logs.String(), "gave up waiting for the database") {
		t.Fatalf("no word of giving up:\n%s", s.logs)
	}
	bad := ogStart(t, bin, "bad config", "MSGX_DATA_DIR="+t.TempDir(), "MSGX_DATABASE_WAIT_TIMEOUT=-1s")
	if code := bad.exitCode(10 * time.Second); code != 4 || !strings.Contains(bad.logs.String(), "database.wait-timeout") {
		t.Fatalf("bad config: exit code %d, want 4 naming the key\n%s", code, bad.logs)
	}
}

// ogFlightMessages returns a day's snapshot with one flight tomorrow and a FLOP maker that
// changes that flight's remark, so each FLOP commits exactly one KAFKA_FLOP event.
func ogFlightMessages() (snapshot string, flop func(n int) (string, string)) {
	zone, _ := time.LoadLocation("Asia/Shanghai")
	now := time.Now().In(zone)
	day := time.Date(now.Year(), now.Month(), now.Day()+1, 0, 0, 0, 0, zone)
	sodt := strings.ToUpper(day.Add(22 * time.Hour).Format("02Jan061504"))
	snapshot = fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8"?>
<MSG><META><SNDR>AODB</SNDR><SEQN>7200000</SEQN><DTTM>20261203000000</DTTM><TYPE>SCHD</TYPE><STYP>DNLD</STYP></META>
<SCHD><RECS>1</RECS><FLTR><FLID>97001</FLID><ALCD>MU</ALCD><FLNO>MU5101</FLNO><MVIN>D</MVIN><SODT>%s</SODT>`+
		`<FLTY>W</FLTY><FLIN>D</FLIN><ACFT>320</ACFT><STND>201</STND></FLTR></SCHD></MSG>`, sodt)
	flop = func(n int) (string, string) {
		if n%3 == 0 {
			return ogRef(n)
		}
		return "flop", fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8"?>
<MSG><META><SNDR>AODB</SNDR><SEQN>%d</SEQN><DTTM>20261203000000</DTTM><TYPE>FLOP</TYPE><STYP>REMC</STYP></META>
<FLOP><FLID>97001</FLID><FFID>X</FFID><REMC>take-over remark %d</REMC></FLOP></MSG>`, 7300000+n, n)
	}
	return snapshot, flop
}

// ogOneEventPerFlop waits until every KAFKA_FLOP event is SENT, then checks that each FLOP
// message of accepted has exactly one and that no message has more.
func ogOneEventPerFlop(t *testing.T, s *ogServer, accepted map[int64]string) {
	t.Helper()
	var all []client.Event
	ogWaitFor(t, "every KAFKA_FLOP event SENT", 20*time.Second, func() bool {
		all = all[:0]
		for after := int64(0); ; {
			page, err := s.api().Events(t.Context(), url.Values{"order": {"asc"}, "target": {"KAFKA_FLOP"}, "limit": {"500"}, "after": {fmt.Sprint(after)}})
			if err != nil {
				return false
			}
			if len(page.Events) == 0 {
				break
			}
			all = append(all, page.Events...)
			after = page.Events[len(page.Events)-1].EventID
		}
		for _, e := range all {
			if e.State != "SENT" {
				return false
			}
		}
		return true
	})
	perMsg := map[int64]int{}
	for _, e := range all {
		perMsg[e.MsgID]++
	}
	for id, kind := range accepted {
		if kind == "flop" && perMsg[id] != 1 {
			t.Fatalf("FLOP message %d has %d KAFKA_FLOP events, want exactly 1", id, perMsg[id])
		}
	}
	for id, n := range perMsg {
		if n != 1 {
			t.Fatalf("message %d has %d KAFKA_FLOP events", id, n)
		}
	}
}

// TestTakeOverAfterKillNine runs two `msgx serve` with the pump on against one MariaDB
// database: the second stands by, serving the inbox; the first is killed with SIGKILL while
// clients post to both; the second takes the lease over within the lease time and every
// message answered 200 is SUCCEEDED once, with exactly one event per FLOP.
func TestTakeOverAfterKillNine(t *testing.T) {
	t.Parallel()
	dsn := storetest.MySQLDSN(t) // skips or fails without MariaDB, as the services rule says
	bin := binary                // built once by TestMain
	env := []string{"MSGX_DATA_DIR=" + t.TempDir(), "MSGX_DATABASE_DRIVER=mysql", "MSGX_DATABASE_DSN=" + dsn,
		"MSGX_PIPELINE_AUTOSTART=true", "MSGX_SCHD_FLUSH_PERIOD=200ms", "MSGX_PIPELINE_POLL_INTERVAL=100ms"}
	a := ogStart(t, bin, "first", env...)
	a.healthy(20 * time.Second)
	a.waitLog("pump lease acquired", 1, 10*time.Second)
	b := ogStart(t, bin, "second", env...)
	b.healthy(20 * time.Second)
	b.waitLog("standing by", 1, 10*time.Second)
	if st, err := b.api().Status(t.Context()); err != nil || st.PumpRunning || !strings.HasPrefix(st.PumpState, "standby") {
		t.Fatalf("status of the standby: %+v %v", st, err)
	}

	snapshot, flop := ogFlightMessages()
	if res, err := a.post(snapshot); err != nil || res.code != 200 {
		t.Fatalf("snapshot: %+v %v", res, err)
	}
	p := ogPost(4, 10*time.Millisecond, []*ogServer{a, b}, flop)
	ogWaitFor(t, "150 messages accepted", 30*time.Second, func() bool { n, _ := p.counts(); return n >= 150 })

	a.cmd.Process.Kill() // SIGKILL: no shutdown, the lease row is left behind
	<-a.done
	killed := time.Now()
	b.waitLog("took over the pump lease of a dead instance", 1, 20*time.Second)
	took := time.Since(killed)
	if took > 15*time.Second {
		t.Fatalf("take-over %s after the kill, more than the lease time", took)
	}
	sofar, _ := p.counts()
	ogWaitFor(t, "the standby's inbox going on taking posts", 10*time.Second, func() bool { n, _ := p.counts(); return n >= sofar+10 })
	accepted := p.finish(t)
	ids := map[int64]bool{}
	flops := 0
	for id, kind := range accepted {
		ids[id] = true
		if kind == "flop" {
			flops++
		}
	}
	ogAwaitAllFinal(t, b, ids, 30*time.Second)

	// Exactly once: no message was logged SUCCEEDED by both, nor twice by one (a message
	// committed just before the kill may have no line at all), and each FLOP has one event.
	la, lb := a.succeededLines(), b.succeededLines()
	for id := range ids {
		if la[id]+lb[id] > 1 {
			t.Fatalf("message %d logged SUCCEEDED %d times by the first and %d by the second", id, la[id], lb[id])
		}
	}
	ogOneEventPerFlop(t, b, accepted)
	t.Logf("%d messages answered (%d FLOPs) across the kill; the standby took over %s after it", len(ids), flops, took.Round(time.Millisecond))
}

// TestTakeOverImpossibleOnSQLite: a SQLite file has one host, so a second instance with the
// pump on does not stand by: it exits with code 3, naming the holder. Once the holder is
// killed, a new instance takes its lease over at once.
func TestTakeOverImpossibleOnSQLite(t *testing.T) {
	t.Parallel()
	bin := binary // built once by TestMain
	data := t.TempDir()
	a := ogStart(t, bin, "first", "MSGX_DATA_DIR="+data)
	a.healthy(20 * time.Second)
	b := ogStart(t, bin, "second", "MSGX_DATA_DIR="+data)
	if code := b.exitCode(15 * time.Second); code != 3 || !strings.Contains(b.logs.String(), "holds the pump lease") {
		t.Fatalf("second instance on one SQLite file: exit code %d, want 3\n%s", code, b.logs)
	}
	a.cmd.Process.Kill()
	<-a.done
	c := ogStart(t, bin, "third", "MSGX_DATA_DIR="+data)
	c.healthy(20 * time.Second)
	c.waitLog("took over the pump lease of a dead instance", 1, 5*time.Second)
}
