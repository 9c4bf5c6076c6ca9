package main_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// benchKeys are the figures `msgx bench --json` must give on every workload, each positive.
var benchKeys = []string{
	"floor_commits_per_s", "floor_batched_rows_per_s",
	"accepted_per_s", "processed_per_s",
	"accept_to_sent_p50_ms", "accept_to_sent_p99_ms",
	"snapshot_s", "peak_heap_mb",
	"accepted_vs_commit_floor", "accepted_vs_batched_floor",
	"processed_vs_commit_floor", "processed_vs_batched_floor",
}

// workloadKeys are the figures each workload adds: the day's p999 over every target, the
// classic's 3,000-flight snapshot.
var workloadKeys = map[string][]string{
	"day":     {"accept_to_sent_p999_ms"},
	"classic": {"snapshot_3000_s"},
}

// TestBench runs `msgx bench --json --cpuprofile FILE` with small numbers on each database,
// with the default workload (the simulated day) and the classic one, checks every figure, the
// workload named, the day's per-target latencies and the profile (a gzipped pprof file), and
// checks that the configured database was never touched and the scratch one is gone.
func TestBench(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db dbEnv) {
		for _, workload := range []string{"day", "classic"} {
			t.Run(workload, func(t *testing.T) { benchOnce(t, db, workload) })
		}
	})
}

func benchOnce(t *testing.T, db dbEnv, workload string) {
	profile := filepath.Join(t.TempDir(), "cpu.prof")
	sinks := t.TempDir()
	args := []string{"bench", "--json", "--messages", "200", "--rate", "100", "--floor-time", "500ms", "--cpuprofile", profile, "--sink-dir", sinks}
	if workload != "day" {
		args = append(args, "--workload", workload)
	}
	scratch := fmt.Sprintf("msgx_bench_e2e_%d", time.Now().UnixNano()%1e9)
	if db.Driver == "mysql" {
		args = append(args, "--database", scratch)
	}
	out, stderr, err := runBench(t, db, args...)
	if err != nil {
		t.Fatalf("msgx bench: %v\n%s", err, stderr)
	}
	var res map[string]any
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("output is not one JSON object: %v\n%s", err, out)
	}
	for _, k := range append(benchKeys, workloadKeys[workload]...) {
		v, ok := res[k].(float64)
		if !ok || !(v > 0) {
			t.Errorf("%s = %v, want a positive number", k, res[k])
		}
	}
	if res["workload"] != workload {
		t.Errorf("workload %v, want %s", res["workload"], workload)
	}
	if targets, _ := res["targets"].(map[string]any); workload == "day" && len(targets) != 4 {
		t.Errorf("targets %v, want request→SENT on each of the four", res["targets"])
	}
	if left, _ := os.ReadDir(sinks); res["sinks_dir"] != sinks || len(left) > 0 {
		t.Errorf("sinks_dir %v, want %s (--sink-dir), and nothing left in it (%d entries)", res["sinks_dir"], sinks, len(left))
	}
	if res["driver"] != db.Driver {
		t.Errorf("driver %v, want %s", res["driver"], db.Driver)
	}
	if b, err := os.ReadFile(profile); err != nil || len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
		t.Errorf("--cpuprofile %s: not a gzipped profile (%d bytes, %v)", profile, len(b), err)
	}
	t.Logf("%s", out)
	switch db.Driver {
	case "sqlite":
		if _, err := os.Stat(db.DSN); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the configured SQLite file %s was created (%v); the bench must run on its own", db.DSN, err)
		}
		left, _ := filepath.Glob(filepath.Join(db.DataDir, "msgx-bench-*"))
		if len(left) > 0 {
			t.Errorf("the bench left %v behind", left)
		}
	case "mysql":
		sqlDB := db.open(t)
		var tables, scratchLeft int
		if err := sqlDB.SQL.QueryRow(`SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE()`).Scan(&tables); err != nil {
			t.Fatal(err)
		}
		if tables != 0 {
			t.Errorf("the configured database has %d tables; the bench must run on its scratch database", tables)
		}
		if err := sqlDB.SQL.QueryRow(`SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?`, scratch).Scan(&scratchLeft); err != nil {
			t.Fatal(err)
		}
		if scratchLeft != 0 {
			t.Errorf("the scratch database %s was not dropped", scratch)
		}
	}
}

// TestBenchUnreachable: a MySQL server that does not answer is exit code 5 with a plain message.
func TestBenchUnreachable(t *testing.T) {
	t.Parallel()
	d := dbEnv{Name: "down", Driver: "mysql", DataDir: t.TempDir(), Env: []string{
		"MSGX_DATABASE_DRIVER=mysql", "MSGX_DATABASE_DSN=root@tcp(127.0.0.1:1)/msgx",
	}}
	_, stderr, err := runBench(t, d, "bench", "--json")
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 5 {
		t.Fatalf("exit %v, want code 5\n%s", err, stderr)
	}
	if !strings.Contains(string(stderr), "cannot reach the database") {
		t.Errorf("stderr does not say the database cannot be reached:\n%s", stderr)
	}
}

// runBench runs `msgx args…` on db's configuration (as db.command does, with a longer bound:
// the bench processes a 3,000-flight snapshot) and returns its stdout and stderr.
func runBench(t *testing.T, db dbEnv, args ...string) ([]byte, []byte, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = append(os.Environ(), "MSGX_HTTP_ADDR="+freeAddr(t), "MSGX_DATA_DIR="+db.DataDir)
	cmd.Env = append(cmd.Env, db.Env...)
	var stdout, stderr syncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return []byte(stdout.String()), []byte(stderr.String()), err
}
