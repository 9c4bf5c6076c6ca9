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

// shadowHelp is `msgx help shadow`.
const shadowHelp = `Compares, per flight, the notifications msgx publishes in the legacy's shape (a redis
target with format: legacy) with the legacy's own: the final value of each field each side
changed, deletes and schedules. Each side is a capture (JSON lines, one notification a line)
or a Redis channel subscribed for --for (the legacy's is FLOP; msgx's is its format-legacy
target's channel, e.g. FLOP-msgx in shadow mode). --legacy-ids reads "rowid FLID" lines (the
legacy flight table's id and aodb id) for the notifications whose flightId is the legacy's
row id; without it a row id is placed by the order of changes (the legacy notifications with
the same values as msgx's pair with them in order, and a row id is one flight), never by a
value two flights share. Times without an offset are taken in legacy.timezone. Prints the
fields both sides set alike, every mismatch, what only one side produced and the legacy-bug
rules it applied, then the result:
  EQUAL      exit 0
  DIFFERENT  exit 1: at least one difference
  UNDECIDED  exit 6: no difference found, but a legacy notification with a row id could
             belong to several msgx flights (AMBIGUOUS lines); give --legacy-ids to tell

Examples:
  msgx shadow diff --legacy legacy.jsonl --msgx msgx.jsonl
  msgx shadow diff --legacy-channel FLOP --msgx-channel FLOP-msgx --for 1h --redis redis:6379 \
      --save-legacy legacy.jsonl --save-msgx msgx.jsonl`

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
