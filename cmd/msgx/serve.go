package main

import (
	"context"
	"flag"
	"fmt"

	"msgx/internal/app"
	"msgx/internal/cli"
	"msgx/internal/config"
)

// loadConfig adds --config to fs, parses args and loads the configuration: the file and the
// MSGX_* variables, warning of the variables it does not know.
func loadConfig(e *cli.Env, fs *flag.FlagSet, args []string) (config.Config, []string, error) {
	path := fs.String("config", e.Getenv("MSGX_CONFIG"), "YAML config `FILE` (default MSGX_CONFIG)")
	if err := fs.Parse(args); err != nil {
		return config.Config{}, nil, cli.ErrUsage
	}
	cfg, err := app.LoadConfig(*path, e.Environ)
	if err != nil {
		return cfg, nil, app.ExitError{Code: exitConfig, Msg: "msgx " + fs.Name() + ": " + err.Error()}
	}
	for _, w := range config.UnknownEnv(e.Environ) {
		fmt.Fprintf(e.Stderr, "msgx %s: warning: %s\n", fs.Name(), w)
	}
	return cfg, fs.Args(), nil
}

// serve runs the server: app.Serve.
func serve(ctx context.Context, e *cli.Env, args []string) error {
	cfg, _, err := loadConfig(e, e.Flags("serve"), args)
	if err != nil {
		return err
	}
	return app.Serve(cfg, version)
}

func migrate(ctx context.Context, e *cli.Env, args []string) error {
	cfg, _, err := loadConfig(e, e.Flags("migrate"), args)
	if err != nil {
		return err
	}
	v, err := app.Migrate(ctx, cfg)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.Stdout, "schema at version %d (%s)\n", v, cfg.Database.Driver)
	return nil
}

// versionCmd is `msgx version`.
func versionCmd(ctx context.Context, e *cli.Env, args []string) error {
	fs := e.Flags("version")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 {
		return cli.ErrUsage
	}
	fmt.Fprintln(e.Stdout, app.ReadBuild(version))
	return nil
}
