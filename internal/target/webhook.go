package target

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"msgx/internal/pipeline"
	"msgx/internal/targetconf"
)

// The headers of a webhook POST.
const (
	HeaderEventID   = "X-Msgx-Event-Id"
	HeaderMsgID     = "X-Msgx-Msg-Id"
	HeaderTypeTag   = "X-Msgx-Type-Tag"
	HeaderTarget    = "X-Msgx-Target"
	HeaderSignature = "X-Msgx-Signature" // sha256=<hex HMAC-SHA256(secret, body)>
)

// Sign returns the X-Msgx-Signature value for body under secret, so a receiver written in
// Go can check a delivery with hmac.Equal.
func Sign(secret, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// webhookSink POSTs each record's value to one URL.
type webhookSink struct {
	name    string
	url     string
	secret  []byte
	timeout time.Duration
	client  *http.Client
	tr      *http.Transport
}

func openWebhook(name string, c Config, tlsCfg *tls.Config) Sink {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if tlsCfg != nil {
		tr.TLSClientConfig = tlsCfg
	}
	client := &http.Client{
		Transport: tr,
		// A redirect is not followed: a 301/302 would turn the POST into a GET.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return &webhookSink{name: name, url: c.URL, secret: []byte(c.Secret), timeout: c.Timeout, client: client, tr: tr}
}

// Send POSTs recs one at a time, in order, stopping at the first failure. The timeout bounds
// each POST.
func (w *webhookSink) Send(ctx context.Context, recs []Record) (int, error) {
	for i, r := range recs {
		if err := w.post(ctx, r); err != nil {
			return i, err
		}
	}
	return len(recs), nil
}

func (w *webhookSink) post(ctx context.Context, r Record) error {
	ctx, cancel := context.WithTimeout(ctx, w.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url, bytes.NewReader(r.Value))
	if err != nil {
		// The URL is the target's, checked at start: nothing of this event's. Retried
		// (INFRA) like any failure that is not the receiver refusing the event.
		return eventErr(targetconf.SinkWebhook, w.name, r, fmt.Errorf("build the POST to %s: %w", w.url, err))
	}
	target := r.Target
	if target == "" {
		target = w.name
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(HeaderEventID, strconv.FormatInt(r.EventID, 10))
	req.Header.Set(HeaderMsgID, strconv.FormatInt(r.MsgID, 10))
	req.Header.Set(HeaderTypeTag, r.TypeTag)
	req.Header.Set(HeaderTarget, target)
	req.Header.Set(HeaderSignature, Sign(w.secret, r.Value))

	res, err := w.client.Do(req)
	if err != nil {
		return eventErr(targetconf.SinkWebhook, w.name, r, fmt.Errorf("POST %s: %w", w.url, err))
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(res.Body, 4<<10))
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 1<<20)) // let the connection be reused
	code := res.StatusCode
	if code >= 200 && code <= 299 {
		return nil
	}
	err = eventErr(targetconf.SinkWebhook, w.name, r, fmt.Errorf("POST %s: HTTP %s: %s", w.url, res.Status, snippet(body)))
	if code >= 400 && code <= 499 && !retryableStatus(code) {
		return pipeline.Wrap(pipeline.Rejected, err) // the receiver refused this event for good
	}
	return err // 401, 403, 408, 429, 5xx, and 1xx/3xx (redirects are not followed): retried
}

// retryableStatus reports whether a 4xx answer says something other than "this event is
// wrong": a timeout or rate limit (408, 429), or credentials the receiver does not accept
// (401, 403). Those are about the target, not the event: failing every event DEAD one by one
// until an operator fixes a rotated secret would leave nothing to deliver, so the target is
// held blocked instead, as for an outage, and shows as such in status.
func retryableStatus(code int) bool {
	switch code {
	case http.StatusRequestTimeout, http.StatusTooManyRequests, http.StatusUnauthorized, http.StatusForbidden:
		return true
	}
	return false
}

// Close closes the idle connections.
func (w *webhookSink) Close() error {
	w.tr.CloseIdleConnections()
	return nil
}

// snippet is the start of an error body, for a message.
func snippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 512 {
		s = s[:512] + "…"
	}
	return s
}
