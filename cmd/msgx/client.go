package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"msgx/internal/app"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"golang.org/x/term"

	"msgx/internal/cli"
	"msgx/internal/client"
	"msgx/internal/config"
	"msgx/internal/pipeline"
	"msgx/internal/sis"
	"msgx/internal/suggest"
)

var httpClient = &http.Client{Timeout: 60 * time.Second}

// apiToken is the bearer token the client sends: --token, else MSGX_TOKEN. The flag's
// default is empty so that usage never prints the secret.
var apiToken = os.Getenv("MSGX_TOKEN")

// configFile is the msgx config file a client command reads the server's address from
// (--config, before or after the command; "": $MSGX_CONFIG).
var configFile string

// tokenFlag adds --token and --config to a command that talks to the server.
func tokenFlag(fs *flag.FlagSet) {
	fs.Func("token", "API token, sent as Authorization: Bearer (default $MSGX_TOKEN)", func(s string) error {
		apiToken = s
		return nil
	})
	configFlag(fs)
}

// configFlag adds --config to a command that talks to the server.
func configFlag(fs *flag.FlagSet) {
	fs.Func("config", "msgx config `FILE` whose http.addr is the server (default $MSGX_CONFIG; --server and $MSGX_SERVER win)", func(s string) error {
		configFile = s
		return nil
	})
}

// serverURL is where the server is: --server, else $MSGX_SERVER, else the http.addr
// (http.admin-addr for the API, when set) of the config file (--config, else $MSGX_CONFIG),
// else the local default (client.ServerURL).
func serverURL(flagValue string, inbox bool) (string, error) {
	if flagValue != "" || os.Getenv("MSGX_SERVER") != "" {
		return client.ServerURL(flagValue), nil
	}
	path := configFile
	if path == "" {
		path = os.Getenv("MSGX_CONFIG")
	}
	if path == "" {
		return client.ServerURL(""), nil
	}
	cfg, err := config.Load(path, os.Environ())
	if err != nil {
		return "", fmt.Errorf("the server's address: %w", err)
	}
	addr := cfg.HTTP.Addr
	if !inbox && cfg.HTTP.AdminAddr != "" {
		addr = cfg.HTTP.AdminAddr // the API and the console listen there
	}
	return client.AddrURL(addr), nil
}

// serverFlags adds --server and --token and returns the server flag.
func serverFlags(fs *flag.FlagSet) *string {
	tokenFlag(fs)
	return fs.String("server", "", "the msgx server: a `URL` or host:port")
}

// srv is the client of the server's API (serverURL) with the token. A config file that
// cannot be read ends the command (exitConfig, as serve's).
func srv(flagValue string) *client.Client { return clientOf(flagValue, false) }

// srvInbox is the client of the server's inbox (http.addr, never http.admin-addr).
func srvInbox(flagValue string) *client.Client { return clientOf(flagValue, true) }

func clientOf(flagValue string, inbox bool) *client.Client {
	u, err := serverURL(flagValue, inbox)
	if err != nil {
		fmt.Fprintln(os.Stderr, "msgx: "+err.Error())
		os.Exit(exitConfig)
	}
	return &client.Client{URL: u, Token: apiToken, HTTP: httpClient}
}

// show GETs path and, with asJSON, prints the answer as it came (printed is then true);
// otherwise it decodes the answer into out for the command to print its way.
func show(c *client.Client, path string, asJSON bool, out any) (printed bool, err error) {
	var raw json.RawMessage
	if err := c.Get(path, &raw); err != nil {
		return false, err
	}
	if asJSON {
		os.Stdout.Write(append(raw, '\n'))
		return true, nil
	}
	return false, json.Unmarshal(raw, out)
}

func send(args []string) error {
	fs := prog.Flags("send")
	server := serverFlags(fs)
	if err := fs.Parse(args); err != nil {
		return app.ExitError{Code: 2}
	}
	if fs.NArg() == 0 {
		return app.ExitError{Code: 2, Msg: "usage: msgx send [--server URL] FILE…"}
	}
	failed := 0
	// Many files on a terminal: a progress bar on stderr, kept below the id lines.
	var bar *client.Progress
	if fs.NArg() > 1 && term.IsTerminal(int(os.Stderr.Fd())) {
		bar = client.NewProgress("send", fs.NArg())
		defer bar.Finish()
	}
	for i, path := range fs.Args() {
		bar.Clear()
		var id int64
		b, err := os.ReadFile(path)
		if err == nil {
			id, err = srvInbox(*server).Send(b)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", path, err)
			failed++
			continue
		}
		fmt.Printf("%d\t%s\n", id, path)
		bar.Update(i+1, filepath.Base(path))
	}
	if failed > 0 {
		return app.ExitError{Code: 1, Msg: fmt.Sprintf("%d of %d files not accepted", failed, fs.NArg())}
	}
	return nil
}

