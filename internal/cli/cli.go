// Package cli is the command-line machinery of a program of subcommands, msgx: the command
// table read from text, one run of a command line (Env: its output streams, its environment,
// whether it asked for help), each command's flags (with --help, the flags spelled with two
// dashes and a mistyped flag answered with the one it probably meant), `PROG help [COMMAND]`,
// and the flag helpers the commands share (Reorder, IDList, the listings' paging, the checks of
// flag values, the server's address and client: Remote); and the commands' text for the API's
// answers (msgx/client's types): the status, the board, a flight, jobs, messages, events, the
// audit log, in the airport's zone (Zone).
package cli

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"msgx/internal/config"
	"msgx/internal/suggest"
)

// A Command is one `PROG NAME …` subcommand. Its function builds its flags with
// Program.Flags so that --help, mistyped flags and the help text work like every other
// command's.
type Command struct {
	Name     string
	Run      func(ctx context.Context, e *Env, args []string) error
	Synopsis string // the flags and arguments, as in the README: "[--server URL] FILE…"
	Summary  string // one line for `PROG help`
	Help     string // what `PROG help NAME` prints between the usage line and the flags; ends with examples
}

// Program is a command of subcommands.
type Program struct {
	Name     string    // the binary: "msgx"
	Title    string    // the first line of `PROG help`
	Commands []Command // in the order `PROG help` lists them
	Footer   string    // ends `PROG help`, after the list of commands
	// Hints are words a user may type for a command, with the command they mean ("flights":
	// "board"): Unknown suggests that command before the closest name.
	Hints map[string]string
}

// Env is one run of a Program's command line: where its commands write, the environment they
// read, and whether the command line asked for help. Commands take it instead of os.Stdout,
// os.Stderr and os.Getenv, so that a test runs them in its own process, several at once.
type Env struct {
	Program        *Program
	Stdout, Stderr io.Writer
	Environ        []string // KEY=VALUE, as os.Environ

	// LoadConfig reads a config file as the server would (the file, the MSGX_* environment,
	// every section's checks); nil: config.Load, its generic checks only.
	LoadConfig func(path string, environ []string) (config.Config, error)

	// helpWanted is set when the command line asks for the command's help (-h, -help, --help
	// among its flags), for commands whose flags do not come from Flags; helpPrinted once a
	// FlagSet from Flags has printed the help.
	helpWanted, helpPrinted bool
}

// Getenv is the value of the environment variable key, "" when it is not set.
func (e *Env) Getenv(key string) string {
	for i := len(e.Environ) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(e.Environ[i], "="); ok && k == key {
			return v
		}
	}
	return ""
}

// Setenv sets the environment variable key to value for the rest of the run; the caller's
// slice is left as it was.
func (e *Env) Setenv(key, value string) {
	env := make([]string, 0, len(e.Environ)+1)
	for _, kv := range e.Environ {
		if k, _, _ := strings.Cut(kv, "="); k != key {
			env = append(env, kv)
		}
	}
	e.Environ = append(env, key+"="+value)
}

// GlobalConfig takes a --config FILE given before the command (msgx --config cfg.yaml
// status) off argv: it is then the config of every command, the server's (serve, migrate…)
// as MSGX_CONFIG, and the one client commands read the server's address from. ok is false
// when --config has no FILE.
func (e *Env) GlobalConfig(argv []string) (rest []string, ok bool) {
	for len(argv) > 0 {
		a := argv[0]
		var path string
		switch {
		case a == "--config" || a == "-config":
			if len(argv) < 2 {
				return nil, false
			}
			path, argv = argv[1], argv[2:]
		case strings.HasPrefix(a, "--config=") || strings.HasPrefix(a, "-config="):
			path, argv = a[strings.Index(a, "=")+1:], argv[1:]
		default:
			return argv, true
		}
		if path == "" {
			return nil, false
		}
		e.Setenv("MSGX_CONFIG", path)
	}
	return argv, true
}

// HelpWanted reports whether the command line asks for the command's help, for a command
// whose flags do not come from Flags: Run prints the help after it.
func (e *Env) HelpWanted() bool { return e.helpWanted }

// ReadTable fills p's Commands and Footer from text: after comment lines and a blank line
// comes the footer of `PROG help`, then each command is a line "== NAME SYNOPSIS", a line
// with its summary, then its help. runs are the commands' functions by name; text must name
// each of them, and only them.
func (p *Program) ReadTable(text string, runs map[string]func(context.Context, *Env, []string) error) error {
	preamble, table, _ := strings.Cut(text, "\n== ")
	_, footer, _ := strings.Cut(preamble, "\n\n")
	p.Footer = strings.TrimSpace(footer) + "\n"
	for _, block := range strings.Split(table, "\n== ") {
		head, rest, _ := strings.Cut(block, "\n")
		summary, help, _ := strings.Cut(rest, "\n")
		name, synopsis, _ := strings.Cut(head, " ")
		if runs[name] == nil {
			return fmt.Errorf("no function for command %s", name)
		}
		p.Commands = append(p.Commands, Command{Name: name, Run: runs[name], Synopsis: synopsis, Summary: summary, Help: strings.TrimRight(help, "\n")})
	}
	if len(p.Commands) != len(runs) {
		return fmt.Errorf("the table does not name every command")
	}
	return nil
}

// Usage is the text `PROG help` prints.
func (p *Program) Usage() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\nUsage:\n  %s COMMAND [flags] [arguments]\n\nCommands:\n", p.Title, p.Name)
	for _, c := range p.Commands {
		fmt.Fprintf(&b, "  %-9s %s\n", c.Name, c.Summary)
	}
	b.WriteString("\n" + p.Footer)
	return b.String()
}

