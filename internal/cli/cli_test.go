package cli

import "testing"

// A mistyped flag is put in the README's spelling with the flag probably meant.
func TestFlagProblem(t *testing.T) {
	t.Parallel()
	fs := (&Env{Program: &Program{Name: "msgx"}}).Flags("send")
	fs.String("server", "", "")
	for in, want := range map[string]string{
		"flag provided but not defined: -sever":  "unknown flag --sever (did you mean --server?)",
		"flag provided but not defined: -zzz":    "unknown flag --zzz",
		"flag needs an argument: -server":        "flag --server needs a value",
		`invalid value "x" for flag -limit: bad`: `invalid value "x" for flag --limit: bad`,
	} {
		if got := FlagProblem(fs, in); got != want {
			t.Errorf("FlagProblem(%q) = %q, want %q", in, got, want)
		}
	}
}

// A word a user types for a command (a hint) is answered with that command, and the closest
// name besides it; any other unknown name with the closest name.
func TestUnknownSuggestsTheHintedCommand(t *testing.T) {
	t.Parallel()
	p := &Program{Name: "msgx", Commands: []Command{{Name: "flight"}, {Name: "board"}, {Name: "status"}},
		Hints: map[string]string{"flights": "board"}}
	for in, want := range map[string]string{
		"flights": `msgx: unknown command "flights" (did you mean board? or flight?)`,
		"Flights": `msgx: unknown command "Flights" (did you mean board? or flight?)`,
		"statsu":  `msgx: unknown command "statsu" (did you mean status?)`,
	} {
		if got := p.Unknown(in); got != want+"\nRun 'msgx help' for the list of commands." {
			t.Errorf("Unknown(%q) = %q", in, got)
		}
	}
}

// A command's usage error says its synopsis as the command table has it.
func TestUsage(t *testing.T) {
	t.Parallel()
	e := &Env{Program: &Program{Name: "msgx", Commands: []Command{{Name: "send", Synopsis: "[--server URL] FILE…"}}}}
	if got := e.Usage("send"); got != "usage: msgx send [--server URL] FILE…" {
		t.Errorf("Usage(send) = %q", got)
	}
}