func status(args []string) error {
	fs := prog.Flags("status")
	server := serverFlags(fs)
	asJSON := fs.Bool("json", false, "print the raw JSON")
	if err := fs.Parse(args); err != nil {
		return app.ExitError{Code: 2}
	}
	var st client.Status
	if printed, err := show(srv(*server), "/api/v1/status", *asJSON, &st); printed || err != nil {
		return err
	}
	fmt.Printf("pump running: %v", st.PumpRunning)
	if st.LeaseHolder != "" {
		fmt.Printf(" (lease: %s)", st.LeaseHolder)
	}
	fmt.Println()
	for _, p := range st.Paused {
		fmt.Printf("PAUSED %s by %s since %s", p.Name, p.By, p.At.Format(time.RFC3339))
		if p.Reason != "" {
			fmt.Printf(": %s", p.Reason)
		}
		fmt.Printf(" (msgx resume%s)\n", map[bool]string{true: " --target " + strings.TrimPrefix(p.Name, "target:"), false: ""}[strings.HasPrefix(p.Name, "target:")])
	}
	for _, s := range []string{"PENDING", "FAILED", "SUCCEEDED", "SKIPPED", "DEAD"} {
		fmt.Printf("%-10s %d\n", s, st.Counts[s])
	}
	printHead(st)
	var recent []client.RecentNote
	var dead client.DeadCounts
	if _, ok, err := takeSection(st.Extra, "dead", &dead); ok && err == nil && (dead.Messages.Dead > 0 || dead.Events.Dead > 0) {
		fmt.Printf("dead letters to look at: %d messages, %d events (acknowledged, kept for audit: %d, %d)\n",
			dead.Messages.Unacknowledged, dead.Events.Unacknowledged, dead.Messages.Acknowledged, dead.Events.Acknowledged)
	}
	if _, ok, err := takeSection(st.Extra, "recent", &recent); ok && err == nil && len(recent) > 0 {
		fmt.Println("recent problems and operator actions (newest first):")
		for _, n := range recent {
			if n.Kind == "action" {
				fmt.Printf("  %s %s by %s on %s\n", n.At.Format(time.RFC3339), n.Note, n.Actor, n.Subject)
				continue
			}
			fmt.Printf("  %s message %d %s %s %s\n", n.At.Format(time.RFC3339), n.MsgID, n.TypeTag, n.State, n.Class)
			if n.Note != "" {
				fmt.Printf("    %s\n", n.Note)
			}
			for _, w := range n.Warnings {
				fmt.Printf("    warning: %s\n", w)
			}
		}
	}
	var targets []client.TargetStatus
	if raw, ok, err := takeSection(st.Extra, "targets", &targets); ok {
		printTargets(raw, targets, err)
	}
	var tr *client.PumpTrouble
	if _, ok, err := takeSection(st.Extra, "pump_trouble", &tr); ok && err == nil && tr != nil {
		fmt.Printf("pump: cannot record the outcome of message %d: %d failure(s) since %s, next try %s\n  error: %s\n",
			tr.MsgID, tr.Failures, tr.Since.Format(time.RFC3339), tr.Next.Format(time.RFC3339), tr.LastError)
	}
	printJobs(st.Extra)
	keys := make([]string, 0, len(st.Extra))
	for k := range st.Extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Printf("%s: %s\n", k, st.Extra[k])
	}
	return nil
}

// takeSection takes the status section key out of extra and decodes it into v; ok is false
// when the status has no such section.
func takeSection(extra map[string]json.RawMessage, key string, v any) (raw json.RawMessage, ok bool, err error) {
	if raw, ok = extra[key]; !ok {
		return nil, false, nil
	}
	delete(extra, key)
	return raw, true, json.Unmarshal(raw, v)
}

