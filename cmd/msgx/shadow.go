package main

import (
	"context"
	"strings"

	"msgx/internal/app"
	"msgx/internal/cli"
	"msgx/internal/shadow"
)

// shadowCmd runs `msgx shadow SUBCOMMAND`.
func shadowCmd(ctx context.Context, e *cli.Env, args []string) error {
	if len(args) == 0 || args[0] != "diff" {
		if e.HelpWanted() {
			return nil // run prints the help
		}
		return cli.UsageError("usage: msgx shadow diff …; run 'msgx help shadow'")
	}
	fs := e.Flags("shadow")
	legacyFile := fs.String("legacy", "", "the legacy's notifications: a capture of JSON lines")
	legacyChannel := fs.String("legacy-channel", "", "the legacy's notifications: a Redis channel (FLOP)")
	msgxFile := fs.String("msgx", "", "msgx's notifications: a capture of JSON lines")
	msgxChannel := fs.String("msgx-channel", "", "msgx's notifications: a Redis channel (its format-legacy target's)")
	period := fs.Duration("for", 0, "how long to listen to the channels")
	addr := fs.String("redis", "127.0.0.1:6379", "Redis address of the channels")
	password := fs.String("redis-password", "", "Redis password")
	rowIDs := fs.String("legacy-ids", "", `file of "rowid FLID" lines`)
	saveLegacy := fs.String("save-legacy", "", "write what the legacy channel carried to this file")
	saveMsgx := fs.String("save-msgx", "", "write what the msgx channel carried to this file")
	cfg, rest, err := loadConfig(e, fs, args[1:])
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return cli.UsageError("msgx shadow diff: unexpected arguments " + strings.Join(rest, " "))
	}
	src := shadow.Sources{LegacyFile: *legacyFile, LegacyChannel: *legacyChannel,
		MsgxFile: *msgxFile, MsgxChannel: *msgxChannel, For: *period, Redis: *addr, RedisPassword: *password,
		SaveLegacy: *saveLegacy, SaveMsgx: *saveMsgx, RowIDs: *rowIDs, Loc: cfg.LegacyLocation(), Status: e.Stderr}
	if err := src.Check(); err != nil {
		return cli.UsageError("msgx shadow diff: " + err.Error())
	}
	rep, err := shadow.Run(src)
	if err != nil {
		return err
	}
	rep.Write(e.Stdout)
	switch rep.Verdict() {
	case "DIFFERENT":
		return app.ExitError{Code: exitFailure}
	case "UNDECIDED":
		return app.ExitError{Code: exitUndecided}
	}
	return nil
}
