package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"msgx/internal/app"
	"msgx/internal/cli"
	"msgx/internal/store"
)

// findCmd searches flights and messages for its arguments and prints the hits; when exactly
// one flight matches, its record too, as `msgx flight` prints it.
func findCmd(args []string) error {
	ctx := context.Background()
	fs := prog.Flags("find")
	server := clientFlags(fs)
	limit := fs.Int("limit", 50, fmt.Sprintf("at most this many hits of each kind (1..%d)", store.MaxPageLimit))
	asJSON := fs.Bool("json", false, "print the raw JSON")
	utcFlag(fs)
	if err := fs.Parse(cli.Reorder(fs, args)); err != nil || fs.NArg() == 0 {
		return app.ExitError{Code: exitUsage, Msg: "usage: msgx find [--server URL] [--limit N] [--json] TEXT…"}
	}
	if *limit < 1 {
		return app.ExitError{Code: exitUsage, Msg: fmt.Sprintf("msgx find: --limit %d: give at least 1", *limit)}
	}
	*limit = capLimit("find", *limit)
	c := srv(*server)
	tz := ""
	if showUTC {
		tz = "UTC"
	}
	ans, err := c.Find(ctx, strings.Join(fs.Args(), " "), *limit, tz)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(ans)
	}
	fmt.Fprintf(os.Stderr, "searched %s (times %s)\n", ans.Searched, cli.OrDash(ans.Timezone))
	if len(ans.Hits) == 0 {
		return app.ExitError{Code: exitFailure, Msg: fmt.Sprintf("msgx find: nothing matches %q", ans.Query)}
	}
	flights := cli.WriteHits(os.Stdout, ans)
	if ans.More {
		fmt.Fprintf(os.Stderr, "more hits than --limit %d: narrow the search or raise --limit\n", *limit)
	}
	if len(flights) != 1 {
		return nil
	}
	fmt.Printf("\nflight %d (msgx flight %d; its history: msgx flight --history %d):\n", flights[0], flights[0], flights[0])
	return printFlight(c, flights[0], false)
}
