//go:build msgxtesthooks

package app

import (
	"context"
	"os"
	"strconv"
	"sync/atomic"
	"syscall"

	"msgx/internal/handler"
	"msgx/internal/pipeline"
	"msgx/internal/pump"
	"msgx/internal/sis"
)

// This file is compiled only into the end-to-end tests' binary (go build -tags
// msgxtesthooks); Serve applies it. MSGX_TEST_PANIC_TAG names a type tag whose handler then panics, as a handler
// with a bug would, so the tests can watch the pump survive it. MSGX_TEST_INFRA_TAG names a
// type tag whose handler fails with INFRA every time, as when a dependency is down, so the
// tests can watch a FAILED head hold the queue.
func testHooks(o *Options) {
	o.Registry = func(reg *handler.Registry) {
		if tag := os.Getenv("MSGX_TEST_PANIC_TAG"); tag != "" {
			reg.Replace(tag, handler.Func(func(context.Context, handler.View, *sis.Message) (pipeline.Decision, error) {
				var counts map[string]int
				counts[tag]++ // a nil-map write: a bug, as a real handler might have
				return pipeline.Decision{}, nil
			}))
		}
		if tag := os.Getenv("MSGX_TEST_INFRA_TAG"); tag != "" {
			reg.Replace(tag, handler.Func(func(context.Context, handler.View, *sis.Message) (pipeline.Decision, error) {
				return pipeline.Decision{}, pipeline.Errorf(pipeline.Infra, "the %s service does not answer (test hook)", tag)
			}))
		}
	}
	// MSGX_TEST_CRASH_AFTER_REDIS=N makes the process kill itself (SIGKILL, no clean shutdown)
	// right after the Nth message whose flights it applied to Redis in phase A, before that
	// message's SQL transaction: the crash the marker must repair.
	n, _ := strconv.Atoi(os.Getenv("MSGX_TEST_CRASH_AFTER_REDIS"))
	if n <= 0 {
		return
	}
	var applied atomic.Int64
	o.PumpOptions = func(o *pump.Options) {
		o.AfterAuthority = func(int64) {
			if applied.Add(1) >= int64(n) {
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
				select {} // the signal is on its way
			}
		}
	}
}
