package main_test

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"msgx/internal/pipeline"
	"msgx/internal/store"
	"msgx/internal/store/storetest"
)

// galeraNodes is one local three-node cluster of scripts/galera-cluster.sh, on its own ports
// and in its own directory: a test kills its nodes, and another user of a shared cluster
// killing one at the same time would leave the third without quorum. Node N serves SQL on
// ports[N-1].
type galeraNodes struct {
	ports []int
	dir   string
}

// The node kill test's cluster (MSGX_TEST_GALERA_PORT moves it) and the crash test's, 100
// ports above it: the script's replication ports (+110 .. +132) of either meet no port of the
// other, and neither meets the script's default cluster (13301), so a shared cluster some user
// runs, the node kill test and the crash test can all run on one machine at once.
var (
	killsCluster = newGaleraNodes(0, "msgx-galera-kills")
	crashCluster = newGaleraNodes(100, "msgx-galera-crash")
)

// newGaleraNodes is the cluster offset ports above the node kill test's, in directory dir
// (with the port added when MSGX_TEST_GALERA_PORT moved it, so a moved cluster and one on the
// default ports never share a directory).
func newGaleraNodes(offset int, dir string) *galeraNodes {
	p := 13401
	if v, err := strconv.Atoi(os.Getenv("MSGX_TEST_GALERA_PORT")); err == nil {
		p = v
		dir += "-" + strconv.Itoa(p+offset)
	}
	p += offset
	return &galeraNodes{ports: []int{p, p + 1, p + 2}, dir: filepath.Join(os.TempDir(), dir)}
}

// script runs scripts/galera-cluster.sh with args on this cluster, bounded by limit.
func (g *galeraNodes) script(t *testing.T, limit time.Duration, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join("..", "..", "scripts", "galera-cluster.sh"), args...)
	cmd.Env = append(os.Environ(), "GALERA_PORT="+strconv.Itoa(g.ports[0]), "GALERA_DIR="+g.dir)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// cannotStart ends t when its local cluster could not start (a machine where the nodes cannot
// bind their ports or transfer state, say): it skips, saying why, unless
// MSGX_TEST_REQUIRE_SERVICES=1, where it fails.
func cannotStart(t *testing.T, why string) {
	t.Helper()
	if storetest.RequireServices() {
		t.Fatalf("the local Galera cluster is required (MSGX_TEST_REQUIRE_SERVICES=1) but did not start: %s", why)
	}
	t.Skipf("skipping: the local Galera cluster did not start (set MSGX_TEST_REQUIRE_SERVICES=1 to fail instead): %s", why)
}

// galeraMu gives the local clusters to one test at a time: a test kills the nodes of its
// cluster, and two clusters of three nodes each under load at once are more than a small CI
// machine runs without timeouts.
var galeraMu sync.Mutex

// hold makes sure the three-node cluster is up and synced, bringing it up when it is not (and
// down again at the end, then), and holds it for t until t ends (galeraMu). It skips when
// MariaDB or galera-4 is not installed, unless MSGX_TEST_REQUIRE_SERVICES=1.
func (g *galeraNodes) hold(t *testing.T) {
	t.Helper()
	for _, f := range []string{"/usr/sbin/mariadbd", "/usr/lib/galera/libgalera_smm.so"} {
		if _, err := os.Stat(f); err != nil {
			if storetest.RequireServices() {
				t.Fatalf("%s is required for the Galera test (MSGX_TEST_REQUIRE_SERVICES=1): %v", f, err)
			}
			t.Skipf("skipping: %s is not installed (mariadb-server and galera-4 run the local cluster)", f)
		}
	}
	galeraMu.Lock()
	t.Cleanup(galeraMu.Unlock)
	out, err := g.script(t, 30*time.Second, "status")
	if err != nil {
		t.Fatalf("galera-cluster.sh status: %v\n%s", err, out)
	}
	if strings.Count(out, " down") == len(g.ports) {
		// Nobody runs it: ours to bring up, and to take down at the end.
		if out, err := g.script(t, 4*time.Minute, "up"); err != nil {
			g.script(t, 2*time.Minute, "down")
			cannotStart(t, fmt.Sprintf("galera-cluster.sh up: %v\n%s", err, out))
		}
		t.Cleanup(func() { g.script(t, 2*time.Minute, "down") })
		return
	}
	// Some node is down or joining (a run that ended in the middle): start it alone, since up
	// would bootstrap a new cluster from node 1 if node 1 were the one down.
	for i, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if !strings.Contains(line, "state=Synced") {
			if out, err := g.script(t, 3*time.Minute, "start", strconv.Itoa(i+1)); err != nil {
				cannotStart(t, fmt.Sprintf("galera-cluster.sh start %d: %v\n%s", i+1, err, out))
			}
		}
	}
}

