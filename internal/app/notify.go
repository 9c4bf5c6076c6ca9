package app

// systemd's service notifications (sd_notify(3)), for a unit with Type=notify
// (deploy/msgx.service): systemd passes the datagram socket NOTIFY_SOCKET and counts the start
// as done when READY=1 arrives on it, so `systemctl start msgx` returns, and units ordered
// After=msgx.service start, only once msgx is ready. Without NOTIFY_SOCKET (any other way of
// running msgx) nothing here does anything.

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"msgx/client"
)

// notifier sends msgx's states to systemd.
type notifier struct {
	socket string // NOTIFY_SOCKET: a datagram socket's path, or @name in the abstract namespace
	// watchdog is WATCHDOG_USEC (WatchdogSec= of the unit) when WATCHDOG_PID is unset or this
	// process: systemd restarts msgx when no WATCHDOG=1 arrives within it. 0: no watchdog.
	watchdog time.Duration
	poll     time.Duration // how often /readyz is asked until it first answers 200
	log      *slog.Logger
}

// newNotifier reads the notification socket and the watchdog from the environment (getenv,
// os.Getenv in production) for process pid; nil when there is no NOTIFY_SOCKET.
func newNotifier(getenv func(string) string, pid int, log *slog.Logger) *notifier {
	n := &notifier{socket: getenv("NOTIFY_SOCKET"), poll: 250 * time.Millisecond, log: log}
	if n.socket == "" {
		return nil
	}
	if usec, err := strconv.ParseInt(getenv("WATCHDOG_USEC"), 10, 64); err == nil && usec > 0 {
		if p := getenv("WATCHDOG_PID"); p == "" || p == strconv.Itoa(pid) {
			n.watchdog = time.Duration(usec) * time.Microsecond
		}
	}
	return n
}

// send writes one notification (newline-separated VAR=value lines) to the socket.
func (n *notifier) send(state string) error {
	name := n.socket
	if strings.HasPrefix(name, "@") {
		name = "\x00" + name[1:]
	}
	c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: name, Net: "unixgram"})
	if err != nil {
		return fmt.Errorf("systemd notification socket %s: %w", n.socket, err)
	}
	defer c.Close()
	if _, err := c.Write([]byte(state)); err != nil {
		return fmt.Errorf("systemd notification socket %s: %w", n.socket, err)
	}
	return nil
}

// run tells systemd msgx is ready when h (the server's handler) first answers GET /readyz
// with 200 (READY=1): the database answers and a pump runs somewhere. Until then each new
// reason /readyz gives for not being ready goes to systemd as STATUS=, which `systemctl
// status msgx` shows. When ctx ends (SIGTERM) it sends STOPPING=1 and returns.
func (n *notifier) run(ctx context.Context, h http.Handler) {
	tick := time.NewTicker(n.poll)
	defer tick.Stop()
	status := ""
	for {
		code, body := askHandler(ctx, h, "/readyz")
		if code == http.StatusOK {
			n.notify("READY=1\nSTATUS=ready: /readyz answers 200")
			break
		}
		var rd client.Readiness
		if json.Unmarshal(body, &rd); rd.Reason != "" && rd.Reason != status {
			status = rd.Reason
			n.notify("STATUS=not ready: " + strings.ReplaceAll(status, "\n", " "))
		}
		select {
		case <-ctx.Done():
			n.notify("STOPPING=1")
			return
		case <-tick.C:
		}
	}
	n.log.Info("systemd told msgx is ready (READY=1)", "socket", n.socket)
	<-ctx.Done()
	n.notify("STOPPING=1\nSTATUS=stopping: finishing the message in hand")
}

// watch sends WATCHDOG=1 every half watchdog interval while h answers GET /livez with 200,
// until ctx ends; without a watchdog it returns at once. Serve runs it for the whole life of
// the process, shutdown included, so a shutdown that takes long is not taken for a hang.
func (n *notifier) watch(ctx context.Context, h http.Handler) {
	if n.watchdog <= 0 {
		return
	}
	tick := time.NewTicker(n.watchdog / 2)
	defer tick.Stop()
	for {
		if code, _ := askHandler(ctx, h, "/livez"); code == http.StatusOK {
			n.notify("WATCHDOG=1")
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// notify sends state, logging a failure (a notification lost is not worth stopping msgx for:
// systemd then fails the start by its own timeout, which says more).
func (n *notifier) notify(state string) {
	if err := n.send(state); err != nil {
		n.log.Warn("systemd notification failed", "state", strings.SplitN(state, "\n", 2)[0], "err", err.Error())
	}
}

// askHandler asks h for GET path in the process, as a request from loopback would, and
// returns the status and the start of the body.
func askHandler(ctx context.Context, h http.Handler, path string) (int, []byte) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, path, nil)
	if err != nil {
		return 0, nil
	}
	req.RemoteAddr = "127.0.0.1:0"
	w := &answer{header: http.Header{}}
	h.ServeHTTP(w, req)
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.code, w.body
}

// answer is the http.ResponseWriter of askHandler: it keeps the status and 4 KiB of the body.
type answer struct {
	header http.Header
	code   int
	body   []byte
}

func (a *answer) Header() http.Header { return a.header }
func (a *answer) WriteHeader(code int) {
	if a.code == 0 {
		a.code = code
	}
}
func (a *answer) Write(b []byte) (int, error) {
	if a.code == 0 {
		a.code = http.StatusOK
	}
	if room := 4096 - len(a.body); room > 0 {
		a.body = append(a.body, b[:min(room, len(b))]...)
	}
	return len(b), nil
}

// startNotifier starts the systemd notifications of a (when NOTIFY_SOCKET is set): the
// readiness until ctx ends, the watchdog until the process ends.
func startNotifier(ctx context.Context, a *App) {
	n := newNotifier(os.Getenv, os.Getpid(), a.log)
	if n == nil {
		return
	}
	go n.run(ctx, a.httpSrv.Handler)
	go n.watch(context.Background(), a.httpSrv.Handler)
}
