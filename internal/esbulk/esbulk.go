// Package esbulk is msgx's one Elasticsearch _bulk writer, used by the elasticsearch target
// sink (internal/target) and the flight history sink (internal/jobs). It speaks through the
// official client's low-level transport (elastic-transport-go: node pool, basic-auth or API
// key, retries of 502/503/504) and not through the go-elasticsearch API packages, whose
// generated code (esapi, typedapi) is most of a cold build of msgx and none of what a _bulk
// request needs. Like the official client, it refuses a 2xx answer that does not say it comes
// from Elasticsearch (X-Elastic-Product) until one does.
//
// It knows nothing of what the callers deliver: they build the actions (Append), send them
// (Client.Bulk) and judge each item.
package esbulk

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/elastic/elastic-transport-go/v8/elastictransport"
)

// DefaultAddress is the node used when Config.Addresses is empty.
const DefaultAddress = "http://localhost:9200"

// Config is how to reach a cluster.
type Config struct {
	// Addresses are the node URLs. The user and password of the first, if any, are the
	// basic-auth credentials (they take the place of Username and Password).
	Addresses []string
	Username  string
	Password  string
	APIKey    string      // base64 API key; sent instead of basic auth when set
	TLS       *tls.Config // nil: the system roots
}

// Client sends _bulk requests to one cluster. It is safe for concurrent use.
type Client struct {
	tr        *elastictransport.Client
	transport *http.Transport
	genuine   atomic.Bool // a 2xx answer carried X-Elastic-Product: Elasticsearch
	closeOnce sync.Once
}

// New returns the client of c. It does not contact the cluster.
func New(c Config) (*Client, error) {
	addrs := c.Addresses
	if len(addrs) == 0 {
		addrs = []string{DefaultAddress}
	}
	urls := make([]*url.URL, 0, len(addrs))
	for _, a := range addrs {
		u, err := url.Parse(strings.TrimRight(a, "/"))
		if err != nil {
			return nil, fmt.Errorf("node address: %w", err)
		}
		urls = append(urls, u)
	}
	if u := urls[0].User; u != nil {
		c.Username = u.Username()
		c.Password, _ = u.Password()
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if c.TLS != nil {
		tr.TLSClientConfig = c.TLS
	}
	opts := []elastictransport.Option{elastictransport.WithURLs(urls...), elastictransport.WithTransport(tr)}
	if c.APIKey != "" {
		opts = append(opts, elastictransport.WithAPIKey(c.APIKey))
	} else {
		opts = append(opts, elastictransport.WithBasicAuth(c.Username, c.Password))
	}
	et, err := elastictransport.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	return &Client{tr: et, transport: tr}, nil
}

// Action is one bulk action: index Doc as document ID of Index, or delete that document, with
// Version as its external version (so an older or repeated action is a harmless 409).
type Action struct {
	Delete  bool
	Index   string
	ID      string
	Version int64
	Doc     []byte // the document, JSON (index only)
}

type actionMeta struct {
	Index       string `json:"_index"`
	ID          string `json:"_id"`
	Version     int64  `json:"version"`
	VersionType string `json:"version_type"`
}

// Append writes a's NDJSON lines to b: its action line and, to index, the document compacted
// onto one line. A document that is not JSON is an error, and b is left as it was.
func Append(b *bytes.Buffer, a Action) error {
	meta, err := json.Marshal(actionMeta{Index: a.Index, ID: a.ID, Version: a.Version, VersionType: "external"})
	if err != nil {
		return err
	}
	mark := b.Len()
	op := `{"index":`
	if a.Delete {
		op = `{"delete":`
	}
	b.WriteString(op)
	b.Write(meta)
	b.WriteString("}\n")
	if a.Delete {
		return nil
	}
	if err := json.Compact(b, a.Doc); err != nil {
		b.Truncate(mark)
		return fmt.Errorf("value is not JSON: %w", err)
	}
	b.WriteByte('\n')
	return nil
}

// Item is the result of one action in a _bulk answer.
type Item struct {
	Status int    `json:"status"`
	Result string `json:"result"`
	Error  *struct {
		Type   string `json:"type"`
		Reason string `json:"reason"`
	} `json:"error"`
}

// Describe is the item's error type and reason, or its result when it has no error.
func (it Item) Describe() string {
	if it.Error == nil {
		return it.Result
	}
	return it.Error.Type + ": " + it.Error.Reason
}

// StatusError is a _bulk request answered as a whole with a status other than 2xx.
type StatusError struct {
	Code int
	Body string // the start of the answer
}

func (e *StatusError) Error() string { return fmt.Sprintf("HTTP %d: %s", e.Code, e.Body) }

// errNotElasticsearch is what the official client says of a server that is not Elasticsearch.
var errNotElasticsearch = errors.New("the client noticed that the server is not Elasticsearch and we do not support this unknown product")

// Bulk sends body, the NDJSON lines of n actions (Append), as one _bulk request and returns
// each action's item in order: its action name ("index", "delete") and result. A network
// error, an answer other than 2xx (*StatusError) or one that does not hold n items is an
// error.
func (c *Client) Bulk(ctx context.Context, body []byte, n int) ([]map[string]Item, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost,
		"/_bulk?filter_path=errors,items.*.status,items.*.result,items.*.error", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-ndjson")
	res, err := c.tr.Perform(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("read answer: %w", err)
	}
	if res.StatusCode < 200 || res.StatusCode > 299 {
		return nil, &StatusError{Code: res.StatusCode, Body: snippet(raw)}
	}
	if !c.genuine.Load() {
		if res.Header.Get("X-Elastic-Product") != "Elasticsearch" {
			return nil, errNotElasticsearch
		}
		c.genuine.Store(true)
	}
	var ans struct {
		Items []map[string]Item `json:"items"`
	}
	if err := json.Unmarshal(raw, &ans); err != nil {
		return nil, fmt.Errorf("decode answer: %w", err)
	}
	if len(ans.Items) != n {
		return nil, fmt.Errorf("%d items in the answer for %d actions", len(ans.Items), n)
	}
	return ans.Items, nil
}

// snippet is the start of an answer, for a message.
func snippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 512 {
		s = s[:512] + "…"
	}
	return s
}

// Close stops the client and closes its idle connections.
func (c *Client) Close() error {
	var err error
	c.closeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		err = c.tr.Close(ctx)
		c.transport.CloseIdleConnections()
	})
	return err
}
