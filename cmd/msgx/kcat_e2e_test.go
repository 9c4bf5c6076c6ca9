package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"msgx/docs"
	"msgx/internal/testkit"
)

// kcatPath finds Debian's kcat (librdkafka's command-line client). Under
// MSGX_TEST_REQUIRE_SERVICES=1 its absence fails the test (.ci/run installs it); otherwise the
// test skips, saying why.
func kcatPath(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("kcat")
	testkit.RequireService(t, "kcat (Debian: apt-get install kcat), for the librdkafka interop test,", err)
	return p
}

// kcatRecord is one line of `kcat -C -J`: the record as librdkafka delivered it.
type kcatRecord struct {
	Topic     string   `json:"topic"`
	Partition int32    `json:"partition"`
	Offset    int64    `json:"offset"`
	Headers   []string `json:"headers"` // name, value, name, value, …
	Key       *string  `json:"key"`
	Payload   *string  `json:"payload"`
}

// header returns the record's headers as name → values (a name given twice has two values).
func (r kcatRecord) header() map[string][]string {
	h := map[string][]string{}
	for i := 0; i+1 < len(r.Headers); i += 2 {
		h[r.Headers[i]] = append(h[r.Headers[i]], r.Headers[i+1])
	}
	return h
}

// kcatConsume reads topic from the beginning to its end with kcat and returns its records
// in partition and offset order.
func kcatConsume(t *testing.T, kcat, broker, topic string) []kcatRecord {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := dieWithTest(exec.CommandContext(ctx, kcat, "-C", "-b", broker, "-t", topic, "-o", "beginning", "-e", "-J", "-q"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kcat -C -t %s: %v\n%s", topic, err, stderr.String())
	}
	var out []kcatRecord
	dec := json.NewDecoder(&stdout)
	for dec.More() {
		var r kcatRecord
		if err := dec.Decode(&r); err != nil {
			t.Fatalf("kcat -J output of %s is not JSON lines: %v\n%s", topic, err, stdout.String())
		}
		out = append(out, r)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Partition != out[j].Partition {
			return out[i].Partition < out[j].Partition
		}
		return out[i].Offset < out[j].Offset
	})
	return out
}

// kafkaPartition is the partition the Java client's default partitioner (and franz-go's,
// and librdkafka's murmur2_random) gives a keyed record: the positive murmur2 hash of the
// key modulo the partition count. A Java producer writing the same flight key lands in the
// same partition as msgx does.
func kafkaPartition(key []byte, partitions int32) int32 {
	const m, seed = uint32(0x5bd1e995), uint32(0x9747b28c)
	n := len(key)
	h := seed ^ uint32(n)
	for i := 0; i+4 <= n; i += 4 {
		k := uint32(key[i]) | uint32(key[i+1])<<8 | uint32(key[i+2])<<16 | uint32(key[i+3])<<24
		k *= m
		k ^= k >> 24
		k *= m
		h = h*m ^ k
	}
	tail := key[n&^3:]
	switch len(tail) {
	case 3:
		h ^= uint32(tail[2]) << 16
		fallthrough
	case 2:
		h ^= uint32(tail[1]) << 8
		fallthrough
	case 1:
		h ^= uint32(tail[0])
		h *= m
	}
	h ^= h >> 13
	h *= m
	h ^= h >> 15
	return int32(h&0x7fffffff) % partitions
}

// TestKafkaPartitionIsJavas pins kafkaPartition to the partitions franz-go's producer chose
// for these keys on three partitions (internal/target's kafka tests), so the interop test
// below checks placement against a hash that is right.
func TestKafkaPartitionIsJavas(t *testing.T) {
	t.Parallel()
	for key, want := range map[string]int32{"CA1234-20250101-D": 0, "CA1234-D": 2, "MU5101-A": 1, "HU7801-A": 1} {
		if got := kafkaPartition([]byte(key), 3); got != want {
			t.Errorf("partition of %q: %d, want %d", key, got, want)
		}
	}
}

