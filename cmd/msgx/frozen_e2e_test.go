package main_test

// A database node that hangs (issue 22, "a hung node is a failed node"): MariaDB behind a TCP
// proxy that stops forwarding bytes while keeping every connection open, under a steady load
// of posts. MariaDB only: SQLite is a file, there is no connection to freeze.

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	mysqldrv "github.com/go-sql-driver/mysql"

	"msgx/internal/store"
	"msgx/internal/store/storetest"
)

// freezeProxy forwards TCP connections to a server and can freeze: while frozen it forwards
// no byte in either direction, accepts new connections and keeps every connection open, so
// the server looks alive and answers nothing, as a Galera node cut off from its cluster does.
type freezeProxy struct {
	ln     net.Listener
	target string

	mu     sync.Mutex
	cond   *sync.Cond
	frozen bool
	conns  []net.Conn
}

func newFreezeProxy(t *testing.T, target string) *freezeProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &freezeProxy{ln: ln, target: target}
	p.cond = sync.NewCond(&p.mu)
	go p.serve()
	t.Cleanup(p.close)
	return p
}

func (p *freezeProxy) addr() string { return p.ln.Addr().String() }

func (p *freezeProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, up)
		p.mu.Unlock()
		go p.pipe(up, c)
		go p.pipe(c, up)
	}
}

// pipe copies src to dst, holding each chunk while the proxy is frozen.
func (p *freezeProxy) pipe(dst, src net.Conn) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			for p.frozen {
				p.cond.Wait()
			}
			p.mu.Unlock()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *freezeProxy) freeze(on bool) {
	p.mu.Lock()
	p.frozen = on
	p.mu.Unlock()
	p.cond.Broadcast()
}

func (p *freezeProxy) close() {
	p.ln.Close()
	p.freeze(false)
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
}

// postResult is one inbox post as the sender saw it.
type postResult struct {
	seqn       int
	status     int
	retryAfter string
	took       time.Duration
	done       time.Time // when the answer came
	id         int64
	err        error
}

