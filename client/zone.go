package client

import (
	"context"
	"fmt"
	"time"
)

// AirportZone returns the airport's zone as the server names it (GET /api/v1/me's timezone:
// sis.timezone). A zone this machine does not know is an error naming it.
func (c *Client) AirportZone(ctx context.Context) (*time.Location, error) {
	var me struct {
		Timezone string `json:"timezone"`
	}
	if err := c.Get(ctx, "/api/v1/me", &me); err != nil {
		return nil, err
	}
	if me.Timezone == "" {
		return time.UTC, nil
	}
	loc, err := time.LoadLocation(me.Timezone)
	if err != nil {
		return nil, fmt.Errorf("the server's airport zone %q is not known on this machine: %w", me.Timezone, err)
	}
	return loc, nil
}
