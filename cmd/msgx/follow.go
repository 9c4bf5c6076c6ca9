package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os/signal"
	"syscall"

	"msgx/client"
	"msgx/internal/cli"
)

// followMessages is messages --follow: like tail -f, the newest limit messages the filters
// select (oldest of them first), then every message taken since, newest at the bottom, until
// Ctrl-C (client.FollowMessages asks the server every half second).
func followMessages(e *cli.Env, c *client.Client, filters url.Values, limit int, asJSON bool) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if !asJSON {
		cli.WriteMessageHeader(e.Stdout)
	}
	return c.FollowMessages(ctx, filters, limit, func(ms []client.Message) { printMessages(e, ms, asJSON) }, func(err error) {
		if err != nil {
			fmt.Fprintf(e.Stderr, "msgx: %v (asking again every %v)\n", err, client.FollowPoll)
			return
		}
		fmt.Fprintln(e.Stderr, "msgx: the server answers again")
	})
}

// printMessages prints ms, a JSON line each with asJSON.
func printMessages(e *cli.Env, ms []client.Message, asJSON bool) {
	for _, m := range ms {
		if asJSON {
			b, _ := json.Marshal(m)
			e.Stdout.Write(append(b, '\n'))
		} else {
			cli.WriteMessageLine(e.Stdout, m)
		}
	}
}
