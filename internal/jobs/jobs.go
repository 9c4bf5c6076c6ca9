// Package jobs runs the pump's jobs (PUMP_JOB rows), which share the message order: ARCHIVE
// moves finished messages older than the retention from CMINMSGS to CMINMSGS_HST.
package jobs

import (
	"context"
	"fmt"
	"time"

	"msgx/internal/pipeline"
	"msgx/internal/store"
)

// Archive is the kind of the archive job.
const Archive = "ARCHIVE"

// Runner executes jobs for the pump.
type Runner struct {
	DB        store.Archive
	Clock     pipeline.Clock
	Retention time.Duration // ARCHIVE keeps messages younger than this; default 24h
}

// RunJob executes one job.
func (r *Runner) RunJob(ctx context.Context, j *store.Job) (string, error) {
	switch j.Kind {
	case Archive:
		keep := r.Retention
		if keep <= 0 {
			keep = 24 * time.Hour
		}
		n, err := r.DB.Archive(ctx, j.AfterMsgID, r.Clock.Now().Add(-keep))
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("archived %d messages", n), nil
	}
	return "", pipeline.Errorf(pipeline.Unsupported, "no runner for job kind %q", j.Kind)
}
