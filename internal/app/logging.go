package app

import (
	"context"
	"fmt"
	"log/slog"
	"os"

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
				fmt.Fprintf(os.Stderr, "msgx: logstash %s: %v (lines are queued, then dropped and counted in msgx_log_dropped_total; connecting again)\n", addr, err)
			case connected && down:
				fmt.Fprintf(os.Stderr, "msgx: logstash %s: connected again\n", addr)
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
	return slog.New(logship.Correlate(h, traces)), traces, stop
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
