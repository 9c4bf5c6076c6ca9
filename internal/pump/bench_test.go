package pump_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"msgx/internal/api"
	"msgx/internal/handler"
	"msgx/internal/inbox"
	"msgx/internal/pipeline"
	"msgx/internal/pump"
	"msgx/internal/store"
	"msgx/internal/store/storetest"
)

// BenchmarkEndToEnd posts b.N reference-data messages over HTTP from 16 concurrent clients
// to an in-process inbox and pump, and reports how many per second were accepted (answered
// durable) and processed (SUCCEEDED).
//
//	go test ./internal/pump -run XXX -bench EndToEnd -benchtime 2000x
func BenchmarkEndToEnd(b *testing.B) {
	b.Run("sqlite", func(b *testing.B) { benchEndToEnd(b, storetest.SQLite(b)) })
	b.Run("mysql", func(b *testing.B) { benchEndToEnd(b, storetest.MySQL(b)) })
}

func benchEndToEnd(b *testing.B, db *store.DB) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	clock := pipeline.SystemClock{}
	p := pump.New(storetest.Pump(db), handler.Default(handler.Options{}), pump.Options{
		Policy: defaultPolicy, Clock: clock, Logger: log, PollInterval: 50 * time.Millisecond,
	})
	in := inbox.New(db.Intake, clock, log, 1<<20, p.Wake)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go in.Run(ctx)
	go p.Run(ctx)
	ts := httptest.NewServer(api.New(api.Deps{DB: storetest.API(db), Inbox: in, Clock: clock, Log: log}).Handler())
	defer ts.Close()

	msgs := make([]string, b.N)
	for i := range msgs {
		msgs[i] = refMsg("STTS", "ADD", fmt.Sprint(100000+i), stts(fmt.Sprintf("S%06d", i), "bench status"), 1)
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 32}}
	b.ResetTimer()
	start := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(b.N) {
					return
				}
				resp, err := client.Post(ts.URL+"/cminmsgs/send", "application/xml", strings.NewReader(msgs[i]))
				if err != nil {
					b.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					b.Errorf("status %d", resp.StatusCode)
					return
				}
			}
		}()
	}
	wg.Wait()
	accepted := time.Since(start)
	for {
		counts, err := db.Operations.CountByState(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		if counts[pipeline.Succeeded] == b.N {
			break
		}
		if counts[pipeline.Failed]+counts[pipeline.Dead] > 0 {
			b.Fatalf("failures: %v", counts)
		}
		time.Sleep(5 * time.Millisecond)
	}
	processed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/accepted.Seconds(), "accepted/s")
	b.ReportMetric(float64(b.N)/processed.Seconds(), "processed/s")
}
