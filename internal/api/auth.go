package api

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"msgx/client"
	"msgx/internal/api/reply"
	"msgx/internal/pipeline"
	"msgx/internal/store"
)

// Access control of the ops API and the console (docs/operations.md, "Access control"; docs/api.md).
//
// Tokens are random secrets that operators hold; the configuration keeps only
// "sha256:<hex>" of each (HashToken). A plain SHA-256 is sound here because the secrets are
// high-entropy random strings (msgx token new makes 32 random bytes; msgx token hash refuses
// fewer than 16 characters): nobody can search a 2^128 space, so the slow, salted hashes that
// protect human passwords would only add a cost to every request.
//
// Roles: viewer reads the API and the console, operator also acts (replay, park, pause),
// admin also runs jobs (every role lists them and sees their progress) and reads the audit log. A request proves itself with
// "Authorization: Bearer <token>", or with the session cookie POST /api/v1/login sets
// (HttpOnly, SameSite=Strict); a state-changing request made with the cookie must also carry
// the session's CSRF token in the X-CSRF-Token header. With no tokens configured the API and
// the console answer only to loopback clients. The inbox keeps its own rule (http.inbox-allow).

// Role is a token's power; each includes the ones before it.
type Role int

// The roles, weakest first; RoleNone is an anonymous caller.
const (
	RoleNone Role = iota
	RoleViewer
	RoleOperator
	RoleAdmin
)

// String returns the role's name as configured.
func (r Role) String() string {
	switch r {
	case RoleViewer:
		return "viewer"
	case RoleOperator:
		return "operator"
	case RoleAdmin:
		return "admin"
	}
	return "anonymous"
}

// ParseRole returns the role named s.
func ParseRole(s string) (Role, bool) {
	for _, r := range []Role{RoleViewer, RoleOperator, RoleAdmin} {
		if r.String() == s {
			return r, true
		}
	}
	return RoleNone, false
}

// HashToken returns the configured form of a token secret: "sha256:" and the hex digest.
func HashToken(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// NewTokenSecret returns a new random token secret (32 random bytes, hex).
func NewTokenSecret() string {
	b := make([]byte, 32)
	rand.Read(b)
	return "msgx_" + hex.EncodeToString(b)
}

// Principal is who made a request: a token's name and role, and how it proved itself
// ("bearer", "cookie", "loopback" when no tokens are configured).
type Principal struct {
	Name string
	Role string
	Via  string
	// CSRF is the session's CSRF token (cookie sessions only): send it as X-CSRF-Token.
	CSRF string

	role Role
}

type principalKey struct{}

// PrincipalOf returns who made r (set by the access control), the zero Principal when nobody.
func PrincipalOf(r *http.Request) Principal {
	p, _ := r.Context().Value(principalKey{}).(Principal)
	return p
}

// CSRFHeader is the header a state-changing request made with the session cookie carries.
const CSRFHeader = "X-CSRF-Token"

// SessionCookie is the console's session cookie.
const SessionCookie = "msgx_session"

// SessionTTL is how long a console session lasts after its login.
const SessionTTL = 12 * time.Hour

type session struct {
	p       Principal
	expires time.Time
}

// Token is one configured API token (auth.tokens): a name, logged and audited with every
// action, a role (viewer, operator or admin) and the hash of its secret (HashToken).
type Token struct {
	Name string
	Role string
	Hash string
}

// InboxRule is who may post to the inbox (http.inbox-allow): clients from Networks and
// holders of the tokens named in Tokens. The zero rule leaves the inbox open.
type InboxRule struct {
	Networks []netip.Prefix
	Tokens   []string
}

// Auth is the access control. The zero value (and nil) has no tokens: loopback clients only,
// the inbox open.
type Auth struct {
	tokens map[string]Token // by hash
	inbox  InboxRule
	clock  pipeline.Clock

	mu       sync.Mutex
	sessions map[string]*session
}

// NewAuth returns the access control of tokens and the inbox rule.
func NewAuth(tokens []Token, inbox InboxRule, clock pipeline.Clock) *Auth {
	a := &Auth{tokens: map[string]Token{}, inbox: inbox, clock: clock, sessions: map[string]*session{}}
	for _, t := range tokens {
		a.tokens[t.Hash] = t
	}
	return a
}

// Open reports whether no tokens are configured (loopback clients only).
func (a *Auth) Open() bool { return a == nil || len(a.tokens) == 0 }

func (a *Auth) now() time.Time {
	if a == nil || a.clock == nil {
		return time.Now()
	}
	return a.clock.Now()
}

// token returns the configured token whose secret is secret.
func (a *Auth) token(secret string) (Token, bool) {
	if a == nil || secret == "" {
		return Token{}, false
	}
	h := HashToken(secret)
	for hash, t := range a.tokens {
		if subtle.ConstantTimeCompare([]byte(hash), []byte(h)) == 1 {
			return t, true
		}
	}
	return Token{}, false
}

func principalOf(t Token, via string) Principal {
	r, _ := ParseRole(t.Role)
	return Principal{Name: t.Name, Role: r.String(), Via: via, role: r}
}

// bearer returns the token of an Authorization: Bearer header, "" when none.
func bearer(r *http.Request) string {
	h := r.Header.Get("Authorization")
	if len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
		return strings.TrimSpace(h[7:])
	}
	return ""
}

