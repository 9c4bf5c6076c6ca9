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

	"msgx/client"
	"msgx/internal/cli"
	"msgx/internal/pipeline"
	"msgx/internal/sis"
	"msgx/internal/suggest"
)

// remote is what a command that talks to the server was told of it: --server, --config
// (default MSGX_CONFIG), --token (default MSGX_TOKEN), and --utc for a command that prints
// times.
type remote struct {
	e                     *cli.Env
	server, config, token string
	utc                   bool
}

// The usages of --server: the API's commands' and the others'.
const (
	apiServerUsage = "msgx server URL (default $MSGX_SERVER, else the local http.addr)"
	serverUsage    = "the msgx server: a `URL` or host:port"
)

// remoteFlags adds --server (its usage serverUsage or apiServerUsage), --config and, with
// token, --token to fs. The token flag's default is empty so that usage never prints the
// secret.
func remoteFlags(e *cli.Env, fs *flag.FlagSet, usage string, token bool) *remote {
	r := &remote{e: e, token: e.Getenv("MSGX_TOKEN")}
	fs.StringVar(&r.server, "server", "", usage)
	if token {
		fs.Func("token", "API token, sent as Authorization: Bearer (default $MSGX_TOKEN)", func(s string) error {
			r.token = s
			return nil
		})
	}
	fs.Func("config", "msgx config `FILE` whose http.addr is the server (default $MSGX_CONFIG; --server and $MSGX_SERVER win)", func(s string) error {
		r.config = s
		return nil
	})
	return r
}

// utcFlag adds --utc to a command that prints times.
func (r *remote) utcFlag(fs *flag.FlagSet) {
	fs.BoolVar(&r.utc, "utc", false, "print times in UTC (for scripts) instead of airport time (sis.timezone)")
}

// api is the client of the server's API (Env.ServerURL) with the token; inbox the client of
// its inbox (http.addr, never http.admin-addr). A config file that cannot be read ends the
// command (exitConfig, as serve's).
func (r *remote) api() (*client.Client, error)   { return r.client(false) }
func (r *remote) inbox() (*client.Client, error) { return r.client(true) }

func (r *remote) client(inbox bool) (*client.Client, error) {
	u, err := r.e.ServerURL(r.server, r.config, inbox)
	if err != nil {
		fmt.Fprintln(r.e.Stderr, "msgx: "+err.Error())
		return nil, app.ExitError{Code: exitConfig}
	}
	return &client.Client{URL: u, Token: r.token, HTTP: &http.Client{Timeout: 60 * time.Second}}, nil
}

// zone is the zone the command prints times in: UTC with --utc, else the airport's, which
// the server names (GET /api/v1/me). When the server cannot tell, the times are UTC and
// stderr says why.
func (r *remote) zone(ctx context.Context, c *client.Client) cli.Zone {
	if r.utc {
		return cli.UTC
	}
	loc, err := c.AirportZone(ctx)
	if err != nil {
		fmt.Fprintf(r.e.Stderr, "msgx: times in UTC: the airport's zone is not known (%v)\n", err)
		return cli.UTC
	}
	return cli.Zone{Loc: loc}
}

// show GETs path and, with asJSON, prints the answer as it came (printed is then true);
// otherwise it decodes the answer into out for the command to print its way.
func (r *remote) show(ctx context.Context, c *client.Client, path string, asJSON bool, out any) (printed bool, err error) {
	var raw json.RawMessage
	if err := c.Get(ctx, path, &raw); err != nil {
		return false, err
	}
	if asJSON {
		r.e.Stdout.Write(append(raw, '\n'))
		return true, nil
	}
	return false, json.Unmarshal(raw, out)
}

func send(e *cli.Env, args []string) error {
	ctx := context.Background()
	fs := e.Flags("send")
	r := remoteFlags(e, fs, serverUsage, true)
	if err := fs.Parse(args); err != nil {
		return cli.ErrUsage
	}
	if fs.NArg() == 0 {
		return cli.UsageError("usage: msgx send [--server URL] FILE…")
	}
	c, err := r.inbox()
	if err != nil {
		return err
	}
	failed := 0
	// Many files on a terminal: a progress bar on stderr, kept below the id lines.
	var bar *cli.Progress
	if fs.NArg() > 1 && cli.IsTerminal(e.Stderr) {
		bar = cli.NewProgress(e.Stderr, "send", fs.NArg())
		defer bar.Finish()
	}
	for i, path := range fs.Args() {
		bar.Clear()
		var id int64
		b, err := os.ReadFile(path)
		if err == nil {
			id, err = c.Send(ctx, b)
		}
		if err != nil {
			fmt.Fprintf(e.Stderr, "%s: %v\n", path, err)
			failed++
			continue
		}
		fmt.Fprintf(e.Stdout, "%d\t%s\n", id, path)
		bar.Update(i+1, filepath.Base(path))
	}
	if failed > 0 {
		return app.ExitError{Code: 1, Msg: fmt.Sprintf("%d of %d files not accepted", failed, fs.NArg())}
	}
	return nil
}

