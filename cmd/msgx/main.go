// Command msgx is the one binary of the AODB message exchange: `msgx serve` runs the inbox,
// the pump, the dispatcher and the API; the other subcommands talk to a running server
// (send, status, replay, simulate) or work offline (decode, migrate, version). Run `msgx help`.
package main

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"

	"msgx/internal/app"
	"msgx/internal/suggest"
)

// version is set at build time with -ldflags "-X main.version=…"; otherwise `msgx version`
// reports the module version and VCS commit the Go toolchain embedded (app.ReadBuild).
var version = ""

// A command is one `msgx NAME …` subcommand. Adding a command is an entry in commands.txt
// (its synopsis, summary and help with examples) and its function in runs; the function builds
// its flags with newFlags so that --help, mistyped flags and the help text work like every
// other command's.
type command struct {
	name     string
	run      func(args []string) error
	synopsis string // the flags and arguments, as in the README: "[--server URL] FILE…"
	summary  string // one line for `msgx help`
	help     string // what `msgx help NAME` prints between the usage line and the flags; ends with examples
}

//go:embed commands.txt
var commandsText string

// runs are the commands' functions by name.
var runs = map[string]func([]string) error{
	"serve": serve, "send": send, "status": status, "messages": messages, "message": message,
	"replay": replay, "events": events, "flight": flightCmd, "park": park,
	"pause":  func(args []string) error { return pauseCmd(args, "pause") },
	"resume": func(args []string) error { return pauseCmd(args, "resume") },
	"jobs":   jobsCmd, "job": jobCmd, "audit": auditCmd, "token": token, "request": request,
	"requests": requestsList, "simulate": simulateCmd, "shadow": shadowCmd, "decode": decode,
	"migrate": migrate, "bench": benchCmd, "version": versionCmd, "help": helpCmd,
}

// usageFooter ends `msgx help` (from commands.txt).
var usageFooter string

// commands are listed by `msgx help` in the order of commands.txt. (Filled in init: the
// commands' functions refer back to the table through newFlags.)
var commands []command

func init() {
	preamble, text, _ := strings.Cut(commandsText, "\n== ")
	_, usageFooter, _ = strings.Cut(preamble, "\n\n")
	usageFooter = strings.TrimSpace(usageFooter) + "\n"
	for _, block := range strings.Split(text, "\n== ") {
		head, rest, _ := strings.Cut(block, "\n")
		summary, help, _ := strings.Cut(rest, "\n")
		name, synopsis, _ := strings.Cut(head, " ")
		if runs[name] == nil {
			panic("commands.txt: no function for command " + name)
		}
		commands = append(commands, command{name: name, run: runs[name], synopsis: synopsis, summary: summary, help: strings.TrimRight(help, "\n")})
	}
	if len(commands) != len(runs) {
		panic("commands.txt does not name every command of runs")
	}
}

// usage is the text `msgx help` prints.
func usage() string {
	var b strings.Builder
	b.WriteString("msgx — AODB message exchange\n\nUsage:\n  msgx COMMAND [flags] [arguments]\n\nCommands:\n")
	for _, c := range commands {
		fmt.Fprintf(&b, "  %-9s %s\n", c.name, c.summary)
	}
	b.WriteString("\n" + usageFooter)
	return b.String()
}

// Exit codes, one per reason an operator or a supervisor (systemd, Kubernetes) acts on
// differently. docs/operations.md lists them too.
const (
	exitFailure    = 1                  // any other error
	exitUsage      = 2                  // bad command line
	exitLeaseHeld  = app.ExitLeaseHeld  // serve: another live instance holds the pump lease and standby is impossible (SQLite)
	exitConfig     = app.ExitConfig     // the configuration is invalid, or the database refused it (credentials, unknown database)
	exitNoDatabase = app.ExitNoDatabase // serve: the database did not answer within database.wait-timeout
	exitUndecided  = 6                  // shadow diff: no difference found, but a legacy row id could be several flights
)

func main() {
	os.Exit(run(os.Args[1:]))
}

// run runs one command line and returns the exit code.
func run(argv []string) int {
	if len(argv) == 0 {
		fmt.Fprint(os.Stderr, usage())
		return exitUsage
	}
	name, args := argv[0], argv[1:]
	switch name {
	case "-h", "-help", "--help":
		name = "help"
	case "-version", "--version":
		name = "version"
	}
	cmd, ok := lookup(name)
	if !ok {
		fmt.Fprintf(os.Stderr, "msgx: unknown command %q%s\nRun 'msgx help' for the list of commands.\n", name, suggest.DidYouMean(name, commandNames()))
		return exitUsage
	}
	helpWanted = name != "help" && wantsHelp(args)
	err := cmd.run(args)
	if helpWanted || helpPrinted {
		if !helpPrinted { // a command that does not build its flags with newFlags
			fmt.Print(commandHelp(cmd, nil))
		}
		return 0
	}
	if e, ok := err.(app.ExitError); ok {
		err = app.ExitError{Code: e.Code, Msg: e.Msg}
	}
	if err != nil {
		if e, ok := err.(app.ExitError); ok {
			if e.Msg != "" {
				fmt.Fprintln(os.Stderr, e.Msg)
			}
			return e.Code
		}
		fmt.Fprintln(os.Stderr, "msgx "+name+": "+err.Error())
		return exitFailure
	}
	return 0
}

