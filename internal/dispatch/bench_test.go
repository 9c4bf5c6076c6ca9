package dispatch_test

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"msgx/internal/dispatch"
	"msgx/internal/pipeline"
	"msgx/internal/store"
	"msgx/internal/store/storetest"
	"msgx/internal/target"
	"msgx/internal/testkit"
)

// BenchmarkDeliver measures delivery through the real dispatcher and the real sinks, on the
// embedded SQLite outbox: "throughput" inserts b.N events at once and reports events/s until
// all are SENT, and the process's CPU per event; "latency" inserts events one transaction at a time at a steady rate (as the
// pump commits them, with a Wake after each) and reports the commit-to-SENT latency.
//
//	go test ./internal/dispatch -run XXX -bench Deliver -benchtime 5000x
func BenchmarkDeliver(b *testing.B) {
	sinks := map[string]func(b *testing.B) target.Config{
		"file": func(b *testing.B) target.Config {
			return target.Config{Sink: "file", Path: filepath.Join(b.TempDir(), "out.jsonl")}
		},
		"kafka": func(b *testing.B) target.Config {
			c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "msgx.bench"))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(c.Close)
			return target.Config{Sink: "kafka", Brokers: c.ListenAddrs(), Topic: "msgx.bench", Timeout: 10 * time.Second}
		},
	}
	for _, name := range []string{"file", "kafka"} {
		b.Run(name+"/throughput", func(b *testing.B) { benchThroughput(b, sinks[name](b)) })
		b.Run(name+"/latency", func(b *testing.B) { benchLatency(b, sinks[name](b)) })
	}
}

const benchTarget = "KAFKA_FLOP"

func startDispatcher(b *testing.B, db *store.DB, tc target.Config) (*dispatch.Dispatcher, context.CancelFunc, *sync.WaitGroup) {
	sink, err := target.Open(context.Background(), benchTarget, tc, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { sink.Close() })
	d := dispatch.New(db.Outbox, map[string]target.Sink{benchTarget: sink}, dispatch.Options{
		Policy: pipeline.RetryPolicy{MaxAttempts: 5, Cap: time.Minute, HeadDeadline: 10 * time.Minute},
		Clock:  pipeline.SystemClock{}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		PollInterval: time.Second,
	})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); d.Run(ctx) }()
	return d, cancel, &wg
}