// printHead prints the status's head message and why it waits.
func printHead(st client.Status) {
	if st.Head == nil {
		fmt.Println("head: none (nothing waiting)")
		return
	}
	tag := "?"
	if st.Head.TypeTag != nil {
		tag = *st.Head.TypeTag
	}
	fmt.Printf("head: message %d %s %s, attempts %d\n  why: %s\n", st.Head.ID, tag, st.Head.State, st.Head.Attempts, st.Head.Why)
	for _, w := range st.Head.Warnings {
		fmt.Printf("  warning: %s\n", w)
	}
}

// printTargets prints the status's delivery targets (raw when they could not be read: err).
func printTargets(raw json.RawMessage, targets []client.TargetStatus, err error) {
	if err != nil {
		fmt.Printf("targets: %s\n", raw)
		return
	}
	if len(targets) == 0 {
		fmt.Println("targets: no events yet")
		return
	}
	fmt.Printf("%-14s %8s %6s %8s %s\n", "target", "pending", "dead", "sent", "oldest pending")
	for _, t := range targets {
		age := "-"
		if t.Pending > 0 {
			age = (time.Duration(t.AgeSeconds * float64(time.Second))).Round(time.Millisecond).String()
		}
		fmt.Printf("%-14s %8d %6d %8d %s\n", t.Target, t.Pending, t.Dead, t.Sent, age)
		switch {
		case t.BlockedSince != nil && t.Head != nil:
			next := "-"
			if t.NextAttempt != nil {
				next = t.NextAttempt.Format(time.RFC3339)
			}
			fmt.Printf("  BLOCKED since %s (%s), head event %d, %d attempt(s), next attempt %s, %s: %s\n",
				t.BlockedSince.Format(time.RFC3339), time.Since(*t.BlockedSince).Round(time.Second), t.Head.EventID,
				t.Head.Attempts, next, or(t.ErrorClass, "?"), or(t.LastError, ""))
		case t.Head != nil && t.Head.LastError != nil:
			fmt.Printf("  head event %d, %d attempt(s): %s\n", t.Head.EventID, t.Head.Attempts, *t.Head.LastError)
		}
		if t.Rejecting {
			fmt.Printf("  REJECTING: its latest events all went DEAD, none delivered since; see msgx events --state DEAD --target %s\n", t.Target)
		}
	}
}

func replay(args []string) error {
	fs := prog.Flags("replay")
	server := serverFlags(fs)
	classes := fs.String("class", "", "error classes (`C[,C…]`) of the messages to replay, comma-separated (CODEC_ERROR,UNSUPPORTED,INFRA,EXHAUSTED,ORPHAN); not with --events")
	events := fs.Bool("events", false, "replay DEAD delivery events (chosen by --target and --id) instead of messages")
	tgt := fs.String("target", "", "with --events: only this target `T`")
	dryRun := fs.Bool("dry-run", false, "say what would move (a table: id, tag or target, class, age), moving nothing")
	var ids cli.IDList
	fs.Var(&ids, "id", "message (or, with --events, event) id `N` to replay (repeatable)")
	if err := fs.Parse(args); err != nil {
		return app.ExitError{Code: exitUsage}
	}
	if fs.NArg() > 0 {
		return app.ExitError{Code: exitUsage, Msg: fmt.Sprintf("msgx replay: unexpected argument %q; ids go with --id N", fs.Arg(0))}
	}
	if err := replayModeFlags(fs, *events); err != nil {
		return err
	}
	if *events {
		return replayEvents(srv(*server), *tgt, ids, *dryRun)
	}
	cl, err := replayClasses(*classes)
	if err != nil {
		return err
	}
	if len(cl) == 0 && len(ids) == 0 {
		return app.ExitError{Code: exitUsage, Msg: "usage: msgx replay --class C[,C…] [--id N…] [--dry-run] | msgx replay --events [--target T] [--id N…] [--dry-run]"}
	}
	res, err := srv(*server).Replay(cl, ids, *dryRun)
	if err != nil {
		return err
	}
	if *dryRun {
		fmt.Printf("dry run: would move %d messages to PENDING, skip %d\n", res.Moved, res.Skipped)
		printPreview(res, false)
		return nil
	}
	fmt.Printf("moved %d to PENDING, skipped %d\n", res.Moved, res.Skipped)
	for _, id := range res.IDs {
		fmt.Println(id)
	}
	return nil
}

