package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"msgx/internal/app"
	"msgx/internal/config"
)

func loadConfig(fs *flag.FlagSet, args []string) (config.Config, []string, error) {
	path := fs.String("config", os.Getenv("MSGX_CONFIG"), "YAML config `FILE` (default MSGX_CONFIG)")
	if err := fs.Parse(args); err != nil {
		return config.Config{}, nil, app.ExitError{Code: exitUsage}
	}
	cfg, err := app.LoadConfig(*path, os.Environ())
	if err != nil {
		return cfg, nil, app.ExitError{Code: exitConfig, Msg: "msgx " + fs.Name() + ": " + err.Error()}
	}
	for _, w := range config.UnknownEnv(os.Environ()) {
		fmt.Fprintf(os.Stderr, "msgx %s: warning: %s\n", fs.Name(), w)
	}
	return cfg, fs.Args(), nil
}

// serve runs the server: app.Serve.
func serve(args []string) error {
	cfg, _, err := loadConfig(prog.Flags("serve"), args)
	if err != nil {
		return err
	}
	return app.Serve(cfg, version)
}

func migrate(args []string) error {
	cfg, _, err := loadConfig(prog.Flags("migrate"), args)
	if err != nil {
		return err
	}
	v, err := app.Migrate(context.Background(), cfg)
	if err != nil {
		return err
	}
	fmt.Printf("schema at version %d (%s)\n", v, cfg.Database.Driver)
	return nil
}

// versionCmd is `msgx version`.
func versionCmd(args []string) error {
	fs := prog.Flags("version")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 {
		return app.ExitError{Code: exitUsage}
	}
	fmt.Println(app.ReadBuild(version))
	return nil
}
