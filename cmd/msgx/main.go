// Command msgx is the one binary of the AODB message exchange: `msgx serve` runs the inbox,
// the pump, the dispatcher and the API; the other subcommands talk to a running server
// (send, status, replay, simulate) or work offline (decode, migrate, version). Run `msgx help`.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"strings"

	"msgx/internal/app"
	"msgx/internal/suggest"
)

// version is set at build time with -ldflags "-X main.version=…"; otherwise `msgx version`
// reports the module version and VCS commit the Go toolchain embedded (see buildinfo.go).
var version = ""

// A command is one `msgx NAME …` subcommand. Adding a command is one entry in commands:
// its function (which builds its flags with newFlags so that --help, mistyped flags and the
// help text work like every other command's), its synopsis and its help.
type command struct {
	name     string
	run      func(args []string) error
	synopsis string // the flags and arguments, as in the README: "[--server URL] FILE…"
	summary  string // one line for `msgx help`
	help     string // what `msgx help NAME` prints between the usage line and the flags; ends with examples
}

// commands are listed by `msgx help` in this order. (Filled in init: the commands' functions
// refer back to the table through newFlags.)
var commands []command

func init() {
	commands = []command{
		{name: "serve", run: serve, synopsis: "[--config FILE]",
			summary: "run the server (inbox, pump, dispatcher, API)",
			help: `Runs the inbox (POST /cminmsgs/send), the pump, the dispatcher and the HTTP API on
http.addr, on the configured database (default: SQLite under ./data). Logs are JSON lines
on stderr. Stops on SIGINT or SIGTERM after finishing the message in hand.

Examples:
  msgx serve
  msgx serve --config /etc/msgx/msgx.yaml
  MSGX_HTTP_ADDR=:9090 MSGX_LOG_FORMAT=text msgx serve`},
		{name: "send", run: send, synopsis: "[--server URL] FILE…",
			summary: "post SIS files to a running server; prints one id per file",
			help: `Posts each file to the server's inbox, in the order given, and prints "<id>\t<file>" for
each one accepted. With many files on a terminal, a progress bar shows on stderr.

Examples:
  msgx send testdata/ref/airl_add.xml
  msgx send --server aodb-gw:8080 day/*.xml`},
		{name: "status", run: status, synopsis: "[--server URL] [--json]",
			summary: "counts per state, the head message and why it waits",
			help: `Shows the counts of messages per state, the head message and why it waits, the
recently parked or dead messages and, per delivery target, pending, dead and sent events.

Examples:
  msgx status
  msgx status --server 10.0.0.5:8080 --json`},
		{name: "messages", run: messages, synopsis: "[--server URL] [--state S] [--class C] [--flid N] [--tag T] [--from T] [--to T] [--q TEXT] [--after ID] [--limit N] [--json]",
			summary: "list messages with their class, note and warnings",
			help: `Lists messages in id order with their state, class, type and note or last error.

Filters: --flid (messages that changed this flight), --tag (FLOP-CHOT, or a TYPE),
--from/--to (taken at or after / before: RFC 3339 or YYYY-MM-DD, UTC), --q (text in the
identity, last error or note). docs/api.md has the route behind it.

Examples:
  msgx messages --state DEAD
  msgx messages --class ORPHAN --limit 200
  msgx messages --flid 92001 --from 2026-12-03`},
		{name: "message", run: message, synopsis: "[--server URL] [--json] [--raw] [--history] ID",
			summary: "one message: state, last error, note, every warning",
			help: `Shows one message in full: state, class, identity, times, last error, note, warnings,
and the data request it answered. --raw prints the text exactly as received and nothing else;
--history adds each attempt, park and replay with its time, class and error.

Examples:
  msgx message 42
  msgx message --raw 42 > m42.xml
  msgx message --history 42`},
		{name: "replay", run: replay, synopsis: "[--server URL] --class C[,C…] [--id N…] | --events [--target T] [--id N…]",
			summary: "move FAILED/DEAD messages (or DEAD events) back to PENDING",
			help: `Moves FAILED and DEAD messages of the given classes (or ids) back to PENDING, so the
pump processes them again; MALFORMED messages are never replayed. With --events, moves DEAD
delivery events of a target back to PENDING instead.

Examples:
  msgx replay --class EXHAUSTED,INFRA
  msgx replay --class ORPHAN --id 17 --id 18
  msgx replay --events --target KAFKA_FLOP
  msgx replay --class PARKED --dry-run`},
		{name: "events", run: events, synopsis: "[--server URL] [--flid N] [--target T] [--state S] [--msg-id N] [--after ID] [--limit N] [--json]",
			summary: "outbox events with their delivery state (large payloads elided)",
			help: `Lists outbox events (MSG_EVENT) with their target, state, attempts and last error.
A payload over 16 KiB is elided in the list; GET /api/v1/events/{id}/payload serves it.

Examples:
  msgx events --state DEAD
  msgx events --flid 92001
  msgx events --target KAFKA_FLOP --msg-id 42`},
		{name: "flight", run: flightCmd, synopsis: "[--server URL] [--history] FLID",
			summary: "a flight's record; with --history every change with old and new values",
			help: `Shows a flight's stored record; --history lists every message that changed it, with
the old and new value of each field.

Examples:
  msgx flight 92001
  msgx flight --history 92001`},
		{name: "park", run: park, synopsis: "[--server URL] --reason TEXT ID",
			summary: "set a message aside: DEAD, class PARKED, replayable; the queue moves on",
			help: `Parks a PENDING, FAILED or DEAD message: it becomes DEAD with class PARKED and the
reason, the pump moves on to the next message, and 'msgx replay --class PARKED' brings it
back. Written to the audit log. Needs the operator role.

Examples:
  msgx park --reason "poison, AODB ticket 4711" 42`},
		{name: "pause", run: func(args []string) error { return pauseCmd(args, true) }, synopsis: "[--server URL] [--target T] [--reason TEXT]",
			summary: "pause the pump (or one delivery target); survives restarts",
			help: `Pauses the pump (no message is processed; the inbox keeps accepting) or, with
--target, one delivery target (its events wait). The pause is stored, survives restarts and
shows in 'msgx status'. Needs the operator role.

Examples:
  msgx pause --reason "downstream maintenance"
  msgx pause --target KAFKA_FLOP --reason "broker upgrade"`},
		{name: "resume", run: func(args []string) error { return pauseCmd(args, false) }, synopsis: "[--server URL] [--target T]",
			summary: "resume the pump (or one delivery target)",
			help: `Resumes what 'msgx pause' paused.

Examples:
  msgx resume
  msgx resume --target KAFKA_FLOP`},
		{name: "jobs", run: jobsCmd, synopsis: "[--server URL] [--start KIND]",
			summary: "pump jobs, or start one (admin)",
			help: `Lists the pump jobs (ARCHIVE, HISTORY_SWEEP, RETENTION, PROJECTION_REBUILD,
CONSISTENCY_CHECK) with their state and result; --start enqueues one, which runs in the
message order ('msgx job run KIND' also waits for it). Needs the admin role.

Examples:
  msgx jobs
  msgx jobs --start ARCHIVE`},
		{name: "job", run: jobCmd, synopsis: "[--server URL] [--no-wait] [--timeout D] run KIND [--prune] [--flid N] [--day D]",
			summary: "run a pump job and wait for it, showing its progress (admin)",
			help: `Enqueues a pump job of KIND (ARCHIVE, HISTORY_SWEEP, RETENTION, PROJECTION_REBUILD,
CONSISTENCY_CHECK, REDIS_RESTORE), which runs in the message order, and waits for it: what it is doing is
shown on stderr as it goes, its result is printed when it is DONE (exit 0), its last error
when it is DEAD (exit 1). A failed attempt is retried by the server and waited for.
--no-wait prints the job's id and returns. Needs the admin role.

PROJECTION_REBUILD rebuilds the flight store that is not authoritative from the one that is,
for the days of jobs.rebuild-days: FLIGHT_STATE from Redis in phase A, Redis from
FLIGHT_STATE in phase B with the REDIS_FLIGHT target (docs/redis-flights.md). In phase A it
keeps the FLIGHT_STATE rows Redis lacks and names them, unless --prune.

REDIS_RESTORE (phase A) writes FLIGHT_STATE back into Redis: everything with new marks (a pump
stopped because Redis lost its data runs it at once and resumes), or --flid N, or --day D.

Examples:
  msgx job run PROJECTION_REBUILD
  msgx job run REDIS_RESTORE --flid 7002
  msgx job run --server aodb-gw:8080 CONSISTENCY_CHECK
  msgx job run --no-wait ARCHIVE`},
		{name: "audit", run: auditCmd, synopsis: "[--server URL] [--after ID]",
			summary: "the operators' actions (admin)",
			help: `Lists the audit log: who did what, when, with which answer.

Examples:
  msgx audit`},
		{name: "token", run: token, synopsis: "hash SECRET | new",
			summary: "the auth.tokens hash of a secret (on the last line), or a new random secret",
			help: `'token new' prints a new random secret and, on its last line, its hash for auth.tokens;
'token hash SECRET' prints the hash of a secret you chose (at least 16 characters).
Commands that talk to the server send --token, else MSGX_TOKEN, as Authorization: Bearer.

Examples:
  msgx token new
  msgx token hash "$(cat /run/secrets/msgx-ops)"`},
		{name: "request", run: request, synopsis: "[--server URL] ref TYPE | schedule --from TIME --to TIME",
			summary: "ask the AODB for reference data (RQRD) or a schedule window (RQFD), through COUTMSGS",
			help: `Asks a running msgx to send a data request to the AODB: "ref TYPE" asks for one of
the 23 reference TYPEs (RQRD), "schedule" for the flights of a window (RQFD). Prints the
request's id, the COUTMSGS row it was queued in and its SEQN. Flags may come before or after
the kind and the TYPE. TIME: 03DEC26, 03DEC261200, 2026-12-03, 2026-12-03 12:00 (airport
local time) or RFC 3339.

Examples:
  msgx request ref AIRL
  msgx request schedule --from 2026-12-03 --to "2026-12-04 06:00"`},
		{name: "requests", run: requestsList, synopsis: "[--server URL] [--state S] [--after ID] [--limit N] [--json]",
			summary: "the data requests with their state and answer",
			help: `Lists the data requests (RQRD, RQFD) with their state (REGISTERED, SENT, DONE,
EXPIRED), re-sends and the message that answered them.

Examples:
  msgx requests
  msgx requests --state EXPIRED --json`},
		{name: "simulate", run: simulateCmd, synopsis: "[--flights N] [--speed X] [--faults LIST] [--seed S] [--server URL | --out DIR] [--json]",
			summary: "generate an airport day of SIS traffic and post it (or write it to files)",
			help:    simulateHelp},
		{name: "shadow", run: shadowCmd, synopsis: "diff (--legacy FILE | --legacy-channel CH) (--msgx FILE | --msgx-channel CH) [--for D] [--redis ADDR] [--legacy-ids FILE] [--save-legacy FILE] [--save-msgx FILE]",
			summary: "compare msgx's legacy-format notifications with the legacy's (exit 1 on a difference)",
			help:    shadowHelp},
		{name: "decode", run: decode, synopsis: "[--config FILE] FILE",
			summary: "print the decoded message as JSON (offline; non-zero exit on error)",
			help: `Decodes one SIS file as the pump would and prints its type tag, identity, META and
body as JSON, or its error class and error (exit code 1).

Examples:
  msgx decode testdata/flop/chot.xml`},
		{name: "migrate", run: migrate, synopsis: "[--config FILE]",
			summary: "apply the database migrations",
			help: `Applies the embedded migrations to the configured database (serve does it too) and
prints the schema version.

Examples:
  msgx migrate
  MSGX_DATABASE_DRIVER=mysql MSGX_DATABASE_DSN='msgx:secret@tcp(db:3306)/aodb' msgx migrate`},
		{name: "bench", run: benchCmd, synopsis: "[--config FILE] [--json] [--messages N] [--rate R] [--clients C] [--dsn FILE | --database NAME] [--floor-time D] [--history H] [--cpuprofile FILE]",
			summary: "the database's floor and msgx end to end, on a scratch database",
			help:    benchHelp},
		{name: "version", run: versionCmd, synopsis: "",
			summary: "print the version and the VCS commit it was built from",
			help: `Prints the module version, the VCS commit and time, and the Go version msgx was built with.

Examples:
  msgx version`},
		{name: "help", run: helpCmd, synopsis: "[COMMAND]",
			summary: "this text, or a command's help with examples",
			help: `Examples:
  msgx help
  msgx help replay`},
	}
}