// replayModeFlags refuses a flag that does not apply to the chosen replay (messages, or
// --events): a flag ignored there would turn what the operator meant as a narrow replay
// into a wide real one.
func replayModeFlags(fs *flag.FlagSet, events bool) error {
	var err error
	fs.Visit(func(f *flag.Flag) {
		switch {
		case err != nil:
		case events && f.Name == "class":
			err = app.ExitError{Code: exitUsage, Msg: "msgx replay: --class does not apply with --events (dead events are chosen by --target T and --id N); " +
				"to replay messages of a class, drop --events; nothing was replayed"}
		case !events && f.Name == "target":
			err = app.ExitError{Code: exitUsage, Msg: "msgx replay: --target applies only with --events (to replay a target's dead events: msgx replay --events --target T); " +
				"messages are chosen by --class and --id; nothing was replayed"}
		}
	})
	return err
}

// replayClasses parses --class C[,C…], answering an unknown class with the one it probably
// meant.
func replayClasses(classes string) ([]string, error) {
	var cl []string
	for _, c := range strings.Split(classes, ",") {
		if c = strings.TrimSpace(c); c != "" {
			if _, ok := pipeline.ParseErrorClass(strings.ToUpper(c)); !ok {
				return nil, app.ExitError{Code: exitUsage, Msg: fmt.Sprintf("msgx replay: unknown class %q%s; the classes are %s",
					c, suggest.DidYouMean(c, classNames()), strings.Join(classNames(), ", "))}
			}
			cl = append(cl, strings.ToUpper(c))
		}
	}
	return cl, nil
}

// replayEvents replays (or with dryRun previews) the DEAD events of target and ids.
func replayEvents(c *client.Client, target string, ids []int64, dryRun bool) error {
	if err := checkTarget("replay", c, target); err != nil {
		return err
	}
	res, err := c.ReplayEvents(target, ids, dryRun)
	if err != nil {
		return err
	}
	if dryRun {
		fmt.Printf("dry run: would move %d dead events to PENDING, skip %d\n", res.Moved, res.Skipped)
		printPreview(res, true)
	} else {
		fmt.Printf("moved %d dead events to PENDING, skipped %d\n", res.Moved, res.Skipped)
	}
	if res.Note != "" {
		fmt.Println("note: " + res.Note)
	}
	return nil
}

// printPreview prints a dry run's items as a table (id, tag or target, class, age) and says
// how many more would move than the table shows.
func printPreview(res client.ReplayAnswer, events bool) {
	if len(res.Items) == 0 {
		return
	}
	what := "tag"
	if events {
		what = "target / tag"
	}
	fmt.Printf("%10s  %-28s  %-12s  %s\n", "id", what, "class", "age")
	for _, it := range res.Items {
		label := it.Tag
		if events {
			label = it.Target + " / " + it.Tag
		}
		age := (time.Duration(it.AgeSeconds) * time.Second).String()
		fmt.Printf("%10d  %-28s  %-12s  %s\n", it.ID, orDash(label), orDash(it.Class), age)
	}
	if more := res.Moved - len(res.Items); more > 0 {
		fmt.Printf("… and %d more (the table shows the first %d)\n", more, len(res.Items))
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// classNames lists the error classes by name.
func classNames() []string {
	out := make([]string, len(pipeline.Classes))
	for i, c := range pipeline.Classes {
		out[i] = string(c)
	}
	return out
}

// checkTarget answers a --target the server does not know with the target it probably meant,
// learning the targets from the server's status; when the status cannot be read, or lists no
// targets yet, the server itself judges the name.
func checkTarget(cmd string, server *client.Client, name string) error {
	if name == "" {
		return nil
	}
	names := server.TargetNames()
	if len(names) == 0 || slices.Contains(names, name) {
		return nil
	}
	return app.ExitError{Code: exitUsage, Msg: fmt.Sprintf("msgx %s: unknown target %q%s; the server's targets are %s",
		cmd, name, suggest.DidYouMean(name, names), strings.Join(names, ", "))}
}

func decode(args []string) error {
	cfg, rest, err := loadConfig(prog.Flags("decode"), args)
	if err != nil {
		return err
	}
	if len(rest) != 1 {
		return app.ExitError{Code: 2, Msg: "usage: msgx decode [--config FILE] FILE"}
	}
	raw, err := os.ReadFile(rest[0])
	if err != nil {
		return err
	}
	out, err := sis.Explain(raw, cfg.Decoding(), pipeline.IdentityMode(cfg.Identity.Mode))
	if err != nil {
		printJSON(out)
		return app.ExitError{Code: 1, Msg: err.Error()}
	}
	return printJSON(out)
}
