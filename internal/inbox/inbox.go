// Package inbox is msgx's first stage: POST /cminmsgs/send takes a raw SIS
// message from the gateway and answers with its id once it is durable. It bounds what a post
// may hold (the body limit, the bytes in flight, the deadline of the commit), refuses posts
// that web pages make (http.inbox-origins), converts the declared charset to UTF-8, and
// counts what it takes and refuses. The wiring (internal/app) mounts it beside the ops API;
// the access rule of http.inbox-allow is the API's (api.Auth), which wraps both.
package inbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/simplifiedchinese"
	"golang.org/x/text/transform"

	"msgx/internal/api/reply"
	"msgx/internal/logship"
	"msgx/internal/metrics"
	"msgx/internal/pipeline"
	"msgx/internal/ratelog"
	"msgx/internal/store"
)

// Inbox accepts raw messages and makes each durable before answering. Concurrent requests
// share commits: a single writer goroutine takes every request waiting and stores them in one
// transaction, so throughput does not fall to one fsync per message.
type Inbox struct {
	// MaxInflightBytes bounds the bytes of the bodies being read or waiting for their commit
	// (http.max-inflight-bytes); a post beyond it is answered 503 with Retry-After, so many
	// large concurrent posts cannot take the memory. 0 means no bound. Set it before serving.
	MaxInflightBytes int64
	// Metrics counts the messages made durable (msgx_messages_received_total{source="inbox"});
	// nil counts none. Set it before serving.
	Metrics *metrics.Metrics
	// Deadline is the longest a post waits for its message to be stored (http.inbox-deadline):
	// past it the post is answered 503 with Retry-After and the message is not acknowledged,
	// and the commit it waits for is cut at the same bound. 0: no deadline. Set it before
	// serving.
	Deadline time.Duration
	// Origins are the browser origins whose pages may post (http.inbox-origins): a post with
	// another Origin, or Sec-Fetch-Site cross-site or same-site, is answered 403
	// foreign_origin before its body is read. Empty: every post a web page makes is refused.
	// Set it before serving.
	Origins []string

	flightMu sync.Mutex
	inflight int64

	db      Store
	clock   pipeline.Clock
	log     *slog.Logger
	refused *ratelog.Limiter // the 503s' warnings: the first at once, then a count a minute
	maxBody int64
	wake    func()
	queue   chan *inboxReq
}

type inboxReq struct {
	raw   string
	trace string // the W3C trace id of the request's traceparent header, "" when none
	done  chan inboxRes
	// gone is set when the sender was answered 503 for the deadline before the writer took
	// the request: the writer then leaves it out of its commit.
	gone atomic.Bool
}

// Store is what the inbox needs of the database: storing raw messages durably, with the
// trace id of each request's traceparent header when a request of the commit carries one.
type Store interface {
	store.Inbox
	// InsertMessagesTraced is InsertMessages that also keeps traces[i] with raws[i] ("": none).
	InsertMessagesTraced(ctx context.Context, raws, traces []string, now time.Time) ([]int64, error)
}

type inboxRes struct {
	id  int64
	err error
}

// maxBatch bounds how many requests share one commit.
const maxBatch = 256

// New returns an inbox over db; wake is called after each commit (the pump's Wake).
func New(db Store, clock pipeline.Clock, log *slog.Logger, maxBody int64, wake func()) *Inbox {
	if wake == nil {
		wake = func() {}
	}
	return &Inbox{db: db, clock: clock, log: log, refused: &ratelog.Limiter{Log: log, Clock: clock}, maxBody: maxBody, wake: wake, queue: make(chan *inboxReq, maxBatch)}
}

// Run is the writer goroutine; it returns when ctx ends, after answering what it has taken.
func (in *Inbox) Run(ctx context.Context) {
	for {
		var first *inboxReq
		select {
		case <-ctx.Done():
			in.drain()
			return
		case first = <-in.queue:
		}
		batch := []*inboxReq{first}
	more:
		for len(batch) < maxBatch {
			select {
			case r := <-in.queue:
				batch = append(batch, r)
			default:
				break more
			}
		}
		batch = slices.DeleteFunc(batch, func(r *inboxReq) bool { return r.gone.Load() })
		if len(batch) > 0 {
			in.commit(context.WithoutCancel(ctx), batch)
		}
	}
}

func (in *Inbox) drain() {
	for {
		select {
		case r := <-in.queue:
			r.done <- inboxRes{err: store.Unavailable(errors.New("server is shutting down"))}
		default:
			return
		}
	}
}

