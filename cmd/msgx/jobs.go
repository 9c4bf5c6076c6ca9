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
	if raw, ok := extra["job"]; ok {
		var j *jobs.Progress
		if err := json.Unmarshal(raw, &j); err == nil && j != nil {
			fmt.Printf("job in hand: %s (job %d) for %s: %s\n", j.Kind, j.JobID, j.RunningFor, j.Doing)
		}
		delete(extra, "job")
	}
	if raw, ok := extra["in_hand"]; ok {
		var h *pump.InHand
		if err := json.Unmarshal(raw, &h); err == nil && h != nil {
			fmt.Printf("message in hand: %d %s for %s: %s\n", h.MsgID, h.Tag, h.RunningFor, h.Doing)
		}
		delete(extra, "in_hand")
	}
	if raw, ok := extra["last_jobs"]; ok {
		var list []store.Job
		if err := json.Unmarshal(raw, &list); err == nil && len(list) > 0 {
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
		delete(extra, "last_jobs")
	}
}
