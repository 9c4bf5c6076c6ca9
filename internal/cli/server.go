package cli

import (
	"os"

	"msgx/client"
	"msgx/internal/config"
)

// ServerURL returns flagValue, else MSGX_SERVER, else the local address of http.addr. A value
// may be a URL (http://host:8080, https://msgx.example) or, like the go tool's flags that take
// an address, just host:port or :port (http is then assumed; :port is this host).
func ServerURL(flagValue string) string {
	if flagValue != "" {
		return client.NormalizeServer(flagValue)
	}
	if s := os.Getenv("MSGX_SERVER"); s != "" {
		return client.NormalizeServer(s)
	}
	addr := os.Getenv(config.EnvName("http.addr"))
	if addr == "" {
		addr = config.Default().HTTP.Addr
	}
	return client.AddrURL(addr)
}
