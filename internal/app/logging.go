package app

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/redis/go-redis/v9"

	"msgx/internal/config"
	"msgx/internal/logship"
	"msgx/internal/secret"
)

// traceMemory is how many messages' trace ids the log correlation remembers.
const traceMemory = 100000

// Logger is serve's logger: JSON (or text, log.format) lines on stderr at log.level, every
// string redacted (secret.ReplaceAttr), and with log.logstash.addr set a copy of every
// line to logstash through a bounded queue (logship); every line with a msg_id of a traced
// message gets its trace_id. stop ends the shipping (writing what is queued for a moment).
func Logger(cfg config.Config) (log *slog.Logger, traces *logship.Traces, stop func()) {
	traces = logship.NewTraces(traceMemory)
	// The URLs of targets marked show-path keep their path wherever msgx shows them.
	var shown []string
	for _, t := range cfg.Targets {
		if t.ShowPath {
			shown = append(shown, t.URLs()...)
		}
	}
	secret.ShowPaths(shown...)
	h := newLogger(cfg).Handler()
	stop = func() {}
	if addr := cfg.Log.Logstash.Addr; addr != "" {
		var level slog.Level
		level.UnmarshalText([]byte(cfg.Log.Level))
		ship := logship.New(addr, cfg.Log.Logstash.QueueSize)
		down := false
		ship.OnState = func(connected bool, err error) {
			// Straight to stderr, once per change: a line about logstash must not go through
			// logstash.
			switch {
			case err != nil && !down:
				fmt.Fprintln(os.Stderr, secret.Redact(fmt.Sprintf("msgx: logstash %s: %v (lines are queued, then dropped and counted in msgx_log_dropped_total; connecting again)", addr, err)))
			case connected && down:
				fmt.Fprintln(os.Stderr, secret.Redact(fmt.Sprintf("msgx: logstash %s: connected again", addr)))
			}
			down = !connected
		}
		shipped := slog.NewJSONHandler(ship, &slog.HandlerOptions{Level: level, ReplaceAttr: secret.ReplaceAttr}).WithAttrs([]slog.Attr{slog.String("service", cfg.ServiceName)})
		h = logship.Tee(h, shipped)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { ship.Run(ctx); close(done) }()
		stop = func() { cancel(); <-done }
	}
	log = slog.New(logship.Correlate(h, traces))
	redis.SetLogger(redisLog{log})
	return log, traces, stop
}

// redisLog writes go-redis's own lines (a pool that cannot dial, a Sentinel failover) as WARN
// lines of the log, so that they are redacted as every line is: they quote the address,
// credentials and all.
type redisLog struct{ log *slog.Logger }

func (r redisLog) Printf(_ context.Context, format string, v ...any) {
	r.log.Warn(strings.TrimSpace(fmt.Sprintf(format, v...)), "component", "redis")
}

func newLogger(cfg config.Config) *slog.Logger {
	var level slog.Level
	level.UnmarshalText([]byte(cfg.Log.Level))
	// Every string a log line carries is redacted as a value, before the line is encoded: a
	// webhook URL's password, a DSN's.
	opts := &slog.HandlerOptions{Level: level, ReplaceAttr: secret.ReplaceAttr}
	var h slog.Handler = slog.NewJSONHandler(os.Stderr, opts)
	if cfg.Log.Format == "text" {
		h = slog.NewTextHandler(os.Stderr, opts)
	}
	return slog.New(h).With("service", cfg.ServiceName)
}
