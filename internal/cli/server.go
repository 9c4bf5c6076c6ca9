package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"msgx/client"
	"msgx/internal/config"
	"msgx/internal/suggest"
)

// ServerURL is where a client command finds the server: flagValue (--server), else
// MSGX_SERVER, else the http.addr (http.admin-addr for the API, when set and not inbox) of
// the config file (configFile, else MSGX_CONFIG), else the local address of the default
// http.addr (MSGX_HTTP_ADDR). A value may be a URL (http://host:8080, https://msgx.example)
// or, like the go tool's flags that take an address, just host:port or :port (http is then
// assumed; :port is this host). The error says why the config file could not be read.
func (e *Env) ServerURL(flagValue, configFile string, inbox bool) (string, error) {
	if flagValue != "" {
		return client.NormalizeServer(flagValue), nil
	}
	if s := e.Getenv("MSGX_SERVER"); s != "" {
		return client.NormalizeServer(s), nil
	}
	if configFile == "" {
		configFile = e.Getenv("MSGX_CONFIG")
	}
	if configFile == "" {
		addr := e.Getenv(config.EnvName("http.addr"))
		if addr == "" {
			addr = config.Default().HTTP.Addr
		}
		return client.AddrURL(addr), nil
	}
	load := e.LoadConfig
	if load == nil {
		load = config.Load
	}
	cfg, err := load(configFile, e.Environ)
	if err != nil {
		return "", fmt.Errorf("the server's address: %w", err)
	}
	addr := cfg.HTTP.Addr
	if !inbox && cfg.HTTP.AdminAddr != "" {
		addr = cfg.HTTP.AdminAddr // the API and the console listen there
	}
	return client.AddrURL(addr), nil
}

// A ConfigError is a config file a client command could not read the server's address from;
// the caller answers it with its exit code for a bad configuration, as serve's.
type ConfigError struct{ Err error }

func (e ConfigError) Error() string { return e.Err.Error() }
func (e ConfigError) Unwrap() error { return e.Err }

// A Remote is what a command that talks to the server was told of it: --server, --config
// (default MSGX_CONFIG), --token (default MSGX_TOKEN) and, for a command that prints times,
// --utc; and, once asked for (API), the client of the server's API.
type Remote struct {
	env                   *Env
	server, config, token string
	UTC                   bool
	api                   *client.Client // made by the first API call
	apiErr                error          // and that call's error, which every later one returns
}

// The usages of --server: the operators' commands' and the others'.
const (
	APIServerUsage = "msgx server URL (default $MSGX_SERVER, else the local http.addr)"
	ServerUsage    = "the msgx server: a `URL` or host:port"
)

// RemoteFlags is the FlagSet of command name (Flags) with --server (its usage ServerUsage or
// APIServerUsage), --config and, with token, --token: what every command that talks to the
// server declares first. The token flag's default is empty so that usage never prints the
// secret.
func (e *Env) RemoteFlags(name, usage string, token bool) (*flag.FlagSet, *Remote) {
	fs := e.Flags(name)
	r := &Remote{env: e, token: e.Getenv("MSGX_TOKEN")}
	fs.StringVar(&r.server, "server", "", usage)
	if token {
		fs.Func("token", "API token, sent as Authorization: Bearer (default $MSGX_TOKEN)", func(s string) error {
			r.token = s
			return nil
		})
	}
	fs.Func("config", "msgx config `FILE` whose http.addr is the server (default $MSGX_CONFIG; --server and $MSGX_SERVER win)", func(s string) error {
		r.config = s
		return nil
	})
	return fs, r
}

// UTCFlag adds --utc to a command that prints times.
func (r *Remote) UTCFlag(fs *flag.FlagSet) {
	fs.BoolVar(&r.UTC, "utc", false, "print times in UTC (for scripts) instead of airport time (sis.timezone)")
}

// Server reports whether --server was given.
func (r *Remote) Server() bool { return r.server != "" }

// API is the client of the server's API (ServerURL) with the token, made once: Show, Zone
// and CheckTarget use the same. Inbox is the client of its inbox (http.addr, never
// http.admin-addr). The error of a config file that cannot be read is a ConfigError.
func (r *Remote) API() (*client.Client, error) {
	if r.api == nil && r.apiErr == nil {
		r.api, r.apiErr = r.client(false)
	}
	return r.api, r.apiErr
}

// IDAndAPI is the one id the command cmd about one thing takes as its argument arg (Env.ID,
// what: "a message id", "a FLID"; its UsageError comes first) and then the API client.
func (r *Remote) IDAndAPI(cmd, arg, what string) (int64, *client.Client, error) {
	id, err := r.env.ID(cmd, arg, what)
	if err != nil {
		return 0, nil, err
	}
	c, err := r.API()
	return id, c, err
}

// Inbox is the client of the server's inbox (API).
func (r *Remote) Inbox() (*client.Client, error) { return r.client(true) }

func (r *Remote) client(inbox bool) (*client.Client, error) {
	u, err := r.env.ServerURL(r.server, r.config, inbox)
	if err != nil {
		return nil, ConfigError{err}
	}
	return &client.Client{URL: u, Token: r.token, HTTP: &http.Client{Timeout: 60 * time.Second}}, nil
}

// Zone is the zone the command prints times in: UTC with --utc, else the airport's, which
// the server names (GET /api/v1/me). When the server cannot tell, the times are UTC and
// stderr says why.
func (r *Remote) Zone(ctx context.Context) Zone {
	if r.UTC {
		return UTC
	}
	c, err := r.API()
	var loc *time.Location
	if err == nil {
		loc, err = c.AirportZone(ctx)
	}
	if err != nil {
		fmt.Fprintf(r.env.Stderr, "%s: times in UTC: the airport's zone is not known (%v)\n", r.env.Program.Name, err)
		return UTC
	}
	return Zone{Loc: loc}
}

// Show GETs path with the API client and, with asJSON, prints the answer as it came (printed
// is then true); otherwise it decodes the answer into out for the command to print its way.
func (r *Remote) Show(ctx context.Context, path string, asJSON bool, out any) (printed bool, err error) {
	c, err := r.API()
	if err != nil {
		return false, err
	}
	var raw json.RawMessage
	if err := c.Get(ctx, path, &raw); err != nil {
		return false, err
	}
	if asJSON {
		r.env.Stdout.Write(append(raw, '\n'))
		return true, nil
	}
	return false, json.Unmarshal(raw, out)
}

// CheckTarget answers a --target the server does not know with the target it probably
// meant (a UsageError of command cmd), learning the targets from the server's status; when
// the status cannot be read, or lists no targets yet, the server itself judges the name.
// Without a target it only makes the API client: its error is the only one.
func (r *Remote) CheckTarget(ctx context.Context, cmd, name string) error {
	c, err := r.API()
	if err != nil || name == "" {
		return err
	}
	names := c.TargetNames(ctx)
	if len(names) == 0 || slices.Contains(names, name) {
		return nil
	}
	return UsageError(fmt.Sprintf("%s %s: unknown target %q%s; the server's targets are %s",
		r.env.Program.Name, cmd, name, suggest.DidYouMean(name, names), strings.Join(names, ", ")))
}
