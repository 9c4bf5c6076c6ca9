package main

import (
	"encoding/json"
	"fmt"
	"time"

	"msgx/internal/jobs"
	"msgx/internal/pump"
	"msgx/internal/store"
)

// printJobs prints, for msgx status, the job in hand and the last job of each kind, and takes
// their sections out of extra.
func printJobs(extra map[string]json.RawMessage) {
	var j *jobs.Progress
	if _, ok, err := takeSection(extra, "job", &j); ok && err == nil && j != nil {
		fmt.Printf("job in hand: %s (job %d) for %s: %s\n", j.Kind, j.JobID, j.RunningFor, j.Doing)
	}
	var h *pump.InHand
	if _, ok, err := takeSection(extra, "in_hand", &h); ok && err == nil && h != nil {
		fmt.Printf("message in hand: %d %s for %s: %s\n", h.MsgID, h.Tag, h.RunningFor, h.Doing)
	}
	var list []store.Job
	if _, ok, err := takeSection(extra, "last_jobs", &list); !ok || err != nil || len(list) == 0 {
		return
	}
	fmt.Println("last jobs:")
	for _, j := range list {
		what := ""
		switch {
		case j.Result != nil:
			what = *j.Result
		case j.LastError != nil:
			what = *j.LastError
		}
		when := j.CreatedAt.Format(time.RFC3339)
		if j.FinishedAt != nil {
			when = j.FinishedAt.Format(time.RFC3339)
		}
		fmt.Printf("  %-13s job %d %s %s: %s\n", j.Kind, j.ID, j.State, when, what)
	}
}
