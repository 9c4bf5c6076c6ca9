package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"syscall"
	"time"

	"msgx/internal/client"
)

// followPoll is how often messages --follow asks the server for what arrived.
const followPoll = 500 * time.Millisecond

// followMessages is messages --follow: like tail -f, the newest limit messages the filters
// select (oldest of them first), then every message taken since, newest at the bottom, until
// Ctrl-C. It asks GET /api/v1/messages with the after cursor every followPoll; a failed ask
// is said on stderr once and asked again.
func followMessages(c *client.Client, filters url.Values, limit int, asJSON bool) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	q := cloneValues(filters)
	q.Set("limit", strconv.Itoa(limit))
	var first client.MessageList
	if err := c.Get("/api/v1/messages?"+q.Encode(), &first); err != nil {
		return err
	}
	slices.Reverse(first.Messages)
	if !asJSON {
		printMessageHeader()
	}
	after := printMessages(first.Messages, asJSON, 0)
	tick := time.NewTicker(followPoll)
	defer tick.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		q := cloneValues(filters)
		q.Set("order", "asc")
		q.Set("limit", "1000")
		q.Set("after", strconv.FormatInt(after, 10))
		var page client.MessageList
		if err := c.Get("/api/v1/messages?"+q.Encode(), &page); err != nil {
			if !failing && ctx.Err() == nil {
				fmt.Fprintf(os.Stderr, "msgx: %v (asking again every %v)\n", err, followPoll)
			}
			failing = true
			continue
		}
		if failing {
			fmt.Fprintln(os.Stderr, "msgx: the server answers again")
			failing = false
		}
		after = printMessages(page.Messages, asJSON, after)
	}
}

func cloneValues(v url.Values) url.Values {
	out := url.Values{}
	for k, vs := range v {
		out[k] = slices.Clone(vs)
	}
	return out
}

// printMessages prints ms (a JSON line each with asJSON) and returns the largest id seen.
func printMessages(ms []client.Message, asJSON bool, after int64) int64 {
	for _, m := range ms {
		if asJSON {
			b, _ := json.Marshal(m)
			os.Stdout.Write(append(b, '\n'))
		} else {
			printMessageLine(m)
		}
		after = max(after, m.ID)
	}
	return after
}
