package jobs

import (
	"fmt"
	"sort"

	"msgx/internal/jobs/jobkind"
)

// CheckTimes checks the local times of day the daily jobs run at, given by their keys
// (jobs.archive-at, jobs.history-sweep-at, jobs.retention-at, consistency-check.daily-at):
// each "HH:MM", or "" or "off" for none. The first bad one in the order of the keys is named.
func CheckTimes(at map[string]string) error {
	keys := make([]string, 0, len(at))
	for k := range at {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if _, _, _, err := jobkind.ParseAt(at[k]); err != nil {
			return fmt.Errorf("%s: %v", k, err)
		}
	}
	return nil
}
