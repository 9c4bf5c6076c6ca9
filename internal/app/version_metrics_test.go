package app

import (
	"strings"
	"testing"
)

// msgx_build_info's version is never empty: the one set at link time, else what the build
// recorded (a module version, or devel- and the commit in a checkout), else "unknown".
func TestMetricsVersionNeverEmpty(t *testing.T) {
	t.Parallel()
	if got := metricsVersion("v1.2.3"); got != "v1.2.3" {
		t.Errorf("set at link time: %q", got)
	}
	got := metricsVersion("")
	b := ReadBuild("")
	switch {
	case got == "":
		t.Fatal("empty version")
	case b.Commit != "" && (b.Version == "(devel)" || b.Version == ""):
		if !strings.HasPrefix(got, "devel-") || !strings.HasPrefix(b.Commit, strings.TrimPrefix(got, "devel-")) {
			t.Errorf("a checkout's build: %q, want devel- and the start of %s", got, b.Commit)
		}
	}
}
