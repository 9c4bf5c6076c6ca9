package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"time"
)

// The operators' calls of the ops API (docs/api.md), as the msgx command makes them.

// Pause is a pause of the pump or of a delivery target.
type Pause struct {
	Name   string    `json:"name"`
	By     string    `json:"paused_by"`
	Reason string    `json:"reason"`
	At     time.Time `json:"paused_at"`
}

// PauseAnswer is the answer of a pause or resume of the pump or of a target.
type PauseAnswer struct {
	Name   string `json:"name"` // "pump" or "target:<NAME>"
	Paused bool   `json:"paused"`
	Pause  *Pause `json:"pause"`
	// Changed is false when it already was as asked.
	Changed bool `json:"changed"`
}

// SetPaused pauses (paused true) or resumes the pump, or target when it is not "", saying why
// (reason, kept in the audit log).
func (c *Client) SetPaused(ctx context.Context, paused bool, target, reason string) (PauseAnswer, error) {
	action := "resume"
	if paused {
		action = "pause"
	}
	path := "/api/v1/pump/" + action
	if target != "" {
		path = "/api/v1/targets/" + url.PathEscape(target) + "/" + action
	}
	var res PauseAnswer
	err := c.PostJSON(ctx, path, map[string]string{"reason": reason}, &res)
	return res, err
}

// Park sets message id aside (DEAD with class PARKED, replayable), saying why.
func (c *Client) Park(ctx context.Context, id int64, reason string) (ParkAnswer, error) {
	var res ParkAnswer
	err := c.PostJSON(ctx, fmt.Sprintf("/api/v1/messages/%d/park", id), map[string]string{"reason": reason}, &res)
	return res, err
}

// Replay moves back to PENDING the failed and dead messages of classes and ids (with dryRun
// it only says which it would move).
func (c *Client) Replay(ctx context.Context, classes []string, ids []int64, dryRun bool) (ReplayAnswer, error) {
	var res ReplayAnswer
	err := c.PostJSON(ctx, "/api/v1/replay", map[string]any{"ids": ids, "classes": classes, "dry_run": dryRun}, &res)
	return res, err
}

// ReplayEvents moves back to PENDING the DEAD delivery events ids, or all of target (with
// dryRun it only says which it would move).
func (c *Client) ReplayEvents(ctx context.Context, target string, ids []int64, dryRun bool) (ReplayAnswer, error) {
	var res ReplayAnswer
	err := c.PostJSON(ctx, "/api/v1/events/replay", map[string]any{"target": target, "ids": ids, "dry_run": dryRun}, &res)
	return res, err
}

// Flight returns flight flid's record as the API answers it.
func (c *Client) Flight(ctx context.Context, flid int64) (json.RawMessage, error) {
	return get[json.RawMessage](ctx, c, fmt.Sprintf("/api/v1/flights/%d", flid))
}

// Audit returns a page of the audit log: query holds the listing's parameters (limit,
// before, after, order; docs/api.md, Listings).
func (c *Client) Audit(ctx context.Context, query url.Values) (AuditPage, error) {
	return get[AuditPage](ctx, c, "/api/v1/audit?"+query.Encode())
}

// RequestReference asks the AODB for reference type styp (RQRD) and returns the request
// queued.
func (c *Client) RequestReference(ctx context.Context, styp string) (Request, error) {
	return c.request(ctx, map[string]string{"type": "RQRD", "ref_type": styp})
}

// RequestSchedule asks the AODB for the schedule window from–to (RQFD) and returns the
// request queued.
func (c *Client) RequestSchedule(ctx context.Context, from, to string) (Request, error) {
	return c.request(ctx, map[string]string{"type": "RQFD", "from": from, "to": to})
}

func (c *Client) request(ctx context.Context, body map[string]string) (Request, error) {
	var r Request
	err := c.PostJSON(ctx, "/api/v1/requests", body, &r)
	return r, err
}

// FlightEntry is GET /api/v1/flights/{flid}'s answer: the stored record and what the store
// knows of it.
type FlightEntry struct {
	Day       string          `json:"day"`
	FLID      int64           `json:"FLID"`
	Version   int64           `json:"version"`
	MsgID     *int64          `json:"msg_id"`
	Record    json.RawMessage `json:"record"`
	UpdatedAt time.Time       `json:"updated_at"`
}
