package target

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"msgx/internal/pipeline"
	"msgx/internal/targetconf"
)

const testIndex = "msgx-flight"

// bulkAction is one parsed action of a bulk request.
type bulkAction struct {
	op   string // index | delete
	meta map[string]any
	doc  json.RawMessage // index only
}

// bulkServer is a stand-in Elasticsearch node that parses every _bulk request and answers
// with the item statuses that answer(i, action) gives (or with status when it is set).
type bulkServer struct {
	t        *testing.T
	mu       sync.Mutex
	requests [][]bulkAction
	status   int // answer the whole request with this, when set
	// maxActions, when set, answers 413 to a request of more actions.
	maxActions int
	answer     func(i int, a bulkAction) string // one item's JSON body, e.g. {"status":201}
}

func (b *bulkServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Elastic-Product", "Elasticsearch")
	w.Header().Set("Content-Type", "application/json")
	if r.Method != http.MethodPost || r.URL.Path != "/_bulk" {
		b.t.Errorf("%s %s, want POST /_bulk", r.Method, r.URL.Path)
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/x-ndjson" {
		b.t.Errorf("Content-Type %q, want NDJSON", ct)
	}
	var actions []bulkAction
	sc := bufio.NewScanner(r.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var a map[string]map[string]any
		if err := json.Unmarshal(line, &a); err != nil || len(a) != 1 {
			b.t.Errorf("action line %q: %v", line, err)
			http.Error(w, "bad action", http.StatusBadRequest)
			return
		}
		var act bulkAction
		for op, meta := range a {
			act.op, act.meta = op, meta
		}
		switch act.op {
		case "index":
			if !sc.Scan() {
				b.t.Errorf("index action without a document line")
				return
			}
			act.doc = append(json.RawMessage(nil), sc.Bytes()...)
			if !json.Valid(act.doc) {
				b.t.Errorf("document line %q is not JSON", act.doc)
			}
		case "delete":
		default:
			b.t.Errorf("unexpected action %q", act.op)
		}
		actions = append(actions, act)
	}
	b.mu.Lock()
	b.requests = append(b.requests, actions)
	b.mu.Unlock()
	if b.maxActions > 0 && len(actions) > b.maxActions {
		w.WriteHeader(http.StatusRequestEntityTooLarge)
		fmt.Fprint(w, `{"error":"request too large"}`)
		return
	}
	if b.status != 0 {
		w.WriteHeader(b.status)
		fmt.Fprint(w, `{"error":{"type":"test","reason":"whole request refused"},"status":`, b.status, `}`)
		return
	}
	var items []string
	errs := false
	for i, a := range actions {
		item := `{"status":201,"result":"created"}`
		if b.answer != nil {
			item = b.answer(i, a)
		}
		if strings.Contains(item, `"error"`) {
			errs = true
		}
		items = append(items, fmt.Sprintf(`{%q:%s}`, a.op, item))
	}
	fmt.Fprintf(w, `{"took":1,"errors":%t,"items":[%s]}`, errs, strings.Join(items, ","))
}

func newBulkServer(t *testing.T) (*bulkServer, Config) {
	b := &bulkServer{t: t}
	srv := httptest.NewServer(b)
	t.Cleanup(srv.Close)
	return b, Config{Sink: targetconf.SinkElasticsearch, Addresses: []string{srv.URL}, Index: testIndex, Timeout: 2 * time.Second}
}

func esRecords() []Record {
	recs := records("ES_FLIGHT", 41, 4, "CA1234-20250101-D", "MU5101-20250101-A")
	recs[1].Value = []byte("{\n  \"pretty\": true,\n  \"flid\": \"MU5101-20250101-A\"\n}") // NDJSON needs one line
	recs[2].Delete, recs[2].Kind, recs[2].Value = true, "es-delete", nil
	return recs
}

