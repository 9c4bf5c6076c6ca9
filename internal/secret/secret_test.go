package secret

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

func TestRedact(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`POST https://ops:s3cretPW@hooks.example/hook: HTTP 500`, `POST https://ops:xxxxx@hooks.example/xxxxx: HTTP 500`},
		{`Post "https://u:p%40ss@h:8443/x?y=1": dial tcp: refused`, `Post "https://u:xxxxx@h:8443/xxxxx": dial tcp: refused`},
		{`https://h/hook?token=abc123&x=1`, `https://h/xxxxx`},
		{`https://h/hook?a=1&api_key=K&Signature=S`, `https://h/xxxxx`},
		{`dsn msgx:topsecret@tcp(db:3306)/aodb refused`, `dsn msgx:xxxxx@tcp(db:3306)/aodb refused`},
		{`"msgx:pw@tcp(db)/x"`, `"msgx:xxxxx@tcp(db)/x"`},
		{`https://user@host/x`, `https://xxxxx@host/xxxxx`},
		{`no secret here: a=b, mail x@y`, `no secret here: a=b, mail x@y`},
		{`机场 https://a:机密@h/ 航班`, `机场 https://a:xxxxx@h/ 航班`},
		// The path of a chat-style webhook is its token.
		{`POST https://chat.example/hooks/T0KEN/XYZ: HTTP 404`, `POST https://chat.example/xxxxx: HTTP 404`},
		{`https://chat.example/hooks/T0KEN.`, `https://chat.example/xxxxx.`},
		{`(see https://chat.example/hooks/T0KEN)`, `(see https://chat.example/xxxxx)`},
		// Query names, of any spelling, and the fragment.
		{`https://h/?code=C0DE`, `https://h/xxxxx`},
		{`https://h?zq=UNUSUAL`, `https://h/xxxxx`},
		{`https://h/cb#access_token=FRAG&state=1`, `https://h/xxxxx`},
		{`https://h#FRAG`, `https://h/xxxxx`},
		{`https://h/`, `https://h/`},
		{`https://h`, `https://h`},
		// Ports and IPv6 hosts show; what follows does not.
		{`Post "http://127.0.0.1:9/p/SECRET": dial`, `Post "http://127.0.0.1:9/xxxxx": dial`},
		{`http://[::1]:8080/SECRET?k=v`, `http://[::1]:8080/xxxxx`},
		{`http://u:PW@[fe80::1%25eth0]:80/SECRET`, `http://u:xxxxx@[fe80::1%25eth0]:80/xxxxx`},
		// A password holding / ? # @ is a password, not a path.
		{`https://u:pa/ss@h/x`, `https://u:xxxxx@h/xxxxx`},
		{`https://u:p@ss@h/x`, `https://u:xxxxx@h/xxxxx`},
		{`https://h/users/@me`, `https://h/xxxxx`},
		// Without a scheme: brokers, Redis addresses.
		{`dial tcp kafka1:9092: connection refused`, `dial tcp kafka1:9092: connection refused`},
		{`dial tcp: address u:PW@127.0.0.1:1/SECRET?t=1: too many colons`, `dial tcp: address u:xxxxx@127.0.0.1:1/xxxxx: too many colons`},
		{`dial [kafka://u:PW@h:1/SECRET#F]:9092: refused`, `dial [kafka://u:xxxxx@h:1/xxxxx: refused`},
		{`address u:PW@127.0.0.1:1 refused`, `address u:xxxxx@127.0.0.1:1 refused`},
		{`[::1]:9092/SECRET`, `[::1]:9092/xxxxx`},
		// Token-like parameters outside a URL.
		{`GET /cb?code=C0DE&x=1`, `GET /cb?code=xxxxx&x=1`},
		{`GET /cb?code=C0DE: 401`, `GET /cb?code=xxxxx: 401`},
		{`/cb#access_token=FRAG&x=1`, `/cb#access_token=xxxxx&x=1`},
		{`/x?sig=S1&key=K1&token=T1&access_token=A1`, `/x?sig=xxxxx&key=xxxxx&token=xxxxx&access_token=xxxxx`},
		// What does not parse as a URL is masked whole.
		{`https://h^st/SECRET`, `https://xxxxx`},
		{`https://h:port/SECRET`, `https://xxxxx`},
		{`https://`, `https://`},
		{`://SECRET`, `://SECRET`}, // no scheme, no host: not a URL
		{`at 10:30 and 12:00`, `at 10:30 and 12:00`},
		{`time 2026-12-01T10:30:00Z ok`, `time 2026-12-01T10:30:00Z ok`},
	} {
		if got := Redact(c.in); got != c.want {
			t.Errorf("Redact(%q)\n got %q\nwant %q", c.in, got, c.want)
		}
	}
}

