package main_test

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"msgx/internal/store"
)

// TestCrashOnGalera is the kill -9 test on a three-node MariaDB Galera cluster (its own one,
// crashCluster, beside the node kill test's): one msgx (pump and inbox) with every node in
// database.hosts, under the Galera senders' load (one sender per flight, in order, every
// fourth message twice). The kills take turns: kill -9 of msgx itself (restarted at once, on
// a list that starts with the next node: it must take over its dead predecessor's lease);
// kill -9 of the database node msgx uses (msgx must move to another node; the node is
// restarted once the pump works again); and both, the node first, msgx restarted on a list
// that starts with the dead node. 10 kills, 30 with MSGX_TEST_LONG=1. At the end:
// nothing lost, nothing doubled, nothing out of order, every event once and delivered in
// order, and every flight as a clean one-node SQLite run of the acknowledged messages leaves
// it.
func TestCrashOnGalera(t *testing.T) {
	t.Parallel()
	g := crashCluster
	g.hold(t)
	began := time.Now()
	dsn := g.database(t)
	data := t.TempDir()
	env := func(first int) []string {
		return []string{"MSGX_DATABASE_DRIVER=mysql", "MSGX_DATABASE_DSN=" + dsn, "MSGX_DATABASE_HOSTS=" + g.hostsFrom(first),
			"MSGX_PIPELINE_AUTOSTART=true", "MSGX_SCHD_FLUSH_PERIOD=200ms"}
	}
	s := start(t, data, env(1)...)
	snapshot, flids := galeraFlights(t, 6)
	s.await(s.post(snapshot), "snapshot SUCCEEDED", state("SUCCEEDED", ""))

	load := &galeraLoad{inboxes: []*server{s}, flids: flids, stop: make(chan struct{})}
	load.run()
	c := &galeraCrashes{g: g, data: data, env: env, load: load, s: s}
	c.run(t, galeraKillCount())
	close(load.stop)
	load.wg.Wait()
	db := g.drained(t, dsn, c.s.logs)
	checkGaleraRun(t, db, load, data)
	checkCleanPicture(t, db, snapshot, load)
	t.Logf("%d kills (%d of msgx, %d of its database node) in %s; %d messages acknowledged, %d refusals and lost connections retried by the senders; failed: %v",
		c.msgx+c.nodes, c.msgx, c.nodes, time.Since(began).Round(time.Second), len(load.acks), load.refused, t.Failed())
}

// galeraCrashes is the kill loop of TestCrashOnGalera: s is the running msgx, msgx and nodes
// count the kills of each kind.
type galeraCrashes struct {
	g           *galeraNodes
	data        string
	env         func(first int) []string
	load        *galeraLoad
	s           *server
	msgx, nodes int
}

// run kills msgx and its database node in turn, want kills in all, each once the pump has
// finished 10 more messages.
func (c *galeraCrashes) run(t *testing.T, want int) {
	t.Helper()
	step := 0
	for c.msgx+c.nodes < want {
		before := c.s.finished()
		if !waitUntil(time.Minute, func() bool { return c.s.finished() >= before+10 }) {
			t.Fatalf("kill %d: the pump made no progress (%d finished)\n%s", c.msgx+c.nodes, c.s.finished(), c.s.logs)
		}
		switch step++; step % 3 {
		case 1:
			c.killMsgx(t)
		case 2:
			c.killNode(t)
		default:
			c.killBoth(t)
		}
	}
}

// killBoth kills -9 the database node msgx uses and then msgx, and starts msgx again on a list
// that starts with the dead node: it must pass it over at start and take over its dead
// predecessor's lease through another node. The node is restarted once the pump works again.
func (c *galeraCrashes) killBoth(t *testing.T) {
	t.Helper()
	node, _ := c.s.dbNode(c.g)
	if node == 0 {
		t.Fatalf("kill %d: msgx's metrics name no database node\n%s", c.msgx+c.nodes, c.s.logs)
	}
	if out, err := c.g.script(t, 30*time.Second, "kill", strconv.Itoa(node)); err != nil {
		t.Fatalf("kill node %d: %v\n%s", node, err, out)
	}
	c.nodes++
	c.restartMsgx(t, node)
	after := c.s.finished()
	if !waitUntil(time.Minute, func() bool { return c.s.finished() >= after+10 }) {
		t.Fatalf("kill %d of node %d and msgx: the pump made no progress afterwards\n%s", c.msgx+c.nodes, node, c.s.logs)
	}
	if out, err := c.g.script(t, 3*time.Minute, "start", strconv.Itoa(node)); err != nil {
		t.Fatalf("restart node %d: %v\n%s", node, err, out)
	}
	t.Logf("kills %d and %d: database node %d and msgx killed -9, msgx restarted with node %d first in its list, the node synced again",
		c.msgx+c.nodes-1, c.msgx+c.nodes, node, node)
}

// killMsgx kills msgx with SIGKILL and starts it again with the next node first in its list.
func (c *galeraCrashes) killMsgx(t *testing.T) {
	t.Helper()
	first := (c.msgx+1)%3 + 1
	c.restartMsgx(t, first)
	t.Logf("kill %d: msgx killed -9 and restarted on %s", c.msgx+c.nodes, c.g.hostsFrom(first))
}