// database creates a private database on the cluster, dropped at the end, and returns its DSN
// (on node 1's address; msgx takes its nodes from database.hosts).
func (g *galeraNodes) database(t *testing.T) string {
	t.Helper()
	name := fmt.Sprintf("msgx_galera_%d_%d", time.Now().UnixNano()%1e9, rand.IntN(1e6))
	var admin *sql.DB
	var err error
	for _, p := range g.ports {
		if admin, err = sql.Open("mysql", fmt.Sprintf("root@tcp(127.0.0.1:%d)/", p)); err == nil {
			if _, err = admin.Exec("CREATE DATABASE " + name + " CHARACTER SET utf8mb4"); err == nil {
				break
			}
			admin.Close()
		}
	}
	if err != nil {
		t.Fatalf("create database %s on the Galera cluster: %v", name, err)
	}
	t.Cleanup(func() {
		admin.Exec("DROP DATABASE " + name)
		admin.Close()
	})
	return fmt.Sprintf("root@tcp(127.0.0.1:%d)/%s", g.ports[0], name)
}

// hostsFrom lists the cluster's nodes starting with node first (1..3), in order.
func (g *galeraNodes) hostsFrom(first int) string { return g.hostsStep(first, 1) }

// hostsStep lists the cluster's nodes starting with node first (1..3), step apart (1 in
// order, -1 in reverse).
func (g *galeraNodes) hostsStep(first, step int) string {
	var hs []string
	n := len(g.ports)
	for i := range g.ports {
		hs = append(hs, fmt.Sprintf("127.0.0.1:%d", g.ports[((first-1+step*i)%n+n)%n]))
	}
	return strings.Join(hs, ",")
}

var nodeGauge = regexp.MustCompile(`msgx_db_node\{node="127\.0\.0\.1:(\d+)"\} 1`)
var failoverCounter = regexp.MustCompile(`(?m)^msgx_db_failovers_total\{reason="failed"\} (\d+)`)

// dbNode reads from s's metrics the node (1..3) of g it uses and how often it moved.
func (s *server) dbNode(g *galeraNodes) (node int, failovers int) {
	ctx := context.Background()
	b, err := s.api().Metrics(ctx)
	if err != nil {
		return 0, -1
	}
	if m := nodeGauge.FindStringSubmatch(b); m != nil {
		p, _ := strconv.Atoi(m[1])
		node = p - g.ports[0] + 1
	}
	if m := failoverCounter.FindStringSubmatch(b); m != nil {
		failovers, _ = strconv.Atoi(m[1])
	}
	return node, failovers
}

// finished is how many messages s's status counts SUCCEEDED or SKIPPED (-1: no answer).
func (s *server) finished() int {
	ctx := context.Background()
	st, err := s.api().Status(ctx)
	if err != nil {
		return -1
	}
	return st.Counts["SUCCEEDED"] + st.Counts["SKIPPED"]
}

