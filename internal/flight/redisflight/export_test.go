package redisflight

import (
	"context"
	"time"

	"msgx/internal/pipeline"
)

// ApplyAfterRead is ApplyMessage with between run after the versions are read and before the
// script: the tests' other writer.
func ApplyAfterRead(s *Store, ctx context.Context, msgID int64, writes []pipeline.FlightWrite, marker []byte, between func()) error {
	afterRead = between
	defer func() { afterRead = nil }()
	_, _, err := s.ApplyMessage(ctx, msgID, writes, marker, time.Now())
	return err
}