const usageFooter = `The server address (--server) is a URL or host:port; it defaults to MSGX_SERVER, else
http://127.0.0.1:<port of http.addr>.
Configuration: a YAML file (--config or MSGX_CONFIG) and MSGX_* environment variables;
docs/configuration.md lists every key.

Exit codes: 0 done; 1 failed; 2 bad command line; 3 another instance holds the pump lease
and this one cannot stand by (SQLite); 4 bad configuration; 5 gave up waiting for the
database (database.wait-timeout); 6 shadow diff cannot tell (UNDECIDED).

Run 'msgx help COMMAND' for a command's flags and examples.
`

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
		err = exitError{code: e.Code, msg: e.Msg}
	}
	if err != nil {
		if e, ok := err.(exitError); ok {
			if e.msg != "" {
				fmt.Fprintln(os.Stderr, e.msg)
			}
			return e.code
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
// listed with two dashes as the README spells them. The command returns exitError{code:
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
		return exitError{code: exitUsage, msg: "usage: msgx help [COMMAND]"}
	}
	if wantsHelp(args) {
		args[0] = "help"
	}
	cmd, ok := lookup(args[0])
	if !ok {
		return exitError{code: exitUsage, msg: fmt.Sprintf("msgx help %s: unknown command%s\nRun 'msgx help' for the list of commands.",
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

// exitError ends the program with code after printing msg.
type exitError struct {
	code int
	msg  string
}

func (e exitError) Error() string { return e.msg }