// waitUntil polls cond every 100 ms until it holds or limit passes; it says whether it held.
func waitUntil(limit time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

// galeraAck is one message the inbox acknowledged: sender f's k-th message, or its deliberate
// second copy.
type galeraAck struct {
	id   int64
	f, k int
	dup  bool
}

// galeraLoad is the senders: one per flight, each sending its flight's remarks in order, the
// next only once the previous was acknowledged, to the two inbox nodes in turn, every fourth
// message twice.
type galeraLoad struct {
	inboxes []*server // under mu: a restarted server takes its place (setInbox)
	flids   []int64
	stop    chan struct{}
	wg      sync.WaitGroup
	mu      sync.Mutex
	acks    []galeraAck
	refused int           // answers other than 200 (503 while a node fails over) and lost connections
	posts   int           // every post tried
	slowest time.Duration // the longest a post waited for its answer
	window  loadWindow    // the same since the last cut (a hang's figures)
}

// loadWindow is the senders' figures over a stretch of the run.
type loadWindow struct {
	posts, refused int
	slowest        time.Duration
}

// cut returns the figures since the last cut and starts a new stretch.
func (l *galeraLoad) cut() loadWindow {
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.window
	l.window = loadWindow{}
	return w
}

// String is the figures of issue 33: the slowest answer and the share of posts refused.
func (w loadWindow) String() string {
	return fmt.Sprintf("slowest answer to a sender %s; %d of %d posts refused (%.2f%%)",
		w.slowest.Round(time.Millisecond), w.refused, w.posts, 100*float64(w.refused)/float64(max(w.posts, 1)))
}

func galeraFlop(f, k int, flid int64) string {
	return e2eFlop(980000+f*10000+k, "REMC", flid, fmt.Sprintf("<REMC>g%d-%d</REMC>", f, k))
}

var galeraRemark = regexp.MustCompile(`<REMC>g(\d+)-(\d+)</REMC>`)

func (l *galeraLoad) run() {
	for f, flid := range l.flids {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for k := 1; ; k++ {
				body := galeraFlop(f, k, flid)
				copies := 1
				if k%4 == 0 {
					copies = 2
				}
				for c := 0; c < copies; c++ {
					id, ok := l.send(body, f+k+c)
					if !ok {
						return
					}
					l.mu.Lock()
					l.acks = append(l.acks, galeraAck{id: id, f: f, k: k, dup: c > 0})
					l.mu.Unlock()
				}
			}
		}()
	}
}

// setInbox makes s the senders' i-th inbox, in place of one that was killed.
func (l *galeraLoad) setInbox(i int, s *server) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.inboxes[i] = s
}

// send posts body until an inbox acknowledges it (starting with inbox turn%2, then the other
// one); false when the load was stopped first.
func (l *galeraLoad) send(body string, turn int) (int64, bool) {
	hc := &http.Client{Timeout: 15 * time.Second}
	for try := turn; ; try++ {
		select {
		case <-l.stop:
			return 0, false
		default:
		}
		l.mu.Lock()
		s := l.inboxes[try%len(l.inboxes)]
		l.mu.Unlock()
		sent := time.Now()
		resp, err := hc.Post(s.url+"/cminmsgs/send", "application/xml", strings.NewReader(body))
		took := time.Since(sent)
		l.mu.Lock()
		l.posts++
		l.slowest = max(l.slowest, took)
		l.window.posts++
		l.window.slowest = max(l.window.slowest, took)
		l.mu.Unlock()
		if err == nil {
			var id int64
			_, scanErr := fmt.Fscan(resp.Body, &id)
			resp.Body.Close()
			if resp.StatusCode == 200 && scanErr == nil {
				return id, true
			}
		}
		l.mu.Lock()
		l.refused++
		l.window.refused++
		l.mu.Unlock()
		time.Sleep(100 * time.Millisecond) // a sender's pause before it tries again, not a wait for a state
	}
}