func status(e *cli.Env, args []string) error {
	ctx := context.Background()
	fs := e.Flags("status")
	r := remoteFlags(e, fs, serverUsage, true)
	asJSON := fs.Bool("json", false, "print the raw JSON")
	r.utcFlag(fs)
	if err := fs.Parse(args); err != nil {
		return cli.ErrUsage
	}
	c, err := r.api()
	if err != nil {
		return err
	}
	var raw json.RawMessage
	if err := c.Get(ctx, "/api/v1/status", &raw); err != nil {
		return err
	}
	var st client.Status
	if err := json.Unmarshal(raw, &st); err != nil {
		return err
	}
	if *asJSON {
		e.Stdout.Write(append(raw, '\n'))
	} else {
		cli.WriteStatus(e.Stdout, st, time.Now(), r.zone(ctx, c))
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

func replay(e *cli.Env, args []string) error {
	ctx := context.Background()
	fs := e.Flags("replay")
	r := remoteFlags(e, fs, serverUsage, true)
	classes := fs.String("class", "", "error classes (`C[,C…]`) of the messages to replay, comma-separated (CODEC_ERROR,UNSUPPORTED,INFRA,EXHAUSTED,ORPHAN); not with --events")
	events := fs.Bool("events", false, "replay DEAD delivery events (chosen by --target and --id) instead of messages")
	tgt := fs.String("target", "", "with --events: only this target `T`")
	dryRun := fs.Bool("dry-run", false, "say what would move (a table: id, tag or target, class, age), moving nothing")
	var ids cli.IDList
	fs.Var(&ids, "id", "message (or, with --events, event) id `N` to replay (repeatable)")
	if err := fs.Parse(args); err != nil {
		return cli.ErrUsage
	}
	if fs.NArg() > 0 {
		return cli.UsageError(fmt.Sprintf("msgx replay: unexpected argument %q; ids go with --id N", fs.Arg(0)))
	}
	if err := replayModeFlags(fs, *events); err != nil {
		return err
	}
	c, err := r.api()
	if err != nil {
		return err
	}
	if *events {
		return replayEvents(ctx, e, c, *tgt, ids, *dryRun)
	}
	cl, err := replayClasses(*classes)
	if err != nil {
		return err
	}
	if len(cl) == 0 && len(ids) == 0 {
		return cli.UsageError("usage: msgx replay --class C[,C…] [--id N…] [--dry-run] | msgx replay --events [--target T] [--id N…] [--dry-run]")
	}
	res, err := c.Replay(ctx, cl, ids, *dryRun)
	if err != nil {
		return err
	}
	cli.WriteReplay(e.Stdout, res, false, *dryRun)
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
			err = cli.UsageError("msgx replay: --class does not apply with --events (dead events are chosen by --target T and --id N); " +
				"to replay messages of a class, drop --events; nothing was replayed")
		case !events && f.Name == "target":
			err = cli.UsageError("msgx replay: --target applies only with --events (to replay a target's dead events: msgx replay --events --target T); " +
				"messages are chosen by --class and --id; nothing was replayed")
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
				return nil, cli.UsageError(fmt.Sprintf("msgx replay: unknown class %q%s; the classes are %s",
					c, suggest.DidYouMean(c, classNames()), strings.Join(classNames(), ", ")))
			}
			cl = append(cl, strings.ToUpper(c))
		}
	}
	return cl, nil
}

// replayEvents replays (or with dryRun previews) the DEAD events of target and ids.
func replayEvents(ctx context.Context, e *cli.Env, c *client.Client, target string, ids []int64, dryRun bool) error {
	if err := checkTarget(ctx, "replay", c, target); err != nil {
		return err
	}
	res, err := c.ReplayEvents(ctx, target, ids, dryRun)
	if err != nil {
		return err
	}
	cli.WriteReplay(e.Stdout, res, true, dryRun)
	return nil
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
func checkTarget(ctx context.Context, cmd string, server *client.Client, name string) error {
	if name == "" {
		return nil
	}
	names := server.TargetNames(ctx)
	if len(names) == 0 || slices.Contains(names, name) {
		return nil
	}
	return cli.UsageError(fmt.Sprintf("msgx %s: unknown target %q%s; the server's targets are %s",
		cmd, name, suggest.DidYouMean(name, names), strings.Join(names, ", ")))
}

func decode(e *cli.Env, args []string) error {
	cfg, rest, err := loadConfig(e, e.Flags("decode"), args)
	if err != nil {
		return err
	}
	if len(rest) != 1 {
		return cli.UsageError("usage: msgx decode [--config FILE] FILE")
	}
	raw, err := os.ReadFile(rest[0])
	if err != nil {
		return err
	}
	out, err := sis.Explain(raw, cfg.Decoding(), pipeline.IdentityMode(cfg.Identity.Mode))
	if err != nil {
		cli.WriteJSON(e.Stdout, out)
		return app.ExitError{Code: 1, Msg: err.Error()}
	}
	return cli.WriteJSON(e.Stdout, out)
}