// remoteAddr returns the client's address, unmapped.
func remoteAddr(r *http.Request) (netip.Addr, bool) {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}, false
	}
	return a.Unmap(), true
}

func isLoopback(r *http.Request) bool {
	a, ok := remoteAddr(r)
	return ok && a.IsLoopback()
}

// loopbackHost reports whether the Host header names this machine's loopback (a page of
// another site whose name resolves to 127.0.0.1 would send its own name: DNS rebinding).
func loopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.Unmap().IsLoopback()
}

// authenticate returns who made r, or an error answer (status, code, text) when its
// credentials are wrong. No credentials is RoleNone without an error.
func (a *Auth) authenticate(r *http.Request) (Principal, int, string, string) {
	if a.Open() {
		if !isLoopback(r) {
			return Principal{}, http.StatusForbidden, "loopback_only", fmt.Sprintf(
				"no auth.tokens are configured, so the API and the console answer only to loopback clients; this request came from %s (configure auth.tokens, see msgx token hash)", r.RemoteAddr)
		}
		if !loopbackHost(r.Host) {
			return Principal{}, http.StatusForbidden, "bad_host", fmt.Sprintf(
				"with no auth.tokens the API answers only to a loopback Host (127.0.0.1, [::1], localhost); this request named %q", r.Host)
		}
		return Principal{Name: "loopback", Role: RoleAdmin.String(), Via: "loopback", role: RoleAdmin}, 0, "", ""
	}
	if b := bearer(r); b != "" {
		t, ok := a.token(b)
		if !ok {
			return Principal{}, http.StatusUnauthorized, "bad_token", "the bearer token is not one of auth.tokens"
		}
		return principalOf(t, "bearer"), 0, "", ""
	}
	if c, err := r.Cookie(SessionCookie); err == nil && c.Value != "" {
		a.mu.Lock()
		s := a.sessions[c.Value]
		if s != nil && !a.now().Before(s.expires) {
			delete(a.sessions, c.Value)
			s = nil
		}
		a.mu.Unlock()
		if s == nil {
			return Principal{}, http.StatusUnauthorized, "session_expired", "the session has ended; log in again"
		}
		return s.p, 0, "", ""
	}
	return Principal{}, 0, "", ""
}

// login starts a cookie session for the token secret.
func (a *Auth) login(secret string) (Principal, string, time.Time, bool) {
	t, ok := a.token(secret)
	if !ok {
		return Principal{}, "", time.Time{}, false
	}
	p := principalOf(t, "cookie")
	id := randomHex(32)
	p.CSRF = randomHex(24)
	now := a.now()
	exp := now.Add(SessionTTL)
	a.mu.Lock()
	for k, s := range a.sessions {
		if !now.Before(s.expires) {
			delete(a.sessions, k)
		}
	}
	a.sessions[id] = &session{p: p, expires: exp}
	a.mu.Unlock()
	return p, id, exp, true
}

