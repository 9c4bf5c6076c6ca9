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
	for _, c := range commands {
		if seen[c.name] {
			t.Errorf("command %s is in the table twice", c.name)
		}
		seen[c.name] = true
		if c.run == nil || c.summary == "" || !strings.Contains(c.help, "Examples:\n  msgx "+c.name) {
			t.Errorf("command %s lacks a function, a summary or examples of itself in its help", c.name)
		}
	}
}

// A mistyped flag is put in the README's spelling with the flag probably meant.
func TestFlagProblem(t *testing.T) {
	t.Parallel()
	fs := newFlags("send")
	fs.String("server", "", "")
	for in, want := range map[string]string{
		"flag provided but not defined: -sever":  "unknown flag --sever (did you mean --server?)",
		"flag provided but not defined: -zzz":    "unknown flag --zzz",
		"flag needs an argument: -server":        "flag --server needs a value",
		`invalid value "x" for flag -limit: bad`: `invalid value "x" for flag --limit: bad`,
	} {
		if got := flagProblem(fs, in); got != want {
			t.Errorf("flagProblem(%q) = %q, want %q", in, got, want)
		}
	}
}
