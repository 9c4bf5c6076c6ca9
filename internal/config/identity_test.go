package config

import (
	"strings"
	"testing"
)

// identity.mode defaults to content; include-day-boundary, the older setting, still selects
// seqn-day; an unknown mode, or the older setting beside another mode, stops the start naming
// the key.
func TestIdentityMode(t *testing.T) {
	for env, want := range map[string]string{
		"":                            "content",
		"MSGX_IDENTITY_MODE=seqn":     "seqn",
		"MSGX_IDENTITY_MODE=seqn-day": "seqn-day",
		"MSGX_IDENTITY_INCLUDE_DAY_BOUNDARY=true": "seqn-day",
	} {
		c, err := Load("", strings.Fields(env))
		if err != nil || c.Identity.Mode != want {
			t.Errorf("%q: mode %q %v, want %s", env, c.Identity.Mode, err, want)
		}
	}
	c, err := Load("", []string{"MSGX_IDENTITY_INCLUDE_DAY_BOUNDARY=true", "MSGX_IDENTITY_MODE=seqn-day"})
	if err != nil || c.Identity.Mode != "seqn-day" {
		t.Errorf("both spellings of seqn-day: %q %v", c.Identity.Mode, err)
	}
	for _, bad := range [][]string{
		{"MSGX_IDENTITY_MODE=sequence"},
		{"MSGX_IDENTITY_MODE=Content"},
	} {
		if _, err := Load("", bad); err == nil || !strings.Contains(err.Error(), "identity.mode") {
			t.Errorf("%v: %v, want an error naming identity.mode", bad, err)
		}
	}
	for _, mode := range []string{"content", "seqn"} {
		_, err := Load("", []string{"MSGX_IDENTITY_INCLUDE_DAY_BOUNDARY=true", "MSGX_IDENTITY_MODE=" + mode})
		if err == nil || !strings.Contains(err.Error(), "identity.include-day-boundary") {
			t.Errorf("include-day-boundary beside mode %s: %v, want an error naming it", mode, err)
		}
	}
}
