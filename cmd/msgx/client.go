package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"msgx/internal/app"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/term"

	"msgx/client"
	"msgx/internal/cli"
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
// else the local default (cli.ServerURL).
func serverURL(flagValue string, inbox bool) (string, error) {
	if flagValue != "" || os.Getenv("MSGX_SERVER") != "" {
		return cli.ServerURL(flagValue), nil
	}
	path := configFile
	if path == "" {
		path = os.Getenv("MSGX_CONFIG")
	}
	if path == "" {
		return cli.ServerURL(""), nil
	}
	cfg, err := app.LoadConfig(path, os.Environ())
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
	ctx := context.Background()
	var raw json.RawMessage
	if err := c.Get(ctx, path, &raw); err != nil {
		return false, err
	}
	if asJSON {
		os.Stdout.Write(append(raw, '\n'))
		return true, nil
	}
	return false, json.Unmarshal(raw, out)
}

func send(args []string) error {
	ctx := context.Background()
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
	var bar *cli.Progress
	if fs.NArg() > 1 && term.IsTerminal(int(os.Stderr.Fd())) {
		bar = cli.NewProgress("send", fs.NArg())
		defer bar.Finish()
	}
	for i, path := range fs.Args() {
		bar.Clear()
		var id int64
		b, err := os.ReadFile(path)
		if err == nil {
			id, err = srvInbox(*server).Send(ctx, b)
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
	ctx := context.Background()
	fs := prog.Flags("status")
	server := serverFlags(fs)
	asJSON := fs.Bool("json", false, "print the raw JSON")
	utcFlag(fs)
	if err := fs.Parse(args); err != nil {
		return app.ExitError{Code: 2}
	}
	var raw json.RawMessage
	if err := srv(*server).Get(ctx, "/api/v1/status", &raw); err != nil {
		return err
	}
	var st client.Status
	if err := json.Unmarshal(raw, &st); err != nil {
		return err
	}
	if *asJSON {
		os.Stdout.Write(append(raw, '\n'))
	} else {
		cli.WriteStatus(os.Stdout, st, time.Now(), zoneOf(srv(*server)))
	}
	return statusExit(st)
}

// statusExit is msgx status's exit: 0 while everything runs, else what stops work (the worst
// first): exitHalted, exitPaused, exitTargetPaused. The first lines said why.
func statusExit(st client.Status) error {
	switch {
	case st.Halted() != nil:
		return app.ExitError{Code: exitHalted}
	case st.PumpPaused():
		return app.ExitError{Code: exitPaused}
	case st.TargetsPaused() > 0:
		return app.ExitError{Code: exitTargetPaused}
	}
	return nil
}

func replay(args []string) error {
	ctx := context.Background()
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
	res, err := srv(*server).Replay(ctx, cl, ids, *dryRun)
	if err != nil {
		return err
	}
	if *dryRun {
		fmt.Printf("dry run: would move %d messages to PENDING, skip %d\n", res.Moved, res.Skipped)
		cli.WritePreview(os.Stdout, res, false)
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
	ctx := context.Background()
	if err := checkTarget("replay", c, target); err != nil {
		return err
	}
	res, err := c.ReplayEvents(ctx, target, ids, dryRun)
	if err != nil {
		return err
	}
	if dryRun {
		fmt.Printf("dry run: would move %d dead events to PENDING, skip %d\n", res.Moved, res.Skipped)
		cli.WritePreview(os.Stdout, res, true)
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
	ctx := context.Background()
	if name == "" {
		return nil
	}
	names := server.TargetNames(ctx)
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
	out, err := sis.Explain(raw, app.Decoding(cfg), pipeline.IdentityMode(cfg.Identity.Mode))
	if err != nil {
		printJSON(out)
		return app.ExitError{Code: 1, Msg: err.Error()}
	}
	return printJSON(out)
}
