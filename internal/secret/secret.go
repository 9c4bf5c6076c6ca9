// Package secret hides credentials in text that is shown or stored: the password of a URL's
// userinfo (https://user:pass@host), secret query parameters (?token=…, &password=…) and the
// password of a MySQL DSN (user:pass@tcp(host)/db).
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
