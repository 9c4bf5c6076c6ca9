package main_test

import (
	"bytes"
	"debug/buildinfo"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The CLI behaves like the go tool (issue 11, item 4), through the binary.

// msgx runs the binary with args and extra environment and returns stdout, stderr and the exit
// code.
func msgx(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = append(append(os.Environ(), "MSGX_DATA_DIR="+t.TempDir()), env...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			code = exit.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("msgx %v did not end", args)
	}
	return o.String(), e.String(), code
}

var commandNames = []string{"serve", "send", "status", "messages", "message", "replay", "simulate", "decode", "migrate", "bench", "version", "help"}

// `msgx help`, `msgx help CMD` and `msgx CMD --help` print on stdout and exit 0; a command's
// help has its usage line, examples, and its flags spelt with two dashes as in the README.
func TestHelpExitsZeroWithExamples(t *testing.T) {
	t.Parallel()
	out, _, code := msgx(t, nil, "help")
	if code != 0 {
		t.Fatalf("msgx help: exit %d", code)
	}
	for _, c := range commandNames {
		if !regexp.MustCompile(`(?m)^  ` + c + ` `).MatchString(out) {
			t.Errorf("msgx help does not list %s:\n%s", c, out)
		}
	}
	// Every command `msgx help` lists, including ones added later, has help with examples.
	listed := regexp.MustCompile(`(?m)^  ([a-z]+) `).FindAllStringSubmatch(out[strings.Index(out, "Commands:"):], -1)
	singleDash := regexp.MustCompile(`(?m)^\s+-[a-z]`)
	for _, m := range listed {
		c := m[1]
		for _, args := range [][]string{{"help", c}, {c, "--help"}, {c, "-h"}} {
			out, errOut, code := msgx(t, nil, args...)
			if code != 0 || !strings.HasPrefix(out, "usage: msgx "+c) || !strings.Contains(out, "Examples:\n  msgx "+c) {
				t.Errorf("msgx %v: exit %d\n%s\nstderr: %s", args, code, out, errOut)
				continue
			}
			if singleDash.MatchString(out) {
				t.Errorf("msgx %v lists a flag with one dash:\n%s", args, out)
			}
		}
	}
	out, _, _ = msgx(t, nil, "replay", "--help")
	for _, f := range []string{"--server URL", "--class C[,C…]", "--events", "--target T", "--id N"} {
		if !strings.Contains(out, "\n  "+f) {
			t.Errorf("msgx replay --help does not list %s:\n%s", f, out)
		}
	}
}

// A mistyped command, flag, class or help topic is answered with what was probably meant,
// and exit code 2.
func TestDidYouMean(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"stauts"}, `unknown command "stauts" (did you mean status?)`},
		{[]string{"simulte", "--flights", "3"}, `(did you mean simulate?)`},
		{[]string{"help", "replai"}, `(did you mean replay?)`},
		{[]string{"send", "--sever", "x", "f.xml"}, `unknown flag --sever (did you mean --server?)`},
		{[]string{"messages", "--stat", "DEAD"}, `unknown flag --stat (did you mean --state?)`},
		{[]string{"simulate", "--flight", "3"}, `unknown flag --flight (did you mean --flights?)`},
		{[]string{"replay", "--class", "exhusted"}, `unknown class "exhusted" (did you mean EXHAUSTED?)`},
		{[]string{"simulate", "--faults", "orphn"}, `unknown fault "orphn" (did you mean orphan?)`},
	} {
		_, errOut, code := msgx(t, nil, c.args...)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("msgx %v: exit %d, stderr %q; want exit 2 and %q", c.args, code, errOut, c.want)
		}
	}
}

// --server takes host:port as well as a URL; a mistyped --target is answered with one of the
// targets the server's status lists.
func TestServerAddressAndTargetSuggestion(t *testing.T) {
	t.Parallel()
	s := start(t, t.TempDir(), "MSGX_PIPELINE_POLL_INTERVAL=50ms")
	hostPort := strings.TrimPrefix(s.url, "http://")
	for _, server := range []string{hostPort, s.url, s.url + "/", ":" + strings.Split(hostPort, ":")[1]} {
		out, errOut, code := msgx(t, nil, "status", "--server", server)
		if code != 0 || !strings.Contains(out, "pump running: true") {
			t.Errorf("msgx status --server %s: exit %d\n%s%s", server, code, out, errOut)
		}
	}
	day := tomorrow(t)
	id := s.post(e2eSchd(830001, e2eFltr(93001, "CA1301", "D", day.Add(10*time.Hour), "")))
	s.await(id, "SUCCEEDED", state("SUCCEEDED", ""))
	_, errOut, code := msgx(t, nil, "replay", "--server", hostPort, "--events", "--target", "KAFKA_FLP")
	if code != 2 || !strings.Contains(errOut, `unknown target "KAFKA_FLP" (did you mean KAFKA_FLOP?)`) {
		t.Errorf("replay --target KAFKA_FLP: exit %d, %s", code, errOut)
	}
	out, errOut, code := msgx(t, nil, "replay", "--server", hostPort, "--events", "--target", "KAFKA_FLOP")
	if code != 0 || !strings.Contains(out, "moved 0 dead events") {
		t.Errorf("replay --target KAFKA_FLOP: exit %d, %s%s", code, out, errOut)
	}
}

