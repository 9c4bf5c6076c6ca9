package app

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"time"

	"msgx/internal/config"
	"msgx/internal/eureka"
	"msgx/internal/lease"
)

// newRegistrar returns the Eureka registrar of this instance (nil when eureka.enabled is off):
// name config.RegistryName, host, address and port from the eureka.* overrides or else from
// http.addr (set eureka.port when http.addr's port is 0). health is asked between heartbeats.
func newRegistrar(cfg config.Config, health func(context.Context) (bool, string), log *slog.Logger) *eureka.Registrar {
	if !cfg.Eureka.Enabled {
		return nil
	}
	host, ip, port := instanceAddr(cfg.HTTP.Addr)
	if cfg.Eureka.HostName != "" {
		host = cfg.Eureka.HostName
	}
	if cfg.Eureka.IPAddr != "" {
		ip = cfg.Eureka.IPAddr
	}
	if cfg.Eureka.Port != 0 {
		port = cfg.Eureka.Port
	}
	return eureka.New(eureka.Config{
		ServiceURLs: cfg.EurekaURLs(),
		Name:        cfg.RegistryName(),
		InstanceID:  cfg.Eureka.InstanceID,
		HostName:    host,
		IPAddr:      ip,
		Port:        port,
		Heartbeat:   cfg.Eureka.Heartbeat,
		Health:      health,
		Logger:      log,
	})
}

// instanceAddr derives the registered host name, IP address and port from http.addr: its IP when it listens on one, else this machine's name and first non-loopback
// IPv4 address.
func instanceAddr(listen string) (host, ip string, port int) {
	h, p, _ := net.SplitHostPort(listen)
	port, _ = strconv.Atoi(p)
	if a := net.ParseIP(h); a != nil && !a.IsUnspecified() {
		return h, h, port
	}
	host, _ = os.Hostname()
	ip = "127.0.0.1"
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
				ip = n.IP.String()
				break
			}
		}
	}
	return host, ip, port
}

// pumpHealth is what Eureka's UP means for this instance: the database answers and, where
// this instance runs the pump, it holds the lease and can record outcomes. A standby, a pump
// paused by an outage or one that cannot write its outcomes is OUT_OF_SERVICE.
func pumpHealth(ping func(context.Context) error, keeper *lease.Keeper, trouble func() bool) func(context.Context) (bool, string) {
	return func(ctx context.Context) (bool, string) {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		if err := ping(ctx); err != nil {
			return false, fmt.Sprintf("database not reachable: %v", err)
		}
		if keeper == nil {
			return true, ""
		}
		if running, note := keeper.State(); !running {
			return false, note
		}
		if trouble() {
			return false, "the pump cannot record the outcome of its head message"
		}
		return true, ""
	}
}