func (a *Auth) logout(r *http.Request) {
	if a == nil {
		return
	}
	if c, err := r.Cookie(SessionCookie); err == nil {
		a.mu.Lock()
		delete(a.sessions, c.Value)
		a.mu.Unlock()
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// inboxAllowed applies http.inbox-allow to a post to the inbox.
func (a *Auth) inboxAllowed(r *http.Request) (bool, string) {
	if a == nil || (len(a.inbox.Networks) == 0 && len(a.inbox.Tokens) == 0) {
		return true, ""
	}
	if addr, ok := remoteAddr(r); ok {
		for _, n := range a.inbox.Networks {
			if n.Contains(addr) {
				return true, ""
			}
		}
	}
	if t, ok := a.token(bearer(r)); ok && slices.Contains(a.inbox.Tokens, t.Name) {
		return true, ""
	}
	return false, fmt.Sprintf("http.inbox-allow admits neither this source (%s) nor this request's token", r.RemoteAddr)
}

// routeRole is the role a request needs; public routes need none (RoleNone).
func routeRole(method, path string) Role {
	switch {
	case healthPath(path), path == "/api/v1/login", path == "/api/v1/logout":
		return RoleNone
	case path == "/api/v1/audit", path == "/api/v1/audit/stream", path == "/api/v1/config":
		return RoleAdmin
	case path == "/api/v1/jobs", strings.HasPrefix(path, "/api/v1/jobs/"):
		// Everyone who reads sees the jobs and their progress; only an admin runs one.
		if safeMethod(method) {
			return RoleViewer
		}
		return RoleAdmin
	case strings.HasPrefix(path, "/api/") || path == "/metrics" || strings.HasPrefix(path, "/view/admin/"):
		if safeMethod(method) {
			return RoleViewer
		}
		return RoleOperator
	}
	return RoleNone // the console's pages and assets (its data comes from the API)
}

// healthPath reports whether path is a health route (/healthz, /livez, /readyz): always open,
// from any source, since load balancers and orchestrators probe them without credentials.
func healthPath(path string) bool {
	return path == "/healthz" || path == "/livez" || path == "/readyz"
}

func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

// Wrap applies the access control to every route of next.
func (a *Auth) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/cminmsgs/send" {
			if ok, why := a.inboxAllowed(r); !ok {
				writeError(w, http.StatusForbidden, "inbox_forbidden", why)
				return
			}
			next.ServeHTTP(w, r)
			return
		}
		need := routeRole(r.Method, r.URL.Path)
		if healthPath(r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		p, status, code, msg := a.authenticate(r)
		if status != 0 && need == RoleNone && !a.Open() {
			// A public route (the console's pages, login) answers a stale cookie or a wrong
			// token as it answers nobody: the console can then show its login.
			p, status = Principal{}, 0
		}
		if status != 0 {
			if status == http.StatusUnauthorized {
				w.Header().Set("WWW-Authenticate", `Bearer realm="msgx"`)
			}
			writeError(w, status, code, msg)
			return
		}
		if need > RoleNone && p.role == RoleNone {
			w.Header().Set("WWW-Authenticate", `Bearer realm="msgx"`)
			writeError(w, http.StatusUnauthorized, "unauthenticated", "this route needs a token: send Authorization: Bearer <token>, or log in (POST /api/v1/login)")
			return
		}
		if p.role < need {
			writeError(w, http.StatusForbidden, "forbidden", fmt.Sprintf("token %q has role %s; %s %s needs %s", p.Name, p.role, r.Method, r.URL.Path, need))
			return
		}
		if !safeMethod(r.Method) && need > RoleNone {
			if ok, why := csrfSafe(r, p); !ok {
				writeError(w, http.StatusForbidden, "csrf", why)
				return
			}
		}
		if !boundedInput(w, r) {
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)))
	})
}

// csrfSafe refuses a state-changing request a page of another site could have made with the
// browser's credentials: one whose Origin is another host, a cookie session's request without
// its CSRF token, and (with no tokens, where loopback needs no credentials) one that is not
// JSON, which a cross-site form or simple fetch cannot send without a preflight msgx never
// grants. Bearer requests carry their credential themselves, so a page cannot forge them.
func csrfSafe(r *http.Request, p Principal) (bool, string) {
	if o := foreignOrigin(r); o != "" {
		return false, fmt.Sprintf("cross-origin request from %q refused", o)
	}
	switch p.Via {
	case "cookie":
		got := r.Header.Get(CSRFHeader)
		if got == "" || subtle.ConstantTimeCompare([]byte(got), []byte(p.CSRF)) != 1 {
			return false, "a state-changing request made with the session cookie needs the session's CSRF token in " + CSRFHeader + " (GET /api/v1/me gives it)"
		}
	case "loopback", "":
		if r.Header.Get(CSRFHeader) != "" {
			return true, ""
		}
		mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
		if mt != "application/json" {
			return false, "a state-changing request needs Content-Type: application/json (or an " + CSRFHeader + " header)"
		}
	}
	return true, ""
}

