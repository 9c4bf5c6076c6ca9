package main

import (
	"context"
	"fmt"

	"msgx/client"
	"msgx/internal/cli"
	"msgx/internal/pipeline"
)

// messages lists messages with their state, class, note and warnings.
func messages(ctx context.Context, e *cli.Env, args []string) error {
	fs, r := e.RemoteFlags("messages", cli.ServerUsage, true)
	state := fs.String("state", "", "only this state `S` (PENDING, SUCCEEDED, SKIPPED, FAILED, DEAD)")
	class := fs.String("class", "", "only this error class `C`")
	page := e.ListFlags(fs, "messages", 50)
	asJSON := fs.Bool("json", false, "print the raw JSON")
	flid := fs.Int64("flid", 0, "only messages that changed this flight")
	tag := fs.String("tag", "", "only this type tag (FLOP-CHOT) or TYPE (FLOP)")
	from := fs.String("from", "", "only messages taken at or after this time (RFC 3339 or YYYY-MM-DD, UTC)")
	to := fs.String("to", "", "only messages taken before this time")
	text := fs.String("q", "", "only messages whose identity, last error or note contains this text, or whose body does (newest 50,000 messages)")
	follow := fs.Bool("follow", false, "print the newest messages, then each one taken as it arrives (newest at the bottom) until Ctrl-C")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 {
		return e.Usage("messages")
	}
	var err error
	if *state, err = e.Choice("messages", "state", *state, []string{string(pipeline.Pending), string(pipeline.Succeeded), string(pipeline.Skipped), string(pipeline.Failed), string(pipeline.Dead)}); err != nil {
		return err
	}
	if *class, err = e.Choice("messages", "class", *class, cli.ErrorClasses()); err != nil {
		return err
	}
	c, err := r.API()
	if err != nil {
		return err
	}
	filters := []string{"flid", cli.NonZero(*flid), "tag", *tag, "q", *text, "state", *state, "class", *class}
	if *follow { // from the newest on: --from and --to do not apply
		return e.FollowMessages(ctx, c, page.Limit, *asJSON, filters...)
	}
	var out client.MessageList
	if printed, err := page.Show(ctx, r, "/api/v1/messages", *asJSON, &out, append(filters, "from", *from, "to", *to)...); printed || err != nil {
		return err
	}
	cli.WriteMessageHeader(e.Stdout)
	for _, m := range out.Messages {
		cli.WriteMessageLine(e.Stdout, m)
	}
	page.More(out.Page)
	return nil
}

// message shows one message in full: state, class, last error, note and every warning.
func message(ctx context.Context, e *cli.Env, args []string) (err error) {
	fs, r := e.RemoteFlags("message", cli.ServerUsage, true)
	asJSON := fs.Bool("json", false, "print the raw JSON")
	rawBody := fs.Bool("raw", false, "print the raw text as received, nothing else")
	history := fs.Bool("history", false, "also print the message's history (each attempt, park and replay)")
	r.UTCFlag(fs)
	if err := fs.Parse(cli.Reorder(fs, args)); err != nil || fs.NArg() != 1 {
		return cli.UsageError("usage: msgx message [--server URL] [--json] [--raw] [--history] ID")
	}
	id, c, err := r.IDAndAPI("message", fs.Arg(0), "a message id")
	if err != nil {
		return err
	}
	if *rawBody {
		b, err := c.Raw(ctx, fmt.Sprintf("/api/v1/messages/%d/raw", id))
		if err != nil {
			return err
		}
		e.Stdout.Write(b)
		return nil
	}
	var m client.Message
	if printed, err := r.Show(ctx, fmt.Sprintf("/api/v1/messages/%d", id), *asJSON, &m); printed || err != nil {
		return err
	}
	z := r.Zone(ctx)
	cli.WriteMessage(e.Stdout, m, z)
	if *history {
		history, err := c.MessageHistory(ctx, id)
		if err != nil {
			return err
		}
		cli.WriteHistory(e.Stdout, history, z)
	}
	return nil
}
