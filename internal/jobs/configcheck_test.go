package jobs_test

import (
	"strings"
	"testing"

	"msgx/internal/jobs"
)

// The daily jobs' times are "HH:MM", or "" or "off" for none; a bad one names its key.
func TestCheckTimesNamesTheKey(t *testing.T) {
	good := map[string]string{"jobs.archive-at": "off", "jobs.history-sweep-at": "02:15", "jobs.retention-at": "", "consistency-check.daily-at": "05:00"}
	if err := jobs.CheckTimes(good); err != nil {
		t.Fatal(err)
	}
	for key, v := range map[string]string{
		"jobs.archive-at":            "3am",
		"jobs.history-sweep-at":      "24:00",
		"jobs.retention-at":          "4",
		"consistency-check.daily-at": "25:00",
	} {
		if err := jobs.CheckTimes(map[string]string{key: v}); err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%s=%s: error %v does not name %s", key, v, err, key)
		}
	}
}