// AuthRoutes adds POST /api/v1/login {"token":…} (sets the session cookie), POST
// /api/v1/logout and GET /api/v1/me.
func (s *Server) authRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /api/v1/login", func(w http.ResponseWriter, r *http.Request) {
		// A page of another origin may not log a browser in (login CSRF), as it may not
		// change anything else; an address that failed too often waits (LoginWindow).
		if o := foreignOrigin(r); o != "" {
			s.Metrics.LoginRefused("origin")
			s.quiet().Warn("login refused 403: a page of another origin", "origin", reply.Clip(o, reply.MaxEcho), "remote", r.RemoteAddr)
			writeError(w, http.StatusForbidden, "csrf", fmt.Sprintf("cross-origin log-in from %q refused", o))
			return
		}
		key := loginKey(r)
		if wait := s.doors.logins.wait(key, s.Clock.Now()); wait > 0 {
			s.Metrics.LoginRefused("backoff")
			s.quiet().Warn("login refused 429: too many failed log-ins from the address", "remote", r.RemoteAddr, "address", key.String(),
				"failures", LoginFailures, "retry_after_seconds", retryAfter(wait))
			w.Header().Set("Retry-After", retryAfter(wait))
			writeError(w, http.StatusTooManyRequests, "too_many_logins", fmt.Sprintf(
				"%d failed log-ins from %s within %s: log-ins from it are refused for %s more", LoginFailures, key, LoginWindow, wait.Round(time.Second)))
			return
		}
		mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
		if mt != "application/json" {
			writeError(w, http.StatusUnsupportedMediaType, "bad_media_type", "send the token as application/json: {\"token\":\"…\"}")
			return
		}
		var req client.LoginRequest
		if !readJSON(w, r, &req) {
			return
		}
		if s.Auth.Open() {
			p, status, code, msg := s.Auth.authenticate(r)
			if status != 0 {
				writeError(w, status, code, msg)
				return
			}
			writeJSON(w, http.StatusOK, s.session(p))
			return
		}
		p, id, exp, ok := s.Auth.login(req.Token)
		if !ok {
			n := s.doors.logins.failed(key, s.Clock.Now())
			s.Metrics.LoginRefused("bad_token")
			s.quiet().Warn("login refused: the token is not one of auth.tokens", "remote", r.RemoteAddr, "failures_in_window", n)
			writeError(w, http.StatusUnauthorized, "bad_token", "the token is not one of auth.tokens")
			return
		}
		s.doors.logins.succeeded(key)
		http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: id, Path: "/", Expires: exp, HttpOnly: true,
			SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
		s.Log.Info("login", "actor", p.Name, "role", p.Role, "remote", r.RemoteAddr)
		writeJSON(w, http.StatusOK, s.session(p))
	})
	mux.HandleFunc("POST /api/v1/logout", func(w http.ResponseWriter, r *http.Request) {
		if o := foreignOrigin(r); o != "" {
			writeError(w, http.StatusForbidden, "csrf", fmt.Sprintf("cross-origin log-out from %q refused", o))
			return
		}
		s.Auth.logout(r)
		http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
		writeJSON(w, http.StatusOK, map[string]bool{"logged_out": true})
	})
	mux.HandleFunc("GET /api/v1/me", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, s.session(PrincipalOf(r)))
	})
}

func (s *Server) session(p Principal) client.Session {
	loc := s.Loc
	if loc == nil {
		loc = time.UTC
	}
	return client.Session{Name: p.Name, Role: p.Role, Via: p.Via, CSRF: p.CSRF, Timezone: loc.String()}
}

// audit logs an operator's action with the token's name and writes it to the audit log.
func (s *Server) audit(r *http.Request, action, subject, detail string) {
	p := PrincipalOf(r)
	s.Log.Info("operator action", "actor", p.Name, "role", p.Role, "action", action, "subject", subject, "detail", detail, "remote", r.RemoteAddr)
	s.Metrics.OperatorAction(action)
	// Every operator action is a line of the recent problems too (the durable list the status
	// and the console show), beside the pump's parked and dead messages.
	if err := s.DB.AddProblem(context.WithoutCancel(r.Context()), store.Problem{At: s.Clock.Now(), Kind: "action", Actor: p.Name,
		Subject: subject, Note: action + ": " + detail}); err != nil {
		s.Log.Error("recent problems write failed", "action", action, "err", err.Error())
	}
	if err := s.DB.AddAudit(context.WithoutCancel(r.Context()), auditEntry(s.Clock.Now(), p, action, subject, detail, r.RemoteAddr)); err != nil {
		s.Log.Error("audit log write failed", "actor", p.Name, "action", action, "err", err.Error())
	}
}

// InboxOnly serves only the inbox, the health routes and /metrics of h (the http.addr listener when
// http.admin-addr serves the API and the console); every other route answers 404 there.
func InboxOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/cminmsgs/send", "/healthz", "/livez", "/readyz", "/metrics":
			h.ServeHTTP(w, r)
			return
		}
		writeError(w, http.StatusNotFound, "not_found", "the API and the console are served on http.admin-addr, not here")
	})
}
