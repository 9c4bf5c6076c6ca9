package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"msgx/client"
	"msgx/internal/flight/flighttest"
	"msgx/internal/handler"
	"msgx/internal/target"
)

var updateGolden = flag.Bool("update-golden", false, "TestGoldenTargets writes what every target sent to testdata/golden instead of comparing")

// goldenDir holds one file per target: what it sent during TestGoldenTargets's day.
const goldenDir = "testdata/golden"

// goldenDay is the simulated day of TestGoldenTargets. It is fixed, not tomorrow, because the
// messages carry its date and the golden files carry the messages' times.
const goldenDay = "2030-01-15"

// TestGoldenTargets is the record of the bytes every target sends, for changes to how events
// are stored and rendered (issue 36) to be checked against: the output must stay identical to
// the record but for the event ids. It runs a simulated day with faults (`msgx simulate`,
// fixed seed and day, so the same messages byte for byte on every run) and an FDEL through a
// server whose every target sends for real, to the receivers of receivers_e2e_test.go:
// KAFKA_FLOP and KAFKA_SCHD (kfake), REDIS_NOTIFY and a format-legacy copy (LEGACY_FLOP),
// ES_FLIGHT, a webhook copying each of the four and a file sink copying KAFKA_FLOP. It
// renders what each target sent as text (goldenText) and compares it with
// testdata/golden/<TARGET>.txt, on SQLite and on MariaDB: the same files hold for both.
//
// Two more files record, after the same day, what is not bytes sent: REDIS_FLIGHT.txt the
// flights projection in Redis that the REDIS_FLIGHT target (sink redis-flights, copies of
// ES_FLIGHT's events, under a key prefix of the subtest's own) keeps, each flight checked
// against the API first (goldenView.projection); API_EVENTS.txt what an operator reads of the
// day through the API (goldenView.text): the status's counts, the dead letters, every event of
// every target as GET /api/v1/events lists it, three flights' histories and stored payloads.
//
// The record keeps the order the contract keeps: a Kafka partition's records in offset order
// (by partition), a Redis channel's and a webhook's or file's deliveries in the order sent,
// an Elasticsearch document's actions in the order sent (by document). It normalises what
// differs from run to run: each target's event ids become their rank among the ids that target
// sent ("#1" is its first event; checked on the way to rise strictly along each of those
// orders), the envelope's created_at, the legacy createTime and the webhook signature (checked
// against the body first) become placeholders. Message ids are kept: a fresh database numbers
// the day's messages alike on every run. An event a target sent again with the same bytes
// (delivery is at least once) is counted once, as a consumer deduplicating on its id does.
//
// KAFKA_SCHD and LEGACY_FLOP are paused while the day is processed and resumed once every
// message is finished, because how many events one of their sends carries depends on timing
// otherwise, and their bytes on it: a schedule batch keeps the newest event of each flight it
// claims, and the legacy format merges a snapshot's schedule notifications within one send.
// Resumed with every event pending, each send carries the most it may (schd.flush-limit, 50
// here; a run of up to 100 events), the same on every run.
//
// After a deliberate change to what a target sends, rewrite the files from a run and read
// their diff:
//
//	MSGX_TEST_REQUIRE_SERVICES=1 go test -run TestGoldenTargets -count=1 ./cmd/msgx/ -update-golden
//
// The first database's subtest to finish writes the files (all twelve); the other's must have
// sent the same bytes, or it fails.
// A failure names, per target, the first line that differs; the run's whole record is left in
// $TMPDIR/msgx-golden/<database>/ to diff against the files.
func TestGoldenTargets(t *testing.T) {
	t.Parallel()
	eachDB(t, goldenTargets)
}

// goldenTargetNames are the targets TestGoldenTargets records, each with its golden file.
var goldenTargetNames = []string{"KAFKA_FLOP", "KAFKA_SCHD", "REDIS_NOTIFY", "LEGACY_FLOP", "ES_FLIGHT",
	"WEBHOOK_FLOP", "WEBHOOK_SCHD", "WEBHOOK_NOTIFY", "WEBHOOK_ES", "FILE_FLOP"}

// The golden files that record something other than the bytes a target sent: the flights
// projection in Redis (the REDIS_FLIGHT target's keys, goldenView.projection) and what the
// API answers about the day's events (goldenView.text).
const (
	goldenProjection = "REDIS_FLIGHT"
	goldenAPIEvents  = "API_EVENTS"
)

// goldenFiles are the names of every golden file, without ".txt".
func goldenFiles() []string {
	return append(slices.Clone(goldenTargetNames), goldenProjection, goldenAPIEvents)
}

// goldenPaused are the targets paused while the day is processed (see TestGoldenTargets).
var goldenPaused = []string{"KAFKA_SCHD", "LEGACY_FLOP"}

