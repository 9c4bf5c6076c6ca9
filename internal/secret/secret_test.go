package secret

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"testing"
)

func TestRedact(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`POST https://ops:s3cretPW@hooks.example/hook: HTTP 500`, `POST https://ops:xxxxx@hooks.example/hook: HTTP 500`},
		{`Post "https://u:p%40ss@h:8443/x?y=1": dial tcp: refused`, `Post "https://u:xxxxx@h:8443/x?y=1": dial tcp: refused`},
		{`https://h/hook?token=abc123&x=1`, `https://h/hook?token=xxxxx&x=1`},
		{`https://h/hook?a=1&api_key=K&Signature=S`, `https://h/hook?a=1&api_key=xxxxx&Signature=xxxxx`},
		{`dsn msgx:topsecret@tcp(db:3306)/aodb refused`, `dsn msgx:xxxxx@tcp(db:3306)/aodb refused`},
		{`"msgx:pw@tcp(db)/x"`, `"msgx:xxxxx@tcp(db)/x"`},
		{`https://user@host/x`, `https://user@host/x`},
		{`no secret here: a=b, mail x@y`, `no secret here: a=b, mail x@y`},
		{`机场 https://a:机密@h/ 航班`, `机场 https://a:xxxxx@h/ 航班`},
	} {
		if got := Redact(c.in); got != c.want {
			t.Errorf("Redact(%q)\n got %q\nwant %q", c.in, got, c.want)
		}
	}
}

// A log line carrying a secret in a string, an error and a list is redacted value by value:
// the secret is gone and the line is still one JSON object.
func TestReplaceAttrKeepsLogLinesValidJSON(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{ReplaceAttr: ReplaceAttr}))
	text := `Post "http://127.0.0.1:1/hook?key=s3cr3t": dial tcp "quoted" \ back\slash` + "\n" + `https://u:s3cr3t@h/x`
	log.Error("delivery failed "+text, "err", text, "cause", errors.New(text), "warnings", []string{"ok", text},
		slog.Group("sink", "url", "http://h/x?token=s3cr3t"))
	line := buf.Bytes()
	if !json.Valid(line) || bytes.Count(line, []byte("\n")) != 1 {
		t.Fatalf("not one JSON line: %s", line)
	}
	if bytes.Contains(line, []byte("s3cr3t")) {
		t.Errorf("the line shows the secret: %s", line)
	}
	var m map[string]any
	json.Unmarshal(line, &m)
	if want := `Post "http://127.0.0.1:1/hook?key=xxxxx": dial tcp "quoted" \ back\slash` + "\n" + `https://u:xxxxx@h/x`; m["err"] != want || m["cause"] != want {
		t.Errorf("err %q, cause %q, want %q", m["err"], m["cause"], want)
	}
}
