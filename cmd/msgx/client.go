package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"msgx/client"
	"msgx/internal/app"
	"msgx/internal/cli"
	"msgx/internal/pipeline"
	"msgx/internal/sis"
)

func send(ctx context.Context, e *cli.Env, args []string) error {
	fs, r := e.RemoteFlags("send", cli.ServerUsage, true)
	if err := fs.Parse(args); err != nil {
		return cli.ErrUsage
	}
	if fs.NArg() == 0 {
		return e.Usage("send")
	}
	c, err := r.Inbox()
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

func status(ctx context.Context, e *cli.Env, args []string) error {
	fs, r := e.RemoteFlags("status", cli.ServerUsage, true)
	asJSON := fs.Bool("json", false, "print the raw JSON")
	r.UTCFlag(fs)
	if err := fs.Parse(args); err != nil {
		return cli.ErrUsage
	}
	c, err := r.API()
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
		cli.WriteStatus(e.Stdout, st, time.Now(), r.Zone(ctx))
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

func replay(ctx context.Context, e *cli.Env, args []string) error {
	fs, r := e.RemoteFlags("replay", cli.ServerUsage, true)
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
	if err := cli.ReplayModeFlags(fs, *events); err != nil {
		return err
	}
	c, err := r.API()
	if err != nil {
		return err
	}
	if *events {
		return replayEvents(ctx, e, r, c, *tgt, ids, *dryRun)
	}
	cl, err := e.Classes("replay", *classes)
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

// replayEvents replays (or with dryRun previews) the DEAD events of target and ids.
func replayEvents(ctx context.Context, e *cli.Env, r *cli.Remote, c *client.Client, target string, ids []int64, dryRun bool) error {
	if err := r.CheckTarget(ctx, "replay", target); err != nil {
		return err
	}
	res, err := c.ReplayEvents(ctx, target, ids, dryRun)
	if err != nil {
		return err
	}
	cli.WriteReplay(e.Stdout, res, true, dryRun)
	return nil
}

func decode(ctx context.Context, e *cli.Env, args []string) error {
	cfg, rest, err := loadConfig(e, e.Flags("decode"), args)
	if err != nil {
		return err
	}
	if len(rest) != 1 {
		return e.Usage("decode")
	}
	raw, err := os.ReadFile(rest[0])
	if err != nil {
		return err
	}
	out, err := sis.Explain(raw, app.Decoding(cfg), pipeline.IdentityMode(cfg.Identity.Mode))
	if err != nil {
		cli.WriteJSON(e.Stdout, out)
		return app.ExitError{Code: 1, Msg: err.Error()}
	}
	return cli.WriteJSON(e.Stdout, out)
}
