package redisflight

import (
	"context"
	"time"

	"msgx/internal/pipeline"
)

// ApplyAfterRead is ApplyMessage with between run after the versions are read and before the
// script: the tests' other writer.
func ApplyAfterRead(s *Store, ctx context.Context, msgID int64, writes []pipeline.FlightWrite, marker []byte, between func()) error {
	c := *s // the same client and guard, with the hook
	c.afterRead = between
	_, _, err := c.ApplyMessage(ctx, msgID, writes, marker, time.Now())
	return err
}
