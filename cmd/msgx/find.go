package main

import (
	"context"
	"fmt"
	"strings"

	"msgx/client"
	"msgx/internal/app"
	"msgx/internal/cli"
)

// findCmd searches flights and messages for its arguments and prints the hits; when exactly
// one flight matches, its record too, as `msgx flight` prints it.
func findCmd(ctx context.Context, e *cli.Env, args []string) error {
	fs, r := e.RemoteFlags("find", cli.APIServerUsage, true)
	limit := fs.Int("limit", 50, fmt.Sprintf("at most this many hits of each kind (1..%d)", client.MaxPageLimit))
	asJSON := fs.Bool("json", false, "print the raw JSON")
	r.UTCFlag(fs)
	if err := fs.Parse(cli.Reorder(fs, args)); err != nil || fs.NArg() == 0 {
		return cli.UsageError("usage: msgx find [--server URL] [--limit N] [--json] TEXT…")
	}
	if *limit < 1 {
		return cli.UsageError(fmt.Sprintf("msgx find: --limit %d: give at least 1", *limit))
	}
	*limit = e.CapLimit("find", *limit)
	c, err := r.API()
	if err != nil {
		return err
	}
	tz := ""
	if r.UTC {
		tz = "UTC"
	}
	ans, err := c.Find(ctx, strings.Join(fs.Args(), " "), *limit, tz)
	if err != nil {
		return err
	}
	if *asJSON {
		return cli.WriteJSON(e.Stdout, ans)
	}
	fmt.Fprintf(e.Stderr, "searched %s (times %s)\n", ans.Searched, cli.OrDash(ans.Timezone))
	if len(ans.Hits) == 0 {
		return app.ExitError{Code: exitFailure, Msg: fmt.Sprintf("msgx find: nothing matches %q", ans.Query)}
	}
	flights := cli.WriteHits(e.Stdout, ans)
	if ans.More {
		fmt.Fprintf(e.Stderr, "more hits than --limit %d: narrow the search or raise --limit\n", *limit)
	}
	if len(flights) != 1 {
		return nil
	}
	fmt.Fprintf(e.Stdout, "\nflight %d (msgx flight %d; its history: msgx flight --history %d):\n", flights[0], flights[0], flights[0])
	return printFlight(ctx, e, r, c, flights[0], false)
}
