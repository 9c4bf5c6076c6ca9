package app

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// notifySocket listens where systemd would (a datagram socket) and returns its name and the
// notifications that arrive on it.
func notifySocket(t *testing.T, name string) (string, <-chan string) {
	t.Helper()
	if name == "" {
		dir, err := os.MkdirTemp("", "sd") // short: a socket path has 108 bytes at most
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		name = filepath.Join(dir, "notify")
	}
	addr := name
	if strings.HasPrefix(addr, "@") {
		addr = "\x00" + addr[1:]
	}
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: addr, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	got := make(chan string, 100)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := c.Read(buf)
			if err != nil {
				return
			}
			got <- string(buf[:n])
		}
	}()
	return name, got
}

// next returns the next notification, which must start with prefix; WATCHDOG=1 is passed
// over when prefix is another. It fails after 5 s.
func next(t *testing.T, got <-chan string, prefix string) string {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		select {
		case s := <-got:
			if s == "WATCHDOG=1" && prefix != s {
				continue
			}
			if !strings.HasPrefix(s, prefix) {
				t.Fatalf("notification %q, want %s…", s, prefix)
			}
			return s
		case <-deadline:
			t.Fatalf("no notification %s… within 5 s", prefix)
			return ""
		}
	}
}

// TestNotifierReadyWhenReadyz: READY=1 is sent only once /readyz answers 200, the reasons
// before it as STATUS=, WATCHDOG=1 while /livez answers, STOPPING=1 when the context ends.
func TestNotifierReadyWhenReadyz(t *testing.T) {
	sock, got := notifySocket(t, "")
	var asked, readyAt atomic.Int64
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/livez":
			w.Write([]byte(`{"status":"alive"}`))
		case "/readyz":
			if n := asked.Add(1); n < 4 {
				w.WriteHeader(http.StatusServiceUnavailable)
				w.Write([]byte(`{"ready":false,"reason":"no instance holds the pump lease"}`))
				return
			}
			readyAt.CompareAndSwap(0, time.Now().UnixNano())
			w.Write([]byte(`{"ready":true}`))
		default:
			http.NotFound(w, r)
		}
	})
	n := newNotifier(mapEnv{"NOTIFY_SOCKET": sock, "WATCHDOG_USEC": "40000"}.get, 1, slog.New(slog.DiscardHandler))
	if n == nil || n.watchdog != 40*time.Millisecond {
		t.Fatalf("notifier %+v, want one with a 40ms watchdog", n)
	}
	n.poll = 20 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { n.run(ctx, h); close(done) }()
	go n.watch(ctx, h)

	if s := next(t, got, "STATUS="); s != "STATUS=not ready: no instance holds the pump lease" {
		t.Errorf("first status %q", s)
	}
	ready := next(t, got, "READY=1")
	if readyAt.Load() == 0 || asked.Load() < 4 {
		t.Fatalf("%q sent after %d /readyz answers, before the one that said 200", ready, asked.Load())
	}
	next(t, got, "WATCHDOG=1")
	next(t, got, "WATCHDOG=1")
	if a := asked.Load(); a != 4 {
		t.Errorf("/readyz asked %d times: it should not be asked after it answered 200", a)
	}
	cancel()
	next(t, got, "STOPPING=1")
	<-done
}

// TestNotifierNeverReadyStops: a /readyz that never answers 200 sends no READY=1 (systemd
// then fails the start after TimeoutStartSec=) and the reason once, not at every ask.
func TestNotifierNeverReadyStops(t *testing.T) {
	sock, got := notifySocket(t, "@msgx-notify-test-"+t.Name())
	n := newNotifier(mapEnv{"NOTIFY_SOCKET": sock}.get, 1, slog.New(slog.DiscardHandler))
	n.poll = 5 * time.Millisecond
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte(`{"ready":false,"reason":"database unreachable"}`))
	})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	n.run(ctx, h)
	var all []string
	for len(got) > 0 || len(all) < 2 {
		select {
		case s := <-got:
			all = append(all, s)
		case <-time.After(2 * time.Second):
			t.Fatalf("notifications %q", all)
		}
	}
	if len(all) != 2 || all[0] != "STATUS=not ready: database unreachable" || all[1] != "STOPPING=1" {
		t.Fatalf("notifications %q, want the status once, then STOPPING=1", all)
	}
}

// TestNewNotifier reads the environment as sd_notify(3) does.
func TestNewNotifier(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	if n := newNotifier(mapEnv{"WATCHDOG_USEC": "1000"}.get, 1, log); n != nil {
		t.Errorf("without NOTIFY_SOCKET: %+v, want none", n)
	}
	for _, c := range []struct {
		env  map[string]string
		want time.Duration
	}{
		{map[string]string{"NOTIFY_SOCKET": "/run/x"}, 0},
		{map[string]string{"NOTIFY_SOCKET": "/run/x", "WATCHDOG_USEC": "30000000"}, 30 * time.Second},
		{map[string]string{"NOTIFY_SOCKET": "/run/x", "WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "7"}, 30 * time.Second},
		{map[string]string{"NOTIFY_SOCKET": "/run/x", "WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "8"}, 0}, // another process's
		{map[string]string{"NOTIFY_SOCKET": "/run/x", "WATCHDOG_USEC": "x"}, 0},
	} {
		if n := newNotifier(mapEnv(c.env).get, 7, log); n == nil || n.watchdog != c.want {
			t.Errorf("%v: %+v, want watchdog %s", c.env, n, c.want)
		}
	}
}

type mapEnv map[string]string

func (m mapEnv) get(k string) string { return m[k] }
