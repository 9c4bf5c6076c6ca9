package target

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/elastic/go-elasticsearch/v8"

	"msgx/internal/pipeline"
)

// esSink writes records to one index with one _bulk request per Send, versioned externally
// by EVENT_ID.
type esSink struct {
	name      string
	index     string
	timeout   time.Duration
	es        *elasticsearch.Client
	transport *http.Transport
	closeOnce sync.Once
}

func openElasticsearch(name string, c Config, tlsCfg *tls.Config) (Sink, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if tlsCfg != nil {
		tr.TLSClientConfig = tlsCfg
	}
	es, err := elasticsearch.NewClient(elasticsearch.Config{
		Addresses: c.Addresses,
		Username:  c.Username,
		Password:  c.Password,
		APIKey:    c.APIKey,
		Transport: tr,
	})
	if err != nil {
		return nil, fmt.Errorf("elasticsearch target %s: %w", name, err)
	}
	return &esSink{name: name, index: c.Index, timeout: c.Timeout, es: es, transport: tr}, nil
}

// esAction is the metadata line of one bulk action.
type esAction struct {
	Index       string `json:"_index"`
	ID          string `json:"_id"`
	Version     int64  `json:"version"`
	VersionType string `json:"version_type"`
}

// esBulkResponse is the part of a _bulk answer Send reads.
type esBulkResponse struct {
	Errors bool                    `json:"errors"`
	Items  []map[string]esBulkItem `json:"items"`
}

type esBulkItem struct {
	Status int    `json:"status"`
	Result string `json:"result"`
	Error  *struct {
		Type   string `json:"type"`
		Reason string `json:"reason"`
	} `json:"error"`
}

// errRequestTooLarge marks a _bulk request the node refused as too large (HTTP 413).
var errRequestTooLarge = errors.New("request too large")

// Send sends the records in _bulk requests: an index action (metadata line, then the
// document) per normal record and a delete action per Delete record, each with _id = Key,
// version = EventID and version_type = external. Normally one request carries them all; one
// the node refuses as too large (HTTP 413) is split in halves, down to one record, and a
// single record refused so is REJECTED (it can never fit). Items are judged in order: 2xx is
// success, and so is 409 (a version conflict: the index already holds this or a newer event)
// and, for a delete, 404 (no such document). A 400 item (a document the index refuses, such
// as a mapping error) is REJECTED; any other item error (429, 5xx, a read-only index), any
// other non-2xx answer to the whole request or a network error is retried (INFRA). A record
// that cannot be put in a bulk request (no key, value not JSON) is REJECTED before anything
// after it is sent. The timeout bounds the whole Send.
func (s *esSink) Send(ctx context.Context, recs []Record) (int, error) {
	if len(recs) == 0 {
		return 0, nil
	}
	lines := make([][]byte, 0, len(recs)) // each record's action (and document) lines
	var bad error
	for _, r := range recs {
		var b bytes.Buffer
		if err := s.appendAction(&b, r); err != nil {
			bad = pipeline.Wrap(pipeline.Rejected, eventErr(SinkElasticsearch, s.name, r, err))
			break
		}
		lines = append(lines, b.Bytes())
	}
	n := len(lines) // records that go in requests
	if n == 0 {
		return 0, bad
	}

	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	done, size := 0, n
	for done < n {
		end := min(done+size, n)
		k, err := s.bulk(ctx, recs[done:end], lines[done:end])
		done += k
		switch {
		case err == nil:
		case errors.Is(err, errRequestTooLarge) && k == 0 && end-done > 1:
			size = (end - done) / 2 // the same records again, in smaller requests
		default:
			return done, err
		}
	}
	return done, bad
}

