package api

import (
	"fmt"
	"math"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"msgx/internal/ratelog"
	"msgx/internal/store"
)

// The doors (issue 33): what a caller may send, how many streams it may hold and how often it
// may fail to log in are bounded, and what is refused is answered with a short error, counted
// and logged without a line per attempt (docs/api.md, "Limits").

// Input bounds: every query parameter is bounded, so that no search can make the database
// refuse its pattern and no error answer can echo a large input.
const (
	// MaxSearchLen is the longest search text (q of /api/v1/find and /api/v1/messages), in
	// characters.
	MaxSearchLen = 256
	// MaxParamLen is the longest value of any other query parameter (states, classes, tags,
	// targets, days, numbers, times), in characters.
	MaxParamLen = 128
	// MaxParamNameLen is the longest query parameter name.
	MaxParamNameLen = 64
	// MaxPathLen is the longest request path the API and the console take, in bytes.
	MaxPathLen = 512
)

// searchParams are the free-text query parameters, bounded by MaxSearchLen.
var searchParams = []string{"q"}

// boundedInput answers 400 (414 for a path) and returns false when a query parameter, its
// name or the path is longer than its bound. The answer names the parameter and the bound and
// quotes none of the input.
func boundedInput(w http.ResponseWriter, r *http.Request) bool {
	if n := len(r.URL.Path); n > MaxPathLen {
		writeError(w, http.StatusRequestURITooLong, "too_long", fmt.Sprintf("the path is %d bytes long; msgx's routes take at most %d", n, MaxPathLen))
		return false
	}
	if n := len(r.Method); n > 16 {
		writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", fmt.Sprintf("a %d-character method is no method msgx takes", n))
		return false
	}
	if r.URL.RawQuery == "" {
		return true
	}
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		writeError(w, http.StatusBadRequest, "bad_query", "the query string is not valid URL encoding: "+err.Error())
		return false
	}
	names := make([]string, 0, len(q))
	for name := range q {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if n := utf8.RuneCountInString(name); n > MaxParamNameLen {
			writeError(w, http.StatusBadRequest, "too_long", fmt.Sprintf("a query parameter's name is %d characters long; names are at most %d", n, MaxParamNameLen))
			return false
		}
		limit, what := MaxParamLen, "this parameter"
		if slices.Contains(searchParams, name) {
			limit, what = MaxSearchLen, "a search"
		}
		for _, v := range q[name] {
			if n := utf8.RuneCountInString(v); n > limit {
				writeError(w, http.StatusBadRequest, "too_long", fmt.Sprintf("%s is %d characters long; %s takes at most %d", name, n, what, limit))
				return false
			}
		}
	}
	return true
}

// foreignOrigin returns the request's Origin when it names another host than the request's
// own (scheme aside, as the CSRF check compares them), "" when it is the same host or absent.
func foreignOrigin(r *http.Request) string {
	o := r.Header.Get("Origin")
	if o == "" || o == "null" {
		return ""
	}
	if u, err := url.Parse(o); err == nil && u.Host == r.Host {
		return ""
	}
	return o
}

// Log-in back-off: an address with LoginFailures failed log-ins within LoginWindow of its
// first is answered 429 until the window ends.
const (
	LoginFailures = 10
	LoginWindow   = time.Minute
	// loginTracked bounds the addresses whose failures are kept.
	loginTracked = 10_000
)

// loginGuard counts failed log-ins per client address (an IPv6 client by its /64).
type loginGuard struct {
	mu sync.Mutex
	by map[netip.Prefix]*loginFailures
}

type loginFailures struct {
	first time.Time // the window's start: its first failure
	n     int
}

// loginKey is the address a client's failures count under.
func loginKey(r *http.Request) netip.Prefix {
	a, ok := remoteAddr(r)
	if !ok {
		return netip.Prefix{}
	}
	bits := a.BitLen()
	if a.Is6() {
		bits = 64
	}
	p, _ := a.Prefix(bits)
	return p
}

// wait returns how long key must wait before it may try again (0: it may now).
func (g *loginGuard) wait(key netip.Prefix, now time.Time) time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	f := g.by[key]
	if f == nil || f.n < LoginFailures {
		return 0
	}
	return max(0, f.first.Add(LoginWindow).Sub(now))
}

