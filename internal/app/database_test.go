package app

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"msgx/internal/config"
	"msgx/internal/store/storetest"
	"msgx/internal/testkit"
)

var t0 = time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC)

// waitForDatabase against a port nobody listens on: it tries with backoff on the injected
// clock, logging each try, and gives up at database.wait-timeout with exit code 5.
func TestOutageAtStartGivesUpWithCode5(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cfg := config.Default()
	cfg.Database.Driver, cfg.Database.DSN, cfg.Database.WaitTimeout = "mysql", "root@tcp("+addr+")/msgx?timeout=1s", 20*time.Second
	clock := testkit.NewClock(t0)
	var slept []time.Duration
	sleep := func(_ context.Context, d time.Duration) bool {
		slept = append(slept, d)
		clock.Add(d)
		return true
	}
	var logs strings.Builder
	_, err = waitForDatabase(context.Background(), cfg, slog.New(slog.NewTextHandler(&logs, nil)), clock, sleep)
	var e ExitError
	if !errors.As(err, &e) || e.Code != ExitNoDatabase {
		t.Fatalf("waitForDatabase: %v, want exit code %d", err, ExitNoDatabase)
	}
	var total time.Duration
	for _, d := range slept {
		total += d
	}
	if total != 20*time.Second || len(slept) < 5 || len(slept) > 10 {
		t.Fatalf("waited %v (%s in all), want backoff up to the 20 s bound", slept, total)
	}
	if n := strings.Count(logs.String(), "database not reachable; waiting for it"); n != len(slept) {
		t.Fatalf("%d tries logged for %d waits:\n%s", n, len(slept), logs.String())
	}
}

// A server that answers but refuses the credentials is a configuration error (code 4) at
// once, not an outage to wait out.
func TestOutageAtStartRefusedCredentialsAreCode4(t *testing.T) {
	dsn := storetest.MySQLDSN(t) // skips or fails, as the services rule says, without MariaDB
	i := strings.Index(dsn, "@")
	cfg := config.Default()
	cfg.Database.Driver, cfg.Database.DSN = "mysql", "msgx_no_such_user:wrong"+dsn[i:]
	clock := testkit.NewClock(t0)
	sleep := func(context.Context, time.Duration) bool {
		t.Fatal("waited for a database that refused the credentials")
		return false
	}
	_, err := waitForDatabase(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), clock, sleep)
	var e ExitError
	if !errors.As(err, &e) || e.Code != ExitConfig {
		t.Fatalf("waitForDatabase: %v, want exit code %d", err, ExitConfig)
	}
}

// The inbox takes the smaller of http.max-body-bytes and the database's limit (0: none).
func TestEffectiveBodyLimit(t *testing.T) {
	for _, c := range []struct{ configured, database, want int64 }{
		{32 << 20, 0, 32 << 20},                    // SQLite: no limit of its own
		{32 << 20, 14675968, 14675968},             // a stock MariaDB: 16 MiB packet less headroom
		{1 << 20, 14675968, 1 << 20},               // configured under the database's
		{14675968, 14675968, 14675968},             // equal
		{64 << 20, 1<<30 - 1<<27 - 4096, 64 << 20}, // a 1 GiB packet
	} {
		if got := EffectiveBodyLimit(c.configured, c.database); got != c.want {
			t.Errorf("EffectiveBodyLimit(%d, %d) = %d, want %d", c.configured, c.database, got, c.want)
		}
	}
}
