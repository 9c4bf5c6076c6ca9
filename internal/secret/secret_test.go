package secret

import "testing"

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