// failed counts a failed log-in of key and returns its failures in the current window.
func (g *loginGuard) failed(key netip.Prefix, now time.Time) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.by == nil {
		g.by = map[netip.Prefix]*loginFailures{}
	}
	f := g.by[key]
	if f != nil && !now.Before(f.first.Add(LoginWindow)) {
		f = nil
	}
	if f == nil {
		if len(g.by) >= loginTracked {
			for k, o := range g.by {
				if !now.Before(o.first.Add(LoginWindow)) {
					delete(g.by, k)
				}
			}
			if len(g.by) >= loginTracked {
				return 1 // too many addresses failing at once to follow another
			}
		}
		f = &loginFailures{first: now}
		g.by[key] = f
	}
	f.n++
	return f.n
}

// succeeded forgets key's failures.
func (g *loginGuard) succeeded(key netip.Prefix) {
	g.mu.Lock()
	delete(g.by, key)
	g.mu.Unlock()
}

// doorState is what the Server keeps of its doors: the open streams, the failed log-ins and
// the limiter of the refusals' warnings (one line, then a count a minute).
type doorState struct {
	streams streamSlots
	logins  loginGuard
	once    sync.Once
	warn    *ratelog.Limiter
}

// quiet returns the limiter of the doors' warnings.
func (s *Server) quiet() *ratelog.Limiter {
	s.doors.once.Do(func() { s.doors.warn = &ratelog.Limiter{Log: s.Log, Clock: s.Clock} })
	return s.doors.warn
}

// Stream bounds: Server.MaxStreams and MaxStreamsPerToken when 0.
const (
	DefaultMaxStreams         = 256
	DefaultMaxStreamsPerToken = 16
	// streamRetryAfter is the Retry-After of a stream refused 429, in seconds.
	streamRetryAfter = 10
)

// streamSlots counts the open streams, in all and per token.
type streamSlots struct {
	mu    sync.Mutex
	total int
	by    map[string]int
}

// take reserves a stream of who within the bounds; it returns the limit reached ("token",
// "server") when there is no room, and otherwise the release to call when the stream ends.
func (sl *streamSlots) take(who string, perToken, total int) (release func(), limit string, open int) {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	if sl.by == nil {
		sl.by = map[string]int{}
	}
	switch {
	case sl.by[who] >= perToken:
		return nil, "token", sl.total
	case sl.total >= total:
		return nil, "server", sl.total
	}
	sl.by[who]++
	sl.total++
	var once sync.Once
	return func() {
		once.Do(func() {
			sl.mu.Lock()
			defer sl.mu.Unlock()
			sl.total--
			if sl.by[who]--; sl.by[who] <= 0 {
				delete(sl.by, who)
			}
		})
	}, "", sl.total
}

// openStream takes a stream slot for r's principal, or answers 429 with Retry-After and
// returns ok=false. The caller calls release when the stream ends.
func (s *Server) openStream(w http.ResponseWriter, r *http.Request) (release func(), ok bool) {
	perToken := s.MaxStreamsPerToken
	if perToken <= 0 {
		perToken = DefaultMaxStreamsPerToken
	}
	total := s.MaxStreams
	if total <= 0 {
		total = DefaultMaxStreams
	}
	who := PrincipalOf(r).Name
	if who == "" {
		who = "address " + loginKey(r).String()
	}
	rel, limit, open := s.doors.streams.take(who, perToken, total)
	if rel == nil {
		s.Metrics.StreamRefused(limit)
		w.Header().Set("Retry-After", strconv.Itoa(streamRetryAfter))
		msg := fmt.Sprintf("token %q holds %d streams, the most http.max-streams-per-token allows; close one (a console tab) and retry", who, perToken)
		if limit == "server" {
			msg = fmt.Sprintf("%d streams are open, the most http.max-streams allows; retry later", total)
		}
		s.quiet().Warn("stream refused 429: "+limit+" limit reached", "actor", who, "limit", limit, "open", open, "remote", r.RemoteAddr)
		writeError(w, http.StatusTooManyRequests, "too_many_streams", msg)
		return nil, false
	}
	s.Metrics.SetStreamsOpen(open)
	return func() {
		rel()
		s.doors.streams.mu.Lock()
		n := s.doors.streams.total
		s.doors.streams.mu.Unlock()
		s.Metrics.SetStreamsOpen(n)
	}, true
}

// retryAfter is d in whole seconds, rounded up, at least 1, for a Retry-After header.
func retryAfter(d time.Duration) string {
	return strconv.Itoa(max(1, int(math.Ceil(d.Seconds()))))
}

// inputError reports whether err is the database refusing the request's input (a value it
// cannot take: too long, out of range, not in its character set), which the same request
// meets every time: the caller's fault (400), never the database being unavailable.
func inputError(err error) bool { return store.IsDataError(err) }