// `msgx version` shows the module version and the VCS commit the build recorded.
func TestVersionShowsModuleAndCommit(t *testing.T) {
	t.Parallel()
	out, _, code := msgx(t, nil, "version")
	info, err := buildinfo.ReadFile(binary)
	if err != nil {
		t.Fatal(err)
	}
	if code != 0 || !strings.HasPrefix(out, "msgx "+info.Main.Version+" commit ") || !strings.Contains(out, info.GoVersion) {
		t.Fatalf("msgx version: exit %d, %q (module %s, %s)", code, out, info.Main.Version, info.GoVersion)
	}
	if !strings.Contains(out, "commit "+revision(info)) {
		t.Fatalf("msgx version %q does not show the recorded commit %q", out, revision(info))
	}
	// A build with VCS stamping (from a git clone; the toolchain does not stamp in a git
	// worktree) records the commit, and version shows it.
	stamped := filepath.Join(t.TempDir(), "msgx")
	cmd := exec.Command("go", "build", "-o", stamped, ".")
	cmd.Env = append(os.Environ(), "GOFLAGS=-buildvcs=auto")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	if info, err = buildinfo.ReadFile(stamped); err != nil {
		t.Fatal(err)
	}
	v, err := exec.Command(stamped, "version").Output()
	if err != nil || !strings.Contains(string(v), "commit "+revision(info)) {
		t.Fatalf("msgx version of a stamped build: %v, %q, want commit %s", err, v, revision(info))
	}
	if revision(info) == "unknown" {
		t.Logf("the build recorded no commit (not a git clone, or a worktree): version says %q", v)
	} else if head, err := exec.Command("git", "rev-parse", "HEAD").Output(); err == nil && !strings.Contains(string(v), strings.TrimSpace(string(head))) {
		t.Fatalf("msgx version %q is not HEAD %s", v, head)
	}
	if v2, _ := exec.Command(stamped, "--version").Output(); string(v2) != string(v) {
		t.Fatalf("msgx --version %q differs from msgx version %q", v2, v)
	}
}

// revision is the commit a build recorded, or "unknown".
func revision(info *buildinfo.BuildInfo) string {
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" && s.Value != "" {
			return s.Value
		}
	}
	return "unknown"
}

// An unknown YAML key stops the start naming the key it probably meant (exit code 4); an
// unknown MSGX_* variable is warned about with the one it probably meant.
func TestConfigSuggestions(t *testing.T) {
	t.Parallel()
	cfg := filepath.Join(t.TempDir(), "msgx.yaml")
	os.WriteFile(cfg, []byte("pipline:\n  batch-size: 10\n"), 0o644)
	_, errOut, code := msgx(t, nil, "migrate", "--config", cfg)
	if code != 4 || !strings.Contains(errOut, "unknown key pipline (did you mean pipeline?)") {
		t.Errorf("misspelt section: exit %d, %s", code, errOut)
	}
	os.WriteFile(cfg, []byte("pipeline:\n  batch-size: lots\n"), 0o644)
	_, errOut, code = msgx(t, nil, "migrate", "--config", cfg)
	if code != 4 || !strings.Contains(errOut, `pipeline.batch-size: "lots" is not an integer`) || strings.Contains(errOut, "!!") {
		t.Errorf("wrong type: exit %d, %s", code, errOut)
	}
	out, errOut, code := msgx(t, []string{"MSGX_PIPELINE_BATCH_SIZ=10"}, "migrate")
	if code != 0 || !strings.Contains(out, "schema at version") ||
		!strings.Contains(errOut, "warning: unknown environment variable MSGX_PIPELINE_BATCH_SIZ (did you mean MSGX_PIPELINE_BATCH_SIZE?)") {
		t.Errorf("unknown variable: exit %d, %s%s", code, out, errOut)
	}
}
