package cli

import (
	"fmt"

	"msgx/client"
	"msgx/internal/config"
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
	cfg, err := config.Load(configFile, e.Environ)
	if err != nil {
		return "", fmt.Errorf("the server's address: %w", err)
	}
	addr := cfg.HTTP.Addr
	if !inbox && cfg.HTTP.AdminAddr != "" {
		addr = cfg.HTTP.AdminAddr // the API and the console listen there
	}
	return client.AddrURL(addr), nil
}
