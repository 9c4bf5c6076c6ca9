package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
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
		if opt.RowIDs, err = readRowIDs(*rowIDs); err != nil {
			return err
		}
	}

	var legacy, msgx []shadow.Note
	if *legacyChannel != "" || *msgxChannel != "" {
		rdb := redis.NewClient(&redis.Options{Addr: *addr, Password: *password, DialTimeout: 5 * time.Second})
		defer rdb.Close()
		ctx, cancel := context.WithTimeout(context.Background(), *period)
		defer cancel()
		var wg sync.WaitGroup
		var legacyErr, msgxErr error
		var channels []string
		if *legacyChannel != "" {
			channels = append(channels, *legacyChannel)
		}
		if *msgxChannel != "" {
			channels = append(channels, *msgxChannel)
		}
		var ready sync.WaitGroup
		ready.Add(len(channels))
		listen := func(channel string, out *[]shadow.Note, errp *error) {
			var once sync.Once
			wg.Go(func() {
				defer once.Do(ready.Done)
				*out, *errp = shadow.Subscribe(ctx, rdb, channel, loc, 0, func() { once.Do(ready.Done) })
			})
		}
		if *legacyChannel != "" {
			listen(*legacyChannel, &legacy, &legacyErr)
		}
		if *msgxChannel != "" {
			listen(*msgxChannel, &msgx, &msgxErr)
		}
		ready.Wait()
		fmt.Fprintf(os.Stderr, "listening on %s (%s) for %s\n", strings.Join(channels, ", "), *addr, *period)
		wg.Wait()
		if err := errors.Join(legacyErr, msgxErr); err != nil {
			return err
		}
		if err := save(*saveLegacy, legacy); err != nil {
			return err
		}
		if err := save(*saveMsgx, msgx); err != nil {
			return err
		}
	}
	if *legacyFile != "" {
		if legacy, err = readCapture(*legacyFile, loc); err != nil {
			return err
		}
	}
	if *msgxFile != "" {
		if msgx, err = readCapture(*msgxFile, loc); err != nil {
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

func readCapture(path string, loc *time.Location) ([]shadow.Note, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	notes, err := shadow.ReadLines(f, loc)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return notes, nil
}

// save writes the payloads read from a channel as a capture (nothing when path is empty).
func save(path string, notes []shadow.Note) error {
	if path == "" {
		return nil
	}
	var b strings.Builder
	for _, n := range notes {
		b.Write(n.Raw)
		b.WriteByte('\n')
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// readRowIDs reads "rowid FLID" lines (spaces, tabs or a comma between; # comments).
func readRowIDs(path string) (map[int64]int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[int64]int64{}
	sc := bufio.NewScanner(f)
	line := 0
	for sc.Scan() {
		line++
		s := strings.TrimSpace(sc.Text())
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		parts := strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' })
		if len(parts) != 2 {
			return nil, fmt.Errorf("%s:%d: want \"rowid FLID\", got %q", path, line, s)
		}
		row, err1 := strconv.ParseInt(parts[0], 10, 64)
		flid, err2 := strconv.ParseInt(parts[1], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("%s:%d: %q is not two integers", path, line, s)
		}
		out[row] = flid
	}
	return out, sc.Err()
}
