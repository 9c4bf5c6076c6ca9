package docs_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"msgx/internal/cli"
)

var update = flag.Bool("update", false, "rewrite docs/cli.md from cmd/msgx/commands.txt")

// commandName finds the name of each command in the command table ("== NAME SYNOPSIS").
var commandName = regexp.MustCompile(`(?m)^== (\S+)`)

// cliReference renders docs/cli.md from the command table msgx reads (cmd/msgx/commands.txt),
// read by the same code as msgx's own help (cli.Program.ReadTable): the list of commands, the
// text that ends `msgx help`, and for each command what `msgx help COMMAND` prints but its
// flags, which the command's code declares.
func cliReference(t *testing.T) string {
	t.Helper()
	text := read(t, "cmd/msgx/commands.txt")
	runs := map[string]func(context.Context, *cli.Env, []string) error{}
	for _, m := range commandName.FindAllStringSubmatch(text, -1) {
		runs[m[1]] = func(context.Context, *cli.Env, []string) error { return nil }
	}
	prog := &cli.Program{Name: "msgx"}
	if err := prog.ReadTable(text, runs); err != nil {
		t.Fatalf("cmd/msgx/commands.txt: %v", err)
	}
	var b strings.Builder
	b.WriteString(`# msgx command reference

<!-- Generated from cmd/msgx/commands.txt by go test ./docs -run TestCLIReference -update:
edit the command texts there, not this file. -->

Every command of ` + "`msgx`" + ` as ` + "`msgx help COMMAND`" + ` shows it: its usage, what it does and
examples (` + "`msgx help COMMAND`" + ` lists its flags too). How the commands find the server,
print times and page lists: [operations.md](operations.md#the-command-line).

| command | what it does |
|---|---|
`)
	for _, c := range prog.Commands {
		fmt.Fprintf(&b, "| [`%s`](#msgx-%s) | %s |\n", c.Name, c.Name, strings.ReplaceAll(c.Summary, "|", `\|`))
	}
	fmt.Fprintf(&b, "\n## Every command\n\n```text\n%s```\n", prog.Footer)
	for _, c := range prog.Commands {
		fmt.Fprintf(&b, "\n## msgx %s\n\n%s\n\n```text\n%s```\n", c.Name, c.Summary, prog.CommandHelp(c, nil))
	}
	return b.String()
}

// TestCLIReference: docs/cli.md is what the command table gives, so the reference says what
// `msgx help` says. `go test ./docs -run TestCLIReference -update` writes it again.
func TestCLIReference(t *testing.T) {
	want := cliReference(t)
	file := filepath.Join(root, "docs", "cli.md")
	if *update {
		if err := os.WriteFile(file, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got := read(t, "docs/cli.md")
	if got == want {
		return
	}
	gl, wl := strings.Split(got, "\n"), strings.Split(want, "\n")
	i := 0
	for i < len(gl) && i < len(wl) && gl[i] == wl[i] {
		i++
	}
	line := func(ls []string) string {
		if i < len(ls) {
			return ls[i]
		}
		return "(the end)"
	}
	t.Errorf("docs/cli.md is not what cmd/msgx/commands.txt gives (line %d is %q, want %q); "+
		"run go test ./docs -run TestCLIReference -update", i+1, line(gl), line(wl))
}