func TestElasticsearchBulkRequestShape(t *testing.T) {
	b, cfg := newBulkServer(t)
	s := mustOpen(t, "ES_FLIGHT", cfg)
	recs := esRecords()
	if n, err := s.Send(context.Background(), recs); err != nil || n != len(recs) {
		t.Fatalf("Send = %d, %v", n, err)
	}
	if len(b.requests) != 1 {
		t.Fatalf("%d bulk requests, want 1 per Send", len(b.requests))
	}
	got := b.requests[0]
	if len(got) != len(recs) {
		t.Fatalf("%d actions, want %d", len(got), len(recs))
	}
	for i, r := range recs {
		a := got[i]
		wantOp := "index"
		if r.Delete {
			wantOp = "delete"
		}
		if a.op != wantOp {
			t.Errorf("action %d: %s, want %s", i, a.op, wantOp)
		}
		if a.meta["_index"] != testIndex || a.meta["_id"] != r.Key || a.meta["version"] != float64(r.EventID) || a.meta["version_type"] != "external" {
			t.Errorf("action %d metadata %v; want _index %s, _id %s, version %d, version_type external", i, a.meta, testIndex, r.Key, r.EventID)
		}
		if r.Delete {
			continue
		}
		var want bytes.Buffer
		if err := json.Compact(&want, r.Value); err != nil {
			t.Fatal(err)
		}
		if string(a.doc) != want.String() {
			t.Errorf("action %d document %s, want %s", i, a.doc, want.String())
		}
	}
}

func TestElasticsearchItemResults(t *testing.T) {
	for _, tc := range []struct {
		name  string
		items map[int]string // item index → answer; others 201
		n     int
		class pipeline.ErrorClass // "" for no error
		inErr string
	}{
		{name: "all created", n: 4},
		{name: "version conflict counts as success", n: 4, items: map[int]string{
			0: `{"status":409,"error":{"type":"version_conflict_engine_exception","reason":"current version [50] is higher than or equal to the one provided [41]"}}`}},
		{name: "delete of a missing document", n: 4, items: map[int]string{2: `{"status":404,"result":"not_found"}`}},
		{name: "rejected execution is retried", n: 1, class: pipeline.Infra, inErr: "event 42", items: map[int]string{
			1: `{"status":429,"error":{"type":"es_rejected_execution_exception","reason":"queue full"}}`}},
		{name: "shard failure is retried", n: 3, class: pipeline.Infra, inErr: "unavailable_shards_exception", items: map[int]string{
			3: `{"status":503,"error":{"type":"unavailable_shards_exception","reason":"primary shard is not active"}}`}},
		{name: "mapping error is rejected", n: 0, class: pipeline.Rejected, inErr: "event 41", items: map[int]string{
			0: `{"status":400,"error":{"type":"mapper_parsing_exception","reason":"failed to parse field [sobt]"}}`,
			1: `{"status":201}`}},
		{name: "missing index is retried", n: 2, class: pipeline.Infra, inErr: "index_not_found_exception", items: map[int]string{
			2: `{"status":404,"error":{"type":"index_not_found_exception","reason":"no such index [msgx-flight]"}}`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, cfg := newBulkServer(t)
			b.answer = func(i int, a bulkAction) string {
				if item, ok := tc.items[i]; ok {
					return item
				}
				return `{"status":201,"result":"created"}`
			}
			s := mustOpen(t, "ES_FLIGHT", cfg)
			n, err := s.Send(context.Background(), esRecords())
			if n != tc.n {
				t.Errorf("Send counted %d leading successes, want %d (err %v)", n, tc.n, err)
			}
			if tc.class == "" {
				if err != nil {
					t.Errorf("Send: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("Send returned no error for a failed item")
			}
			if c := pipeline.ClassOf(err); c != tc.class {
				t.Errorf("class %s, want %s: %v", c, tc.class, err)
			}
			if !strings.Contains(err.Error(), "elasticsearch target ES_FLIGHT") || !strings.Contains(err.Error(), tc.inErr) {
				t.Errorf("error %q does not say target and %q", err, tc.inErr)
			}
		})
	}
}

func TestElasticsearchWholeRequestFailureIsRetried(t *testing.T) {
	for _, code := range []int{500, 503, 429} {
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			b, cfg := newBulkServer(t)
			b.status = code
			s := mustOpen(t, "ES_FLIGHT", cfg)
			n, err := s.Send(context.Background(), esRecords())
			if err == nil || n != 0 || pipeline.ClassOf(err) != pipeline.Infra {
				t.Fatalf("Send = %d, %v; want 0 and a retryable error", n, err)
			}
			if !strings.Contains(err.Error(), fmt.Sprint(code)) {
				t.Errorf("error %q does not give the status", err)
			}
		})
	}
}

