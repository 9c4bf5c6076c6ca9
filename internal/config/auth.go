package config

import (
	"fmt"
	"net/netip"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"

	"msgx/internal/secret"
	"msgx/internal/targetconf"
)

// Strings is a list of strings kept as written: a YAML list or a comma-separated string.
type Strings []string

// UnmarshalYAML reads a YAML list or a comma-separated string.
func (l *Strings) UnmarshalYAML(n *yaml.Node) error {
	items, err := listItems(n, strings.TrimSpace)
	*l = items
	return err
}

func splitStrings(s string) Strings { return splitWords(s, strings.TrimSpace) }

// Token is one API token of auth.tokens: a name (logged and audited with every action), a
// role and the hash of the secret (never the secret itself).
type Token struct {
	Name string `yaml:"name"`
	Role string `yaml:"role"` // viewer | operator | admin
	Hash string `yaml:"hash"` // sha256:<64 hex digits> (msgx token hash SECRET)
}

// Tokens is auth.tokens. From the environment (MSGX_AUTH_TOKENS) it is a comma-separated
// list of name:role:hash.
type Tokens []Token

// Roles are the roles a token may have, weakest first.
var Roles = []string{"viewer", "operator", "admin"}

var tokenHash = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

func parseTokens(s string) (Tokens, error) {
	var out Tokens
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		f := strings.SplitN(part, ":", 3)
		if len(f) != 3 {
			return nil, fmt.Errorf("%q is not name:role:hash", part)
		}
		out = append(out, Token{Name: f[0], Role: f[1], Hash: f[2]})
	}
	return out, nil
}

// InboxRule is http.inbox-allow read: networks and token names.
type InboxRule struct {
	Networks []netip.Prefix
	Tokens   []string
}

// InboxRule returns http.inbox-allow (validated by Validate); an empty rule means open.
func (c *Config) InboxRule() InboxRule {
	var r InboxRule
	for _, e := range c.HTTP.InboxAllow {
		if name, ok := strings.CutPrefix(e, "token:"); ok {
			r.Tokens = append(r.Tokens, name)
			continue
		}
		if p, err := parsePrefix(e); err == nil {
			r.Networks = append(r.Networks, p)
		}
	}
	return r
}

func parsePrefix(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		return p.Masked(), err
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	return netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()), nil
}

func (c *Config) validateAuth() error {
	names := map[string]bool{}
	for i, t := range c.Auth.Tokens {
		key := fmt.Sprintf("auth.tokens[%d]", i)
		if t.Name == "" || strings.ContainsAny(t.Name, ":, \t") {
			return bad(key+".name", "%q must be a non-empty name without spaces, commas or colons", t.Name)
		}
		if names[t.Name] {
			return bad(key+".name", "%q is used twice", t.Name)
		}
		names[t.Name] = true
		ok := false
		for _, r := range Roles {
			ok = ok || t.Role == r
		}
		if !ok {
			return bad(key+".role", "%q is not viewer, operator or admin", t.Role)
		}
		if !tokenHash.MatchString(t.Hash) {
			return bad(key+".hash", "must be sha256:<64 lower-case hex digits>, the output of msgx token hash SECRET (never the secret itself)")
		}
	}
	for _, e := range c.HTTP.InboxAllow {
		if name, ok := strings.CutPrefix(e, "token:"); ok {
			if !names[name] {
				return bad("http.inbox-allow", "token %q is not a name in auth.tokens", name)
			}
			continue
		}
		if _, err := parsePrefix(e); err != nil {
			return bad("http.inbox-allow", "%q is not a network (10.0.0.0/8), an address or token:NAME", e)
		}
	}
	if c.HTTP.AdminAddr != "" && c.HTTP.AdminAddr == c.HTTP.Addr {
		return bad("http.admin-addr", "must differ from http.addr (%s)", c.HTTP.Addr)
	}
	return nil
}

// Redacted returns c as an operator may see it (GET /api/v1/config): every password, secret,
// API key and DSN password masked, token hashes shortened, as the YAML keys and values.
func (c Config) Redacted() (map[string]any, error) {
	c.Database.DSN = secret.Redact(c.Database.DSN)
	mask := func(s *string) {
		if *s != "" {
			*s = secret.Mask
		}
	}
	mask(&c.Redis.Password)
	mask(&c.Redis.Sentinel.Password)
	mask(&c.History.Elasticsearch.Password)
	// Every URL and address shows its scheme, host and port only (internal/secret); a
	// target's with its path when it says show-path.
	urls := func(list string) string {
		var out []string
		for _, u := range strings.Split(list, ",") {
			out = append(out, secret.URL(strings.TrimSpace(u), false))
		}
		return strings.Join(out, ",")
	}
	c.History.Elasticsearch.URL = urls(c.History.Elasticsearch.URL)
	c.Eureka.ServiceURL = urls(c.Eureka.ServiceURL)
	c.Log.Logstash.Addr = urls(c.Log.Logstash.Addr)
	c.Redis.Addr = urls(c.Redis.Addr)
	c.Redis.Sentinel.Addrs = append(Strings(nil), c.Redis.Sentinel.Addrs...)
	for i, a := range c.Redis.Sentinel.Addrs {
		c.Redis.Sentinel.Addrs[i] = urls(a)
	}
	targets := make(map[string]targetconf.Config, len(c.Targets))
	for name, t := range c.Targets {
		mask(&t.Password)
		mask(&t.Secret)
		mask(&t.APIKey)
		mask(&t.SASL.Password)
		targets[name] = t.Shown()
	}
	c.Targets = targets
	tokens := make(Tokens, len(c.Auth.Tokens))
	for i, t := range c.Auth.Tokens {
		t.Hash = t.Hash[:min(len(t.Hash), 15)] + "…"
		tokens[i] = t
	}
	c.Auth.Tokens = tokens
	b, err := yaml.Marshal(c)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	if err := yaml.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	return out, nil
}
