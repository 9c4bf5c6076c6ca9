package client

import (
	"context"
	"encoding/json"
	"net/url"
	"time"
)

// Board is GET /api/v1/flights?day=…'s answer: the flights of an airport day, in SODT then
// FLID order, and the zone the airport's times are in. It reads the board as of a past time
// too (AsOfBoard, as the server writes that one).
type Board struct {
	Day      string            `json:"day"`
	Today    string            `json:"today"`
	Timezone string            `json:"timezone"`
	Count    int               `json:"count"`
	Flights  []json.RawMessage `json:"flights"`
	// AsOf, HistoryFrom, Messages and Warnings are set on a board as of a past time
	// (BoardAsOf): the time (UTC), when the retained history starts, how many applied
	// messages the board was rebuilt from, and what the rebuild could not follow.
	AsOf        *time.Time `json:"as_of,omitempty"`
	HistoryFrom *time.Time `json:"history_from,omitempty"`
	Messages    int        `json:"messages,omitempty"`
	Warnings    []string   `json:"warnings,omitempty"`
	// Changed is when each flight (by FLID) last changed, by the answer's time or by AsOf.
	Changed map[int64]BoardChange `json:"changed"`
}

// BoardChange is when a flight of a board last changed, how long before the board's time,
// and, on a board as of a past time, by which message.
type BoardChange struct {
	At    time.Time `json:"changed_at"`
	AgeS  int64     `json:"changed_age_s"`
	MsgID int64     `json:"msg_id,omitempty"` // message ids start at 1
}

// AsOfBoard is GET /api/v1/flights?day=…&as_of=…'s answer as the server writes it: the
// board of the day as it stood at AsOf (UTC), when the retained history starts (nil when
// nothing was purged), how many applied messages it was folded from, and what the rebuild
// could not follow. Changed's ages are counted from AsOf.
type AsOfBoard struct {
	Day         string                `json:"day"`
	Today       string                `json:"today"`
	Timezone    string                `json:"timezone"`
	AsOf        time.Time             `json:"as_of"`
	HistoryFrom *time.Time            `json:"history_from"`
	Messages    int                   `json:"messages"`
	Count       int                   `json:"count"`
	Flights     []json.RawMessage     `json:"flights"`
	Changed     map[int64]BoardChange `json:"changed"`
	Warnings    []string              `json:"warnings"`
}

// BeforeHistory is the 409 before_history answer of a board as of a time older than the
// retained history: the error, the time asked (UTC) and where the history starts.
type BeforeHistory struct {
	ErrorBody
	AsOf        time.Time `json:"as_of"`
	HistoryFrom time.Time `json:"history_from"`
}

// Board returns the flights of the airport day day (today at the airport when "").
func (c *Client) Board(ctx context.Context, day string) (Board, error) {
	path := "/api/v1/flights"
	if day != "" {
		path += "?" + url.Values{"day": {day}}.Encode()
	}
	return get[Board](ctx, c, path)
}

// BoardAsOf returns the flights of the airport day day (today at the airport when "") as
// they stood at asOf: GET /api/v1/flights?day=…&as_of=…. asOf is a time of day on that day
// (08:15), a date and time (2026-12-06T08:15), both in the airport's zone (in UTC when utc),
// or an RFC 3339 time with its offset. A time before the retained history is an error
// (409 before_history) that names where the history starts.
func (c *Client) BoardAsOf(ctx context.Context, day, asOf string, utc bool) (Board, error) {
	q := url.Values{"as_of": {asOf}}
	if day != "" {
		q.Set("day", day)
	}
	if utc {
		q.Set("tz", "UTC")
	}
	return get[Board](ctx, c, "/api/v1/flights?"+q.Encode())
}

// Statuses returns the status codes' descriptions (reference data STTS: code → STTD), empty
// when they cannot be read.
func (c *Client) Statuses(ctx context.Context) map[string]string {
	var out struct {
		Records []struct {
			Key    string         `json:"key"`
			Fields map[string]any `json:"fields"`
		} `json:"records"`
	}
	m := map[string]string{}
	if c.Get(ctx, "/api/v1/ref/STTS", &out) != nil {
		return m
	}
	for _, r := range out.Records {
		if d, ok := r.Fields["STTD"].(string); ok {
			m[r.Key] = d
		}
	}
	return m
}
