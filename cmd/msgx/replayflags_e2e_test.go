package main_test

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
)

// exitCode is the exit status of a finished command's error (0 for none, -1 when it did not
// exit on its own).
func exitCode(err error) int {
	var x *exec.ExitError
	if errors.As(err, &x) {
		return x.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// A flag that does not apply to the chosen replay is refused (exit 2, naming it and what to
// use) and nothing moves: `replay --events --class X` once replayed every dead event for
// real. The dry runs describe what would move as a table: id, tag (or target / tag), class
// and age.
func TestReplayRefusesAFlagOfTheOtherModeAndPreviewsAsATable(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db dbEnv) {
		s, dead := blockedWebhook(t, db)
		deadEvents := s.events("target=WEBHOOK_OPS&state=DEAD")
		if len(deadEvents) == 0 {
			t.Fatal("no dead events to replay")
		}
		for _, args := range [][]string{
			{"replay", "--events", "--class", "ORPHAN"},
			{"replay", "--events", "--target", "WEBHOOK_OPS", "--class", "INFRA"},
			{"replay", "--class", "ORPHAN", "--target", "WEBHOOK_OPS"},
		} {
			out, err := s.cli(nil, args...)
			flagName := "--class"
			if args[1] != "--events" {
				flagName = "--target"
			}
			if exitCode(err) != 2 || !strings.Contains(out, flagName) || !strings.Contains(out, "nothing was replayed") {
				t.Errorf("msgx %s: exit %d, want 2 naming %s:\n%s", strings.Join(args, " "), exitCode(err), flagName, out)
			}
		}
		still := map[int64]bool{}
		for _, e := range s.events("target=WEBHOOK_OPS&state=DEAD") {
			still[e.EventID] = true
		}
		for _, e := range deadEvents {
			if !still[e.EventID] {
				t.Fatalf("event %d is no longer DEAD after a refused replay", e.EventID)
			}
		}
		for _, id := range dead {
			if m := s.message(id); m.State != "DEAD" {
				t.Fatalf("message %d moved after a refused replay: %+v", id, m)
			}
		}

		out := s.mustCLI([]string{fmt.Sprintf("would move %d messages", len(dead))}, "replay", "--class", "ORPHAN", "--dry-run")
		wantTable(t, out, []string{"id", "tag", "class", "age"}, fmt.Sprint(dead[0]), "FLOP-EOBT", "ORPHAN")
		out = s.mustCLI([]string{"dry run: would move"}, "replay", "--events", "--target", "WEBHOOK_OPS", "--dry-run")
		wantTable(t, out, []string{"id", "target / tag", "class", "age"}, fmt.Sprint(deadEvents[0].EventID), "WEBHOOK_OPS / ", "")
		if m := s.message(dead[0]); m.State != "DEAD" {
			t.Fatalf("the dry run moved message %d: %+v", dead[0], m)
		}
	})
}

// wantTable checks that out has a header line with the columns, and a row that starts with
// id and holds tag and class.
func wantTable(t *testing.T, out string, columns []string, id, tag, class string) {
	t.Helper()
	header, row := false, false
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) > 0 && f[0] == "id" {
			header = true
			for _, c := range columns {
				header = header && strings.Contains(line, c)
			}
		}
		if len(f) >= 4 && f[0] == id && strings.Contains(line, tag) && strings.Contains(line, class) {
			row = true
		}
	}
	if !header || !row {
		t.Fatalf("dry run is not a table with columns %v and a row for %s (%s %s):\n%s", columns, id, tag, class, out)
	}
}
