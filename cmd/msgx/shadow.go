package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"msgx/internal/legacyflop"
	"msgx/internal/shadow"
)

// shadowCmd runs `msgx shadow SUBCOMMAND`.
func shadowCmd(args []string) error {
	if len(args) == 0 || args[0] != "diff" {
		if helpWanted {
			return nil // run prints the help
		}
		return exitError{code: exitUsage, msg: "usage: msgx shadow diff …; run 'msgx help shadow'"}
	}
	fs := newFlags("shadow")
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
	cfg, rest, err := loadConfig(fs, args[1:])
	if err != nil {
		return err
	}
	usage := func(msg string) error {
		return exitError{code: exitUsage, msg: "msgx shadow diff: " + msg}
	}
	switch {
	case len(rest) > 0:
		return usage("unexpected arguments " + strings.Join(rest, " "))
	case (*legacyFile == "") == (*legacyChannel == ""):
		return usage("give exactly one of --legacy FILE and --legacy-channel CH (the legacy's is " + legacyflop.DefaultChannel + ")")
	case (*msgxFile == "") == (*msgxChannel == ""):
		return usage("give exactly one of --msgx FILE and --msgx-channel CH")
	case (*legacyChannel != "" || *msgxChannel != "") && *period <= 0:
		return usage("--for DURATION is needed to listen to a channel")
	case *legacyChannel != "" && *legacyChannel == *msgxChannel:
		return usage("--legacy-channel and --msgx-channel are the same channel")
	}
	loc := cfg.LegacyLocation()
	opt := shadow.Options{}
	if *rowIDs != "" {
		if opt.RowIDs, err = shadow.ReadRowIDs(*rowIDs); err != nil {
			return err
		}
	}

	var legacy, msgx []shadow.Note
	if *legacyChannel != "" || *msgxChannel != "" {
		rdb := redis.NewClient(&redis.Options{Addr: *addr, Password: *password, DialTimeout: 5 * time.Second})
		defer rdb.Close()
		ctx, cancel := context.WithTimeout(context.Background(), *period)
		defer cancel()
		var channels []string
		for _, ch := range []string{*legacyChannel, *msgxChannel} {
			if ch != "" {
				channels = append(channels, ch)
			}
		}
		got, err := shadow.Listen(ctx, rdb, []string{*legacyChannel, *msgxChannel}, loc, func() {
			fmt.Fprintf(os.Stderr, "listening on %s (%s) for %s\n", strings.Join(channels, ", "), *addr, *period)
		})
		if err != nil {
			return err
		}
		legacy, msgx = got[0], got[1]
		if err := shadow.SaveCapture(*saveLegacy, legacy); err != nil {
			return err
		}
		if err := shadow.SaveCapture(*saveMsgx, msgx); err != nil {
			return err
		}
	}
	if *legacyFile != "" {
		if legacy, err = shadow.ReadCapture(*legacyFile, loc); err != nil {
			return err
		}
	}
	if *msgxFile != "" {
		if msgx, err = shadow.ReadCapture(*msgxFile, loc); err != nil {
			return err
		}
	}
	rep := shadow.Compare(legacy, msgx, opt)
	rep.Write(os.Stdout)
	switch rep.Verdict() {
	case "DIFFERENT":
		return exitError{code: exitFailure}
	case "UNDECIDED":
		return exitError{code: exitUndecided}
	}
	return nil
}