func goldenTargets(t *testing.T, db dbEnv) {
	ctx := context.Background()
	rcv := newReceivers(t, "golden:"+db.Name)
	// The flights projection under a key prefix of the subtest's own (its keys are wiped when
	// the subtest ends).
	prefix := flighttest.RedisPrefix(t)
	cfg := filepath.Join(t.TempDir(), "msgx.yaml")
	conf := "targets:\n" + rcv.targets() + "  FILE_FLOP: {sink: file, copy-of: KAFKA_FLOP}\n" +
		fmt.Sprintf("  REDIS_FLIGHT: {sink: redis-flights, addr: %q, key-prefix: %q}\n", flighttest.RedisAddr(), prefix)
	if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	// A schedule batch of at most 50 events, so that the day makes several, each keeping
	// the newest event of the flights it claims (the default 500 would send the day in one).
	// No daily consistency check: a job enqueued or not by the time of day the test runs.
	s := db.start(t, "MSGX_CONFIG="+cfg, "MSGX_PIPELINE_POLL_INTERVAL=50ms", "MSGX_PIPELINE_BATCH_WAIT=200ms", "MSGX_SCHD_FLUSH_LIMIT=50",
		"MSGX_CONSISTENCY_CHECK_DAILY_AT=off")
	for _, name := range goldenPaused {
		if _, err := s.api().SetPaused(ctx, true, name, "golden: sent in whole batches after the day"); err != nil {
			t.Fatalf("pause %s: %v", name, err)
		}
	}

	// The day: 40 flights over half an hour of schedule, every operation and fault kind, as
	// fast as the server takes them; then a deletion, which the simulated day has none of.
	run, out, _ := simulate(t, s, "--flights", "40", "--speed", "0", "--hours", "0.5", "--faults", "all", "--fault-rate", "0.02",
		"--seed", "37", "--day", goldenDay)
	if run.Failed != 0 || run.Flights != 40 {
		t.Fatalf("summary: %+v\n%s", run, out)
	}
	board, err := s.api().Board(ctx, goldenDay)
	if err != nil || len(board.Flights) == 0 {
		t.Fatalf("the board of %s: %v (%d flights)", goldenDay, err, len(board.Flights))
	}
	var first struct {
		FLID int64 `json:"FLID"`
	}
	if err := json.Unmarshal(board.Flights[0], &first); err != nil {
		t.Fatal(err)
	}
	fdel := s.post(e2eFlop(970001, "FDEL", first.FLID, "<FDEL/>"))
	s.await(fdel, "SUCCEEDED", state("SUCCEEDED", ""))

	// Every message finished and the live targets drained; then the paused ones send it all.
	live := []string{goldenProjection}
	for _, name := range goldenTargetNames {
		if !slices.Contains(goldenPaused, name) {
			live = append(live, name)
		}
	}
	early := s.awaitIdle(live...)
	for _, name := range goldenPaused {
		if early[name] != 0 {
			// The pause is read from the database before each step; a failed read lets one
			// step through, and what it sent depends on timing.
			t.Fatalf("%s sent %d events while paused", name, early[name])
		}
		if _, err := s.api().SetPaused(ctx, false, name, "golden: the day is processed"); err != nil {
			t.Fatalf("resume %s: %v", name, err)
		}
	}
	sent := s.awaitIdle(append([]string{goldenProjection}, goldenTargetNames...)...)

	// What the receivers got: Kafka read back up to the newest schedule event (the last
	// batch record names it), Redis up to a barrier, the HTTP receivers answered before SENT.
	lastSchd := s.newestEvent("KAFKA_SCHD")
	if lastSchd == 0 {
		t.Fatal("no KAFKA_SCHD event")
	}
	rcv.consumeKafka(t, sent["KAFKA_FLOP"], lastSchd)
	rcv.redisBarrier(t)
	rcv.awaitReceived(t, sent, "KAFKA_FLOP", "REDIS_NOTIFY", "ES_FLIGHT", "WEBHOOK_FLOP", "WEBHOOK_SCHD", "WEBHOOK_NOTIFY", "WEBHOOK_ES")
	got := rcv.received()
	lines := readLines(t, db.outbox("FILE_FLOP"))
	if len(lines) != sent["FILE_FLOP"] {
		t.Fatalf("FILE_FLOP: %d lines for %d events SENT", len(lines), sent["FILE_FLOP"])
	}
	for _, line := range lines {
		d := delivery{Target: "FILE_FLOP", Sink: "file", Stream: "FILE_FLOP", Where: "FILE_FLOP", Body: line}
		var env struct {
			EventID int64 `json:"event_id"`
		}
		if err := json.Unmarshal(line, &env); err != nil {
			t.Fatalf("FILE_FLOP: %v: %s", err, line)
		}
		d.EventID = env.EventID
		got = append(got, d)
	}

	texts, again, err := goldenText(got)
	if err != nil {
		t.Fatal(err)
	}
	if again > 0 {
		t.Logf("%d deliveries were of an event sent before, with the same bytes: left out", again)
	}
	// What the operator reads of the day through the API, and the projection in Redis. The
	// histories are of the flight the FDEL deleted, of the one with the most KAFKA_FLOP events
	// and of the board's second.
	view := readGoldenView(t, s, append(slices.Clone(goldenTargetNames), goldenProjection))
	texts[goldenAPIEvents] = view.text(t, s, []int64{first.FLID, busiestFlight(view.events["KAFKA_FLOP"]), second(board.Flights)})
	texts[goldenProjection] = view.projection(t, s, prefix)

	keep := filepath.Join(os.TempDir(), "msgx-golden", db.Name)
	if err := os.MkdirAll(keep, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range goldenFiles() {
		if err := os.WriteFile(filepath.Join(keep, name+".txt"), texts[name], 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if *updateGolden {
		writeGolden(t, db.Name, texts)
		return
	}
	for _, name := range goldenFiles() {
		want, err := os.ReadFile(filepath.Join(goldenDir, name+".txt"))
		if err != nil {
			t.Errorf("%s: %v (write the files with -update-golden)", name, err)
			continue
		}
		if d := firstDifference(want, texts[name]); d != "" {
			t.Errorf("%s differs from %s (this run's: %s): %s", name, filepath.Join(goldenDir, name+".txt"), filepath.Join(keep, name+".txt"), d)
		}
	}
	t.Logf("%d messages simulated; SENT per target: %v; record in %s", run.Messages, sent, keep)
}

// goldenWritten is what a subtest wrote to each golden file under -update-golden, so that
// the other database's subtest finds out when it would write something else.
var goldenWritten = struct {
	sync.Mutex
	by    string
	texts map[string][]byte
}{}

// writeGolden writes texts to the golden files, unless the other database's subtest wrote
// them already: then they must be what it wrote.
func writeGolden(t *testing.T, dbName string, texts map[string][]byte) {
	t.Helper()
	goldenWritten.Lock()
	defer goldenWritten.Unlock()
	if goldenWritten.texts != nil {
		for _, name := range goldenFiles() {
			if d := firstDifference(goldenWritten.texts[name], texts[name]); d != "" {
				t.Errorf("%s: %s sent other bytes than %s: %s", name, dbName, goldenWritten.by, d)
			}
		}
		return
	}
	if err := os.MkdirAll(goldenDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range goldenFiles() {
		if err := os.WriteFile(filepath.Join(goldenDir, name+".txt"), texts[name], 0o644); err != nil {
			t.Fatal(err)
		}
	}
	goldenWritten.by, goldenWritten.texts = dbName, texts
	t.Logf("wrote %s from %s", goldenDir, dbName)
}

// goldenText renders what each target sent (ds: each receiver's deliveries in the order it
// got them) as the text of its golden file. Delivery is at least once: an event a target sent
// again (a send that failed after the receiver got it) is left out when its bytes are those of
// its first delivery, as a consumer deduplicating on the event id does; again is how many.
// It returns an error when a target's event ids do not rise strictly along a stream, an
// event came again with other bytes, or a value is not of the shape its normalisation
// expects.
func goldenText(all []delivery) (texts map[string][]byte, again int, err error) {
	// Each target's event ids, checked to rise along each stream, and their ranks.
	first := map[string]delivery{} // target, stream and event id → its first delivery
	last := map[string]int64{}     // target and stream → the last id
	ids := map[string][]int64{}
	var ds []delivery
	for _, d := range all {
		if d.EventID == 0 {
			ds = append(ds, d)
			continue
		}
		if d.Refused {
			return nil, 0, fmt.Errorf("%s: event %d was refused (wrong signature)", d.Where, d.EventID)
		}
		k := d.Target + " " + d.Stream
		if f, ok := first[fmt.Sprint(k, d.EventID)]; ok {
			if !bytes.Equal(f.Key, d.Key) || !bytes.Equal(f.Action, d.Action) || !bytes.Equal(f.Body, d.Body) {
				return nil, 0, fmt.Errorf("%s: event %d again, other than at %s", d.Where, d.EventID, f.Where)
			}
			again++
			continue
		}
		if d.EventID <= last[k] {
			return nil, 0, fmt.Errorf("%s: event %d after event %d: the ids of %s do not rise", d.Where, d.EventID, last[k], d.Stream)
		}
		first[fmt.Sprint(k, d.EventID)] = d
		last[k] = d.EventID
		ids[d.Target] = append(ids[d.Target], d.EventID)
		ds = append(ds, d)
	}
	rank := map[string]map[int64]int{}
	for name, l := range ids {
		slices.Sort(l)
		rank[name] = map[int64]int{}
		for i, id := range slices.Compact(l) {
			rank[name][id] = i + 1
		}
	}

	// Each target's lines, by stream: Kafka partitions and Elasticsearch documents sorted by
	// name, each in the order it was got.
	streams := map[string]map[string]*bytes.Buffer{}
	for _, d := range ds {
		n := goldenNorm{rank: rank[d.Target]}
		stream := d.Stream
		var b bytes.Buffer
		switch d.Sink {
		case "kafka":
			fmt.Fprintf(&b, "key %s headers %s\n", d.Key, n.headers(d.Headers))
			if d.Target == "KAFKA_SCHD" {
				n.batch(&b, d.Body)
			} else {
				b.Write(n.envelope(d.Body))
				b.WriteByte('\n')
			}
		case "elasticsearch":
			var action map[string]struct {
				ID string `json:"_id"`
			}
			if err := json.Unmarshal(d.Action, &action); err != nil {
				return nil, 0, fmt.Errorf("%s: %v", d.Where, err)
			}
			for _, meta := range action {
				stream = "document " + meta.ID
			}
			b.Write(n.replaceOnce(d.Action, fmt.Sprintf(`"version":%d`, d.EventID), fmt.Sprintf(`"version":"#%d"`, n.rank[d.EventID])))
			b.WriteByte('\n')
			if d.Body != nil {
				b.Write(d.Body)
				b.WriteByte('\n')
			}
		case "webhook":
			var hs [][2]string
			for _, h := range d.Headers {
				switch h[0] {
				case "User-Agent", "Content-Length", "Accept-Encoding": // the HTTP client's own
				case "X-Msgx-Signature":
					hs = append(hs, [2]string{h[0], "<the body's>"}) // checked by the receiver (Refused)
				default:
					hs = append(hs, h)
				}
			}
			fmt.Fprintf(&b, "headers %s\n", n.headers(hs))
			b.Write(n.envelope(d.Body))
			b.WriteByte('\n')
		case "redis":
			if d.Target == "LEGACY_FLOP" {
				b.Write(n.legacy(d.Body))
			} else {
				b.Write(n.envelope(d.Body))
			}
			b.WriteByte('\n')
		case "file":
			b.Write(n.envelope(d.Body))
			b.WriteByte('\n')
		}
		if n.err != nil {
			return nil, 0, fmt.Errorf("%s: %v", d.Where, n.err)
		}
		if streams[d.Target] == nil {
			streams[d.Target] = map[string]*bytes.Buffer{}
		}
		if streams[d.Target][stream] == nil {
			streams[d.Target][stream] = &bytes.Buffer{}
		}
		streams[d.Target][stream].Write(b.Bytes())
	}

	texts = map[string][]byte{}
	for name, byStream := range streams {
		var b bytes.Buffer
		keys := make([]string, 0, len(byStream))
		for k := range byStream {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if len(keys) > 1 || k != name {
				fmt.Fprintf(&b, "== %s\n", k)
			}
			b.Write(byStream[k].Bytes())
		}
		texts[name] = b.Bytes()
	}
	return texts, again, nil
}

// goldenNorm normalises the values of one target; the first error sticks.
type goldenNorm struct {
	rank map[int64]int
	err  error
}

func (n *goldenNorm) fail(format string, a ...any) {
	if n.err == nil {
		n.err = fmt.Errorf(format, a...)
	}
}

// replaceOnce replaces old in b by repl; old must be there exactly once.
func (n *goldenNorm) replaceOnce(b []byte, old, repl string) []byte {
	if c := bytes.Count(b, []byte(old)); c != 1 {
		n.fail("%q is there %d times, not once, in %.200s", old, c, b)
		return b
	}
	return bytes.Replace(b, []byte(old), []byte(repl), 1)
}

// id is the rank of event id, as "#n".
func (n *goldenNorm) id(s string) string {
	var id int64
	if _, err := fmt.Sscan(s, &id); err != nil || n.rank[id] == 0 {
		n.fail("event id %q is not one the target sent", s)
		return s
	}
	return fmt.Sprintf("#%d", n.rank[id])
}

// headers writes headers as name=value, in the order given, the event id as its rank.
func (n *goldenNorm) headers(hs [][2]string) string {
	parts := make([]string, len(hs))
	for i, h := range hs {
		v := h[1]
		if h[0] == "event_id" || h[0] == target.HeaderEventID {
			v = n.id(v)
		}
		parts[i] = h[0] + "=" + v
	}
	return strings.Join(parts, " ")
}

// envelope normalises a delivery envelope: its event id becomes its rank, created_at a
// placeholder.
func (n *goldenNorm) envelope(b []byte) []byte {
	var env struct {
		EventID   int64  `json:"event_id"`
		CreatedAt string `json:"created_at"`
	}
	if err := json.Unmarshal(b, &env); err != nil {
		n.fail("not an envelope: %v: %.200s", err, b)
		return b
	}
	if _, err := time.Parse(time.RFC3339Nano, env.CreatedAt); err != nil {
		n.fail("created_at: %v", err)
	}
	b = n.replaceOnce(b, fmt.Sprintf(`"event_id":%d`, env.EventID), fmt.Sprintf(`"event_id":"%s"`, n.id(fmt.Sprint(env.EventID))))
	return n.replaceOnce(b, fmt.Sprintf(`"created_at":%q`, env.CreatedAt), `"created_at":"<time>"`)
}

// legacyCreateTime is the creation time of a legacy notification: when the event was made.
var legacyCreateTime = regexp.MustCompile(`"createTime":\["java\.util\.Date",[0-9]+\]`)

// legacy normalises a format-legacy notification: its createTime becomes a placeholder.
func (n *goldenNorm) legacy(b []byte) []byte {
	if c := len(legacyCreateTime.FindAll(b, -1)); c != 1 {
		n.fail("%d createTime, not one, in %.200s", c, b)
		return b
	}
	return legacyCreateTime.ReplaceAll(b, []byte(`"createTime":["java.util.Date","<time>"]`))
}

// batch writes a KAFKA_SCHD value, a JSON array of flight records, one record a line between
// lines "[" and "]", when those lines joined by commas give the value back; else as it is.
func (n *goldenNorm) batch(b *bytes.Buffer, value []byte) {
	var recs []json.RawMessage
	if json.Unmarshal(value, &recs) != nil || len(recs) == 0 {
		b.Write(value)
		b.WriteByte('\n')
		return
	}
	parts := make([][]byte, len(recs))
	for i, r := range recs {
		parts[i] = r
	}
	if !bytes.Equal(value, append(append([]byte("["), bytes.Join(parts, []byte(","))...), ']')) {
		b.Write(value)
		b.WriteByte('\n')
		return
	}
	b.WriteString("[\n")
	for _, r := range recs {
		b.Write(r)
		b.WriteByte('\n')
	}
	b.WriteString("]\n")
}

// firstDifference describes the first line where got differs from want ("" when they are
// equal): its number, and both lines from a little before the first byte that differs.
func firstDifference(want, got []byte) string {
	if bytes.Equal(want, got) {
		return ""
	}
	wl, gl := lines(want), lines(got)
	for i := 0; ; i++ {
		var w, g []byte
		wok, gok := i < len(wl), i < len(gl)
		if wok {
			w = wl[i]
		}
		if gok {
			g = gl[i]
		}
		if wok && gok && bytes.Equal(w, g) {
			continue
		}
		switch {
		case !wok && !gok:
			return "the lines are the same; the last newline is not"
		case !gok:
			return fmt.Sprintf("this run ends at line %d, the golden file goes on (%d lines): %s", i+1, len(wl), clip(w, 0))
		case !wok:
			return fmt.Sprintf("the golden file ends at line %d, this run goes on (%d lines): %s", i+1, len(gl), clip(g, 0))
		}
		at := 0
		for at < len(w) && at < len(g) && w[at] == g[at] {
			at++
		}
		return fmt.Sprintf("line %d (%d lines in the golden file, %d in this run), from byte %d:\n  golden:   %s\n  this run: %s",
			i+1, len(wl), len(gl), at+1, clip(w, at), clip(g, at))
	}
}

// lines splits text into its lines (a last one without a newline too).
func lines(text []byte) [][]byte {
	if len(text) == 0 {
		return nil
	}
	return bytes.Split(bytes.TrimSuffix(text, []byte("\n")), []byte("\n"))
}

// clip returns line from 40 bytes before at, at most 160 bytes, marking what it cut.
func clip(line []byte, at int) string {
	from := max(0, at-40)
	to := min(len(line), from+160)
	s := string(line[from:to])
	if from > 0 {
		s = "…" + s
	}
	if to < len(line) {
		s += "…"
	}
	return s
}

// goldenView is what the API lists of the day once it is delivered: every message's rank
// and every event of each target, oldest first, with the ranks that normalise their ids.
type goldenView struct {
	targets []string                 // in the order of the file
	msgRank map[int64]int            // message id → its rank among all messages (1: the oldest)
	events  map[string][]listedEvent // target → its events, oldest first
	rank    map[string]map[int64]int // target → event id → its rank among the target's events
	label   map[int64]string         // event id → "TARGET #rank" of the first target listing it
	pages   map[string]int           // target → how many pages its listing took
}

// goldenPageSize is the page of the event listings goldenView reads: below the day's events
// per target, so that the listing is paged (next_after) as a client pages it.
const goldenPageSize = 250

// readGoldenView reads, through the typed client, every message and every event of targets.
func readGoldenView(t *testing.T, s *server, targets []string) *goldenView {
	t.Helper()
	ctx := context.Background()
	c := s.api()
	v := &goldenView{targets: targets, msgRank: map[int64]int{}, events: map[string][]listedEvent{},
		rank: map[string]map[int64]int{}, label: map[int64]string{}, pages: map[string]int{}}
	for after := int64(0); ; {
		page, err := c.Messages(ctx, url.Values{"order": {"asc"}, "limit": {"1000"}, "after": {fmt.Sprint(after)}})
		if err != nil {
			t.Fatalf("GET /api/v1/messages after %d: %v", after, err)
		}
		for _, m := range page.Messages {
			if m.ID <= after {
				t.Fatalf("GET /api/v1/messages after %d, oldest first, lists message %d", after, m.ID)
			}
			v.msgRank[m.ID] = len(v.msgRank) + 1
			after = m.ID
		}
		if page.NextAfter == nil {
			break
		}
	}
	for _, name := range targets {
		v.rank[name] = map[int64]int{}
		for after := int64(0); ; {
			page, err := c.Events(ctx, url.Values{"target": {name}, "order": {"asc"}, "limit": {fmt.Sprint(goldenPageSize)}, "after": {fmt.Sprint(after)}})
			if err != nil {
				t.Fatalf("GET /api/v1/events?target=%s after %d: %v", name, after, err)
			}
			v.pages[name]++
			for _, e := range page.Events {
				if e.EventID <= after || e.Target != name {
					t.Fatalf("GET /api/v1/events?target=%s after %d, oldest first, lists event %d of %s", name, after, e.EventID, e.Target)
				}
				v.events[name] = append(v.events[name], e)
				v.rank[name][e.EventID] = len(v.events[name])
				if v.label[e.EventID] == "" { // an id the targets share: the first names it
					v.label[e.EventID] = fmt.Sprintf("%s #%d", name, len(v.events[name]))
				}
				after = e.EventID
			}
			if page.NextAfter == nil {
				break
			}
			if *page.NextAfter != after {
				t.Fatalf("GET /api/v1/events?target=%s: next_after %d, the page ends at %d", name, *page.NextAfter, after)
			}
		}
		if len(v.events[name]) == 0 {
			t.Fatalf("GET /api/v1/events?target=%s: no event", name)
		}
	}
	return v
}

// of is event id of target as "TARGET #rank" ("" when target does not list it): the targets
// that take a shared event share its id.
func (v *goldenView) of(target string, id int64) string {
	if r := v.rank[target][id]; r > 0 {
		return fmt.Sprintf("%s #%d", target, r)
	}
	return ""
}

// msg is the rank of message id, as "#n".
func (v *goldenView) msg(t *testing.T, id int64) string {
	t.Helper()
	if v.msgRank[id] == 0 {
		t.Fatalf("message %d is not one GET /api/v1/messages lists", id)
	}
	return fmt.Sprintf("#%d", v.msgRank[id])
}

// when is a time the API answered, as a placeholder: "<time>", or "null" when it gave none.
func when(at *time.Time) string {
	if at == nil {
		return "null"
	}
	return "<time>"
}

// orNull is a nullable string the API answered, quoted, or "null".
func orNull(s *string) string {
	if s == nil {
		return "null"
	}
	return fmt.Sprintf("%q", *s)
}

// goldenEventColumns are the fields of an event's line in API_EVENTS, as GET /api/v1/events
// names them, but for the payload: written as it is listed, "= TARGET #n" when it is the
// payload of an earlier event in the file, "elided" when the listing leaves it out.
const goldenEventColumns = "event_id msg_id type_tag kind flight_key state attempts error_class last_error created_at sent_at next_attempt_at first_failed_at payload_bytes payload"

// text renders the operator's view of the day as the golden file API_EVENTS: the status's
// message counts and targets, the dead letters, every event of each target as GET
// /api/v1/events lists it (oldest first, paged), the history of flids and the stored payload
// (GET /api/v1/events/{id}/payload) of each target's first and last event.
//
// Event ids are "TARGET #rank" (the rank among the target's events, as in the other golden
// files: every event is SENT, so the same rank), message ids "#rank" among every message, and
// every time "<time>" ("null" where the API gives none). A payload already written for an
// earlier event (a copy target's, mostly) is written as "= TARGET #rank" of the first.
// Left out as timing: the status's ages (oldest_pending_age_s, blocked_for_s) and the
// acknowledgements' and pauses' times. Attempts are kept: the day's faults are in the
// messages (malformed, orphan…), no receiver fails a send, so every event is SENT at its
// first attempt (0 failed attempts) on every run.
func (v *goldenView) text(t *testing.T, s *server, flids []int64) []byte {
	t.Helper()
	ctx := context.Background()
	c := s.api()
	var b bytes.Buffer

	// The status: messages by state, and each target's counts.
	st := s.status()
	b.WriteString("== status (GET /api/v1/status)\n")
	states := make([]string, 0, len(st.Counts))
	for k := range st.Counts {
		states = append(states, k)
	}
	slices.Sort(states)
	b.WriteString("messages:")
	for _, k := range states {
		fmt.Fprintf(&b, " %s=%d", k, st.Counts[k])
	}
	fmt.Fprintf(&b, "\npump running %t, paused %d\n", st.PumpRunning, len(st.Paused))
	var tgs []client.TargetStatus
	section(t, st, "targets", &tgs)
	slices.SortFunc(tgs, func(a, b client.TargetStatus) int { return strings.Compare(a.Target, b.Target) })
	for _, tg := range tgs {
		head := "null"
		if tg.Head != nil {
			head = v.of(tg.Target, tg.Head.EventID)
		}
		fmt.Fprintf(&b, "target %s: pending=%d dead=%d sent=%d rejecting=%t head=%s blocked_since=%s error_class=%s last_error=%s next_attempt_at=%s oldest_pending_at=%s\n",
			tg.Target, tg.Pending, tg.Dead, tg.Sent, tg.Rejecting, head, when(tg.BlockedSince), orNull(tg.ErrorClass), orNull(tg.LastError), when(tg.NextAttempt), when(tg.OldestPendingAt))
	}

	// The dead letters.
	var dead client.DeadSummary
	if err := c.Get(ctx, "/api/v1/dead", &dead); err != nil {
		t.Fatalf("GET /api/v1/dead: %v", err)
	}
	b.WriteString("== dead letters (GET /api/v1/dead)\n")
	for _, k := range []struct {
		name string
		n    client.DeadCount
	}{{"messages", dead.Messages}, {"events", dead.Events}} {
		fmt.Fprintf(&b, "%s: dead=%d acknowledged=%d unacknowledged=%d\n", k.name, k.n.Dead, k.n.Acknowledged, k.n.Unacknowledged)
	}
	for _, a := range dead.Acks {
		id := v.label[a.ID]
		if a.Kind == "message" {
			id = v.msg(t, a.ID)
		}
		fmt.Fprintf(&b, "ack %s %s by %q: %q, now %s\n", a.Kind, id, a.By, a.Note, a.State)
	}

	// Every event of each target, one a line: its fields in the order of goldenEventColumns.
	firstOf := map[string]string{} // a payload → the event it was first written for
	fmt.Fprintf(&b, "# an event: %s\n", goldenEventColumns)
	for _, name := range v.targets {
		fmt.Fprintf(&b, "== events of %s (GET /api/v1/events?target=%s&order=asc&limit=%d: %d events, %d pages)\n",
			name, name, goldenPageSize, len(v.events[name]), v.pages[name])
		for _, e := range v.events[name] {
			fmt.Fprintf(&b, "#%d %s %s %s %s %s %d %s %s %s %s %s %s %d",
				v.rank[name][e.EventID], v.msg(t, e.MsgID), e.TypeTag, e.Kind, orNull(e.FlightKey), e.State, e.Attempts, orNull(e.ErrorClass), orNull(e.LastError),
				when(&e.CreatedAt), when(e.SentAt), when(e.NextAttemptAt), when(e.FirstFailedAt), e.PayloadBytes)
			switch p := string(e.Payload); {
			case e.PayloadElided:
				b.WriteString(" elided\n")
			case firstOf[p] != "":
				fmt.Fprintf(&b, " = %s\n", firstOf[p])
			default:
				firstOf[p] = v.of(name, e.EventID)
				fmt.Fprintf(&b, " %s\n", p)
			}
		}
	}

	// The history of a few flights, read from KAFKA_FLOP's events.
	for _, flid := range flids {
		fmt.Fprintf(&b, "== history of flight %d (GET /api/v1/flights/%d/history)\n", flid, flid)
		n := 0
		err := c.FlightHistory(ctx, flid, func(ch client.FlightChange) {
			n++
			ev := v.of(handler.TargetFlop, ch.EventID)
			if ev == "" {
				t.Errorf("the history of flight %d names event %d, which no target lists", flid, ch.EventID)
			}
			fmt.Fprintf(&b, "%s msg=%s %s op=%s at=%s changes %s\n", ev, v.msg(t, ch.MsgID), ch.TypeTag, ch.Op, when(&ch.At), ch.Changes)
		})
		if err != nil {
			t.Fatalf("GET the history of flight %d: %v", flid, err)
		}
		if n == 0 {
			t.Fatalf("flight %d has no history", flid)
		}
	}

	// The stored payload of each target's first and last event, as it is stored.
	for _, name := range v.targets {
		evs := v.events[name]
		for _, e := range []listedEvent{evs[0], evs[len(evs)-1]} {
			raw, err := c.Raw(ctx, fmt.Sprintf("/api/v1/events/%d/payload?target=%s", e.EventID, name))
			if err != nil {
				t.Fatalf("GET the payload of %s: %v", v.of(name, e.EventID), err)
			}
			fmt.Fprintf(&b, "== payload of %s (GET /api/v1/events/{id}/payload)\n%s\n", v.of(name, e.EventID), raw)
		}
	}
	return b.Bytes()
}

// busiestFlight is the flight with the most events among evs (the lowest FLID of a tie).
func busiestFlight(evs []listedEvent) int64 {
	n := map[int64]int{}
	var best int64
	for _, e := range evs {
		var flid int64
		if e.FlightKey == nil {
			continue
		}
		if _, err := fmt.Sscan(*e.FlightKey, &flid); err != nil {
			continue
		}
		n[flid]++
		if n[flid] > n[best] || n[flid] == n[best] && flid < best {
			best = flid
		}
	}
	return best
}

// second is the FLID of the second flight of a board (of its first when it has one only).
func second(flights []json.RawMessage) int64 {
	var f struct {
		FLID int64 `json:"FLID"`
	}
	json.Unmarshal(flights[min(1, len(flights)-1)], &f)
	return f.FLID
}

// projection renders the REDIS_FLIGHT projection under prefix as the golden file
// REDIS_FLIGHT, after checking that each of its flights is in Redis as the API answers it: every
// key sorted, the prefix written "{p}"; a hash field by field (sorted), a set's members sorted.
// The event ids it holds (a flight's eid, a tombstone's value) become their rank among
// REDIS_FLIGHT's events ("#n"), the message (msg) its rank among the messages, the update
// time (upd, the event's created_at) "<time>". Versions (ver) are kept: they count changes.
func (v *goldenView) projection(t *testing.T, s *server, prefix string) []byte {
	t.Helper()
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: flighttest.RedisAddr()})
	defer rdb.Close()
	keys, err := rdb.Keys(ctx, prefix+"*").Result()
	if err != nil {
		t.Fatalf("the projection's keys: %v", err)
	}
	slices.Sort(keys)
	eid := func(key, s string) string {
		var id int64
		if _, err := fmt.Sscan(s, &id); err != nil || v.rank[goldenProjection][id] == 0 {
			t.Fatalf("%s: %q is not an event of %s", key, s, goldenProjection)
		}
		return fmt.Sprintf("#%d", v.rank[goldenProjection][id])
	}
	var b bytes.Buffer
	var flids []int64
	for _, key := range keys {
		name := "{p}" + strings.TrimPrefix(key, prefix)
		typ, err := rdb.Type(ctx, key).Result()
		if err != nil {
			t.Fatalf("TYPE %s: %v", key, err)
		}
		if flid, ok := strings.CutPrefix(name, "{p}flight:"); ok {
			flids = append(flids, mustFLID(t, flid))
		} else if flid, ok := strings.CutPrefix(name, "{p}gone:"); ok {
			flids = append(flids, mustFLID(t, flid))
		}
		switch typ {
		case "hash":
			h, err := rdb.HGetAll(ctx, key).Result()
			if err != nil {
				t.Fatalf("HGETALL %s: %v", key, err)
			}
			fields := make([]string, 0, len(h))
			for f := range h {
				fields = append(fields, f)
			}
			slices.Sort(fields)
			fmt.Fprintf(&b, "%s hash\n", name)
			for _, f := range fields {
				val := h[f]
				switch f {
				case "eid":
					val = eid(key, val)
				case "msg":
					var id int64
					fmt.Sscan(val, &id)
					val = v.msg(t, id)
				case "upd":
					if _, err := time.Parse(time.RFC3339Nano, val); err != nil {
						t.Fatalf("%s upd: %v", key, err)
					}
					val = "<time>"
				}
				fmt.Fprintf(&b, "  %s %s\n", f, val)
			}
		case "set":
			members, err := rdb.SMembers(ctx, key).Result()
			if err != nil {
				t.Fatalf("SMEMBERS %s: %v", key, err)
			}
			slices.Sort(members)
			fmt.Fprintf(&b, "%s set %s\n", name, strings.Join(members, " "))
		case "string":
			val, err := rdb.Get(ctx, key).Result()
			if err != nil {
				t.Fatalf("GET %s: %v", key, err)
			}
			if strings.HasPrefix(name, "{p}gone:") {
				val = eid(key, val)
			}
			fmt.Fprintf(&b, "%s string %s\n", name, val)
		default:
			t.Fatalf("%s: a %s, which the projection does not write", key, typ)
		}
	}
	if len(flids) == 0 {
		t.Fatalf("no flight under %s", prefix)
	}
	sameAsAPI(t, s, rdb, prefix, flids...)
	return b.Bytes()
}

// mustFLID reads a FLID from a key.
func mustFLID(t *testing.T, s string) int64 {
	t.Helper()
	var flid int64
	if _, err := fmt.Sscan(s, &flid); err != nil {
		t.Fatalf("FLID %q: %v", s, err)
	}
	return flid
}
