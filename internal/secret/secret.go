// Package secret hides credentials in text that is shown or stored: the password of a URL's
// userinfo (https://user:pass@host), secret query parameters (?token=…, &password=…) and the
// password of a MySQL DSN (user:pass@tcp(host)/db). It is applied where an error is recorded
// (an event's last error, a message's last error), to every log line and to every answer of
// the ops API, so a webhook URL's password never reaches an operator's screen.
package secret

import (
	"regexp"
	"strings"
)

// Mask replaces each secret.
const Mask = "xxxxx"

var (
	// scheme://user:password@ — the password is everything up to the last @ before the host.
	userinfo = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.\-]*://[^/\s:@"'<>]*:)[^/\s"'<>]*@`)
	// user:password@tcp( / @unix( / @( — a go-sql-driver DSN.
	dsn = regexp.MustCompile(`(^|[\s"'=(])([^\s:@/"'()]+:)[^\s@"']*@((?:tcp|unix|udp)?\()`)
	// ?name=value or &name=value where name says it is secret.
	query = regexp.MustCompile(`(?i)([?&;](?:[a-z0-9_.\-]*(?:password|passwd|pwd|secret|token|apikey|api_key|api-key|access_key|auth|signature|sig|credential|key))=)[^&\s"'#<>]*`)
)

// Redact returns s with every password, secret query value and DSN password replaced by Mask.
func Redact(s string) string {
	if !strings.ContainsAny(s, "@=") {
		return s
	}
	if strings.Contains(s, "@") {
		s = userinfo.ReplaceAllString(s, "${1}"+Mask+"@")
		s = dsn.ReplaceAllString(s, "${1}${2}"+Mask+"@${3}")
	}
	if strings.Contains(s, "=") {
		s = query.ReplaceAllString(s, "${1}"+Mask)
	}
	return s
}

// Bytes is Redact over a byte slice (a JSON answer); it returns b itself when nothing changes.
func Bytes(b []byte) []byte {
	s := string(b)
	r := Redact(s)
	if r == s {
		return b
	}
	return []byte(r)
}
