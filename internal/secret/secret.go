// Package secret hides credentials in text that is shown or stored: everything of a URL but
// its scheme, host and port (the userinfo, the path and the query, where chat-style webhooks
// and signed URLs carry their tokens, and the fragment), secret query parameters anywhere
// (?token=…, &code=…, #access_token=…) and the password of a DSN (user:pass@tcp(host)/db,
// user:pass@host:port).
//
// A URL shows as scheme://host:port/xxxxx (user:xxxxx@ before the host when it names a user
// with a password, xxxxx@ when it carries a user name alone, which is often a token). The
// operator may let the path of a configured URL show (a target's show-path: true): then its
// path and its ordinary query parameters show, a parameter whose name says it is secret
// (token, code, sig, key, …) and the fragment stay masked. URL gives that form of one
// configured URL; Redact finds the URLs in free text (an error that quotes one) and gives each
// that form, with the path shown for those ShowPaths named. Text that does not parse as a URL
// is masked, not shown: a parse error never shows what it could not read.
//
// It masks values, never encoded text: a text is redacted where it is formed or recorded (a
// delivery error as the dispatcher records it, a message's or job's last error, a pause
// reason, an error an API answer carries, the configuration view) and read back redacted from
// rows an older msgx wrote, before any of it is encoded as JSON; log lines are redacted
// attribute by attribute (ReplaceAttr) before the handler encodes them. A pattern run over
// finished JSON would also match the escapes JSON adds (the backslash of \" ends up inside a
// query value) and break the answer, so nothing here takes encoded text.
package secret

import (
	"log/slog"
	"net/netip"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
)

// Mask replaces each secret.
const Mask = "xxxxx"

// secretName is what a parameter's name contains when its value is secret (case-insensitive).
const secretName = `password|passwd|pwd|secret|token|apikey|api_key|api-key|access_key|auth|signature|sig|credential|key|code|session|jwt|bearer|private|cookie|ticket|nonce`

var (
	// A URL with a scheme in free text: it ends at white space, a quote or an angle bracket.
	schemeURL = regexp.MustCompile("(^|[^A-Za-z0-9+.\\-])([A-Za-z][A-Za-z0-9+.\\-]*://[^\\s\"'<>`]*)")
	// [user:password@]host:port followed by a path, a query or a fragment, without a scheme
	// (a broker, a Redis address): it is shown as URL shows it.
	hostPortRest = regexp.MustCompile("(^|[\\s\"'=(\\[,])((?:[^\\s:@/\"'()\\[\\],]+:[^\\s@\"'/]*@)?(?:(?:[A-Za-z0-9_\\-]+\\.)*[A-Za-z0-9_\\-]+|\\[[0-9A-Fa-f:.%]+\\]):[0-9]{1,5}[/?#][^\\s\"'<>`]*)")
	// user:password@tcp( / @unix( / @( — a go-sql-driver DSN, whose password may hold a /.
	dsn = regexp.MustCompile(`(^|[\s"'=(])([^\s:@/"'()]+:)[^\s@"']*@((?:tcp|unix|udp)?\()`)
	// user:password@host without a scheme (a broker or Redis address with credentials).
	userHost = regexp.MustCompile(`(^|[\s"'=(\[,])([^\s:@/"'()\[\],]+:)[^\s@"'/]+@([A-Za-z0-9\[])`)
	// ?name=value, &name=value, ;name=value or #name=value where name says it is secret.
	query = regexp.MustCompile(`(?i)([?&;#][a-z0-9_.\-]*(?:` + secretName + `)[a-z0-9_.\-]*=)[^&\s"'#<>]*`)
	// A parameter name that says its value is secret.
	secretParam = regexp.MustCompile(`(?i)` + secretName)
	// A host as a URL may name it: a name or an IPv4 address (letters of any script, digits,
	// - . _ ~ %), or an IPv6 address in brackets.
	hostName = regexp.MustCompile(`^(?:[\p{L}\p{N}\-._~%]*|\[[0-9A-Fa-f:.]+(?:%[\p{L}\p{N}\-._~]+)?\])$`)
)

