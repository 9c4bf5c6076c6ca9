// Package reply writes msgx's HTTP answers: a value as JSON, and the one error shape
// (client.ErrorBody) every route answers with, its message redacted and its quotes of the
// caller's input cut. The ops API (internal/api), the inbox (internal/inbox) and the routes
// other packages add all answer through it, so that no answer escapes the redaction.
package reply

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"msgx/client"
	"msgx/internal/secret"
)

const (
	// MaxEcho is how many characters of a caller's input an error answer quotes at most; a
	// longer input is cut with "…".
	MaxEcho = 200
	// maxErrorText bounds a whole error answer's text (characters), whatever it quotes.
	maxErrorText = 2000
)

// JSON writes v as JSON with status.
func JSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(v); err != nil {
		status, buf = http.StatusInternalServerError, *bytes.NewBufferString(`{"error":"cannot encode the answer","code":"internal"}` + "\n")
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// Error writes the error answer; msg is redacted (secret.Redact), as it often quotes an error
// from the database or a sink, and then cut (ClipEcho): an input it quotes shows at most
// MaxEcho characters.
func Error(w http.ResponseWriter, status int, code, msg string) {
	JSON(w, status, client.ErrorBody{Error: ClipEcho(secret.Redact(msg)), Code: code})
}

// ClipEcho makes an error text safe to answer: every quoted input in it (Go's %q, as the
// errors quote what they name) longer than MaxEcho characters is cut to MaxEcho with "…",
// and the whole text to maxErrorText characters.
func ClipEcho(msg string) string {
	if utf8.RuneCountInString(msg) <= MaxEcho {
		return msg
	}
	var b strings.Builder
	i := 0
	for i < len(msg) {
		j := strings.IndexByte(msg[i:], '"')
		if j < 0 {
			b.WriteString(msg[i:])
			break
		}
		b.WriteString(msg[i : i+j])
		i += j
		end := closingQuote(msg, i)
		if end < 0 {
			b.WriteString(msg[i:])
			break
		}
		lit := msg[i : end+1]
		unq, err := strconv.Unquote(lit)
		if err != nil {
			// Not a quoted string: keep the quote and look again after it.
			b.WriteByte('"')
			i++
			continue
		}
		if utf8.RuneCountInString(unq) > MaxEcho {
			lit = strconv.Quote(Clip(unq, MaxEcho))
		}
		b.WriteString(lit)
		i = end + 1
	}
	return Clip(b.String(), maxErrorText)
}

// closingQuote returns the index of the quote that closes the one at msg[open], skipping
// backslash escapes; -1 when none does.
func closingQuote(msg string, open int) int {
	for k := open + 1; k < len(msg); k++ {
		switch msg[k] {
		case '\\':
			k++
		case '"':
			return k
		}
	}
	return -1
}

// Clip cuts s to n characters, the last of them "…", when it is longer.
func Clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	runes := []rune(s)
	return string(runes[:n-1]) + "…"
}