// TestGaleraNodeKills runs msgx on a three-node MariaDB Galera cluster (scripts/galera-cluster.sh):
// the pump on node 1 and two inbox nodes on nodes 2 and 3, each with all three nodes in
// database.hosts, under load with duplicates. It kills -9 the node the pump uses (and every
// third time the node an inbox uses, when that is another one) and restarts it, at least 10 times (30 with
// MSGX_TEST_LONG=1), then checks that every acknowledged message was processed exactly once
// (one SUCCEEDED per message, every other copy SKIPPED), in order per flight, that each
// flight's version counts the messages that changed it, and that every event exists once and
// reached its target in order. It needs no SQLite twin: it is about the database cluster.
func TestGaleraNodeKills(t *testing.T) {
	t.Parallel()
	g := killsCluster
	g.hold(t)
	began := time.Now()
	dsn := g.database(t)
	data := t.TempDir()
	// The inboxes list the nodes in reverse: a node each shares with the pump sends them the
	// other way when it dies, so they part and a later kill can hit an inbox's node alone (in
	// the same order all three meet on one node after two kills, as a connection only moves
	// when its node fails, and stay there).
	env := func(first int, pump bool) []string { return galeraEnv(g, dsn, first, pump) }
	pump := start(t, data, env(1, true)...)
	inboxes := []*server{start(t, data, env(2, false)...), start(t, data, env(3, false)...)}

	snapshot, flids := galeraFlights(t, 6)
	pump.await(pump.post(snapshot), "snapshot SUCCEEDED", state("SUCCEEDED", ""))

	load := &galeraLoad{inboxes: inboxes, flids: flids, stop: make(chan struct{})}
	load.run()
	kills, inboxKills := galeraKills(t, g, pump, inboxes, galeraKillCount())
	close(load.stop)
	load.wg.Wait()
	db := g.drained(t, dsn, dumper{pump})
	checkGaleraRun(t, db, load, data)
	_, failovers := pump.dbNode(g)
	t.Logf("%d node kills (%d of an inbox's node only) in %s; %d messages acknowledged, %d refusals retried by the senders; the pump failed over %d times",
		kills, inboxKills, time.Since(began).Round(time.Second), len(load.acks), load.refused, failovers)
	// The figures of issue 33 (reported, not asserted: the project measures speed in benchmarks).
	t.Logf("slowest answer to a sender %s; %d of %d posts refused (%.2f%%), %.1f refusals per node lost",
		load.slowest.Round(time.Millisecond), load.refused, load.posts, 100*float64(load.refused)/float64(max(load.posts, 1)),
		float64(load.refused)/float64(max(kills, 1)))
	if inboxKills == 0 {
		t.Error("no kill hit an inbox's node alone")
	}
}

// dumper shows a server's output with a dump of its goroutines at the end: when the pump
// stalls, what each goroutine waits for (a statement that never returns, a lock, a channel).
type dumper struct{ s *server }

// String sends the server SIGQUIT (the Go runtime prints every goroutine's stack and exits)
// and returns its output.
func (d dumper) String() string {
	if d.s.cmd.ProcessState == nil {
		d.s.cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case err := <-d.s.done:
			d.s.done <- err
		case <-time.After(10 * time.Second):
		}
	}
	return d.s.logs.String()
}

var hungCounter = regexp.MustCompile(`(?m)^msgx_db_failovers_total\{reason="hung"\} (\d+)`)

// hungMoves is how often s moved off a node that did not answer its probe (-1: no answer).
func (s *server) hungMoves() int {
	ctx := context.Background()
	b, err := s.api().Metrics(ctx)
	if err != nil {
		return -1
	}
	if m := hungCounter.FindStringSubmatch(b); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n
	}
	return 0
}

// metricsTime is how long s takes to answer GET /metrics (5 s at most) and its error.
func (s *server) metricsTime() (time.Duration, error) {
	hc := &http.Client{Timeout: 5 * time.Second}
	began := time.Now()
	resp, err := hc.Get(s.url + "/metrics")
	if err == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err == nil && resp.StatusCode != 200 {
			err = fmt.Errorf("status %s", resp.Status)
		}
	}
	return time.Since(began), err
}

// whole waits until every node of g says it is synced in a primary component of all three.
func (g *galeraNodes) whole(t *testing.T) {
	t.Helper()
	var out string
	if !waitUntil(2*time.Minute, func() bool {
		out, _ = g.script(t, 30*time.Second, "status")
		return strings.Count(out, "size=3 state=Synced") == len(g.ports)
	}) {
		t.Fatalf("the Galera cluster is not whole again:\n%s", out)
	}
}

// galeraEnv is the environment of a msgx of the node tests on g's database dsn: the pump with
// the nodes from first in order, an inbox in reverse.
func galeraEnv(g *galeraNodes, dsn string, first int, pump bool) []string {
	step := -1
	if pump {
		step = 1
	}
	return []string{"MSGX_DATABASE_DRIVER=mysql", "MSGX_DATABASE_DSN=" + dsn, "MSGX_DATABASE_HOSTS=" + g.hostsStep(first, step),
		"MSGX_PIPELINE_AUTOSTART=" + strconv.FormatBool(pump), "MSGX_SCHD_FLUSH_PERIOD=200ms"}
}

