package main

// What the client commands share in showing: the zone of the times they print (the airport's,
// or UTC with --utc) and the paging flags of the listings (--order, --before, --after,
// --limit, as the API's listings take them: docs/api.md, Listings).

import (
	"context"
	"flag"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"

	"msgx/client"
	"msgx/internal/app"
	"msgx/internal/cli"
)

// showUTC is --utc: print times in UTC, for scripts, instead of airport time.
var showUTC bool

// utcFlag adds --utc to a command that prints times.
func utcFlag(fs *flag.FlagSet) {
	fs.BoolVar(&showUTC, "utc", false, "print times in UTC (for scripts) instead of airport time (sis.timezone)")
}

// zoneOf is the zone the command prints times in: UTC with --utc, else the airport's, which
// the server names (GET /api/v1/me). When the server cannot tell, the times are UTC and
// stderr says why.
func zoneOf(c *client.Client) cli.Zone {
	ctx := context.Background()
	if showUTC {
		return cli.UTC
	}
	loc, err := c.AirportZone(ctx)
	if err != nil {
		fmt.Fprintf(os.Stderr, "msgx: times in UTC: the airport's zone is not known (%v)\n", err)
		return cli.UTC
	}
	return cli.Zone{Loc: loc}
}

// listing is the paging of a list command: newest first unless --order asc, --before and
// --after as cursors, --limit rows.
type listing struct {
	order         *string
	before, after *int64
	limit         *int
}

// listFlags adds --order, --before, --after and --limit (default def) to a list command of
// what (its rows: "messages").
func listFlags(fs *flag.FlagSet, what string, def int) *listing {
	return &listing{
		order:  fs.String("order", "desc", "`desc` (newest first) or asc (oldest first)"),
		before: fs.Int64("before", 0, "only "+what+" with ids below this `ID` (the page after one: its 'more: --before N')"),
		after:  fs.Int64("after", 0, "only "+what+" with ids above this `ID`"),
		limit:  fs.Int("limit", def, "at most `N` "+what+" (up to 1000)"),
	}
}

// query returns the listing's query parameters for command cmd, or a usage error for an
// order other than asc or desc.
func (l *listing) query(cmd string) (url.Values, error) {
	o := strings.ToLower(strings.TrimSpace(*l.order))
	if o != "asc" && o != "desc" {
		return nil, app.ExitError{Code: exitUsage, Msg: fmt.Sprintf("msgx %s: --order %q is neither desc (newest first, the default) nor asc (oldest first)", cmd, *l.order)}
	}
	if *l.before < 0 || *l.after < 0 {
		return nil, app.ExitError{Code: exitUsage, Msg: fmt.Sprintf("msgx %s: --before and --after are ids (0 or more)", cmd)}
	}
	*l.limit = capLimit(cmd, *l.limit)
	q := url.Values{"order": {o}, "limit": {strconv.Itoa(*l.limit)}}
	if *l.before > 0 {
		q.Set("before", strconv.FormatInt(*l.before, 10))
	}
	if *l.after > 0 {
		q.Set("after", strconv.FormatInt(*l.after, 10))
	}
	return q, nil
}

// more prints how to ask for the next page ("more: --before 41"), when the answer has one.
func (l *listing) more(p client.Page) {
	if p.Next == nil {
		return
	}
	name, id, ok := strings.Cut(*p.Next, "=")
	if !ok {
		return
	}
	extra := ""
	if strings.ToLower(*l.order) == "asc" {
		extra = " --order asc"
	}
	fmt.Printf("more: --%s %s%s\n", name, id, extra)
}