// Redact returns s with every URL's userinfo, path, query and fragment, every secret query
// value and every DSN password replaced by Mask. A URL that ShowPaths named keeps its path
// and its ordinary query parameters.
func Redact(s string) string {
	if !strings.ContainsAny(s, "@=:#") {
		return s
	}
	if strings.Contains(s, "://") {
		s = replaceURLs(s, schemeURL, func(m []string) string { return m[1] + shown(m[2]) })
	}
	if strings.Contains(s, "@") {
		s = dsn.ReplaceAllString(s, "${1}${2}"+Mask+"@${3}")
		s = userHost.ReplaceAllString(s, "${1}${2}"+Mask+"@${3}")
	}
	if strings.Contains(s, ":") {
		s = replaceURLs(s, hostPortRest, func(m []string) string { return m[1] + shown(m[2]) })
	}
	if strings.Contains(s, "=") {
		s = query.ReplaceAllStringFunc(s, func(m string) string {
			name, value, _ := strings.Cut(m, "=")
			trimmed := strings.TrimRight(value, ".,;:!?)]}")
			return name + "=" + Mask + value[len(trimmed):]
		})
	}
	return s
}

// replaceURLs replaces each match of re in s by what f makes of its submatches, keeping the
// punctuation that ends a sentence or a quotation after a URL (".", ":", ")" …) out of it.
func replaceURLs(s string, re *regexp.Regexp, f func([]string) string) string {
	return re.ReplaceAllStringFunc(s, func(match string) string {
		trimmed := strings.TrimRight(match, ".,;:!?)]}")
		tail := match[len(trimmed):]
		m := re.FindStringSubmatch(trimmed)
		if m == nil { // the trim cut what made it a URL: mask it whole
			m = re.FindStringSubmatch(match)
			tail = ""
		}
		return f(m) + tail
	})
}

// shown is the form of one URL found in free text: with its path when ShowPaths named it.
func shown(raw string) string {
	return URL(raw, pathShown(raw))
}

// URL returns raw, a URL as configured (https://user:pass@host:8443/hooks/T0KEN?code=1#x, or
// without a scheme, host:9092), as msgx shows it: scheme, host and port, the userinfo's
// password (or a lone user name) masked, and the rest masked as /xxxxx. With showPath the
// path and the ordinary query parameters show; secret parameters (token, code, sig, key, …)
// and the fragment are masked still. What does not parse as a URL shows as scheme://xxxxx
// (or xxxxx): nothing of it is shown.
func URL(raw string, showPath bool) string {
	u, ok := split(raw)
	if !ok {
		if u.scheme != "" {
			return u.scheme + "://" + Mask
		}
		return Mask
	}
	var b strings.Builder
	if u.scheme != "" {
		b.WriteString(u.scheme + "://")
	}
	if u.userinfo != "" {
		if user, pass, ok := strings.Cut(u.userinfo, ":"); ok && user != "" {
			if pass == "" {
				b.WriteString(user + ":@")
			} else {
				b.WriteString(user + ":" + Mask + "@")
			}
		} else {
			b.WriteString(Mask + "@")
		}
	}
	b.WriteString(u.host)
	if !showPath {
		if u.rest != "" && u.rest != "/" {
			b.WriteString("/" + Mask)
		} else {
			b.WriteString(u.rest)
		}
		return b.String()
	}
	rest, frag, hasFrag := strings.Cut(u.rest, "#")
	path, q, hasQuery := strings.Cut(rest, "?")
	b.WriteString(path)
	if hasQuery {
		b.WriteByte('?')
		b.WriteString(maskQuery(q))
	}
	if hasFrag {
		b.WriteByte('#')
		if frag != "" {
			b.WriteString(Mask)
		}
	}
	return b.String()
}

// maskQuery masks the value of each secret parameter of q, and each parameter without a name
// (?T0KEN).
func maskQuery(q string) string {
	params := strings.FieldsFunc(q, func(r rune) bool { return r == '&' || r == ';' })
	for i, p := range params {
		name, _, ok := strings.Cut(p, "=")
		switch {
		case !ok:
			params[i] = Mask
		case secretParam.MatchString(name):
			params[i] = name + "=" + Mask
		}
	}
	return strings.Join(params, "&")
}

// parts is a URL cut into what URL shows apart: scheme (without ://, empty when there is
// none), userinfo (before the last @ of the authority, empty when there is none), host (with
// its port) and rest (the path, query and fragment, from the first / ? or #).
type parts struct {
	scheme, userinfo, host, rest string
}

