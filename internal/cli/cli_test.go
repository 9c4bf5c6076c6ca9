package cli

import "testing"

// A mistyped flag is put in the README's spelling with the flag probably meant.
func TestFlagProblem(t *testing.T) {
	t.Parallel()
	fs := (&Program{Name: "msgx"}).Flags("send")
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
