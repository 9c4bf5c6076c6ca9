package main

import (
	"strings"
	"testing"
)

// Every entry of the command table (including commands added later) has what `msgx help`
// and `msgx help CMD` show: a summary, a function, and help ending with examples of itself.
func TestCommandTable(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, c := range prog.Commands {
		if seen[c.Name] {
			t.Errorf("command %s is in the table twice", c.Name)
		}
		seen[c.Name] = true
		if c.Run == nil || c.Summary == "" || !strings.Contains(c.Help, "Examples:\n  msgx "+c.Name) {
			t.Errorf("command %s lacks a function, a summary or examples of itself in its help", c.Name)
		}
	}
}
