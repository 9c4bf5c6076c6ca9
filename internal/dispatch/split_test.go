package dispatch_test

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"msgx/internal/dispatch"
	"msgx/internal/pipeline"
	"msgx/internal/store"
	"msgx/internal/store/storetest"
	"msgx/internal/target"
)

// limitSink is a fake sink with a record size limit (target.ValueLimiter).
type limitSink struct {
	fakeSink
	max int
}

func (s *limitSink) MaxValueBytes() int { return s.max }

var _ target.ValueLimiter = (*limitSink)(nil)

// limitHarness is a schedule harness whose sink takes values of at most max bytes.
func limitHarness(t *testing.T, db *store.DB, max int) (*harness, *limitSink) {
	t.Helper()
	h := schdHarness(t, db, dispatch.Options{FlushLimit: 1000})
	s := &limitSink{max: max}
	h.sinks[schd] = &s.fakeSink
	h.d = dispatch.New(db.Outbox, map[string]target.Sink{schd: s}, dispatch.Options{
		SchdTarget: schd, FlushLimit: 1000, Policy: policy, Clock: h.clock, Logger: logger(h.log),
	})
	return h, s
}

// padded inserts a schedule event for flight key whose payload is about size bytes.
func padded(t *testing.T, db *store.DB, key string, v, size int) int64 {
	t.Helper()
	p := fmt.Sprintf(`{"FLID":%q,"v":%d,"pad":""}`, key, v)
	p = fmt.Sprintf(`{"FLID":%q,"v":%d,"pad":%q}`, key, v, strings.Repeat("x", max(0, size-len(p))))
	return insert(t, db, ev{target: schd, kind: "schd", key: key, payload: p})
}

// payloads decodes the JSON arrays of recs, in order, into their payloads.
func payloads(t *testing.T, recs []target.Record) []string {
	t.Helper()
	var out []string
	for _, r := range recs {
		var arr []json.RawMessage
		if err := json.Unmarshal(r.Value, &arr); err != nil {
			t.Fatalf("record %d: %v", r.EventID, err)
		}
		for _, p := range arr {
			out = append(out, string(p))
		}
	}
	return out
}

// storedPayloads returns the stored payloads of ids, in order.
func storedPayloads(t *testing.T, db *store.DB, ids []int64) []string {
	t.Helper()
	var out []string
	for _, id := range ids {
		var p string
		if err := db.SQL.QueryRow(`SELECT PAYLOAD FROM MSG_EVENT WHERE EVENT_ID = ?`, id).Scan(&p); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

func TestSchdBatchSplitsByBytes(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		const limit = 300
		h, sink := limitHarness(t, db, limit)
		var all, want []int64
		newest := map[string]int64{}
		for i := range 30 {
			key := fmt.Sprintf("F%02d", i%20) // flights F00..F09 come twice
			id := padded(t, db, key, i, 40+i*3)
			all = append(all, id)
			newest[key] = id
		}
		for _, id := range all {
			for _, n := range newest {
				if n == id {
					want = append(want, id)
				}
			}
		}
		if n, _ := h.flush(t, true); n != len(all) {
			t.Fatalf("flush sent %d, want %d", n, len(all))
		}
		if sink.numCalls() != 1 {
			t.Fatalf("%d sends, want one with every record", sink.numCalls())
		}
		recs := sink.last(t)
		if len(recs) < 5 {
			t.Fatalf("%d records; %d payloads of up to ~130 bytes cannot fit in fewer than 5 of %d bytes", len(recs), len(want), limit)
		}
		for i, r := range recs {
			if len(r.Value) > limit {
				t.Errorf("record %d is %d bytes, over the limit %d", i, len(r.Value), limit)
			}
			if r.Key != "" || r.Target != schd {
				t.Errorf("record %d: key %q target %q", i, r.Key, r.Target)
			}
			if i > 0 && r.EventID <= recs[i-1].EventID {
				t.Errorf("record %d has event id %d after %d", i, r.EventID, recs[i-1].EventID)
			}
		}
		if got, w := payloads(t, recs), storedPayloads(t, db, want); !slices.Equal(got, w) {
			t.Fatalf("payloads across the records\n got %v\nwant %v (newest per flight, in event order)", got, w)
		}
		wantState(t, db, "SENT", all...)
		if l := h.log.lines(t, "schd batch sent"); len(l) != 1 || l[0]["records"] != float64(len(want)) || l[0]["parts"] != float64(len(recs)) {
			t.Fatalf("batch log: %v", l)
		}
	})
}

