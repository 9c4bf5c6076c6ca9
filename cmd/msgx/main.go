// Command msgx is the one binary of the AODB message exchange: `msgx serve` runs the inbox,
// the pump, the dispatcher and the API; the other subcommands talk to a running server
// (send, status, replay, simulate) or work offline (decode, migrate, version). Run `msgx help`.
package main

import (
	"context"
	_ "embed"
	"fmt"
	"io"
	"os"

	"msgx/internal/app"
	"msgx/internal/cli"
	"msgx/internal/secret"
)

// version is set at build time with -ldflags "-X main.version=…"; otherwise `msgx version`
// reports the module version and VCS commit the Go toolchain embedded (app.ReadBuild).
var version = ""

// prog is msgx's command table (commands.txt, read in init) and its help and flag machinery;
// it does not change after init. Adding a command is an entry in commands.txt (its synopsis,
// summary and help with examples) and its function in runs; the function builds its flags with
// the run's Env.Flags.
var prog = &cli.Program{Name: "msgx", Title: "msgx — AODB message exchange",
	Hints: map[string]string{"flights": "board", "fids": "board", "departures": "board", "arrivals": "board"}}

//go:embed commands.txt
var commandsText string

func init() {
	// The commands' functions by name.
	runs := map[string]func(context.Context, *cli.Env, []string) error{
		"serve": serve, "send": send, "status": status, "messages": messages, "message": message,
		"replay": replay, "events": events, "flight": flightCmd, "board": boardCmd, "find": findCmd, "park": park, "ack": ackCmd,
		"pause":  func(ctx context.Context, e *cli.Env, args []string) error { return pauseCmd(ctx, e, args, "pause") },
		"resume": func(ctx context.Context, e *cli.Env, args []string) error { return pauseCmd(ctx, e, args, "resume") },
		"jobs":   jobsCmd, "job": jobCmd, "audit": auditCmd, "token": token, "request": request,
		"requests": requestsList, "simulate": simulateCmd, "shadow": shadowCmd, "decode": decode,
		"migrate": migrate, "bench": benchCmd, "version": versionCmd, "help": helpCmd,
	}
	if err := prog.ReadTable(commandsText, runs); err != nil {
		panic("commands.txt: " + err.Error())
	}
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
	// status: what stops work, the worst of them (its first lines say why).
	exitHalted       = 7 // the pump is halted (phase A: Redis lost data)
	exitPaused       = 8 // an operator paused the pump
	exitTargetPaused = 9 // an operator paused a delivery target (the pump runs)
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr, os.Environ()))
}

// run runs one command line (argv, without the program's name) with the environment environ
// (KEY=VALUE, as os.Environ), writing to stdout and stderr, and returns the exit code. It
// touches no state of the process, so a test runs it as often as it likes.
func run(argv []string, stdout, stderr io.Writer, environ []string) int {
	e := &cli.Env{Program: prog, Stdout: stdout, Stderr: stderr, Environ: environ, LoadConfig: app.LoadConfig}
	if len(argv) == 0 {
		fmt.Fprint(stderr, prog.Usage())
		return exitUsage
	}
	argv, ok := e.GlobalConfig(argv)
	if !ok {
		fmt.Fprintln(stderr, "msgx: --config needs a FILE\n"+prog.Usage())
		return exitUsage
	}
	if len(argv) == 0 {
		fmt.Fprint(stderr, prog.Usage())
		return exitUsage
	}
	name, args := argv[0], argv[1:]
	switch name {
	case "-h", "-help", "--help":
		name = "help"
	case "-version", "--version":
		name = "version"
	}
	cmd, ok := prog.Lookup(name)
	if !ok {
		fmt.Fprintln(stderr, prog.Unknown(name))
		return exitUsage
	}
	helped, err := e.Run(context.Background(), cmd, args)
	if helped || err == nil {
		return 0
	}
	exit, isExit := err.(app.ExitError)
	switch err := err.(type) {
	case cli.UsageError:
		exit, isExit = app.ExitError{Code: exitUsage, Msg: string(err)}, true
	case cli.ConfigError:
		fmt.Fprintln(stderr, "msgx: "+err.Error())
		return exitConfig
	}
	if !isExit {
		fmt.Fprintln(stderr, "msgx "+name+": "+secret.Redact(err.Error())) // a start error may quote a URL
		return exitFailure
	}
	if exit.Msg != "" {
		fmt.Fprintln(stderr, secret.Redact(exit.Msg))
	}
	return exit.Code
}

// helpCmd is `msgx help [COMMAND]`.
func helpCmd(ctx context.Context, e *cli.Env, args []string) error { return e.Help(ctx, args) }
