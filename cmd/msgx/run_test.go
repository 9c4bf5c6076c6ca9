package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"msgx/client"
	"msgx/internal/api"
	"msgx/internal/cli"
	"msgx/internal/store"
)

// The command line run in this process (run), without a server: what it prints on stdout and
// stderr and its exit code. The end-to-end tests run the same through the built binary.

// runMsgx runs the command line args with the environment env (nothing of the test
// process's) and returns stdout, stderr and the exit code.
func runMsgx(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var o, e bytes.Buffer
	code = run(args, &o, &e, append([]string{"MSGX_DATA_DIR=" + t.TempDir()}, env...))
	return o.String(), e.String(), code
}

// `msgx help`, `msgx --help` and no command at all show the list of commands: on stdout with
// exit 0 when asked for, on stderr with exit 2 when the command is missing.
func TestRunHelp(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"help"}, {"--help"}, {"-h"}} {
		out, errOut, code := runMsgx(t, nil, args...)
		if code != 0 || out != prog.Usage() || errOut != "" {
			t.Errorf("msgx %v: exit %d, stderr %q, stdout:\n%s", args, code, errOut, out)
		}
	}
	if !strings.HasPrefix(prog.Usage(), "msgx — AODB message exchange\n\nUsage:\n  msgx COMMAND [flags] [arguments]\n\nCommands:\n  serve     run the server") ||
		!strings.Contains(prog.Usage(), "\nRun 'msgx help COMMAND' for a command's flags and examples.\n") {
		t.Errorf("the list of commands:\n%s", prog.Usage())
	}
	out, errOut, code := runMsgx(t, nil)
	if code != exitUsage || out != "" || errOut != prog.Usage() {
		t.Errorf("msgx alone: exit %d, stdout %q, stderr:\n%s", code, out, errOut)
	}
	out, errOut, code = runMsgx(t, nil, "help", "help")
	if code != 0 || out != "usage: msgx help [COMMAND]\n\nExamples:\n  msgx help\n  msgx help replay\n" || errOut != "" {
		t.Errorf("msgx help help: exit %d, stderr %q, stdout:\n%s", code, errOut, out)
	}
}

// A command's help, asked three ways, is the same: its usage line, its text with examples,
// its flags with two dashes (a default from the environment shown); exit 0, nothing on
// stderr.
func TestRunCommandHelp(t *testing.T) {
	t.Parallel()
	env := []string{"MSGX_CONFIG=/etc/msgx/x.yaml"}
	want, _, _ := runMsgx(t, env, "help", "decode")
	for _, args := range [][]string{{"decode", "--help"}, {"decode", "-h"}, {"--config", "/etc/msgx/x.yaml", "help", "decode"}} {
		out, errOut, code := runMsgx(t, env, args...)
		if code != 0 || out != want || errOut != "" {
			t.Errorf("msgx %v: exit %d, stderr %q, stdout:\n%s\nwant:\n%s", args, code, errOut, out, want)
		}
	}
	if want != `usage: msgx decode [--config FILE] FILE

Decodes one SIS file as the pump would and prints its type tag, identity, META and
body as JSON, or its error class and error (exit code 1).

Examples:
  msgx decode testdata/flop/chot.xml

Flags:
  --config FILE
    	YAML config FILE (default MSGX_CONFIG) (default /etc/msgx/x.yaml)
` {
		t.Errorf("msgx help decode:\n%s", want)
	}
	// Every command's help comes from its own flags: replay's lists its own.
	out, _, code := runMsgx(t, nil, "replay", "--help")
	for _, f := range []string{"\n  --class C[,C…]\n", "\n  --events\n", "\n  --id N\n", "\n  --server URL\n", "\n  --target T\n", "\n  --token value\n"} {
		if code != 0 || !strings.Contains(out, f) {
			t.Errorf("msgx replay --help: exit %d, lacks %q:\n%s", code, f, out)
		}
	}
}

