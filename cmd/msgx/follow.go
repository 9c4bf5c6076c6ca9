package main

import (
	"context"
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
	return c.FollowMessages(ctx, filters, limit, func(ms []client.Message) { cli.WriteMessages(e.Stdout, ms, asJSON) }, func(err error) {
		if err != nil {
			fmt.Fprintf(e.Stderr, "msgx: %v (asking again every %v)\n", err, client.FollowPoll)
			return
		}
		fmt.Fprintln(e.Stderr, "msgx: the server answers again")
	})
}
