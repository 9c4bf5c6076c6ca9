package main_test

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// `msgx messages --follow` prints the newest messages, then a message posted while it runs,
// below them (newest at the bottom, like tail -f), and ends at Ctrl-C with exit 0.
func TestMessagesFollowPrintsArrivals(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db dbEnv) {
		s := db.start(t, "MSGX_PIPELINE_POLL_INTERVAL=50ms")
		first := s.post(e2eFlop(840001, "STND", 94999, "<STND>118</STND>"))
		cmd := dieWithTest(exec.Command(binary, "messages", "--follow", "--limit", "5"))
		cmd.Env = append(os.Environ(), "MSGX_SERVER="+s.url, "MSGX_TOKEN=")
		out := &syncBuffer{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		t.Cleanup(func() {
			if cmd.ProcessState == nil {
				cmd.Process.Kill()
				<-done
			}
		})
		line := func(id int64) *regexp.Regexp { return regexp.MustCompile(fmt.Sprintf(`(?m)^ *%d  `, id)) }
		waitOut := func(what string, re *regexp.Regexp, within time.Duration) time.Duration {
			t.Helper()
			start := time.Now()
			for !re.MatchString(out.String()) {
				if time.Since(start) > within {
					t.Fatalf("%s: not within %v; msgx printed:\n%s", what, within, out.String())
				}
				time.Sleep(20 * time.Millisecond)
			}
			return time.Since(start)
		}
		waitOut("the newest message at the start", line(first), 10*time.Second)
		second := s.post(e2eFlop(840002, "STND", 94999, "<STND>119</STND>"))
		took := waitOut("the message posted while following", line(second), 5*time.Second)
		t.Logf("%s: the posted message was printed %v after its post", db.Name, took.Round(time.Millisecond))
		if o := out.String(); strings.Index(o, fmt.Sprintf("%d  ", first)) > strings.Index(o, fmt.Sprintf("%d  ", second)) {
			t.Errorf("the new message is not below the older one:\n%s", o)
		}
		cmd.Process.Signal(syscall.SIGINT)
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("msgx messages --follow at Ctrl-C: %v, want exit 0\n%s", err, out.String())
			}
		case <-time.After(5 * time.Second):
			t.Fatal("msgx messages --follow did not end at Ctrl-C")
		}
	})
}