// TestSchdPartialDeliveryOfSplitBatch: the sink delivers the first record of three: the
// events it carries are SENT, the rest back off and go next time, in order.
func TestSchdPartialDeliveryOfSplitBatch(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		h, sink := limitHarness(t, db, 250)
		var ids []int64
		for i := range 6 {
			ids = append(ids, padded(t, db, fmt.Sprintf("F%d", i), 1, 100)) // two per record
		}
		sink.setFail(func(recs []target.Record) (int, error) { return 1, errDown })
		if n, wait := h.flush(t, true); n != 2 || wait != policy.Delay(1) {
			t.Fatalf("partial flush: sent %d, wait %v", n, wait)
		}
		if got := len(sink.last(t)); got != 3 {
			t.Fatalf("%d records, want 3", got)
		}
		wantState(t, db, "SENT", ids[:2]...)
		for _, id := range ids[2:] {
			if r := get(t, db, id); r.State != "PENDING" || r.Attempts != 1 || r.Class.String != "INFRA" {
				t.Fatalf("event %d after the partial send: %+v", id, r)
			}
		}
		sink.succeed()
		h.clock.Add(policy.Delay(1))
		if n, _ := h.flush(t, true); n != 4 {
			t.Fatalf("retry sent %d, want 4", n)
		}
		if got, w := payloads(t, sink.last(t)), storedPayloads(t, db, ids[2:]); !slices.Equal(got, w) {
			t.Fatalf("retry carried %v, want %v", got, w)
		}
	})
}

// TestSchdOversizedFlightRecordIsRejectedAlone: a flight record longer than a record can
// carry goes DEAD as REJECTED with a last error that says so, with the older event of its
// flight; the rest of the batch is delivered and the target does not stall.
func TestSchdOversizedFlightRecordIsRejectedAlone(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		const limit = 200
		h, sink := limitHarness(t, db, limit)
		a := padded(t, db, "A", 1, 50)
		bigOld := padded(t, db, "BIG", 1, 50)
		b := padded(t, db, "B", 1, 50)
		big := padded(t, db, "BIG", 2, 500)
		c := padded(t, db, "C", 1, 50)
		if n, _ := h.flush(t, true); n != 3 {
			t.Fatalf("flush sent %d, want 3", n)
		}
		if got, w := payloads(t, sink.last(t)), storedPayloads(t, db, []int64{a, b, c}); !slices.Equal(got, w) {
			t.Fatalf("sent %v, want %v", got, w)
		}
		wantState(t, db, "SENT", a, b, c)
		r := get(t, db, big)
		if r.State != "DEAD" || r.Class.String != string(pipeline.Rejected) || r.Attempts != 1 ||
			!strings.Contains(r.LastError.String, "is 500 bytes, over the 200 bytes") ||
			!strings.Contains(r.LastError.String, "max-record-bytes") {
			t.Fatalf("oversized event: %+v", r)
		}
		r = get(t, db, bigOld)
		if r.State != "DEAD" || r.Class.String != string(pipeline.Rejected) ||
			!strings.Contains(r.LastError.String, fmt.Sprintf("superseded by event %d", big)) {
			t.Fatalf("older event of the oversized flight: %+v", r)
		}
		if l := h.log.lines(t, "event dead"); len(l) != 2 {
			t.Fatalf("dead log lines: %v", l)
		}
		// Nothing is left to hold the target.
		if n, _ := h.flush(t, true); n != 0 {
			t.Fatalf("second flush sent %d", n)
		}
	})
}

// logger logs as JSON into l, as the harness does.
func logger(l *logBuf) *slog.Logger {
	return slog.New(slog.NewJSONHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}