// Lookup returns the command name.
func (p *Program) Lookup(name string) (Command, bool) {
	for _, c := range p.Commands {
		if c.Name == name {
			return c, true
		}
	}
	return Command{}, false
}

// Names lists the commands' names.
func (p *Program) Names() []string {
	out := make([]string, len(p.Commands))
	for i, c := range p.Commands {
		out[i] = c.Name
	}
	return out
}

// Unknown is the message for a command name the program does not have, with the one it
// probably meant: the command a hint names (Hints), else the closest name.
func (p *Program) Unknown(name string) string {
	hint := suggest.DidYouMean(name, p.Names())
	if cmd, ok := p.Hints[strings.ToLower(name)]; ok {
		hint = " (did you mean " + cmd + "?"
		if closest := suggest.Closest(name, p.Names()); closest != "" && closest != cmd {
			hint += " or " + closest + "?"
		}
		hint += ")"
	}
	return fmt.Sprintf("%s: unknown command %q%s\nRun '%s help' for the list of commands.", p.Name, name, hint, p.Name)
}

// Run runs cmd with args. It reports helped when the command line asked for the command's
// help (or was `PROG help COMMAND`), which is then printed (by the command's FlagSet, else
// here); the command's error is then of no account.
func (e *Env) Run(ctx context.Context, cmd Command, args []string) (helped bool, err error) {
	e.helpWanted = cmd.Name != "help" && WantsHelp(args)
	err = cmd.Run(ctx, e, args)
	if e.helpWanted || e.helpPrinted {
		if !e.helpPrinted { // a command that does not build its flags with Flags
			fmt.Fprint(e.Stdout, e.Program.CommandHelp(cmd, nil))
		}
		return true, nil
	}
	return false, err
}

// WantsHelp reports whether args ask for help the way the flag package reads them: a help
// flag before the first argument that is not a flag (or "--").
func WantsHelp(args []string) bool {
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

// Flags returns the FlagSet of command name. Like the go tool's, `PROG CMD --help` prints the
// command's help with examples on stdout (and the command's exit code is then 0: Run), a
// mistyped flag is answered on stderr with the flag it probably meant, and the flags are
// listed with two dashes as the README spells them. Parse returns the flag package's error.
func (e *Env) Flags(name string) *flag.FlagSet {
	p := e.Program
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	var msg bytes.Buffer
	fs.SetOutput(&msg)
	fs.Usage = func() {
		defer msg.Reset()
		cmd, _ := p.Lookup(name)
		if cmd.Name == "" {
			cmd.Name = name
		}
		if msg.Len() > 0 { // Parse failed: the flag package said why
			fmt.Fprintf(e.Stderr, "%s %s: %s\nusage: %s %s %s\nRun '%s help %s' for the flags and examples.\n",
				p.Name, name, FlagProblem(fs, strings.TrimSpace(msg.String())), p.Name, name, cmd.Synopsis, p.Name, name)
			return
		}
		// -h, -help or --help among the flags (flag.ErrHelp): the help, and exit code 0.
		fmt.Fprint(e.Stdout, p.CommandHelp(cmd, fs))
		e.helpPrinted = true
	}
	return fs
}

// FlagProblem rewrites the flag package's error in the README's spelling, with the flag the
// user probably meant: "flag provided but not defined: -sever" → "unknown flag --sever (did
// you mean --server?)".
func FlagProblem(fs *flag.FlagSet, text string) string {
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

// CommandHelp is `PROG help NAME`: the usage line, the help with its examples, and the flags
// of fs (when known) with two dashes.
func (p *Program) CommandHelp(cmd Command, fs *flag.FlagSet) string {
	var b strings.Builder
	fmt.Fprintf(&b, "usage: %s %s %s\n\n", p.Name, cmd.Name, cmd.Synopsis)
	if cmd.Help != "" {
		b.WriteString(strings.TrimRight(cmd.Help, "\n") + "\n")
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

// A UsageError is a bad command line, said in full; the caller answers it with its exit code
// for one.
type UsageError string

func (e UsageError) Error() string { return string(e) }

// Usage is the usage error of command name: "usage: PROG NAME SYNOPSIS", with the synopsis
// the command table gives it.
func (e *Env) Usage(name string) UsageError {
	cmd, _ := e.Program.Lookup(name)
	return UsageError("usage: " + e.Program.Name + " " + name + " " + cmd.Synopsis)
}

// ErrUsage is a bad command line that has been said already (the flag package's error, on
// stderr): the caller answers it with its exit code for one and says nothing more.
const ErrUsage = UsageError("")

// Help is the command `PROG help [COMMAND]`. Its error is a UsageError when the command line
// has more than one argument or names a command the program does not have.
func (e *Env) Help(ctx context.Context, args []string) error {
	p := e.Program
	if len(args) == 0 {
		fmt.Fprint(e.Stdout, p.Usage())
		return nil
	}
	if len(args) > 1 {
		return UsageError("usage: " + p.Name + " help [COMMAND]")
	}
	if WantsHelp(args) {
		args[0] = "help"
	}
	cmd, ok := p.Lookup(args[0])
	if !ok {
		return UsageError(fmt.Sprintf("%s help %s: unknown command%s\nRun '%s help' for the list of commands.",
			p.Name, args[0], suggest.DidYouMean(args[0], p.Names()), p.Name))
	}
	if cmd.Name == "help" {
		fmt.Fprint(e.Stdout, p.CommandHelp(cmd, nil))
		return nil
	}
	// The command itself prints its help with its flags when asked, as `PROG CMD --help` does.
	e.helpWanted = true
	cmd.Run(ctx, e, []string{"--help"})
	if !e.helpPrinted {
		fmt.Fprint(e.Stdout, p.CommandHelp(cmd, nil))
	}
	return nil
}