// split cuts raw into its parts; ok is false when the authority does not parse (a host with
// characters no host has, a port that is not a number), and then only the scheme is set.
// The authority ends at the first / ? or # after its last @, so a password holding one of
// those is still taken as the password.
func split(raw string) (u parts, ok bool) {
	s := raw
	if i := strings.Index(s, "://"); i > 0 && isScheme(s[:i]) {
		u.scheme, s = s[:i], s[i+3:]
	}
	end := strings.IndexAny(s, "/?#")
	if end < 0 {
		end = len(s)
	}
	at := strings.LastIndex(s[:end], "@")
	if at < 0 && strings.Contains(s[:end], ":") && !validHostPort(s[:end]) {
		// What comes before the first / ? # is no host: a password holding one of them
		// (u:pa/ss@h) ends at the last @. A path holding an @ (/users/@me) after a good
		// host is a path.
		at = strings.LastIndex(s, "@")
	}
	if at >= 0 {
		u.userinfo, s = s[:at], s[at+1:]
		if end = strings.IndexAny(s, "/?#"); end < 0 {
			end = len(s)
		}
	}
	u.host, u.rest = s[:end], s[end:]
	if !validHostPort(u.host) {
		return parts{scheme: u.scheme}, false
	}
	return u, true
}

// isScheme says whether s is a URL scheme: a letter, then letters, digits, + - or ..
func isScheme(s string) bool {
	for i, r := range s {
		switch {
		case r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z':
		case i > 0 && (r >= '0' && r <= '9' || r == '+' || r == '-' || r == '.'):
		default:
			return false
		}
	}
	return s != ""
}

// validHostPort says whether s is host, host:port, [v6], [v6]:port or a bare address, with a
// numeric port.
func validHostPort(s string) bool {
	if _, err := netip.ParseAddr(s); err == nil { // a bare IPv6 address (::1), as brokers allow
		return true
	}
	host, port := s, ""
	if strings.HasPrefix(s, "[") {
		i := strings.Index(s, "]")
		if i < 0 {
			return false
		}
		host, port = s[:i+1], s[i+1:]
		if port != "" {
			if port[0] != ':' {
				return false
			}
			port = port[1:]
		}
	} else if i := strings.LastIndex(s, ":"); i >= 0 {
		host, port = s[:i], s[i+1:]
	}
	for _, r := range port {
		if r < '0' || r > '9' {
			return false
		}
	}
	return len(port) <= 5 && hostName.MatchString(host)
}

// showable is a URL whose path ShowPaths let show: its scheme, host (with port) and path.
type showable struct {
	scheme, host, path string
}

// show holds the URLs ShowPaths named.
var show atomic.Pointer[[]showable]

// ShowPaths names the configured URLs whose path Redact shows (a target's show-path: true),
// in place of those named before: a URL in free text with the same scheme and host and port
// and a path at or under one of theirs keeps its path and its ordinary query parameters.
// The userinfo, secret parameters and fragment stay masked. A URL that does not parse is
// ignored. Safe for concurrent use.
func ShowPaths(urls ...string) {
	list := make([]showable, 0, len(urls))
	for _, raw := range urls {
		u, ok := split(strings.TrimSpace(raw))
		if !ok || u.host == "" {
			continue
		}
		path, _, _ := strings.Cut(u.rest, "?")
		path, _, _ = strings.Cut(path, "#")
		list = append(list, showable{strings.ToLower(u.scheme), strings.ToLower(u.host), strings.TrimSuffix(path, "/")})
	}
	show.Store(&list)
}

// pathShown says whether ShowPaths named raw's URL.
func pathShown(raw string) bool {
	list := show.Load()
	if list == nil || len(*list) == 0 {
		return false
	}
	u, ok := split(raw)
	if !ok {
		return false
	}
	path, _, _ := strings.Cut(u.rest, "?")
	path, _, _ = strings.Cut(path, "#")
	for _, s := range *list {
		if s.scheme == strings.ToLower(u.scheme) && s.host == strings.ToLower(u.host) &&
			(path == s.path || strings.HasPrefix(path, s.path+"/")) {
			return true
		}
	}
	return false
}

// ReplaceAttr is a slog.HandlerOptions.ReplaceAttr that redacts each string an attribute
// carries (a string, an error, a list of strings) before the handler encodes the line, so a
// log line never shows a secret and stays valid JSON.
func ReplaceAttr(_ []string, a slog.Attr) slog.Attr {
	switch v := a.Value; v.Kind() {
	case slog.KindString:
		if r := Redact(v.String()); r != v.String() {
			a.Value = slog.StringValue(r)
		}
	case slog.KindAny:
		switch x := v.Any().(type) {
		case error:
			a.Value = slog.StringValue(Redact(x.Error()))
		case *url.URL:
			a.Value = slog.StringValue(Redact(x.String()))
		case []string:
			out := make([]string, len(x))
			for i, s := range x {
				out[i] = Redact(s)
			}
			a.Value = slog.AnyValue(out)
		}
	}
	return a
}