// TestGaleraNodeHang is TestGaleraNodeKills with nodes that hang instead of dying (issue 33,
// item 5): under the same load it stops (SIGSTOP) the node the pump uses for 20 s, then the
// node an inbox uses that the pump does not, and resumes each (SIGCONT; it rejoins by IST).
// msgx must leave a hung node within seconds: the pump moves off it (its probe marks it down)
// and goes on working during the hang, and every msgx answers GET /metrics within 1 s all the
// while. At the end nothing is lost, doubled or out of order (checkGaleraRun). The slowest
// answer a sender waited for and the share of posts refused are reported per hang against the
// issue's goal (at most 5 s, under 1 %), and asserted only loosely: the slowest below the
// senders' 15 s (the old behaviour was 60 s).
func TestGaleraNodeHang(t *testing.T) {
	t.Parallel()
	g := killsCluster
	g.hold(t)
	began := time.Now()
	dsn := g.database(t)
	data := t.TempDir()
	pump := start(t, data, galeraEnv(g, dsn, 1, true)...)
	inboxes := []*server{start(t, data, galeraEnv(g, dsn, 2, false)...), start(t, data, galeraEnv(g, dsn, 3, false)...)}
	all := append([]*server{pump}, inboxes...)

	snapshot, flids := galeraFlights(t, 6)
	pump.await(pump.post(snapshot), "snapshot SUCCEEDED", state("SUCCEEDED", ""))
	load := &galeraLoad{inboxes: inboxes, flids: flids, stop: make(chan struct{})}
	load.run()
	const hang = 20 * time.Second
	var report []string
	for round, whose := range []string{"the pump's", "an inbox's"} {
		before := pump.finished()
		if !waitUntil(time.Minute, func() bool { return pump.finished() >= before+10 }) {
			t.Fatalf("hang %d: the pump made no progress before it (%d finished)\n%s", round+1, pump.finished(), dumper{pump})
		}
		// A node that rejoined (the last hang's) is synced before the cluster's other nodes
		// have it in their view: hanging another one meanwhile would leave a node alone,
		// without quorum, which no client can help.
		g.whole(t)
		node, _ := pump.dbNode(g)
		victim, hit := node, pump
		if round == 1 {
			victim = 0
			for _, s := range inboxes {
				if in, _ := s.dbNode(g); in != 0 && in != node {
					victim, hit = in, s
				}
			}
			if victim == 0 {
				t.Fatalf("hang 2: every inbox uses the pump's node %d", node)
			}
		}
		if victim == 0 {
			t.Fatalf("hang %d: the pump's metrics name no database node\n%s", round+1, pump.logs)
		}
		moves := hit.hungMoves()
		load.cut()
		if out, err := g.script(t, 30*time.Second, "hang", strconv.Itoa(victim)); err != nil {
			t.Fatalf("hang node %d: %v\n%s", victim, err, out)
		}
		hungAt := time.Now()
		resumed := false
		resume := func() {
			if !resumed {
				resumed = true
				if out, err := g.script(t, 3*time.Minute, "resume", strconv.Itoa(victim)); err != nil {
					t.Errorf("resume node %d: %v\n%s", victim, err, out)
				}
			}
		}
		t.Cleanup(resume) // a node left stopped would hold the next test's cluster
		during := pump.finished()
		var slowMetrics time.Duration
		for time.Since(hungAt) < hang {
			for i, s := range all {
				took, err := s.metricsTime()
				slowMetrics = max(slowMetrics, took)
				if err != nil || took > time.Second {
					t.Errorf("hang %d, %s after it began: msgx %d answered /metrics in %s (%v), want within 1 s",
						round+1, time.Since(hungAt).Round(100*time.Millisecond), i, took.Round(time.Millisecond), err)
				}
			}
			time.Sleep(250 * time.Millisecond)
		}
		left, _ := hit.dbNode(g)
		moved := hit.hungMoves()
		progress := pump.finished() - during
		resume()
		w := load.cut()
		line := fmt.Sprintf("hang %d (%s node %d, %s): %s; msgx moved to node %d (probe downs %d→%d); the pump finished %d messages during the hang; slowest /metrics %s",
			round+1, whose, victim, hang, w, left, moves, moved, progress, slowMetrics.Round(time.Millisecond))
		t.Log(line)
		report = append(report, line)
		if left == victim || moved <= moves {
			t.Errorf("hang %d: msgx stayed on the hung node %d (now node %d, probe downs %d→%d)\n%s", round+1, victim, left, moves, moved, hit.logs)
		}
		if progress < 10 {
			t.Errorf("hang %d: the pump finished only %d messages during the %s hang\n%s", round+1, progress, hang, dumper{pump})
		}
		if w.slowest >= 15*time.Second {
			t.Errorf("hang %d: a sender waited %s for its answer, want well below the old 60 s (under the senders' 15 s)", round+1, w.slowest.Round(time.Millisecond))
		}
	}
	close(load.stop)
	load.wg.Wait()
	db := g.drained(t, dsn, dumper{pump})
	checkGaleraRun(t, db, load, data)
	t.Logf("2 hangs in %s; %d messages acknowledged; issue 33's goal per node lost: no sender waits more than 5 s, under 1 %% refused:\n%s",
		time.Since(began).Round(time.Second), len(load.acks), strings.Join(report, "\n"))
}

