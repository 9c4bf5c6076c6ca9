package cli

import (
	"context"
	"flag"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"msgx/client"
	"msgx/internal/suggest"
)

// Reorder moves the flags of args before its operands, so `msgx park 12 --reason x` reads
// like `msgx park --reason x 12` (the flag package stops at the first operand).
func Reorder(fs *flag.FlagSet, args []string) []string {
	var flags, operands []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			operands = append(operands, args[i+1:]...)
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			operands = append(operands, a)
			continue
		}
		flags = append(flags, a)
		name := strings.TrimLeft(a, "-")
		if strings.Contains(name, "=") {
			continue
		}
		f := fs.Lookup(name)
		if f == nil {
			continue
		}
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			continue
		}
		if i+1 < len(args) {
			flags = append(flags, args[i+1])
			i++
		}
	}
	return append(flags, operands...)
}

// JobParamFlags adds the flags of a job's parameters (internal/jobs Params) to fs and returns
// the parameters they make: --prune (PROJECTION_REBUILD in phase A: delete the FLIGHT_STATE
// rows Redis lacks), --flid N and --day YYYY-MM-DD (REDIS_RESTORE of one flight or day), and
// --params for any other.
func JobParamFlags(fs *flag.FlagSet) func() string {
	prune := fs.Bool("prune", false, "PROJECTION_REBUILD (phase A): delete the FLIGHT_STATE rows Redis lacks")
	flid := fs.Int64("flid", 0, "REDIS_RESTORE: restore this one flight")
	day := fs.String("day", "", "REDIS_RESTORE: restore this local day (YYYY-MM-DD)")
	raw := fs.String("params", "", "the job's parameters as the API takes them (prune, flid=N, day=YYYY-MM-DD)")
	return func() string {
		var ps []string
		if *raw != "" {
			ps = append(ps, *raw)
		}
		if *prune {
			ps = append(ps, "prune")
		}
		if *flid != 0 {
			ps = append(ps, fmt.Sprintf("flid=%d", *flid))
		}
		if *day != "" {
			ps = append(ps, "day="+*day)
		}
		return strings.Join(ps, " ")
	}
}

// IDList collects repeated --id flags, each possibly comma-separated.
type IDList []int64

func (l *IDList) String() string { return fmt.Sprint(*l) }

// Set adds the ids of s.
func (l *IDList) Set(s string) error {
	for _, p := range strings.Split(s, ",") {
		n, err := strconv.ParseInt(strings.TrimSpace(p), 10, 64)
		if err != nil {
			return fmt.Errorf("%q is not a message id", p)
		}
		*l = append(*l, n)
	}
	return nil
}

// CapLimit returns --limit n as the server will apply it: a value above client.MaxPageLimit
// is said on stderr to be capped, never capped silently.
func (e *Env) CapLimit(cmd string, n int) int {
	if n > client.MaxPageLimit {
		fmt.Fprintf(e.Stderr, "%s %s: --limit %d is more than a page holds: showing at most %d (page on with --after)\n", e.Program.Name, cmd, n, client.MaxPageLimit)
		return client.MaxPageLimit
	}
	return n
}

// Choice returns value as one of choices (letter case ignored), "" for "", and answers any
// other value of --flagName with the choice it probably meant (a UsageError).
func (e *Env) Choice(cmd, flagName, value string, choices []string) (string, error) {
	if value == "" {
		return "", nil
	}
	for _, c := range choices {
		if strings.EqualFold(c, value) {
			return c, nil
		}
	}
	return "", UsageError(fmt.Sprintf("%s %s: --%s %q is not one of %s%s",
		e.Program.Name, cmd, flagName, value, strings.Join(choices, ", "), suggest.DidYouMean(strings.ToUpper(value), choices)))
}

// A Listing is the paging of a list command (docs/api.md, Listings): newest first unless
// --order asc, --before and --after as cursors, --limit rows.
type Listing struct {
	e             *Env
	cmd           string
	Order         string
	Before, After int64
	Limit         int
}

// ListFlags adds --order, --before, --after and --limit (default def) to the list command
// fs, whose rows are what ("messages").
func (e *Env) ListFlags(fs *flag.FlagSet, what string, def int) *Listing {
	l := &Listing{e: e, cmd: fs.Name()}
	fs.StringVar(&l.Order, "order", "desc", "`desc` (newest first) or asc (oldest first)")
	fs.Int64Var(&l.Before, "before", 0, "only "+what+" with ids below this `ID` (the page after one: its 'more: --before N')")
	fs.Int64Var(&l.After, "after", 0, "only "+what+" with ids above this `ID`")
	fs.IntVar(&l.Limit, "limit", def, "at most `N` "+what+" (up to 1000)")
	return l
}

// Query returns the listing's query parameters, or a UsageError for an order other than asc
// or desc, or a negative cursor. A limit over a page is capped (CapLimit).
func (l *Listing) Query() (url.Values, error) {
	prog := l.e.Program.Name
	o := strings.ToLower(strings.TrimSpace(l.Order))
	if o != "asc" && o != "desc" {
		return nil, UsageError(fmt.Sprintf("%s %s: --order %q is neither desc (newest first, the default) nor asc (oldest first)", prog, l.cmd, l.Order))
	}
	if l.Before < 0 || l.After < 0 {
		return nil, UsageError(fmt.Sprintf("%s %s: --before and --after are ids (0 or more)", prog, l.cmd))
	}
	l.Limit = l.e.CapLimit(l.cmd, l.Limit)
	q := url.Values{"order": {o}, "limit": {strconv.Itoa(l.Limit)}}
	if l.Before > 0 {
		q.Set("before", strconv.FormatInt(l.Before, 10))
	}
	if l.After > 0 {
		q.Set("after", strconv.FormatInt(l.After, 10))
	}
	return q, nil
}

// Show is Remote.Show of one page of the list at path: the listing's query (Query: its
// UsageError first) with the filters (names and values, as WithFilters takes them).
func (l *Listing) Show(ctx context.Context, r *Remote, path string, asJSON bool, out any, filters ...string) (printed bool, err error) {
	q, err := l.Query()
	if err != nil {
		return false, err
	}
	return r.Show(ctx, path+"?"+WithFilters(q, filters...), asJSON, out)
}

// More writes how to ask for the next page ("more: --before 41"), when the answer has one.
func (l *Listing) More(p client.Page) {
	if p.Next == nil {
		return
	}
	name, id, ok := strings.Cut(*p.Next, "=")
	if !ok {
		return
	}
	extra := ""
	if strings.ToLower(l.Order) == "asc" {
		extra = " --order asc"
	}
	fmt.Fprintf(l.e.Stdout, "more: --%s %s%s\n", name, id, extra)
}
