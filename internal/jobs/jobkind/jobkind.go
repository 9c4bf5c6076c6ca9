// Package jobkind names the jobs of internal/jobs and reads the local times of day the daily
// ones run at (jobs.archive-at and the like). It imports nothing of msgx, so that what only
// names the kinds or reads the times (the CLI) builds without the jobs themselves (their
// stores and history sinks).
package jobkind

import (
	"fmt"
	"strings"
	"time"
)

// The job kinds.
const (
	Archive      = "ARCHIVE"
	HistorySweep = "HISTORY_SWEEP"
	Retention    = "RETENTION"
	// ProjectionRebuild rebuilds the non-authoritative flight store from the authoritative
	// one for the active days (phase A: FLIGHT_STATE from Redis; phase B with the
	// REDIS_FLIGHT target: Redis from FLIGHT_STATE; jobs.Runner.Rebuild).
	ProjectionRebuild = "PROJECTION_REBUILD"
	// ConsistencyCheck compares a sample of the flights of the two flight stores (Redis and
	// FLIGHT_STATE: phase A, or phase B with REDIS_FLIGHT; jobs.Runner.Consistency), scheduled daily.
	ConsistencyCheck = "CONSISTENCY_CHECK"
	// RedisRestore writes FLIGHT_STATE back into Redis (phase A), all the active days or one
	// flight or day, with the marks (jobs.Runner.Restore). While the pump is stopped because
	// Redis lost data it runs at once, ahead of the message order.
	RedisRestore = "REDIS_RESTORE"
)

// Kinds lists the job kinds an operator may enqueue (POST /api/v1/jobs).
var Kinds = []string{Archive, HistorySweep, Retention, ProjectionRebuild, ConsistencyCheck, RedisRestore}

// Entry is one daily job of the schedule: its kind and its local time of day.
type Entry struct {
	Kind   string
	Hour   int
	Minute int
}

// ParseAt reads a local time of day "HH:MM" (jobs.archive-at and the like); "" or "off"
// switch the job off (on is false).
func ParseAt(s string) (hour, minute int, on bool, err error) {
	s = strings.TrimSpace(s)
	if s == "" || strings.EqualFold(s, "off") {
		return 0, 0, false, nil
	}
	t, err := time.Parse("15:04", s)
	if err != nil {
		return 0, 0, false, fmt.Errorf("%q is not a local time of day HH:MM (or off)", s)
	}
	return t.Hour(), t.Minute(), true, nil
}
