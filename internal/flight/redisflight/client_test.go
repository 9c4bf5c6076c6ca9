package redisflight_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"msgx/internal/flight/redisflight"
	"msgx/internal/pipeline"
)

// A Redis that accepts the connection and never answers (a stalled server) fails the call
// within redis.timeout, as INFRA, saying that Redis does not answer and where it is.
func TestStalledRedisIsInfraNoAnswer(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close() // held open, never answered
		}
	}()
	addr := ln.Addr().String()
	rs := redisflight.New(redisflight.Options{Addr: addr, Timeout: 300 * time.Millisecond})
	defer rs.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := rs.Markers(ctx, []int64{1, 2})
		done <- err
	}()
	select {
	case err = <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("a call to a stalled Redis did not give up within 5s (redis.timeout 300ms)")
	}
	var na *redisflight.NoAnswerError
	if !errors.As(err, &na) || pipeline.ClassOf(err) != pipeline.Infra {
		t.Fatalf("err %v (class %s), want INFRA NoAnswerError", err, pipeline.ClassOf(err))
	}
	if !strings.Contains(err.Error(), "Redis does not answer ("+addr+")") || strings.Contains(err.Error(), "database") {
		t.Fatalf("err %q does not say Redis at %s does not answer", err, addr)
	}
}
