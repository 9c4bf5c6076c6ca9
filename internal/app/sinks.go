package app

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"msgx/internal/config"
	"msgx/internal/dispatch"
	"msgx/internal/handler"
	"msgx/internal/pipeline"
	"msgx/internal/store"
	"msgx/internal/target"
)

// openSinks opens one sink per delivery target. With no targets configured (the embedded
// default) every target the handlers emit to is a file sink under <data-dir>/outbox. A target
// the handlers emit to, or that has undelivered events, but that config does not define is a
// start-up error naming it (exit code 4).
func openSinks(ctx context.Context, db *store.DB, cfg config.Config, clock pipeline.Clock, log *slog.Logger) (map[string]target.Sink, error) {
	targets := cfg.Targets
	if len(targets) == 0 {
		targets = map[string]target.Config{}
		for _, name := range handler.Targets {
			targets[name] = target.Config{Sink: "file"}
		}
	}
	need := append([]string{}, handler.Targets...)
	for name, tc := range targets {
		if tc.CopyOf != "" && !slices.Contains(handler.Targets, tc.CopyOf) {
			return nil, ExitError{Code: ExitConfig, Msg: fmt.Sprintf("msgx serve: config: targets.%s.copy-of: %q is not a target events are emitted to (%s)", name, tc.CopyOf, strings.Join(handler.Targets, ", "))}
		}
	}
	stats, err := dispatch.Stats(ctx, db.Outbox, clock.Now())
	if err != nil {
		return nil, err
	}
	for _, st := range stats {
		if st.Pending > 0 {
			need = append(need, st.Target)
		}
	}
	for _, name := range need {
		if _, ok := targets[name]; !ok {
			return nil, ExitError{Code: ExitConfig, Msg: fmt.Sprintf("msgx serve: config: targets.%s is not defined, but events are emitted to it; define it (for example {sink: file})", name)}
		}
	}
	sinks := map[string]target.Sink{}
	for name, tc := range targets {
		tc.Logger = log.With("target", name)
		s, err := target.Open(ctx, name, tc, cfg.DataDir)
		if err != nil {
			for _, o := range sinks {
				o.Close()
			}
			return nil, fmt.Errorf("target %s: %w", name, err)
		}
		sinks[name] = s
		log.Info("delivery target ready", "target", name, "sink", tc.Sink)
	}
	return sinks, nil
}

// families maps each delivery target to the family of its payload (event.Render): each
// target the handlers emit to is its own, a target configured copy-of one of them is that
// one's. The dispatcher renders a stored canonical event for it (dispatch.Options.Families)
// and the API shows one so (api.Deps.Families): one map for both.
func families(targets map[string]target.Config) map[string]string {
	out := make(map[string]string, len(targets)+len(handler.Targets))
	for name, tc := range targets {
		if tc.CopyOf != "" {
			out[name] = tc.CopyOf
		}
	}
	for _, name := range handler.Targets {
		out[name] = name
	}
	return out
}