func (in *Inbox) commit(ctx context.Context, batch []*inboxReq) {
	raws := make([]string, len(batch))
	var traces []string
	for i, r := range batch {
		raws[i] = r.raw
		if r.trace != "" {
			if traces == nil {
				traces = make([]string, len(batch))
			}
			traces[i] = r.trace
		}
	}
	if in.Deadline > 0 {
		// A database that does not answer must not hold the writer (and every post queued
		// behind it) longer than the senders wait: the commit is cut at the deadline too.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, in.Deadline)
		defer cancel()
	}
	var ids []int64
	var err error
	if traces != nil {
		ids, err = in.db.InsertMessagesTraced(ctx, raws, traces, in.clock.Now())
	} else {
		ids, err = in.db.InsertMessages(ctx, raws, in.clock.Now())
	}
	if err != nil && len(batch) > 1 && !errors.Is(err, store.ErrUnavailable) {
		// One message the database refuses (too large, say) must not fail the others that
		// shared its commit: store them one by one.
		for _, r := range batch {
			in.commit(ctx, []*inboxReq{r})
		}
		return
	}
	if err == nil {
		for i, id := range ids {
			if traces != nil && traces[i] != "" {
				in.log.Info("message received", "msg_id", id, "bytes", len(raws[i]), "trace_id", traces[i])
				continue
			}
			in.log.Info("message received", "msg_id", id, "bytes", len(raws[i]))
		}
		in.Metrics.Received("inbox", len(ids))
		in.wake()
	} else {
		in.log.Error("inbox commit failed", "count", len(batch), "err", err.Error())
	}
	for i, r := range batch {
		if err != nil {
			r.done <- inboxRes{err: err}
			continue
		}
		r.done <- inboxRes{id: ids[i]}
	}
}

// Accept stores one raw message and returns its id once it is durable.
func (in *Inbox) Accept(ctx context.Context, raw string) (int64, error) {
	return in.AcceptTraced(ctx, raw, "")
}

// AcceptTraced is Accept that stores trace (a W3C trace id, "" for none) with the message.
func (in *Inbox) AcceptTraced(ctx context.Context, raw, trace string) (int64, error) {
	r := &inboxReq{raw: raw, trace: trace, done: make(chan inboxRes, 1)}
	var expired <-chan time.Time
	if in.Deadline > 0 {
		t := time.NewTimer(in.Deadline)
		defer t.Stop()
		expired = t.C
	}
	select {
	case in.queue <- r:
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-expired:
		return 0, in.timedOut(r)
	}
	select {
	case res := <-r.done: // once queued, the writer always answers
		return res.id, res.err
	case <-expired:
		return 0, in.timedOut(r)
	}
}

// ErrDeadline is returned by Accept when the database did not store the message within
// Inbox.Deadline; the post is answered 503 with Retry-After. The message may still be stored
// by a commit that ends later: the sender's retry is then a duplicate, which the pump
// recognises by its identity and marks SKIPPED, so nothing is applied twice.
var ErrDeadline = errors.New("the database did not store the message in time")

// timedOut gives r up (the writer leaves it out if it has not taken it yet) and counts it.
func (in *Inbox) timedOut(r *inboxReq) error {
	r.gone.Store(true)
	in.Metrics.InboxTimedOut()
	in.refused.Warn("inbox post answered 503: the database did not store the message within http.inbox-deadline",
		"deadline", in.Deadline.String(), "bytes", len(r.raw))
	return fmt.Errorf("%w: not stored within http.inbox-deadline (%s)", ErrDeadline, in.Deadline)
}

// ServeHTTP is POST /cminmsgs/send.
func (in *Inbox) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if why, refused := browserRefusal(r, in.Origins); refused {
		in.Metrics.InboxRefused("origin")
		in.refused.Warn("inbox post refused 403: made by a web page of an origin http.inbox-origins does not list",
			"origin", reply.Clip(r.Header.Get("Origin"), reply.MaxEcho), "sec_fetch_site", reply.Clip(r.Header.Get("Sec-Fetch-Site"), 40), "remote", r.RemoteAddr)
		reply.Error(w, http.StatusForbidden, "foreign_origin", why)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		reply.Error(w, http.StatusMethodNotAllowed, "method_not_allowed", "use POST")
		return
	}
	params, ok := acceptedType(w, r)
	if !ok {
		return
	}
	var held int64
	defer func() { in.release(held) }()
	body, ok := in.readBody(w, r, &held)
	if !ok {
		return
	}
	text, err := toUTF8(body, params["charset"])
	if err != nil {
		code := "bad_charset"
		if errors.Is(err, errAmbiguousCharset) {
			code = "ambiguous_charset"
		}
		reply.Error(w, http.StatusUnsupportedMediaType, code, err.Error())
		return
	}
	trace, _ := logship.TraceID(r.Header.Get("traceparent"))
	id, err := in.AcceptTraced(r.Context(), text, trace)
	if err != nil {
		notAccepted(w, r, err)
		return
	}
	if wantsJSON(r) {
		reply.JSON(w, http.StatusOK, map[string]int64{"id": id})
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprintf(w, "%d", id)
}

