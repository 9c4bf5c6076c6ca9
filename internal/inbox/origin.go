package inbox

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"msgx/internal/api/reply"
)

// normalOrigin returns an origin as browsers send it (scheme://host[:port], lower case, no
// default port), ok=false when o is not one ("null", a path, another scheme).
func normalOrigin(o string) (string, bool) {
	u, err := url.Parse(strings.TrimSpace(o))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return "", false
	}
	scheme, host := strings.ToLower(u.Scheme), strings.ToLower(u.Host)
	if h, port, err := splitPort(host); err == nil && ((scheme == "http" && port == "80") || (scheme == "https" && port == "443")) {
		host = h
	}
	return scheme + "://" + host, true
}

func splitPort(host string) (string, string, error) {
	i := strings.LastIndexByte(host, ':')
	if i < 0 || strings.HasSuffix(host, "]") {
		return host, "", fmt.Errorf("no port")
	}
	return host[:i], host[i+1:], nil
}

// browserRefusal says why the inbox refuses a post a web page made (ok=false: it does not):
// one carrying an Origin that http.inbox-origins does not list, or, without an Origin, a
// Sec-Fetch-Site of cross-site or same-site. The gateway sends neither header; a page msgx
// serves never posts to the inbox, so the server's own origin is refused too unless listed (a
// host name rebound to msgx's address would look the same).
func browserRefusal(r *http.Request, origins []string) (why string, refused bool) {
	origin := r.Header.Get("Origin")
	site := strings.ToLower(strings.TrimSpace(r.Header.Get("Sec-Fetch-Site")))
	if origin == "" {
		if site != "cross-site" && site != "same-site" {
			return "", false
		}
		return fmt.Sprintf("a post a web page made (Sec-Fetch-Site: %s) is refused: the inbox takes messages from the gateway, "+
			"which sends no Origin and no Sec-Fetch-Site (http.inbox-origins lists the origins of pages that may post)", site), true
	}
	if n, ok := normalOrigin(origin); ok {
		for _, o := range origins {
			if allowed, ok := normalOrigin(o); ok && allowed == n {
				return "", false
			}
		}
	}
	return fmt.Sprintf("a post from the web page of origin %q is refused: http.inbox-origins does not list it "+
		"(the inbox takes messages from the gateway, which sends no Origin)", reply.Clip(origin, reply.MaxEcho)), true
}