// galeraKillCount is how many kills a Galera test makes: 10, or 30 with MSGX_TEST_LONG=1.
func galeraKillCount() int {
	if os.Getenv("MSGX_TEST_LONG") != "" {
		return 30
	}
	return 10
}

// drained opens the test's database through the cluster's nodes (closed when t ends) and
// waits until every message finished and every event was sent; logs (the msgx that ran the
// pump) are shown when that does not come.
func (g *galeraNodes) drained(t *testing.T, dsn string, logs fmt.Stringer) *store.DB {
	t.Helper()
	db, err := store.OpenWith(context.Background(), "mysql", dsn, store.OpenOptions{Hosts: strings.Split(g.hostsFrom(1), ",")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	var open int
	var pending int64
	if !waitUntil(2*time.Minute, func() bool {
		db.SQL.QueryRow(`SELECT COUNT(*) FROM PROC_STATE WHERE STATE NOT IN ('SUCCEEDED', 'SKIPPED')`).Scan(&open)
		counts, err := db.Outbox.EventCounts(context.Background())
		pending = 0
		for _, c := range counts {
			if c.State != pipeline.EventSent {
				pending += c.Count
			}
		}
		return err == nil && open == 0 && pending == 0
	}) {
		t.Fatalf("after the kills: %d messages not finished, %d events not sent\n%s", open, pending, logs)
	}
	return db
}

// galeraFlights is the snapshot that opens the senders' flights (one sender each), and their
// FLIDs.
func galeraFlights(t *testing.T, flights int) (snapshot string, flids []int64) {
	day := tomorrow(t)
	var fltrs []string
	for f := range flights {
		flids = append(flids, int64(98001+f))
		fltrs = append(fltrs, e2eFltr(int64(98001+f), fmt.Sprintf("CA18%02d", f), "D", day.Add(time.Duration(10+f)*time.Hour), ""))
	}
	return e2eSchd(979999, fltrs...), flids
}

// galeraKills kills -9 and restarts Galera nodes want times under load: the node the pump
// uses, and every third time the node an inbox uses when that is another one. After
// each kill it waits until the pump works again (it moved to another node when it was the
// pump's) before restarting the node. It returns the number of kills, and how many of them
// were of an inbox's node only.
func galeraKills(t *testing.T, g *galeraNodes, pump *server, inboxes []*server, want int) (kills, inboxKills int) {
	t.Helper()
	for kills < want {
		before := pump.finished()
		if !waitUntil(time.Minute, func() bool { return pump.finished() >= before+10 }) {
			t.Fatalf("kill %d: the pump made no progress (%d finished)\n%s", kills, pump.finished(), dumper{pump})
		}
		node, moves := pump.dbNode(g)
		victim := node
		for _, s := range inboxes {
			if in, _ := s.dbNode(g); kills%3 == 2 && victim == node && in != 0 && in != node {
				victim = in
			}
		}
		if victim == 0 {
			t.Fatalf("kill %d: the pump's metrics name no database node\n%s", kills, pump.logs)
		}
		if out, err := g.script(t, 30*time.Second, "kill", strconv.Itoa(victim)); err != nil {
			t.Fatalf("kill node %d: %v\n%s", victim, err, out)
		}
		kills++
		if victim == node {
			var to int
			if !waitUntil(time.Minute, func() bool { n, m := pump.dbNode(g); to = n; return m > moves && n != victim && n != 0 }) {
				t.Fatalf("kill %d of node %d: the pump did not move to another node\n%s", kills, victim, pump.logs)
			}
			moved := fmt.Sprintf(`"node":"127.0.0.1:%d"`, g.ports[to-1])
			if !waitUntil(10*time.Second, func() bool { return strings.Contains(pump.logs.String(), moved) }) {
				t.Fatalf("kill %d of node %d: the log does not name node %d the pump moved to\n%s", kills, victim, to, pump.logs)
			}
		} else {
			inboxKills++
		}
		after := pump.finished()
		if !waitUntil(time.Minute, func() bool { return pump.finished() >= after+10 }) {
			t.Fatalf("kill %d of node %d: the pump made no progress afterwards\n%s", kills, victim, dumper{pump})
		}
		if out, err := g.script(t, 3*time.Minute, "start", strconv.Itoa(victim)); err != nil {
			t.Fatalf("restart node %d: %v\n%s", victim, err, out)
		}
		t.Logf("kill %d: node %d (the pump's: %v) killed -9 and synced again", kills, victim, victim == node)
	}
	return kills, inboxKills
}

// checkGaleraRun checks the end state against what one clean pass over the acknowledged
// messages gives.
func checkGaleraRun(t *testing.T, db *store.DB, load *galeraLoad, data string) {
	t.Helper()
	rows, err := db.SQL.Query(`SELECT p.CMINMSGS_ID, p.STATE, c.CMINMSGS_CLOB_MSG FROM PROC_STATE p JOIN CMINMSGS c ON c.CMINMSGS_ID = p.CMINMSGS_ID ORDER BY p.CMINMSGS_ID`)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		state string
		f, k  int
	}
	byID := map[int64]row{}
	states := map[int64]string{}
	succeeded := map[[2]int][]int64{} // (f, k) → SUCCEEDED ids
	lastK := map[int]int{}            // f → k of its latest SUCCEEDED message, in id order
	for rows.Next() {
		var id int64
		var st, raw string
		if err := rows.Scan(&id, &st, &raw); err != nil {
			t.Fatal(err)
		}
		m := galeraRemark.FindStringSubmatch(raw)
		if m == nil {
			continue // the snapshot
		}
		f, _ := strconv.Atoi(m[1])
		k, _ := strconv.Atoi(m[2])
		byID[id] = row{st, f, k}
		states[id] = st
		if st == "SUCCEEDED" {
			succeeded[[2]int{f, k}] = append(succeeded[[2]int{f, k}], id)
			if k != lastK[f]+1 {
				t.Errorf("flight %d: message %d (remark %d) SUCCEEDED after remark %d: out of order or one lost", f, id, k, lastK[f])
			}
			lastK[f] = k
		}
	}
	rows.Close()
	for _, a := range load.acks {
		r, ok := byID[a.id]
		switch {
		case !ok:
			t.Errorf("acknowledged message %d (flight %d, remark %d) is not stored", a.id, a.f, a.k)
		case r.f != a.f || r.k != a.k:
			t.Errorf("acknowledged message %d is flight %d remark %d, want %d/%d", a.id, r.f, r.k, a.f, a.k)
		case len(succeeded[[2]int{a.f, a.k}]) != 1:
			t.Errorf("flight %d remark %d SUCCEEDED %d times (%v), want once", a.f, a.k, len(succeeded[[2]int{a.f, a.k}]), succeeded[[2]int{a.f, a.k}])
		case a.dup && r.state != "SKIPPED":
			t.Errorf("the second copy %d of flight %d remark %d is %s, want SKIPPED", a.id, a.f, a.k, r.state)
		}
	}
	for f, flid := range load.flids {
		var version, last int64
		if err := db.SQL.QueryRow(`SELECT VERSION, CMINMSGS_ID FROM FLIGHT_STATE WHERE FLID = ?`, flid).Scan(&version, &last); err != nil {
			t.Fatal(err)
		}
		if version != int64(1+lastK[f]) || byID[last].k != lastK[f] {
			t.Errorf("flight %d: version %d by message %d, want %d by remark %d", flid, version, last, 1+lastK[f], lastK[f])
		}
	}
	checkGaleraEvents(t, db, states, data)
	checkIDOrder(t, db)
}

// checkIDOrder checks that the pump finished the messages in id order (invariant I1): with two
// inbox nodes on two database nodes, a lower id that became visible after a higher one had
// been processed would be finished after it.
func checkIDOrder(t *testing.T, db *store.DB) {
	t.Helper()
	rows, err := db.SQL.Query(`SELECT CMINMSGS_ID, PROCESSED_AT FROM PROC_STATE ORDER BY CMINMSGS_ID`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var prevID int64
	var prev store.NullTime
	bad := 0
	for rows.Next() {
		var id int64
		var at store.NullTime
		if err := rows.Scan(&id, &at); err != nil {
			t.Fatal(err)
		}
		if prev.Valid && at.Valid && at.Time.Before(prev.Time) {
			if bad++; bad <= 5 {
				t.Errorf("message %d was finished at %s, before message %d (%s): not in id order", id, at.Time.Format(time.RFC3339Nano), prevID, prev.Time.Format(time.RFC3339Nano))
			}
		}
		prevID, prev = id, at
	}
	if bad > 5 {
		t.Errorf("%d messages finished out of id order", bad)
	}
}

// checkGaleraEvents checks the events: every SUCCEEDED FLOP has the same number of events of
// each target (one at least on KAFKA_FLOP), a SKIPPED one none, and each target's outbox file
// (but the batched KAFKA_SCHD's) got every event in EVENT_ID order (a line may repeat after a
// kill: at least once).
func checkGaleraEvents(t *testing.T, db *store.DB, states map[int64]string, data string) {
	t.Helper()
	perMsg := map[string]map[int64]int{} // target → message → events
	byTarget := map[string][]int64{}
	for _, e := range targetEvents(t, db) {
		if perMsg[e.target] == nil {
			perMsg[e.target] = map[int64]int{}
		}
		perMsg[e.target][e.msg]++
		byTarget[e.target] = append(byTarget[e.target], e.id)
	}
	if len(perMsg["KAFKA_FLOP"]) == 0 {
		t.Fatal("no KAFKA_FLOP events")
	}
	for target, msgs := range perMsg {
		want := -1
		for id, st := range states {
			n := msgs[id]
			switch {
			case st == "SKIPPED" && n != 0:
				t.Errorf("%s: SKIPPED message %d has %d events", target, id, n)
			case st == "SUCCEEDED" && want == -1:
				want = n
			case st == "SUCCEEDED" && n != want:
				t.Errorf("%s: message %d has %d events, others %d", target, id, n, want)
			}
		}
		if target != "KAFKA_SCHD" { // batched: one line may stand for several events
			checkOutboxOrder(t, filepath.Join(data, "outbox", target+".jsonl"), byTarget[target])
		}
	}
}

// checkOutboxOrder checks that the outbox file has every event of events, first seen in
// EVENT_ID order.
func checkOutboxOrder(t *testing.T, path string, events []int64) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Errorf("outbox %s: %v", path, err)
		return
	}
	defer f.Close()
	seen := map[int64]bool{}
	var order []int64
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var e struct {
			EventID int64 `json:"event_id"`
		}
		if json.Unmarshal(sc.Bytes(), &e) == nil && !seen[e.EventID] {
			seen[e.EventID] = true
			order = append(order, e.EventID)
		}
	}
	if fmt.Sprint(order) != fmt.Sprint(events) {
		t.Errorf("%s: events delivered %d in this order (first copies), want %d in EVENT_ID order", filepath.Base(path), len(order), len(events))
	}
}
