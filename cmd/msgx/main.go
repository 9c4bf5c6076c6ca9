// Command msgx is the one binary of the AODB message exchange: `msgx serve` runs the inbox,
// the pump, the dispatcher and the API; the other subcommands talk to a running server
// (send, status, replay) or work offline (decode, migrate, version). Run `msgx help`.
package main

import (
	"fmt"
	"os"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

const usage = `msgx — AODB message exchange

Usage:
  msgx serve   [--config FILE]              run the server (inbox, pump, dispatcher, API)
  msgx send    [--server URL] FILE…         post SIS files to a running server; prints one id per file
  msgx status  [--server URL]               counts per state, the head message and why it waits
  msgx messages [--server URL] [--state S] [--class C] [--after ID] [--limit N]
                                            list messages with their class, note and warnings
  msgx message [--server URL] ID            one message: state, last error, note, every warning
  msgx replay  [--server URL] --class C[,C…] [--id N…]
                                            move FAILED/DEAD messages of those classes back to PENDING
  msgx replay  [--server URL] --events [--target T] [--id N…]
                                            move DEAD delivery events back to PENDING
  msgx request [--server URL] ref TYPE      ask the AODB for a reference TYPE (RQRD, through COUTMSGS)
  msgx request [--server URL] schedule --from TIME --to TIME
                                            ask the AODB for a schedule window (RQFD)
  msgx requests [--server URL] [--state S]  the data requests with their state and answer
  msgx messages [--flid N] [--tag T] [--from T] [--to T] [--q TEXT]   search messages (docs/api.md)
  msgx message [--raw] [--history] ID      the raw text as received; each attempt, park and replay
  msgx events  [--flid N] [--target T] [--state S] [--msg-id N]      outbox events (large payloads elided)
  msgx flight  [--history] FLID             a flight's record; every change with old and new values
  msgx park    --reason TEXT ID             set a message aside: DEAD, class PARKED, replayable
  msgx pause   [--target T] [--reason TEXT] pause the pump (or one delivery target); survives restarts
  msgx resume  [--target T]                 resume it
  msgx replay  … --dry-run                  say what a replay would move, moving nothing
  msgx jobs    [--start ARCHIVE]            pump jobs (admin)
  msgx audit   [--after ID]                 the operators' actions (admin)
  msgx token   hash SECRET | new            the auth.tokens hash of a secret (last line); a new secret
  Commands that talk to the server send --token, else MSGX_TOKEN, as Authorization: Bearer.
  msgx decode  [--config FILE] FILE         print the decoded message as JSON (non-zero exit on error)
  msgx migrate [--config FILE]              apply the database migrations
  msgx bench   [--config FILE] [--json] …   the database's floor and msgx end to end, on a scratch database (msgx bench -h)
  msgx shadow diff (--legacy FILE | --legacy-channel FLOP) (--msgx FILE | --msgx-channel CH) [--for D] …
                                            compare msgx's legacy-format notifications with the legacy's;
                                            exit 1 on a difference (msgx shadow diff -h)
  msgx version                              print the version

The server address defaults to MSGX_SERVER, else http://127.0.0.1:<port of http.addr>.
Configuration: a YAML file (--config or MSGX_CONFIG) and MSGX_* environment variables;
see the README for every key.

Exit codes: 0 done; 1 failed; 2 bad command line; 3 another instance holds the pump lease
and this one cannot stand by (SQLite); 4 bad configuration; 5 gave up waiting for the
database (database.wait-timeout).
`

// Exit codes, one per reason an operator or a supervisor (systemd, Kubernetes) acts on
// differently. The README lists them too.
const (
	exitFailure    = 1 // any other error
	exitUsage      = 2 // bad command line
	exitLeaseHeld  = 3 // serve: another live instance holds the pump lease and standby is impossible (SQLite)
	exitConfig     = 4 // the configuration is invalid, or the database refused it (credentials, unknown database)
	exitNoDatabase = 5 // serve: the database did not answer within database.wait-timeout
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(exitUsage)
	}
	cmd, args := os.Args[1], os.Args[2:]
	var err error
	switch cmd {
	case "serve":
		err = serve(args)
	case "send":
		err = send(args)
	case "status":
		err = status(args)
	case "messages":
		err = messages(args)
	case "message":
		err = message(args)
	case "replay":
		err = replay(args)
	case "request":
		err = request(args)
	case "requests":
		err = requestsList(args)
	case "events":
		err = events(args)
	case "flight":
		err = flightCmd(args)
	case "park":
		err = park(args)
	case "pause", "resume":
		err = pauseCmd(args, cmd == "pause")
	case "jobs":
		err = jobsCmd(args)
	case "audit":
		err = auditCmd(args)
	case "token":
		err = token(args)
	case "decode":
		err = decode(args)
	case "migrate":
		err = migrate(args)
	case "bench":
		err = benchCmd(args)
	case "shadow":
		err = shadowCmd(args)
	case "version", "--version":
		fmt.Println("msgx", version)
	case "help", "-h", "--help":
		fmt.Print(usage)
	default:
		fmt.Fprintf(os.Stderr, "msgx: unknown command %q\n\n%s", cmd, usage)
		os.Exit(exitUsage)
	}
	if err != nil {
		if e, ok := err.(exitError); ok {
			if e.msg != "" {
				fmt.Fprintln(os.Stderr, e.msg)
			}
			os.Exit(e.code)
		}
		fmt.Fprintln(os.Stderr, "msgx "+cmd+": "+err.Error())
		os.Exit(exitFailure)
	}
}

// exitError ends the program with code after printing msg.
type exitError struct {
	code int
	msg  string
}

func (e exitError) Error() string { return e.msg }