// restartMsgx kills msgx with SIGKILL and starts it again with node first first in its list;
// the new one must take over the dead one's lease.
func (c *galeraCrashes) restartMsgx(t *testing.T, first int) {
	t.Helper()
	c.s.cmd.Process.Kill() // no clean shutdown: the lease is left behind
	err := <-c.s.done
	c.s.done <- err
	c.msgx++
	c.s = start(t, c.data, c.env(first)...)
	c.load.setInbox(0, c.s)
	if !waitUntil(30*time.Second, func() bool {
		return strings.Contains(c.s.logs.String(), "took over the pump lease of a dead instance")
	}) {
		t.Fatalf("kill %d: the restarted msgx did not take over the dead instance's lease\n%s", c.msgx+c.nodes, c.s.logs)
	}
}

// killNode kills -9 the database node msgx uses, waits until msgx has moved to another one
// and works again, and restarts the node.
func (c *galeraCrashes) killNode(t *testing.T) {
	t.Helper()
	node, moves := c.s.dbNode(c.g)
	if node == 0 {
		t.Fatalf("kill %d: msgx's metrics name no database node\n%s", c.msgx+c.nodes, c.s.logs)
	}
	if out, err := c.g.script(t, 30*time.Second, "kill", strconv.Itoa(node)); err != nil {
		t.Fatalf("kill node %d: %v\n%s", node, err, out)
	}
	c.nodes++
	if !waitUntil(time.Minute, func() bool { n, m := c.s.dbNode(c.g); return m > moves && n != node && n != 0 }) {
		t.Fatalf("kill %d of node %d: msgx did not move to another node\n%s", c.msgx+c.nodes, node, c.s.logs)
	}
	after := c.s.finished()
	if !waitUntil(time.Minute, func() bool { return c.s.finished() >= after+10 }) {
		t.Fatalf("kill %d of node %d: the pump made no progress afterwards\n%s", c.msgx+c.nodes, node, c.s.logs)
	}
	if out, err := c.g.script(t, 3*time.Minute, "start", strconv.Itoa(node)); err != nil {
		t.Fatalf("restart node %d: %v\n%s", node, err, out)
	}
	t.Logf("kill %d: database node %d killed -9 and synced again", c.msgx+c.nodes, node)
}

// checkCleanPicture replays the snapshot and every acknowledged message, each flight's in the
// order they were acknowledged, on a clean one-node msgx on SQLite, and checks that every flight of the
// Galera run has the record and version the clean run gives it.
func checkCleanPicture(t *testing.T, db *store.DB, snapshot string, load *galeraLoad) {
	t.Helper()
	cleanData := t.TempDir()
	clean := start(t, cleanData)
	clean.await(clean.post(snapshot), "snapshot SUCCEEDED", state("SUCCEEDED", ""))
	// One sender per flight, as in the run: a flight's messages in the order they were
	// acknowledged, the flights side by side.
	byFlight := make([][]galeraAck, len(load.flids))
	for _, a := range load.acks {
		byFlight[a.f] = append(byFlight[a.f], a)
	}
	errs := make(chan error, len(byFlight))
	for _, acks := range byFlight {
		go func() {
			for _, a := range acks {
				resp, err := http.Post(clean.url+"/cminmsgs/send", "application/xml", strings.NewReader(galeraFlop(a.f, a.k, load.flids[a.f])))
				if err != nil {
					errs <- err
					return
				}
				resp.Body.Close()
				if resp.StatusCode != 200 {
					errs <- fmt.Errorf("flight %d remark %d: %s", a.f, a.k, resp.Status)
					return
				}
			}
			errs <- nil
		}()
	}
	for range byFlight {
		if err := <-errs; err != nil {
			t.Fatalf("the clean run's inbox: %v\n%s", err, clean.logs)
		}
	}
	if !waitUntil(2*time.Minute, func() bool { return clean.finished() == len(load.acks)+1 }) {
		t.Fatalf("the clean run finished %d of %d messages\n%s", clean.finished(), len(load.acks)+1, clean.logs)
	}
	cdb, err := store.Open(context.Background(), "sqlite", filepath.Join(cleanData, "msgx.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer cdb.Close()
	picture := func(d *store.DB, flid int64) (fday, record string, version int64) {
		if err := d.SQL.QueryRow(`SELECT FDAY, RECORD, VERSION FROM FLIGHT_STATE WHERE FLID = ?`, flid).Scan(&fday, &record, &version); err != nil {
			t.Fatalf("flight %d: %v", flid, err)
		}
		return fday, record, version
	}
	for f, flid := range load.flids {
		gd, gr, gv := picture(db, flid)
		cd, cr, cv := picture(cdb, flid)
		if n := len(byFlight[f]); n > 0 && !strings.Contains(cr, fmt.Sprintf("g%d-%d", f, byFlight[f][n-1].k)) {
			t.Errorf("flight %d after a clean run does not show its last remark g%d-%d:\n%s", flid, f, byFlight[f][n-1].k, cr)
		}
		if gd != cd || gr != cr || gv != cv {
			t.Errorf("flight %d after the kills: day %s version %d\n%s\nafter a clean run: day %s version %d\n%s", flid, gd, gv, gr, cd, cv, cr)
		}
	}
}
