package target

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"time"

	"msgx/internal/esbulk"
	"msgx/internal/pipeline"
	"msgx/internal/targetconf"
)

// esSink writes records to one index with one _bulk request per Send, versioned externally
// by EVENT_ID (internal/esbulk).
type esSink struct {
	name    string
	index   string
	timeout time.Duration
	es      *esbulk.Client
}

func openElasticsearch(name string, c Config, tlsCfg *tls.Config) (Sink, error) {
	es, err := esbulk.New(esbulk.Config{
		Addresses: c.Addresses,
		Username:  c.Username,
		Password:  c.Password,
		APIKey:    c.APIKey,
		TLS:       tlsCfg,
	})
	if err != nil {
		return nil, fmt.Errorf("elasticsearch target %s: %w", name, err)
	}
	return &esSink{name: name, index: c.Index, timeout: c.Timeout, es: es}, nil
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
			bad = pipeline.Wrap(pipeline.Rejected, eventErr(targetconf.SinkElasticsearch, s.name, r, err))
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
	items, err := s.es.Bulk(ctx, body, len(recs))
	if se := (*esbulk.StatusError)(nil); errors.As(err, &se) && se.Code == http.StatusRequestEntityTooLarge {
		err := eventErr(targetconf.SinkElasticsearch, s.name, recs[0], fmt.Errorf("bulk request to index %s of %d records, %d bytes: HTTP %d: %w: %s",
			s.index, len(recs), len(body), se.Code, errRequestTooLarge, se.Body))
		if len(recs) == 1 {
			return 0, pipeline.Wrap(pipeline.Rejected, err) // one record alone is too large for the node
		}
		return 0, err
	}
	if err != nil {
		return 0, eventErr(targetconf.SinkElasticsearch, s.name, recs[0], fmt.Errorf("bulk request to index %s: %w", s.index, err))
	}
	for i, item := range items {
		if err := s.judge(i, recs[i], item); err != nil {
			return i, err
		}
	}
	return len(recs), nil
}

// judge returns nil when the i-th item of a bulk answer, for record r, is a success, and
// its error, REJECTED for a 400, otherwise.
func (s *esSink) judge(i int, r Record, item map[string]esbulk.Item) error {
	action := "index"
	if r.Delete {
		action = "delete"
	}
	it, ok := item[action]
	if !ok {
		return eventErr(targetconf.SinkElasticsearch, s.name, r, fmt.Errorf("bulk item %d: no %q result in the answer", i, action))
	}
	switch {
	case it.Status >= 200 && it.Status <= 299:
		return nil
	case it.Status == http.StatusConflict: // version_conflict_engine_exception: newer data is stored
		return nil
	case r.Delete && it.Status == http.StatusNotFound && it.Error == nil: // already absent
		return nil
	}
	err := eventErr(targetconf.SinkElasticsearch, s.name, r, fmt.Errorf("%s %s/%s version %d: HTTP %d %s",
		action, s.index, r.Key, r.EventID, it.Status, it.Describe()))
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
	doc := r.Document
	if len(doc) == 0 {
		doc = r.Value
	}
	return esbulk.Append(b, esbulk.Action{Delete: r.Delete, Index: s.index, ID: r.Key, Version: r.EventID, Doc: doc})
}

// Close stops the client and closes its idle connections.
func (s *esSink) Close() error {
	if err := s.es.Close(); err != nil {
		return fmt.Errorf("elasticsearch target %s: close: %w", s.name, err)
	}
	return nil
}
