package pump_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"msgx/internal/handler"
	"msgx/internal/jobs"
	"msgx/internal/logship"
	"msgx/internal/pipeline"
	"msgx/internal/pump"
	"msgx/internal/store/storetest"
	"msgx/internal/testkit"
)

// With logstash gone, the pump processes every message as it would without log shipping:
// the shipped lines beyond the queue are dropped and counted, the local log has them all,
// and a message's lines carry its trace id.
func TestPumpIsUnaffectedByLogstashDown(t *testing.T) {
	t.Parallel()
	db := storetest.SQLite(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ship := logship.New(addr, 4)
	ctx, cancel := context.WithCancel(context.Background())
	shipped := make(chan struct{})
	go func() { ship.Run(ctx); close(shipped) }()
	defer func() { cancel(); <-shipped }()

	traces := logship.NewTraces(1000)
	db.Processor.SetTraceHook(traces.Remember)
	var local testkit.Buffer
	log := slog.New(logship.Correlate(logship.Tee(slog.NewJSONHandler(&local, nil), slog.NewJSONHandler(ship, nil)), traces))
	clock := testkit.NewClock(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	p := pump.New(storetest.Pump(db), handler.Default(handler.Options{}), pump.Options{Policy: defaultPolicy, Clock: clock, Logger: log,
		Jobs: &jobs.Runner{DB: db.Archiver, Clock: clock}})
	const n = 60
	raws := make([]string, n)
	traceIDs := make([]string, n)
	for i := range raws {
		raws[i] = refMsg("STTS", "ADD", fmt.Sprint(100+i), stts(fmt.Sprintf("S%d", i), "延误"), 1)
		if i%2 == 0 {
			traceIDs[i] = fmt.Sprintf("%032x", i+1)
		}
	}
	ids, err := db.Intake.InsertMessagesTraced(context.Background(), raws, traceIDs, clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		for i := 0; i < 10*n; i++ {
			wait, err := p.Step(context.Background())
			if err != nil || wait > 0 {
				done <- err
				return
			}
		}
		done <- fmt.Errorf("pump never settled")
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("the pump blocked with logstash down")
	}
	for _, id := range ids {
		m, err := db.Operations.GetMessage(context.Background(), id)
		if err != nil || m.State != pipeline.Succeeded {
			t.Fatalf("message %d: %+v %v", id, m, err)
		}
	}
	if ship.Dropped() == 0 {
		t.Fatal("no line counted as dropped with logstash down")
	}
	out := local.String()
	if c := strings.Count(out, `"msg":"message SUCCEEDED"`); c != n {
		t.Fatalf("%d SUCCEEDED lines in the local log, want %d", c, n)
	}
	want := fmt.Sprintf(`"msg_id":%d,`, ids[2])
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "message SUCCEEDED") && strings.Contains(line, want) {
			if !strings.Contains(line, `"trace_id":"`+traceIDs[2]+`"`) {
				t.Fatalf("the SUCCEEDED line of a traced message lacks its trace id: %s", line)
			}
			return
		}
	}
	t.Fatalf("no SUCCEEDED line for message %d", ids[2])
}
