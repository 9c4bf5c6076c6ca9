package main

import (
	"context"
	"fmt"
	"time"

	"msgx/client"
	"msgx/internal/cli"
)

// boardCmd prints the flight board of an airport day as a table, in airport time, filtered as
// the console's board is (movement, airline, terminal); --watch redraws it in place on a
// terminal (plain output, one board after another, when piped) until Ctrl-C.
func boardCmd(ctx context.Context, e *cli.Env, args []string) error {
	fs, r := e.RemoteFlags("board", cli.APIServerUsage, true)
	day := fs.String("day", "", "the airport `DAY` (YYYY-MM-DD; default today at the airport)")
	movement := fs.String("movement", "", "only arrivals (`A`, arrivals) or departures (D, departures)")
	airline := fs.String("airline", "", "only this carrier `CODE` or flight number prefix (CA, CA82)")
	terminal := fs.String("terminal", "", "only this `TERMINAL`")
	watch := fs.Bool("watch", false, "redraw the board every --every until Ctrl-C (in place on a terminal)")
	every := fs.Duration("every", 5*time.Second, "how often --watch redraws")
	at := fs.String("at", "", "the board as it stood at `TIME` (08:15 on --day, 2026-12-06T08:15, airport time; UTC with --utc), rebuilt from the messages applied by then")
	asJSON := fs.Bool("json", false, "print the raw JSON (times in UTC, as stored)")
	r.UTCFlag(fs)
	usage := cli.UsageError("usage: msgx board [--server URL] [--day YYYY-MM-DD] [--at HH:MM] [--movement A|D] [--airline CODE] [--terminal T] [--utc] [--watch [--every D]] [--json]")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 {
		return usage
	}
	if *at != "" && *watch {
		return cli.UsageError("msgx board: --at shows one past minute; it does not go with --watch")
	}
	if *day != "" {
		if _, err := time.Parse(time.DateOnly, *day); err != nil {
			return cli.UsageError(fmt.Sprintf("msgx board: --day %q is not a date YYYY-MM-DD", *day))
		}
	}
	mv, err := e.Movement("board", *movement)
	if err != nil {
		return err
	}
	if *every < time.Second {
		return cli.UsageError(fmt.Sprintf("msgx board: --every %s: at least 1s", *every))
	}
	f := cli.BoardFilter{Movement: mv, Airline: *airline, Terminal: *terminal}
	c, err := r.API()
	if err != nil {
		return err
	}
	path := cli.BoardPath(*day, *at, r.UTC)
	if *asJSON {
		var raw any
		if err := c.Get(ctx, path, &raw); err != nil {
			return err
		}
		return cli.WriteJSON(e.Stdout, raw)
	}
	statuses := c.Statuses(ctx)
	draw := func() (string, error) {
		var b client.Board
		if err := c.Get(ctx, path, &b); err != nil {
			return "", err
		}
		return cli.BoardPage(b, f, r.UTC, statuses, time.Now())
	}
	if *watch {
		return cli.Watch(ctx, e.Stdout, *every, draw)
	}
	text, err := draw()
	if err != nil {
		return err
	}
	fmt.Fprint(e.Stdout, text)
	return nil
}