// TestFrozenDatabaseHoldsNoSender freezes the database for 20 s (MSGX_TEST_FREEZE: longer) under a steady load of posts:
// every post is answered, 200 or 503 with Retry-After, within http.inbox-deadline and a second;
// /readyz says 503 during the freeze; a sender that got 503 sends the message again; after the
// thaw every acknowledged message is processed exactly once (a copy stored by a commit that
// ended after its sender was answered 503 is SKIPPED as a duplicate of the one processed).
func TestFrozenDatabaseHoldsNoSender(t *testing.T) {
	t.Parallel()
	dsn := storetest.MySQLDSN(t)
	cfg, err := mysqldrv.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	proxy := newFreezeProxy(t, cfg.Addr)
	pcfg := cfg.Clone()
	pcfg.Addr = proxy.addr()
	const deadline = 5 * time.Second
	freezeFor := 20 * time.Second
	if v := os.Getenv("MSGX_TEST_FREEZE"); v != "" { // the 60 s: longer than readTimeout
		if freezeFor, err = time.ParseDuration(v); err != nil {
			t.Fatalf("MSGX_TEST_FREEZE: %v", err)
		}
	}
	srv := start(t, t.TempDir(), "MSGX_DATABASE_DRIVER=mysql", "MSGX_DATABASE_DSN="+pcfg.FormatDSN(),
		"MSGX_PIPELINE_AUTOSTART=true", "MSGX_HTTP_INBOX_DEADLINE="+deadline.String())

	var mu sync.Mutex
	var results []postResult
	// Raw posts: the test times each answer and reads its status and Retry-After header.
	client := &http.Client{Timeout: time.Minute}
	post := func(seqn int) postResult {
		body := fmt.Sprintf(`<MSG><META><SNDR>AODB</SNDR><SEQN>%d</SEQN><DTTM>20261201091600</DTTM><TYPE>STTS</TYPE><STYP>ADD</STYP></META>`+
			`<RECS>1</RECS><STTS><STTC>F%d</STTC><STTD>frozen %d</STTD></STTS></MSG>`, seqn, seqn, seqn)
		began := time.Now()
		resp, err := client.Post(srv.url+"/cminmsgs/send", "application/xml", strings.NewReader(body))
		r := postResult{seqn: seqn, took: time.Since(began), err: err}
		if err != nil {
			return r
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		r.took, r.done, r.status, r.retryAfter = time.Since(began), time.Now(), resp.StatusCode, resp.Header.Get("Retry-After")
		if r.status == 200 {
			if _, err := fmt.Sscanf(string(b), "%d", &r.id); err != nil {
				r.err = fmt.Errorf("answer %q is not an id", b)
			}
		} else if r.status != 503 || r.retryAfter == "" {
			r.err = fmt.Errorf("answer %d Retry-After=%q: %s", r.status, r.retryAfter, b)
		}
		return r
	}

	// Four senders, each posting a new message every 200 ms and sending a message answered 503
	// again (after a second, not Retry-After's five: more posts land in the freeze) until it is
	// acknowledged.
	ctx, stopLoad := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				seqn := 990000 + w*10000 + i
				for {
					r := post(seqn)
					mu.Lock()
					results = append(results, r)
					mu.Unlock()
					if r.status == 200 || r.err != nil {
						break
					}
					time.Sleep(time.Second)
				}
				time.Sleep(200 * time.Millisecond)
			}
		}()
	}

	waitUntil := func(what string, within time.Duration, cond func() bool) {
		t.Helper()
		for end := time.Now().Add(within); !cond(); time.Sleep(50 * time.Millisecond) {
			if time.Now().After(end) {
				t.Fatalf("%s: not within %s\n%s", what, within, srv.logs)
			}
		}
	}
	acked := func() int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, r := range results {
			if r.status == 200 {
				n++
			}
		}
		return n
	}
	waitUntil("20 posts acknowledged before the freeze", 20*time.Second, func() bool { return acked() >= 20 })

	proxy.freeze(true)
	frozenAt := time.Now()
	readyDuringFreeze := 0
	probe := &http.Client{Timeout: 3 * time.Second}
	for time.Since(frozenAt) < freezeFor {
		if time.Since(frozenAt) > 8*time.Second {
			if resp, err := probe.Get(srv.url + "/readyz"); err == nil {
				resp.Body.Close()
				if resp.StatusCode == 503 {
					readyDuringFreeze++
				}
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
	proxy.freeze(false)
	thawedAt := time.Now()
	waitUntil("the pump lease taken again after the thaw", 60*time.Second, func() bool {
		return strings.Count(srv.logs.String(), "pump lease acquired") >= 2
	})
	waitUntil("20 posts acknowledged after the thaw", 30*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, r := range results {
			if r.status == 200 && r.done.After(thawedAt) {
				n++
			}
		}
		return n >= 20
	})
	stopLoad()
	wg.Wait()

	if readyDuringFreeze == 0 {
		t.Errorf("/readyz never said 503 during the freeze")
	}
	if !strings.Contains(srv.logs.String(), "cannot renew the pump lease: the database does not answer") {
		t.Errorf("no warning that the pump lease could not be renewed")
	}
	var slowest time.Duration
	ok, unavailable := 0, 0
	ackedSeqns := map[int]bool{}
	for _, r := range results {
		if r.err != nil {
			t.Errorf("post of %d: %v", r.seqn, r.err)
			continue
		}
		slowest = max(slowest, r.took)
		if r.took > deadline+time.Second {
			t.Errorf("post of %d held %s (answered %d), more than http.inbox-deadline %s + 1 s", r.seqn, r.took, r.status, deadline)
		}
		if r.status == 200 {
			ok++
			ackedSeqns[r.seqn] = true
		} else {
			unavailable++
		}
	}
	t.Logf("posts: %d answered 200, %d answered 503 with Retry-After; slowest answer %s", ok, unavailable, slowest.Round(time.Millisecond))
	if unavailable == 0 {
		t.Errorf("no post was answered 503 during a %s freeze", freezeFor)
	}
	if got := metricValue(srv.metrics(), "msgx_inbox_deadline_exceeded_total"); got != float64(unavailable) {
		t.Errorf("msgx_inbox_deadline_exceeded_total = %v, want the %d posts answered 503", got, unavailable)
	}
	checkProcessedOnce(t, srv, dsn, ackedSeqns)
}

var seqnOf = regexp.MustCompile(`<SEQN>(\d+)</SEQN>`)

// checkProcessedOnce waits until no message is left to process, then checks, reading the
// database itself, that every acknowledged SEQN was processed exactly once: one SUCCEEDED
// copy, any other copy SKIPPED as its duplicate.
func checkProcessedOnce(t *testing.T, srv *server, dsn string, acked map[int]bool) {
	t.Helper()
	db, err := store.Open(context.Background(), "mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	type copyState struct {
		id    int64
		state string
	}
	var copies map[int][]copyState
	for end := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		copies = map[int][]copyState{}
		rows, err := db.SQL.Query(`SELECT c.CMINMSGS_ID, c.CMINMSGS_CLOB_MSG, p.STATE FROM CMINMSGS c JOIN PROC_STATE p ON p.CMINMSGS_ID = c.CMINMSGS_ID`)
		if err != nil {
			t.Fatal(err)
		}
		open := 0
		for rows.Next() {
			var c copyState
			var raw string
			if err := rows.Scan(&c.id, &raw, &c.state); err != nil {
				t.Fatal(err)
			}
			m := seqnOf.FindStringSubmatch(raw)
			if m == nil {
				continue
			}
			var seqn int
			fmt.Sscan(m[1], &seqn)
			copies[seqn] = append(copies[seqn], c)
			if c.state == "PENDING" || c.state == "FAILED" {
				open++
			}
		}
		rows.Close()
		if open == 0 {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("%d messages still PENDING or FAILED a minute after the thaw\n%s", open, srv.logs)
		}
	}
	seqns := make([]int, 0, len(copies))
	for s := range copies {
		seqns = append(seqns, s)
	}
	sort.Ints(seqns)
	dup := 0
	for _, s := range seqns {
		succeeded := 0
		for _, c := range copies[s] {
			switch c.state {
			case "SUCCEEDED":
				succeeded++
			case "SKIPPED":
				dup++
			default:
				t.Errorf("SEQN %d: message %d is %s", s, c.id, c.state)
			}
		}
		if succeeded != 1 {
			t.Errorf("SEQN %d: %d copies SUCCEEDED, want exactly 1 (%v)", s, succeeded, copies[s])
		}
	}
	for s := range acked {
		if len(copies[s]) == 0 {
			t.Errorf("SEQN %d was acknowledged and is not stored", s)
		}
	}
	t.Logf("%d SEQNs stored, %d acknowledged, %d duplicate copies SKIPPED", len(copies), len(acked), dup)
	if t.Failed() {
		t.Logf("server log:\n%s", srv.logs)
	}
}