// A bad command line is said on stderr with what was probably meant, and exit code 2;
// nothing is printed on stdout.
func TestRunUsageErrors(t *testing.T) {
	t.Parallel()
	messages, _ := prog.Lookup("messages")
	for _, c := range []struct {
		args   []string
		stderr string // all of it
	}{
		{[]string{"stauts"}, "msgx: unknown command \"stauts\" (did you mean status?)\nRun 'msgx help' for the list of commands.\n"},
		{[]string{"flights"}, "msgx: unknown command \"flights\" (did you mean board? or flight?)\nRun 'msgx help' for the list of commands.\n"},
		{[]string{"help", "replai"}, "msgx help replai: unknown command (did you mean replay?)\nRun 'msgx help' for the list of commands.\n"},
		{[]string{"help", "a", "b"}, "usage: msgx help [COMMAND]\n"},
		{[]string{"send"}, "usage: msgx send [--server URL] FILE…\n"},
		{[]string{"messages", "--stat", "DEAD"}, "msgx messages: unknown flag --stat (did you mean --state?)\nusage: msgx messages " +
			messages.Synopsis + "\nRun 'msgx help messages' for the flags and examples.\nusage: msgx messages " + messages.Synopsis + "\n"},
		{[]string{"messages", "--state", "dead", "--order", "sideways"}, "msgx messages: --order \"sideways\" is neither desc (newest first, the default) nor asc (oldest first)\n"},
		{[]string{"events", "--state", "SNET"}, "msgx events: --state \"SNET\" is not one of PENDING, SENT, DEAD (did you mean SENT?)\n"},
		{[]string{"replay", "--class", "exhusted"}, "msgx replay: unknown class \"exhusted\" (did you mean EXHAUSTED?); the classes are " + strings.Join(cli.ErrorClasses(), ", ") + "\n"},
		{[]string{"ack", "--events", "0"}, "msgx ack: \"0\" is not an id\n"},
		{[]string{"jobs", "--start", "ARCHIV"}, "msgx jobs: unknown job kind \"ARCHIV\" (did you mean ARCHIVE?); the kinds are ARCHIVE, HISTORY_SWEEP, RETENTION, PROJECTION_REBUILD, CONSISTENCY_CHECK, REDIS_RESTORE\n"},
		{[]string{"board", "--movement", "Q"}, "msgx board: --movement \"Q\" is neither A (arrivals) nor D (departures)\n"},
		{[]string{"token", "hash", "short"}, "msgx token hash: a token must be a random secret of at least 16 characters (msgx token new makes one); SHA-256 protects only high-entropy secrets\n"},
		{[]string{"simulate", "--faults", "orphn"}, "msgx simulate: unknown fault \"orphn\" (did you mean orphan?); faults are malformed, orphan, unknown-styp, duplicate-seqn, or all\nRun 'msgx help simulate' for the flags and examples.\n"},
		{[]string{"simulate", "--hours", "0"}, "msgx simulate: --flights must be at least 1, --speed not negative, --hours in (0, 24], --fault-rate in (0, 0.5]\nRun 'msgx help simulate' for the flags and examples.\n"},
		{[]string{"simulate", "--out", "d", "--server", "http://127.0.0.1:1"}, "msgx simulate: --server and --out exclude each other\nRun 'msgx help simulate' for the flags and examples.\n"},
		{[]string{"simulate", "--timezone", "Mars/Base"}, "msgx simulate: --timezone \"Mars/Base\" is not a known time zone\nRun 'msgx help simulate' for the flags and examples.\n"},
		{[]string{"simulate", "--day", "2026-02-30"}, "msgx simulate: --day \"2026-02-30\" is not a date (YYYY-MM-DD)\nRun 'msgx help simulate' for the flags and examples.\n"},
		{[]string{"simulate", "--first", "6"}, "msgx simulate: --first \"6\" is not a time of day (HH:MM)\nRun 'msgx help simulate' for the flags and examples.\n"},
		{[]string{"bench", "--workload", "night"}, "msgx bench: --messages, --rate, --clients and --floor-time must be positive, --targets is not negative, --workload is day or classic, and no arguments follow the flags\n\nRun 'msgx help bench' for the flags and examples.\n"},
		{[]string{"bench", "extra"}, "msgx bench: --messages, --rate, --clients and --floor-time must be positive, --targets is not negative, --workload is day or classic, and no arguments follow the flags\n\nRun 'msgx help bench' for the flags and examples.\n"},
		{[]string{"bench", "--targets", "-1"}, "msgx bench: --messages, --rate, --clients and --floor-time must be positive, --targets is not negative, --workload is day or classic, and no arguments follow the flags\n\nRun 'msgx help bench' for the flags and examples.\n"},
		{[]string{"flight", "0"}, "msgx flight: \"0\" is not a FLID\n"},
		{[]string{"message", "x"}, "msgx message: \"x\" is not a message id\n"},
		{[]string{"park", "x", "--reason", "r"}, "msgx park: \"x\" is not a message id\n"},
		{[]string{"jobs", "abc"}, "msgx jobs: \"abc\" is not a job id\n"},
		{[]string{"replay", "--events", "--class", "ORPHAN"}, "msgx replay: --class does not apply with --events (dead events are chosen by --target T and --id N); to replay messages of a class, drop --events; nothing was replayed\n"},
		{[]string{"replay", "--target", "KAFKA_SCHD", "--id", "3"}, "msgx replay: --target applies only with --events (to replay a target's dead events: msgx replay --events --target T); messages are chosen by --class and --id; nothing was replayed\n"},
		{[]string{"shadow", "diff", "--msgx", "m"}, "msgx shadow diff: give exactly one of --legacy FILE and --legacy-channel CH (the legacy's is FLOP)\n"},
		{[]string{"shadow", "diff", "--legacy", "l", "--msgx-channel", "c"}, "msgx shadow diff: --for DURATION is needed to listen to a channel\n"},
		{[]string{"shadow", "diff", "--legacy", "l", "--msgx", "m", "x"}, "msgx shadow diff: unexpected arguments x\n"},
		{[]string{"version", "extra"}, ""},
	} {
		out, errOut, code := runMsgx(t, nil, c.args...)
		if code != exitUsage || out != "" || errOut != c.stderr {
			t.Errorf("msgx %v: exit %d, stdout %q, stderr:\n%s\nwant exit 2 and:\n%s", c.args, code, out, errOut, c.stderr)
		}
	}
}

