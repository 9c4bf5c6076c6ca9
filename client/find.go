package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
)

// Hit is one thing GET /api/v1/find found: a flight (ID = FLID) or a message (ID = its id).
type Hit struct {
	Kind  string `json:"kind"`  // flight, message
	ID    int64  `json:"id"`    // FLID or message id
	Match string `json:"match"` // flno, flid, registration, stand, gate, body
	Label string `json:"label"` // one line for a person
	Day   string `json:"day,omitempty"`
}

// FindAnswer is the answer of GET /api/v1/find.
type FindAnswer struct {
	Query string `json:"q"`
	Hits  []Hit  `json:"hits"`
	// Days are the first and last local day whose flights were searched.
	Days [2]string `json:"days"`
	// MessagesScanned is how many of the newest messages' bodies were searched (0: none).
	MessagesScanned int `json:"messages_scanned"`
	// More is true when more hits matched than the limit let through.
	More bool `json:"more"`
	// Searched says in words what was searched.
	Searched string `json:"searched"`
	// Timezone is the zone of the times in the labels: the airport's (sis.timezone), or UTC
	// when the caller asked tz=UTC.
	Timezone string `json:"timezone"`
}

// Find searches flights and messages for q, at most limit hits of each kind (0: the server's
// default), the labels' times in zone tz ("": the airport's; "UTC" for scripts).
func (c *Client) Find(ctx context.Context, q string, limit int, tz string) (FindAnswer, error) {
	v := url.Values{"q": {q}}
	if tz != "" {
		v.Set("tz", tz)
	}
	if limit > 0 {
		v.Set("limit", fmt.Sprint(limit))
	}
	return get[FindAnswer](ctx, c, "/api/v1/find?"+v.Encode())
}

// NumberedFlights is GET /api/v1/flights?flno=…'s answer: the flights of one number, by day
// then SODT, in the days searched (first and last).
type NumberedFlights struct {
	FLNO    string            `json:"flno"`
	Days    [2]string         `json:"days"`
	Count   int               `json:"count"`
	Flights []json.RawMessage `json:"flights"`
}

// FlightsByNumber returns the flights numbered flno (however it is written: ca8241, CA08241)
// in the server's search window of days, or of day when it is not "".
func (c *Client) FlightsByNumber(ctx context.Context, flno, day string) (NumberedFlights, error) {
	v := url.Values{"flno": {flno}}
	if day != "" {
		v.Set("day", day)
	}
	return get[NumberedFlights](ctx, c, "/api/v1/flights?"+v.Encode())
}
