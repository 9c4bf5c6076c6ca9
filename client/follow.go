package client

import (
	"context"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"time"
)

// FollowPoll is how often FollowMessages asks the server for what arrived.
const FollowPoll = 500 * time.Millisecond

// FollowMessages follows GET /api/v1/messages like tail -f: it hands show the newest limit
// messages the filters select (oldest of them first), then, every FollowPoll until ctx ends,
// the messages taken since (the after cursor, oldest first). A failed ask is handed to
// trouble (nil when the server answers again) and asked again. It returns nil when ctx ends.
func (c *Client) FollowMessages(ctx context.Context, filters url.Values, limit int, show func([]Message), trouble func(error)) error {
	q := maps.Clone(filters)
	if q == nil {
		q = url.Values{}
	}
	q.Set("limit", strconv.Itoa(limit))
	first, err := c.Messages(ctx, q)
	if err != nil {
		return err
	}
	slices.Reverse(first.Messages)
	after := lastID(first.Messages, 0)
	show(first.Messages)
	tick := time.NewTicker(FollowPoll)
	defer tick.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		q.Set("order", "asc")
		q.Set("limit", "1000")
		q.Set("after", strconv.FormatInt(after, 10))
		page, err := c.Messages(ctx, q)
		if err != nil {
			if !failing && ctx.Err() == nil {
				trouble(err)
			}
			failing = true
			continue
		}
		if failing {
			trouble(nil)
			failing = false
		}
		after = lastID(page.Messages, after)
		show(page.Messages)
	}
}

// lastID is the largest id of ms, at least after.
func lastID(ms []Message, after int64) int64 {
	for _, m := range ms {
		after = max(after, m.ID)
	}
	return after
}