// --config FILE before the command is the config of every command; without a FILE it is a
// usage error that says so. A config file that is not there stops a command that reads it,
// naming the file, with the exit code of a bad configuration.
func TestRunConfig(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"--config"}, {"--config="}, {"--config", ""}} {
		out, errOut, code := runMsgx(t, nil, args...)
		if code != exitUsage || out != "" || errOut != "msgx: --config needs a FILE\n"+prog.Usage()+"\n" {
			t.Errorf("msgx %q: exit %d, stdout %q, stderr:\n%s", args, code, out, errOut)
		}
	}
	missing := filepath.Join(t.TempDir(), "missing.yaml")
	for _, args := range [][]string{{"--config", missing, "migrate"}, {"migrate", "--config", missing}, {"--config=" + missing, "status"}} {
		out, errOut, code := runMsgx(t, nil, args...)
		if code != exitConfig || out != "" || !strings.Contains(errOut, "open "+missing+": no such file or directory") {
			t.Errorf("msgx %q: exit %d, stdout %q, stderr:\n%s", args, code, out, errOut)
		}
	}
}

// Two runs in one process share nothing: the config and the server address one run is given
// are not the next one's, and the environment is only what the run was given.
func TestRunSharesNothing(t *testing.T) {
	t.Parallel()
	cfg := filepath.Join(t.TempDir(), "msgx.yaml")
	if err := os.WriteFile(cfg, []byte("http:\n  addr: 127.0.0.1:1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The first run reads the server's address from its config, and finds no server there.
	_, errOut, code := runMsgx(t, nil, "--config", cfg, "status")
	if code != exitFailure || !strings.Contains(errOut, "127.0.0.1:1") {
		t.Fatalf("msgx --config %s status: exit %d, %s", cfg, code, errOut)
	}
	// The next one, without it, is not told of that config.
	out, errOut, code := runMsgx(t, nil, "help", "decode")
	if code != 0 || errOut != "" || strings.Contains(out, cfg) || !strings.Contains(out, "(default MSGX_CONFIG)\n") {
		t.Errorf("a run after one with --config: exit %d, %s%s", code, out, errOut)
	}
	// An unknown MSGX_* variable is warned of only in the run that has it.
	_, errOut, code = runMsgx(t, []string{"MSGX_PIPELINE_BATCH_SIZ=10"}, "migrate")
	if code != 0 || !strings.Contains(errOut, "msgx migrate: warning: unknown environment variable MSGX_PIPELINE_BATCH_SIZ (did you mean MSGX_PIPELINE_BATCH_SIZE?)") {
		t.Errorf("migrate with a mistyped variable: exit %d, %s", code, errOut)
	}
	out, errOut, code = runMsgx(t, nil, "migrate")
	if code != 0 || errOut != "" || !strings.HasPrefix(out, "schema at version ") || !strings.HasSuffix(out, " (sqlite)\n") {
		t.Errorf("migrate: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// msgx decode prints the decoded message as JSON: its type tag, identity, META and body (as
// the codec's golden file has them); a file it cannot read exits 1 naming it.
func TestRunDecode(t *testing.T) {
	t.Parallel()
	out, errOut, code := runMsgx(t, nil, "decode", "../../testdata/flop/chot.xml")
	if code != 0 || errOut != "" {
		t.Fatalf("msgx decode: exit %d, %s", code, errOut)
	}
	var got, golden map[string]any
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("msgx decode printed no JSON (%v):\n%s", err, out)
	}
	b, err := os.ReadFile("../../testdata/flop/chot.golden.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &golden); err != nil {
		t.Fatal(err)
	}
	if got["type_tag"] != "FLOP-CHOT" || got["identity"] != "AODB|FLOP|CHOT|510037" ||
		!reflect.DeepEqual(got["meta"], golden["meta"]) || !reflect.DeepEqual(got["body"], golden["body"]) {
		t.Errorf("msgx decode:\n%s\nwant the meta and body of:\n%s", out, b)
	}
	missing := filepath.Join(t.TempDir(), "none.xml")
	out, errOut, code = runMsgx(t, nil, "decode", missing)
	if code != exitFailure || out != "" || errOut != "msgx decode: open "+missing+": no such file or directory\n" {
		t.Errorf("msgx decode of a missing file: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// msgx version and msgx --version print the same line: the module version, the commit and
// the Go version.
func TestRunVersion(t *testing.T) {
	t.Parallel()
	out, errOut, code := runMsgx(t, nil, "version")
	if code != 0 || errOut != "" || !strings.HasPrefix(out, "msgx ") || !strings.Contains(out, " commit ") || !strings.HasSuffix(out, "\n") {
		t.Errorf("msgx version: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if again, _, _ := runMsgx(t, nil, "--version"); again != out {
		t.Errorf("msgx --version %q, msgx version %q", again, out)
	}
}

// The client's constants are the server's: a command line the client checks against them is
// one the server takes.
func TestClientConstantsAreTheServers(t *testing.T) {
	t.Parallel()
	if client.MaxPageLimit != store.MaxPageLimit || client.MaxAckIDs != api.MaxAckIDs ||
		client.RequestRegistered != store.ReqRegistered || client.RequestSent != store.ReqSent ||
		client.RequestDone != store.ReqDone || client.RequestExpired != store.ReqExpired {
		t.Error("msgx/client's constants differ from internal/store's and internal/api's")
	}
}