func TestElasticsearchUnsendableRecord(t *testing.T) {
	b, cfg := newBulkServer(t)
	s := mustOpen(t, "ES_FLIGHT", cfg)
	recs := esRecords()
	recs[1].Key = "" // no document id: can never be indexed idempotently
	n, err := s.Send(context.Background(), recs)
	if n != 1 || pipeline.ClassOf(err) != pipeline.Rejected || !strings.Contains(err.Error(), "event 42") {
		t.Fatalf("Send = %d, %v; want 1 and a REJECTED error for event 42", n, err)
	}
	if len(b.requests) != 1 || len(b.requests[0]) != 1 {
		t.Fatalf("bulk requests %v; want one with only the record before the bad one", b.requests)
	}
	// The bad record first: nothing is sent.
	n, err = s.Send(context.Background(), recs[1:])
	if n != 0 || pipeline.ClassOf(err) != pipeline.Rejected || len(b.requests) != 1 {
		t.Fatalf("Send = %d, %v after %d requests; want 0, REJECTED, no request", n, err, len(b.requests))
	}
}

func TestElasticsearchUnreachable(t *testing.T) {
	s := mustOpen(t, "ES_FLIGHT", Config{Sink: targetconf.SinkElasticsearch, Addresses: []string{"http://" + closedAddr(t)}, Index: testIndex, Timeout: time.Second})
	n, err := s.Send(context.Background(), esRecords())
	if err == nil || n != 0 || pipeline.ClassOf(err) != pipeline.Infra {
		t.Fatalf("Send = %d, %v; want 0 and a retryable error", n, err)
	}
}

// TestElasticsearchRealCluster runs against a real node when MSGX_TEST_ELASTICSEARCH_URL
// names one (for example http://127.0.0.1:9200): a late, older event must not overwrite
// a newer one, and a delete deletes.
func TestElasticsearchRealCluster(t *testing.T) {
	addr := os.Getenv("MSGX_TEST_ELASTICSEARCH_URL")
	if addr == "" {
		t.Skip("set MSGX_TEST_ELASTICSEARCH_URL to run against a real Elasticsearch (no node is part of this machine's services)")
	}
	index := fmt.Sprintf("msgx-test-%d", time.Now().UnixNano())
	s := mustOpen(t, "ES_FLIGHT", Config{Sink: targetconf.SinkElasticsearch, Addresses: []string{addr}, Index: index})
	ctx := context.Background()
	key := "CA1234-20250101-D"
	newer := Record{EventID: 50, Key: key, Value: []byte(`{"v":50}`)}
	older := Record{EventID: 41, Key: key, Value: []byte(`{"v":41}`)}
	for _, r := range []Record{newer, older, newer} {
		if n, err := s.Send(ctx, []Record{r}); err != nil || n != 1 {
			t.Fatalf("Send event %d = %d, %v", r.EventID, n, err)
		}
	}
	// Read and clean up with plain HTTP: the sink's client sends _bulk requests only.
	node := strings.TrimRight(addr, "/")
	res, err := http.Get(node + "/" + index + "/_doc/" + key)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var doc struct {
		Version int64           `json:"_version"`
		Source  json.RawMessage `json:"_source"`
	}
	if err := json.NewDecoder(res.Body).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	if doc.Version != 50 || string(doc.Source) != `{"v":50}` {
		t.Errorf("stored version %d %s, want 50 {\"v\":50}", doc.Version, doc.Source)
	}
	if n, err := s.Send(ctx, []Record{{EventID: 51, Key: key, Delete: true}, {EventID: 52, Key: "absent", Delete: true}}); err != nil || n != 2 {
		t.Fatalf("Send deletes = %d, %v", n, err)
	}
	if req, err := http.NewRequestWithContext(ctx, http.MethodDelete, node+"/"+index, nil); err == nil {
		if res, err := http.DefaultClient.Do(req); err == nil {
			res.Body.Close()
		}
	}
}

func TestElasticsearchIndexesTheDocumentNotTheEnvelope(t *testing.T) {
	b, cfg := newBulkServer(t)
	s := mustOpen(t, "ES_FLIGHT", cfg)
	recs := records("ES_FLIGHT", 7, 1, "4711")
	recs[0].Value = []byte(`{"event_id":7,"payload":{"FLID":4711,"STND":"101"}}`)
	recs[0].Document = []byte(`{"FLID":4711,"STND":"101"}`)
	if n, err := s.Send(context.Background(), recs); err != nil || n != 1 {
		t.Fatalf("Send = %d, %v", n, err)
	}
	if got := string(b.requests[0][0].doc); got != `{"FLID":4711,"STND":"101"}` {
		t.Fatalf("indexed %s, want the flight record alone", got)
	}
}