// acceptedType returns the parameters of the request's media type, or answers 415 and
// returns ok=false when it is absent or not XML or plain text.
func acceptedType(w http.ResponseWriter, r *http.Request) (params map[string]string, ok bool) {
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil && r.Header.Get("Content-Type") != "" {
		reply.Error(w, http.StatusUnsupportedMediaType, "unsupported_media_type", "bad Content-Type: "+err.Error())
		return nil, false
	}
	switch mt {
	case "application/xml", "text/xml", "text/plain":
		return params, true
	case "":
		reply.Error(w, http.StatusUnsupportedMediaType, "unsupported_media_type", "Content-Type is required: application/xml, text/xml or text/plain")
	default:
		reply.Error(w, http.StatusUnsupportedMediaType, "unsupported_media_type", fmt.Sprintf("media type %q is not accepted: use application/xml, text/xml or text/plain", mt))
	}
	return nil, false
}

// readBody reads the request's body within the size and in-flight bounds, keeping in *held
// the in-flight bytes it reserved (the caller releases them once the message is answered),
// or answers why not and returns ok=false.
func (in *Inbox) readBody(w http.ResponseWriter, r *http.Request, held *int64) (body []byte, ok bool) {
	if n := r.ContentLength; n > 0 && n <= in.maxBody {
		// Reserve the declared length before reading a byte of it.
		if !in.reserve(n) {
			in.busy(w)
			return nil, false
		}
		*held = n
	}
	var rd io.Reader = http.MaxBytesReader(w, r.Body, in.maxBody)
	if *held == 0 {
		rd = &reservingReader{in: in, r: rd, held: held}
	}
	body, err := io.ReadAll(rd)
	if errors.Is(err, errInflight) {
		in.busy(w)
		return nil, false
	}
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			reply.Error(w, http.StatusRequestEntityTooLarge, "too_large", fmt.Sprintf("message is over the %d-byte limit", in.maxBody))
			return nil, false
		}
		reply.Error(w, http.StatusBadRequest, "bad_body", "reading the body: "+err.Error())
		return nil, false
	}
	if len(bytes.TrimSpace(body)) == 0 {
		reply.Error(w, http.StatusBadRequest, "empty_body", "the message is empty")
		return nil, false
	}
	return body, true
}

// notAccepted answers a message the inbox could not store with err.
func notAccepted(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, ErrDeadline):
		w.Header().Set("Retry-After", "5")
		reply.Error(w, http.StatusServiceUnavailable, "database_timeout",
			"the message was not acknowledged: "+err.Error()+"; send it again (if it was stored after all, the copy is recognised as a duplicate)")
	case errors.Is(err, store.ErrUnavailable):
		w.Header().Set("Retry-After", "5")
		reply.Error(w, http.StatusServiceUnavailable, "database_unavailable", "the message was not stored: "+err.Error())
	case errors.Is(err, store.ErrTooLarge):
		reply.Error(w, http.StatusRequestEntityTooLarge, "too_large", err.Error())
	case errors.Is(err, store.ErrUnstorable):
		reply.Error(w, http.StatusUnprocessableEntity, "unstorable", err.Error())
	case errors.Is(err, store.ErrShadow):
		reply.Error(w, http.StatusConflict, "shadow_mode", err.Error())
	case r.Context().Err() != nil:
		// the client went away; nothing was promised
	default:
		reply.Error(w, http.StatusInternalServerError, "internal", err.Error())
	}
}

// toUTF8 converts body from its declared charset (UTF-8 when none) to UTF-8 text.
func toUTF8(body []byte, charset string) (string, error) {
	var enc encoding.Encoding
	switch strings.ToLower(strings.TrimSpace(charset)) {
	case "", "utf-8", "utf8":
		if !utf8.Valid(body) {
			return "", errors.New("the body is not valid UTF-8 (declare charset=GBK or GB18030 if it is)")
		}
		return string(bytes.TrimPrefix(body, []byte("\xef\xbb\xbf"))), nil
	case "gbk", "cp936":
		enc = simplifiedchinese.GBK
	case "gb18030":
		enc = simplifiedchinese.GB18030
	case "gb2312":
		enc = simplifiedchinese.GBK // GBK is a superset of GB2312's EUC-CN form
	default:
		return "", fmt.Errorf("charset %q is not supported: use UTF-8, GBK or GB18030", charset)
	}
	out, _, err := transform.Bytes(enc.NewDecoder(), body)
	if err != nil {
		return "", fmt.Errorf("cannot convert from %s: %v", charset, err)
	}
	return string(out), checkDecoded(body, out, charset)
}