// TestKafkaInteropKcat has a consumer that is not Go read what msgx produced: msgx serve
// delivers KAFKA_FLOP and KAFKA_SCHD to a Kafka cluster (franz-go's kfake, in the test
// process, on a TCP port) and Debian's kcat (librdkafka, the C client under the Python,
// .NET and Go-cgo consumers and close kin of the Java one) consumes both topics from the
// start. It checks what such a consumer relies on: every event exactly once; the flight key
// as the record key, every record of a flight on the partition the Java partitioner gives
// that key and in event order; the headers event_id, msg_id and type_tag once each, equal to
// the envelope's, event_id strictly increasing per flight; values that parse as the
// documented JSON (the FLOP envelope and payload, the SCHD batch arrays, a flight at most
// once per batch and its newest record last), valid against docs/schemas.
func TestKafkaInteropKcat(t *testing.T) {
	t.Parallel()
	kcat := kcatPath(t)
	eachDB(t, func(t *testing.T, db dbEnv) {
		const parts = 3
		cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(parts, "msgx.flop", "msgx.schd"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cluster.Close)
		broker := cluster.ListenAddrs()[0]
		cfg := filepath.Join(t.TempDir(), "msgx.yaml")
		os.WriteFile(cfg, []byte(fmt.Sprintf(`targets:
  KAFKA_FLOP: {sink: kafka, brokers: [%q], topic: msgx.flop}
  KAFKA_SCHD: {sink: kafka, brokers: [%q], topic: msgx.schd}
  REDIS_NOTIFY: {sink: file}
  ES_FLIGHT: {sink: file}
`, broker, broker)), 0o644)
		s := db.start(t, "MSGX_CONFIG="+cfg, "MSGX_PIPELINE_POLL_INTERVAL=50ms", "MSGX_SCHD_FLUSH_PERIOD=200ms")

		day := tomorrow(t)
		flids := []int64{93101, 93102, 93103, 93104, 93105}
		used := map[int32]bool{}
		for _, f := range flids {
			used[kafkaPartition([]byte(strconv.FormatInt(f, 10)), parts)] = true
		}
		if len(used) < 2 {
			t.Fatalf("the flights %v all hash to one partition: the test would not see a flight leave its partition", flids)
		}
		var fltrs []string
		for i, f := range flids {
			fltrs = append(fltrs, e2eFltr(f, fmt.Sprintf("CA%04d", 3100+i), "D", day.Add(time.Duration(8*60+i*7)*time.Minute), ""))
		}
		s.post(e2eSchd(870001, fltrs...))
		// Three rounds of EOBT changes, the flights interleaved, so each partition holds
		// several flights' records and a flight's order is not just its partition's.
		eobt := map[int64]string{}
		seqn := 870010
		for round := range 3 {
			for i, f := range flids {
				at := day.Add(time.Duration(9*60+round*10+i) * time.Minute)
				seqn++
				s.post(e2eFlop(seqn, "EOBT", f, "<EOBT>"+sisTime(at)+"</EOBT>"))
				eobt[f] = at.UTC().Format(time.RFC3339)
			}
		}
		deleted := flids[len(flids)-1]
		last := s.post(e2eFlop(seqn+1, "FDEL", deleted, "<FDEL/>"))
		s.await(last, "SUCCEEDED", state("SUCCEEDED", ""))

		// Every event SENT (none DEAD): then both topics hold all there is to read.
		byTarget := map[string][]listedEvent{}
		waitFor(t, "every KAFKA_FLOP and KAFKA_SCHD event SENT", func() bool {
			for _, target := range []string{"KAFKA_FLOP", "KAFKA_SCHD"} {
				evs := s.events("target=" + target)
				for _, e := range evs {
					if e.State == "DEAD" {
						t.Fatalf("event %d of %s is DEAD: %v\n%s", e.EventID, target, deref(e.LastError), s.logs)
					}
					if e.State != "SENT" {
						return false
					}
				}
				byTarget[target] = evs
			}
			return true
		})
		// One insert, three updates and (for the deleted flight) a delete per flight.
		if want := len(flids)*4 + 1; len(byTarget["KAFKA_FLOP"]) != want {
			t.Fatalf("%d KAFKA_FLOP events, want %d", len(byTarget["KAFKA_FLOP"]), want)
		}

		flop, schd := kcatConsume(t, kcat, broker, "msgx.flop"), kcatConsume(t, kcat, broker, "msgx.schd")
		checkKcatFlop(t, flop, byTarget["KAFKA_FLOP"], parts, eobt, deleted)
		checkKcatSchd(t, schd, byTarget["KAFKA_SCHD"], parts, eobt, deleted)
		perPartition := map[int32]int{}
		for _, r := range flop {
			perPartition[r.Partition]++
		}
		t.Logf("kcat read %d msgx.flop records (per partition %v) and %d msgx.schd batch records carrying %d schedule events",
			len(flop), perPartition, len(schd), len(byTarget["KAFKA_SCHD"]))
	})
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// kafkaHeaders checks that r has the headers event_id, msg_id and type_tag once each and
// nothing else, and returns them as name → value.
func kafkaHeaders(t *testing.T, r kcatRecord) map[string]string {
	t.Helper()
	h := map[string]string{}
	for name, vs := range r.header() {
		if len(vs) != 1 {
			t.Errorf("%s/%d@%d: header %s %d times (%v)", r.Topic, r.Partition, r.Offset, name, len(vs), vs)
		}
		h[name] = vs[0]
	}
	if got := slices.Sorted(maps.Keys(h)); !slices.Equal(got, []string{"event_id", "msg_id", "type_tag"}) {
		t.Errorf("%s/%d@%d: headers %v, want event_id, msg_id, type_tag", r.Topic, r.Partition, r.Offset, got)
	}
	validateKafka(t, r)
	return h
}

// checkKcatFlop checks the msgx.flop topic as kcat read it against the KAFKA_FLOP events.
func checkKcatFlop(t *testing.T, recs []kcatRecord, events []listedEvent, parts int32, eobt map[int64]string, deleted int64) {
	t.Helper()
	if len(recs) != len(events) {
		t.Fatalf("kcat read %d records from msgx.flop, msgx sent %d events", len(recs), len(events))
	}
	want := map[int64]listedEvent{}
	for _, e := range events {
		want[e.EventID] = e
	}
	seen := map[int64]bool{}
	type flightSeen struct {
		partition int32
		lastEvent int64
		ops       []string
		lastEOBT  any
	}
	flights := map[string]*flightSeen{}
	partitions := map[int32]bool{}
	for _, r := range recs {
		where := fmt.Sprintf("msgx.flop/%d@%d", r.Partition, r.Offset)
		if r.Key == nil || r.Payload == nil {
			t.Fatalf("%s: key %v, payload %v: a KAFKA_FLOP record has both", where, r.Key, r.Payload)
		}
		h := kafkaHeaders(t, r)
		var env struct {
			EventID   int64  `json:"event_id"`
			MsgID     int64  `json:"msg_id"`
			TypeTag   string `json:"type_tag"`
			Target    string `json:"target"`
			Kind      string `json:"kind"`
			FlightKey string `json:"flight_key"`
			CreatedAt string `json:"created_at"`
			Payload   struct {
				FLID    int64                      `json:"FLID"`
				Op      string                     `json:"op"`
				Changes map[string]json.RawMessage `json:"changes"`
			} `json:"payload"`
		}
		if err := json.Unmarshal([]byte(*r.Payload), &env); err != nil {
			t.Fatalf("%s: the value is not the JSON envelope: %v\n%s", where, err, *r.Payload)
		}
		e, ok := want[env.EventID]
		switch {
		case !ok:
			t.Fatalf("%s: event %d is no KAFKA_FLOP event of msgx", where, env.EventID)
		case seen[env.EventID]:
			t.Fatalf("%s: event %d read twice", where, env.EventID)
		}
		seen[env.EventID] = true
		if _, err := time.Parse(time.RFC3339Nano, env.CreatedAt); err != nil {
			t.Errorf("%s: created_at %q is not RFC 3339", where, env.CreatedAt)
		}
		key := *r.Key
		if e.FlightKey == nil || key != *e.FlightKey || key != env.FlightKey || key != strconv.FormatInt(env.Payload.FLID, 10) {
			t.Errorf("%s: key %q, envelope flight_key %q, payload FLID %d, event's flight key %v: want the FLID as decimal everywhere",
				where, key, env.FlightKey, env.Payload.FLID, deref(e.FlightKey))
		}
		if h["event_id"] != strconv.FormatInt(env.EventID, 10) || h["msg_id"] != strconv.FormatInt(env.MsgID, 10) || h["type_tag"] != env.TypeTag ||
			env.MsgID != e.MsgID {
			t.Errorf("%s: headers %v, envelope event %d msg %d %s (msgx: msg %d)", where, h, env.EventID, env.MsgID, env.TypeTag, e.MsgID)
		}
		if env.Target != "KAFKA_FLOP" || env.Kind != "flop" || len(env.Payload.Changes) == 0 {
			t.Errorf("%s: target %q kind %q with %d changes, want KAFKA_FLOP flop with changes", where, env.Target, env.Kind, len(env.Payload.Changes))
		}
		if p := kafkaPartition([]byte(key), parts); r.Partition != p {
			t.Errorf("%s: key %s on partition %d; the Java partitioner puts it on %d", where, key, r.Partition, p)
		}
		partitions[r.Partition] = true
		f := flights[key]
		if f == nil {
			f = &flightSeen{partition: r.Partition}
			flights[key] = f
		}
		if r.Partition != f.partition {
			t.Errorf("%s: flight %s on partition %d and %d", where, key, f.partition, r.Partition)
		}
		if env.EventID <= f.lastEvent {
			t.Errorf("%s: flight %s's event %d after its event %d: out of order", where, key, env.EventID, f.lastEvent)
		}
		f.lastEvent = env.EventID
		f.ops = append(f.ops, env.Payload.Op)
		if c, ok := env.Payload.Changes["EOBT"]; ok {
			var v struct{ New any }
			json.Unmarshal(c, &v)
			f.lastEOBT = v.New
		}
	}
	if len(partitions) < 2 {
		t.Errorf("the records used %d partition(s): the flights should spread", len(partitions))
	}
	for flid, want := range eobt {
		key := strconv.FormatInt(flid, 10)
		f := flights[key]
		if f == nil {
			t.Errorf("no record of flight %s", key)
			continue
		}
		wantOps := []string{"insert", "update", "update", "update"}
		if flid == deleted {
			wantOps = append(wantOps, "delete")
		}
		if !slices.Equal(f.ops, wantOps) {
			t.Errorf("flight %s's ops %v, want %v", key, f.ops, wantOps)
		}
		if flid != deleted && f.lastEOBT != want {
			t.Errorf("flight %s's last EOBT change to %v, want %s", key, f.lastEOBT, want)
		}
	}
}

// checkKcatSchd checks the msgx.schd topic as kcat read it against the KAFKA_SCHD events.
func checkKcatSchd(t *testing.T, recs []kcatRecord, events []listedEvent, parts int32, eobt map[int64]string, deleted int64) {
	t.Helper()
	if len(recs) == 0 {
		t.Fatal("kcat read no record from msgx.schd")
	}
	ids := map[int64]bool{}
	for _, e := range events {
		ids[e.EventID] = true
	}
	var lastEvent int64
	newest := map[int64]map[string]any{} // FLID → its last record read
	for _, r := range recs {
		where := fmt.Sprintf("msgx.schd/%d@%d", r.Partition, r.Offset)
		if r.Key == nil || *r.Key != "KAFKA_SCHD" || r.Payload == nil {
			t.Fatalf("%s: key %v: want every batch record keyed KAFKA_SCHD, with a value", where, r.Key)
		}
		if p := kafkaPartition([]byte("KAFKA_SCHD"), parts); r.Partition != p {
			t.Errorf("%s: on partition %d; the Java partitioner puts key KAFKA_SCHD on %d", where, r.Partition, p)
		}
		h := kafkaHeaders(t, r)
		id, err := strconv.ParseInt(h["event_id"], 10, 64)
		if err != nil || !ids[id] {
			t.Errorf("%s: event_id header %q is no KAFKA_SCHD event of msgx", where, h["event_id"])
		}
		if id <= lastEvent {
			t.Errorf("%s: event_id %d after %d: batches out of order", where, id, lastEvent)
		}
		lastEvent = id
		var batch []map[string]any
		if err := json.Unmarshal([]byte(*r.Payload), &batch); err != nil || len(batch) == 0 {
			t.Fatalf("%s: the value is not a JSON array of flight records (%v)\n%s", where, err, *r.Payload)
		}
		inBatch := map[int64]bool{}
		for _, rec := range batch {
			flid, ok := rec["FLID"].(float64)
			if !ok {
				t.Fatalf("%s: a record without FLID: %v", where, rec)
			}
			if inBatch[int64(flid)] {
				t.Errorf("%s: flight %d twice in one batch", where, int64(flid))
			}
			inBatch[int64(flid)] = true
			for _, k := range []string{"ALCD", "FLNO", "MVIN", "SODT", "FLTY", "FLIN", "ACFT"} {
				if _, ok := rec[k]; !ok {
					t.Errorf("%s: flight %d's record has no %s", where, int64(flid), k)
				}
			}
			newest[int64(flid)] = rec
		}
	}
	// The newest record of each flight is its state after the last message.
	for flid, want := range eobt {
		rec := newest[flid]
		switch {
		case rec == nil:
			t.Errorf("no schedule record of flight %d", flid)
		case flid == deleted:
			if rec["deleted"] != true {
				t.Errorf("flight %d's last schedule record is not deleted: %v", flid, rec)
			}
		case rec["EOBT"] != want || rec["deleted"] != nil:
			t.Errorf("flight %d's last schedule record has EOBT %v (deleted %v), want %s", flid, rec["EOBT"], rec["deleted"], want)
		}
	}
}

// validateKafka checks a record kcat read against docs/schemas: its headers against
// kafka-headers, its value against kafka-flop or kafka-schd by topic.
func validateKafka(t *testing.T, r kcatRecord) {
	t.Helper()
	var hs [][2]string
	for i := 0; i+1 < len(r.Headers); i += 2 {
		hs = append(hs, [2]string{r.Headers[i], r.Headers[i+1]})
	}
	if err := docs.ValidateHeaders(docs.KafkaHeaders, hs); err != nil {
		t.Errorf("%s/%d@%d: headers: %v", r.Topic, r.Partition, r.Offset, err)
	}
	schema := map[string]string{"msgx.flop": docs.KafkaFlop, "msgx.schd": docs.KafkaSchd}[r.Topic]
	if r.Payload != nil {
		if err := docs.ValidatePayload(schema, []byte(*r.Payload)); err != nil {
			t.Errorf("%s/%d@%d: value: %v", r.Topic, r.Partition, r.Offset, err)
		}
	}
}
