package main_test

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A program in a module of its own (examples/deadletters, which requires msgx and imports
// msgx/client) lists a server's dead letters by class and replays one class: the public
// client works from outside msgx's module, against a real server.
func TestExampleModuleUsesThePublicClient(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "deadletters")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = filepath.Join("..", "..", "examples", "deadletters")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build in examples/deadletters: %v\n%s", err, out)
	}
	eachDB(t, func(t *testing.T, db dbEnv) {
		s := db.start(t, "MSGX_PIPELINE_POLL_INTERVAL=50ms")
		orphans := []int64{
			s.post(e2eFlop(970001, "STND", 97001, "<STND>101</STND>")),
			s.post(e2eFlop(970002, "STND", 97002, "<STND>102</STND>")),
		}
		malformed := s.post(`<?xml version="1.0" encoding="UTF-8"?>
<MSG><META><SNDR>AODB</SNDR><SEQN>970003</SEQN><DTTM>20261201091500</DTTM><TYPE>FLOP</TYPE></META><FLOP/></MSG>`)
		for _, id := range orphans {
			s.await(id, "DEAD/ORPHAN", state("DEAD", "ORPHAN"))
		}
		m := s.await(malformed, "DEAD", func(m message) bool { return m.State == "DEAD" })

		run := func(args ...string) string {
			t.Helper()
			out, err := exec.Command(bin, append([]string{"-server", s.url}, args...)...).CombinedOutput()
			if err != nil {
				t.Fatalf("deadletters %v: %v\n%s", args, err, out)
			}
			return string(out)
		}
		list := run()
		for _, want := range []string{
			fmt.Sprintf("ORPHAN\t2\t[%d %d]\n", orphans[0], orphans[1]),
			fmt.Sprintf("%s\t1\t[%d]\n", m.Class(), malformed),
		} {
			if !strings.Contains(list, want) {
				t.Fatalf("deadletters listed\n%s\nwant a line %q", list, want)
			}
		}
		if out := run("-replay", "ORPHAN"); !strings.Contains(out, "replayed ORPHAN: 2 moved") {
			t.Fatalf("deadletters -replay ORPHAN:\n%s", out)
		}
		// The server saw the replay: each orphan's history has it.
		for _, id := range orphans {
			h, err := s.api().MessageHistory(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			replayed := false
			for _, e := range h {
				replayed = replayed || strings.Contains(strings.ToLower(e.Detail+" "+e.State), "replay")
			}
			if !replayed {
				t.Fatalf("message %d's history after the replay: %+v", id, h)
			}
		}
	})
}