func lookup(name string) (command, bool) {
	for _, c := range commands {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

func commandNames() []string {
	out := make([]string, len(commands))
	for i, c := range commands {
		out[i] = c.name
	}
	return out
}

// helpWanted is set when the command line asks for the command's help (-h, -help, --help
// among its flags), for commands whose flags do not come from newFlags; helpPrinted once a
// FlagSet from newFlags has printed the help.
var helpWanted, helpPrinted bool

// wantsHelp reports whether args ask for help the way the flag package reads them: a help
// flag before the first argument that is not a flag (or "--").
func wantsHelp(args []string) bool {
	for _, a := range args {
		switch {
		case a == "-h" || a == "-help" || a == "--help" || a == "--h":
			return true
		case a == "--" || !strings.HasPrefix(a, "-") || a == "-":
			return false
		}
	}
	return false
}

// newFlags returns the FlagSet of command name. Every command builds its flags with it so
// that, like the go tool, `msgx CMD --help` prints the command's help with examples on stdout
// and exits 0, a mistyped flag is answered with the flag it probably meant, and the flags are
// listed with two dashes as the README spells them. The command returns app.ExitError{Code:
// exitUsage} when Parse fails, as before.
func newFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	var msg bytes.Buffer
	fs.SetOutput(&msg)
	fs.Usage = func() {
		defer msg.Reset()
		cmd, _ := lookup(name)
		if cmd.name == "" {
			cmd.name = name
		}
		if msg.Len() > 0 { // Parse failed: the flag package said why
			fmt.Fprintf(os.Stderr, "msgx %s: %s\nusage: msgx %s %s\nRun 'msgx help %s' for the flags and examples.\n",
				name, flagProblem(fs, strings.TrimSpace(msg.String())), name, cmd.synopsis, name)
			return
		}
		// -h, -help or --help among the flags (flag.ErrHelp): the help, and exit code 0.
		fmt.Print(commandHelp(cmd, fs))
		helpPrinted = true
	}
	return fs
}

// flagProblem rewrites the flag package's error in the README's spelling, with the flag the
// user probably meant: "flag provided but not defined: -sever" → "unknown flag --sever (did
// you mean --server?)".
func flagProblem(fs *flag.FlagSet, text string) string {
	const undefined = "flag provided but not defined: -"
	if rest, ok := strings.CutPrefix(text, undefined); ok {
		var names []string
		fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
		hint := ""
		if s := suggest.Closest(rest, names); s != "" {
			hint = " (did you mean --" + s + "?)"
		}
		return "unknown flag --" + rest + hint
	}
	if rest, ok := strings.CutPrefix(text, "flag needs an argument: -"); ok {
		return "flag --" + rest + " needs a value"
	}
	if strings.HasPrefix(text, "invalid value ") || strings.HasPrefix(text, "invalid boolean value ") {
		return strings.Replace(text, " for flag -", " for flag --", 1)
	}
	return text
}

// commandHelp is `msgx help NAME`: the usage line, the help with its examples, and the flags
// of fs (when known) with two dashes.
func commandHelp(cmd command, fs *flag.FlagSet) string {
	var b strings.Builder
	fmt.Fprintf(&b, "usage: msgx %s %s\n\n", cmd.name, cmd.synopsis)
	if cmd.help != "" {
		b.WriteString(strings.TrimRight(cmd.help, "\n") + "\n")
	}
	if fs != nil {
		var flags []string
		fs.VisitAll(func(f *flag.Flag) { flags = append(flags, formatFlag(f)) })
		if len(flags) > 0 {
			b.WriteString("\nFlags:\n" + strings.Join(flags, ""))
		}
	}
	return b.String()
}

// formatFlag prints one flag as "  --name VALUE\n    \tusage (default …)\n", the value
// named by a back-quoted word in its usage as the flag package does.
func formatFlag(f *flag.Flag) string {
	name, text := flag.UnquoteUsage(f)
	line := "  --" + f.Name
	if name != "" {
		line += " " + name
	}
	line += "\n    \t" + strings.ReplaceAll(text, "\n", "\n    \t")
	if d := f.DefValue; d != "" && d != "0" && d != "false" && d != "[]" {
		line += fmt.Sprintf(" (default %s)", d)
	}
	return line + "\n"
}

// helpCmd is `msgx help [COMMAND]`.
func helpCmd(args []string) error {
	if len(args) == 0 {
		fmt.Print(usage())
		return nil
	}
	if len(args) > 1 {
		return app.ExitError{Code: exitUsage, Msg: "usage: msgx help [COMMAND]"}
	}
	if wantsHelp(args) {
		args[0] = "help"
	}
	cmd, ok := lookup(args[0])
	if !ok {
		return app.ExitError{Code: exitUsage, Msg: fmt.Sprintf("msgx help %s: unknown command%s\nRun 'msgx help' for the list of commands.",
			args[0], suggest.DidYouMean(args[0], commandNames()))}
	}
	if cmd.name == "help" {
		fmt.Print(commandHelp(cmd, nil))
		return nil
	}
	// The command itself prints its help with its flags when asked, as `msgx CMD --help` does.
	helpWanted = true
	cmd.run([]string{"--help"})
	if !helpPrinted {
		fmt.Print(commandHelp(cmd, nil))
	}
	return nil
}

// printJSON prints v as indented JSON on stdout.
func printJSON(v any) error {
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