func TestURL(t *testing.T) {
	for _, c := range []struct {
		in               string
		masked, withPath string
	}{
		{`https://chat.example/hooks/T0KEN/XYZ`, `https://chat.example/xxxxx`, `https://chat.example/hooks/T0KEN/XYZ`},
		{`https://u:PW@h:8443/p?code=C&token=T&access_token=A&sig=S&key=K&zq=Z&x=1#access_token=F`,
			`https://u:xxxxx@h:8443/xxxxx`, `https://u:xxxxx@h:8443/p?code=xxxxx&token=xxxxx&access_token=xxxxx&sig=xxxxx&key=xxxxx&zq=Z&x=1#xxxxx`},
		{`https://h/p?T0KEN`, `https://h/xxxxx`, `https://h/p?xxxxx`},
		{`https://TOKEN@h/`, `https://xxxxx@h/`, `https://xxxxx@h/`},
		{`https://u:@h`, `https://u:@h`, `https://u:@h`},
		{`http://[2001:db8::1]:9200/es?X-Amz-Credential=C`, `http://[2001:db8::1]:9200/xxxxx`, `http://[2001:db8::1]:9200/es?X-Amz-Credential=xxxxx`},
		{`kafka1:9092`, `kafka1:9092`, `kafka1:9092`},
		{`u:PW@kafka1:9092`, `u:xxxxx@kafka1:9092`, `u:xxxxx@kafka1:9092`},
		{`::1`, `::1`, `::1`},
		{`[::1]:9092/SECRET`, `[::1]:9092/xxxxx`, `[::1]:9092/SECRET`},
		{`redis://:PW@127.0.0.1:6379/0`, `redis://xxxxx@127.0.0.1:6379/xxxxx`, `redis://xxxxx@127.0.0.1:6379/0`},
		{`file:///var/SECRET`, `file:///xxxxx`, `file:///var/SECRET`},
		{`https://h^st/SECRET`, `https://xxxxx`, `https://xxxxx`},
		{`https://exa mple/SECRET`, `https://xxxxx`, `https://xxxxx`},
		{`http://h:99999999/SECRET`, `http://xxxxx`, `http://xxxxx`},
		{`[::1/SECRET`, `xxxxx`, `xxxxx`},
		{`SECRET:SECRET`, `xxxxx`, `xxxxx`},
		{``, ``, ``},
	} {
		if got := URL(c.in, false); got != c.masked {
			t.Errorf("URL(%q, false)\n got %q\nwant %q", c.in, got, c.masked)
		}
		if got := URL(c.in, true); got != c.withPath {
			t.Errorf("URL(%q, true)\n got %q\nwant %q", c.in, got, c.withPath)
		}
	}
}

// ShowPaths lets the path of the URLs it names show in free text (an error that quotes one),
// and of the URLs under them on the same host and port; the secret parameters, the fragment
// and the userinfo stay masked, and every other URL is masked as before.
func TestShowPaths(t *testing.T) {
	ShowPaths("https://es.example:9200/prefix", "https://h/", "not a url ^")
	defer ShowPaths()
	for _, c := range []struct{ in, want string }{
		{`POST https://es.example:9200/prefix/_bulk?refresh=true&token=T: 503`, `POST https://es.example:9200/prefix/_bulk?refresh=true&token=xxxxx: 503`},
		{`POST https://u:PW@es.example:9200/prefix#F: 503`, `POST https://u:xxxxx@es.example:9200/prefix#xxxxx: 503`},
		{`https://es.example:9200/prefixed/SECRET`, `https://es.example:9200/xxxxx`},
		{`https://es.example/prefix/SECRET`, `https://es.example/xxxxx`},
		{`http://es.example:9200/prefix/SECRET`, `http://es.example:9200/xxxxx`},
		{`https://H/any/path`, `https://H/any/path`},
	} {
		if got := Redact(c.in); got != c.want {
			t.Errorf("Redact(%q)\n got %q\nwant %q", c.in, got, c.want)
		}
	}
	ShowPaths()
	if got := Redact(`https://h/any/path`); got != `https://h/xxxxx` {
		t.Errorf("after ShowPaths(): %q", got)
	}
}

// No text makes Redact or URL panic, and a secret in what they cannot parse never shows.
func FuzzRedact(f *testing.F) {
	for _, s := range []string{`https://u:p@h:1/x?code=1#f`, `u:p@[::1]:1/x`, `https://[::1`, `a://@@@`, `x:1/`, "https://h/\u00e9"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		Redact(s)
		URL(s, false)
		URL(s, true)
		const secret = "SECRETVALUE"
		for _, u := range []string{"https://" + s + "/" + secret, "https://" + s + "/x?q=" + secret, "https://" + s + "#" + secret} {
			if strings.Contains(s, secret) || strings.ContainsAny(s, "/?#") {
				continue
			}
			if got := URL(u, false); strings.Contains(got, secret) {
				t.Errorf("URL(%q) = %q", u, got)
			}
		}
	})
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
	if want := `Post "http://127.0.0.1:1/xxxxx": dial tcp "quoted" \ back\slash` + "\n" + `https://u:xxxxx@h/xxxxx`; m["err"] != want || m["cause"] != want {
		t.Errorf("err %q, cause %q, want %q", m["err"], m["cause"], want)
	}
}