func insertEvents(b *testing.B, db *store.DB, n, from int) {
	err := db.Tx(context.Background(), func(tx *sql.Tx) error {
		for i := 0; i < n; i++ {
			flid := 1000 + (from+i)%300
			id, err := storetest.TakeEventIDs(tx, 1)
			if err != nil {
				return err
			}
			if _, err := tx.Exec(`INSERT INTO MSG_EVENT (EVENT_ID, CMINMSGS_ID, TYPE_TAG, TARGET, KIND, FLIGHT_KEY, PAYLOAD, STATE, ATTEMPTS, CREATED_AT)
				VALUES (?, ?, 'FLOP-CHOT', ?, 'flop', ?, ?, 'PENDING', 0, ?)`, id, from+i+1, benchTarget, fmt.Sprint(flid),
				fmt.Sprintf(`{"FLID":%d,"changes":{"STND":{"old":"101","new":"%d"}}}`, flid, from+i), store.T(time.Now())); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}

func waitSent(b *testing.B, db *store.DB, n int) {
	for {
		counts, err := db.Outbox.EventCounts(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		var sent int64
		for _, c := range counts {
			if c.State == pipeline.EventSent {
				sent += c.Count
			}
		}
		if sent >= int64(n) {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func benchThroughput(b *testing.B, tc target.Config) {
	db := storetest.SQLite(b)
	insertEvents(b, db, b.N, 0)
	b.ResetTimer()
	start, cpu := time.Now(), cpuTime()
	d, cancel, wg := startDispatcher(b, db, tc)
	d.Wake()
	waitSent(b, db, b.N)
	el := time.Since(start)
	b.StopTimer()
	cancel()
	wg.Wait()
	b.ReportMetric(float64(b.N)/el.Seconds(), "events/s")
	b.ReportMetric(float64((cpuTime()-cpu).Microseconds())/float64(b.N), "cpu-µs/event")
}

// cpuTime is the CPU time the process has used so far, user and system.
func cpuTime() time.Duration {
	var r syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &r)
	return time.Duration(r.Utime.Nano() + r.Stime.Nano())
}

func benchLatency(b *testing.B, tc target.Config) {
	db := storetest.SQLite(b)
	d, cancel, wg := startDispatcher(b, db, tc)
	defer func() { cancel(); wg.Wait() }()
	const rate = 200 // events per second, one commit each
	b.ResetTimer()
	tick := time.NewTicker(time.Second / rate)
	for i := 0; i < b.N; i++ {
		<-tick.C
		insertEvents(b, db, 1, i)
		d.Wake()
	}
	tick.Stop()
	waitSent(b, db, b.N)
	b.StopTimer()
	var lat []time.Duration
	for after := int64(0); ; {
		evs, err := db.Outbox.ListEvents(context.Background(), store.EventFilter{AfterID: after, Limit: 1000})
		if err != nil {
			b.Fatal(err)
		}
		if len(evs) == 0 {
			break
		}
		for _, e := range evs {
			if e.SentAt != nil {
				lat = append(lat, e.SentAt.Sub(e.CreatedAt))
			}
		}
		after = evs[len(evs)-1].EventID
	}
	if len(lat) == 0 {
		b.Fatal("no event has a SENT time")
	}
	slices.Sort(lat)
	pct := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000 }
	b.ReportMetric(pct(0.5), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(rate, "load-events/s")
}

// BenchmarkRound measures accept→SENT the way a message sees it: each commit of the "pump"
// inserts one event for each of three file targets and wakes the dispatcher, at a steady
// rate, and a message's latency is from its commit to the SENT commit of the last of its
// three events. The targets' outcomes share one commit per round ("shared") or commit one
// transaction each ("alone"); the two run alternately on fresh databases. sent-commits/msg is
// the dispatcher's durable commits per message, cpu-µs/msg the process's CPU per message (the
// dispatcher's, and the inserts and the waits of the benchmark itself).
//
//	go test ./internal/dispatch -run XXX -bench Round -benchtime 2000x
func BenchmarkRound(b *testing.B) {
	for _, mode := range []string{"shared", "alone", "shared", "alone"} {
		b.Run(mode, func(b *testing.B) { benchRound(b, mode == "alone") })
	}
}

func benchRound(b *testing.B, alone bool) {
	db := storetest.SQLite(b)
	names := []string{"KAFKA_FLOP", "REDIS_NOTIFY", "ES_FLIGHT"}
	sinks := map[string]target.Sink{}
	for _, n := range names {
		s, err := target.Open(context.Background(), n, target.Config{Sink: "file", Path: filepath.Join(b.TempDir(), n+".jsonl")}, b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		sinks[n] = s
	}
	var mu sync.Mutex
	sentAt := map[int64]time.Time{} // event id → SENT committed
	ce := &countingEvents{Outbox: db.Outbox}
	d := dispatch.New(ce, sinks, dispatch.Options{
		Policy: pipeline.RetryPolicy{MaxAttempts: 5, Cap: time.Minute, HeadDeadline: 10 * time.Minute},
		Clock:  pipeline.SystemClock{}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		PollInterval: time.Second,
		OnSent: func(_ string, ids []int64) {
			at := time.Now()
			mu.Lock()
			for _, id := range ids {
				sentAt[id] = at
			}
			mu.Unlock()
		},
	})
	if alone {
		dispatch.CommitAlone(d)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { d.Run(ctx) })
	defer func() { cancel(); wg.Wait() }()
	const rate = 500
	committed := make([]time.Time, b.N)
	evIDs := make([][]int64, b.N)
	b.ResetTimer()
	cpu := cpuTime()
	tick := time.NewTicker(time.Second / rate)
	for i := range b.N {
		<-tick.C
		err := db.Tx(context.Background(), func(tx *sql.Tx) error {
			for _, n := range names {
				id, err := storetest.TakeEventIDs(tx, 1)
				if err != nil {
					return err
				}
				if _, err := tx.Exec(`INSERT INTO MSG_EVENT (EVENT_ID, CMINMSGS_ID, TYPE_TAG, TARGET, KIND, FLIGHT_KEY, PAYLOAD, STATE, ATTEMPTS, CREATED_AT)
				VALUES (?, ?, 'FLOP-CHOT', ?, 'flop', '1', '{"n":1}', 'PENDING', 0, ?)`, id, i+1, n, store.T(time.Now())); err != nil {
					return err
				}
				evIDs[i] = append(evIDs[i], id)
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		committed[i] = time.Now()
		d.Wake()
	}
	tick.Stop()
	waitSent(b, db, 3*b.N)
	b.StopTimer()
	cpuPerMsg := float64((cpuTime() - cpu).Microseconds()) / float64(b.N)
	// SENT is committed before OnSent runs: wait for the last OnSent to record its events.
	testkit.Eventually(b, 5*time.Second, "OnSent for every SENT event", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(sentAt) >= 3*b.N
	})
	mu.Lock()
	defer mu.Unlock()
	lat := make([]time.Duration, 0, b.N)
	for i, ids := range evIDs {
		var last time.Time
		for _, id := range ids {
			if at, ok := sentAt[id]; ok && at.After(last) {
				last = at
			}
		}
		if !last.IsZero() {
			lat = append(lat, last.Sub(committed[i]))
		}
	}
	if len(lat) == 0 {
		b.Fatalf("no event of the %d messages has a SENT time (%d recorded)", b.N, len(sentAt))
	}
	if len(lat) == 0 {
		b.Fatalf("no event of the %d messages has a SENT time (%d recorded)", b.N, len(sentAt))
	}
	slices.Sort(lat)
	pct := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000 }
	b.ReportMetric(pct(0.5), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(float64(ce.txs.Load())/float64(b.N), "sent-commits/msg")
	b.ReportMetric(cpuPerMsg, "cpu-µs/msg")
}