// bulk sends one _bulk request of recs, whose action lines are lines, and judges the answer
// (see Send). It returns how many leading records were delivered.
func (s *esSink) bulk(ctx context.Context, recs []Record, lines [][]byte) (int, error) {
	body := bytes.Join(lines, nil)
	res, err := s.es.Bulk(bytes.NewReader(body),
		s.es.Bulk.WithContext(ctx),
		s.es.Bulk.WithHeader(map[string]string{"Content-Type": "application/x-ndjson"}),
		s.es.Bulk.WithFilterPath("errors", "items.*.status", "items.*.result", "items.*.error"))
	if err != nil {
		return 0, eventErr(SinkElasticsearch, s.name, recs[0], fmt.Errorf("bulk request to index %s: %w", s.index, err))
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, 64<<20))
	if err != nil {
		return 0, eventErr(SinkElasticsearch, s.name, recs[0], fmt.Errorf("bulk request to index %s: read answer: %w", s.index, err))
	}
	if res.StatusCode == http.StatusRequestEntityTooLarge {
		err := eventErr(SinkElasticsearch, s.name, recs[0], fmt.Errorf("bulk request to index %s of %d records, %d bytes: HTTP %d: %w: %s",
			s.index, len(recs), len(body), res.StatusCode, errRequestTooLarge, snippet(raw)))
		if len(recs) == 1 {
			return 0, pipeline.Wrap(pipeline.Rejected, err) // one record alone is too large for the node
		}
		return 0, err
	}
	if res.StatusCode < 200 || res.StatusCode > 299 {
		return 0, eventErr(SinkElasticsearch, s.name, recs[0],
			fmt.Errorf("bulk request to index %s: HTTP %d: %s", s.index, res.StatusCode, snippet(raw)))
	}
	var br esBulkResponse
	if err := json.Unmarshal(raw, &br); err != nil {
		return 0, eventErr(SinkElasticsearch, s.name, recs[0], fmt.Errorf("bulk request to index %s: decode answer: %w", s.index, err))
	}
	if len(br.Items) != len(recs) {
		return 0, eventErr(SinkElasticsearch, s.name, recs[0],
			fmt.Errorf("bulk request to index %s: %d items in the answer for %d actions", s.index, len(br.Items), len(recs)))
	}
	for i, item := range br.Items {
		if err := s.judge(i, recs[i], item); err != nil {
			return i, err
		}
	}
	return len(recs), nil
}

// judge returns nil when the i-th item of a bulk answer, for record r, is a success, and
// its error, REJECTED for a 400, otherwise.
func (s *esSink) judge(i int, r Record, item map[string]esBulkItem) error {
	action := "index"
	if r.Delete {
		action = "delete"
	}
	it, ok := item[action]
	if !ok {
		return eventErr(SinkElasticsearch, s.name, r, fmt.Errorf("bulk item %d: no %q result in the answer", i, action))
	}
	switch {
	case it.Status >= 200 && it.Status <= 299:
		return nil
	case it.Status == http.StatusConflict: // version_conflict_engine_exception: newer data is stored
		return nil
	case r.Delete && it.Status == http.StatusNotFound && it.Error == nil: // already absent
		return nil
	}
	err := eventErr(SinkElasticsearch, s.name, r, fmt.Errorf("%s %s/%s version %d: HTTP %d %s",
		action, s.index, r.Key, r.EventID, it.Status, it.describe()))
	if it.Status == http.StatusBadRequest {
		return pipeline.Wrap(pipeline.Rejected, err) // the index refuses this document
	}
	return err
}

// appendAction writes r's action line and, for an index action, its document line.
func (s *esSink) appendAction(b *bytes.Buffer, r Record) error {
	if r.Key == "" {
		return fmt.Errorf("no key for the document id")
	}
	meta, err := json.Marshal(esAction{Index: s.index, ID: r.Key, Version: r.EventID, VersionType: "external"})
	if err != nil {
		return err
	}
	mark := b.Len()
	if r.Delete {
		b.WriteString(`{"delete":`)
		b.Write(meta)
		b.WriteString("}\n")
		return nil
	}
	b.WriteString(`{"index":`)
	b.Write(meta)
	b.WriteString("}\n")
	// NDJSON: the document must be one line. Compacting keeps its meaning and checks it.
	doc := r.Document
	if len(doc) == 0 {
		doc = r.Value
	}
	if err := json.Compact(b, doc); err != nil {
		b.Truncate(mark)
		return fmt.Errorf("value is not JSON: %w", err)
	}
	b.WriteByte('\n')
	return nil
}

func (it esBulkItem) describe() string {
	if it.Error == nil {
		return it.Result
	}
	return it.Error.Type + ": " + it.Error.Reason
}

// snippet is the start of an error body, for a message.
func snippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 512 {
		s = s[:512] + "…"
	}
	return s
}

// Close stops the client and closes its idle connections.
func (s *esSink) Close() error {
	var err error
	s.closeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if e := s.es.Close(ctx); e != nil {
			err = fmt.Errorf("elasticsearch target %s: close: %w", s.name, e)
		}
		s.transport.CloseIdleConnections()
	})
	return err
}