var xmlEncoding = regexp.MustCompile(`^\s*<\?xml[^>]*?\sencoding\s*=\s*["']([^"']*)["']`)

// errAmbiguousCharset marks a body declared GBK or GB18030 that is just as valid UTF-8, with
// nothing in the body to say which it is (answered 415 ambiguous_charset).
var errAmbiguousCharset = errors.New("ambiguous charset")

// checkDecoded refuses a body that the declared Chinese charset would store garbled: bytes
// that are not valid in it (the decoder put replacement characters in their place), a body
// that is valid UTF-8 and says so in its own XML declaration, or one that is valid UTF-8 with
// non-ASCII text and declares no encoding of its own. UTF-8 Chinese text is often also valid
// GBK and would be stored as other characters; the inbox cannot tell the two apart, so it
// converts from the declared charset only when the bytes are not UTF-8 or the body's XML
// declaration names the same charset family.
func checkDecoded(body, out []byte, charset string) error {
	utf8Hint := ""
	if utf8.Valid(body) && !isASCII(body) {
		utf8Hint = " The body is valid UTF-8: send it with charset=UTF-8 (or no charset)."
	}
	if n := bytes.Count(out, []byte(string(utf8.RuneError))) - bytes.Count(body, []byte(string(utf8.RuneError))); n > 0 {
		return fmt.Errorf("the body is not valid %s: %d byte sequence(s) do not decode in it; refusing to store it garbled.%s", charset, n, utf8Hint)
	}
	if utf8Hint == "" {
		return nil // not UTF-8, or plain ASCII: the declared charset is the only reading
	}
	declared := ""
	if m := xmlEncoding.FindSubmatch(body); m != nil {
		declared = string(m[1])
	}
	switch strings.ToLower(declared) {
	case "gbk", "cp936", "gb2312", "gb18030":
		return nil // the body names a Chinese charset itself: the sender means it
	case "utf-8", "utf8":
		return fmt.Errorf("the Content-Type says charset=%s but the body declares encoding=%q and is valid UTF-8; refusing to store it garbled.%s", charset, declared, utf8Hint)
	case "":
		return fmt.Errorf("%w: the Content-Type says charset=%s and the body has no XML declaration naming its encoding, but it is valid both as %s and as UTF-8, "+
			"which read as different text; refusing to guess. If it is %s, begin it with <?xml version=\"1.0\" encoding=\"%s\"?>.%s",
			errAmbiguousCharset, charset, charset, charset, charset, utf8Hint)
	default:
		return fmt.Errorf("%w: the Content-Type says charset=%s, the body declares encoding=%q, and it is valid both as %s and as UTF-8; refusing to guess. "+
			"Make the two agree.%s", errAmbiguousCharset, charset, declared, charset, utf8Hint)
	}
}

func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return false
		}
	}
	return true
}

func wantsJSON(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		mt, _, _ := mime.ParseMediaType(strings.TrimSpace(part))
		if mt == "application/json" {
			return true
		}
	}
	return false
}

// errInflight is returned while reading a body of unknown length once the in-flight bound is
// reached.
var errInflight = errors.New("too many bytes in flight")

// reserve takes n bytes of the in-flight bound; false when they are not free.
func (in *Inbox) reserve(n int64) bool {
	if in.MaxInflightBytes <= 0 {
		return true
	}
	in.flightMu.Lock()
	defer in.flightMu.Unlock()
	if in.inflight+n > in.MaxInflightBytes {
		return false
	}
	in.inflight += n
	return true
}

// release gives n reserved bytes back.
func (in *Inbox) release(n int64) {
	if n == 0 || in.MaxInflightBytes <= 0 {
		return
	}
	in.flightMu.Lock()
	in.inflight -= n
	in.flightMu.Unlock()
}

// busy answers a post the in-flight bound turned away: nothing was stored, try again later.
func (in *Inbox) busy(w http.ResponseWriter) {
	w.Header().Set("Retry-After", "1")
	reply.Error(w, http.StatusServiceUnavailable, "busy",
		fmt.Sprintf("the inbox holds %d bytes of messages not yet stored (http.max-inflight-bytes); the message was not stored, retry", in.MaxInflightBytes))
}

// reservingReader reserves the bytes of a body of unknown length as it reads them.
type reservingReader struct {
	in   *Inbox
	r    io.Reader
	held *int64
}

func (rr *reservingReader) Read(p []byte) (int, error) {
	n, err := rr.r.Read(p)
	if n > 0 {
		if !rr.in.reserve(int64(n)) {
			return 0, errInflight
		}
		*rr.held += int64(n)
	}
	return n, err
}
