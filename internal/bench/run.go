// Package bench is `msgx bench`: it measures, in one run and on the configured kind of
// database, what the machine does without msgx (the floor: durable commits per second on one
// connection) and what msgx does end to end, built by app.New exactly as `msgx serve` builds
// it (lease keeper, pause checks, fence and all), and sets the two side by side as ratios.
//
// It never runs on the configured production tables: SQLite runs on a file of its own, MySQL
// on a scratch database it creates on the configured server and drops at the end
// (scratch.go).
//
// Two workloads: the simulator's airport day (WorkloadDay, the default; day.go) and the
// earlier one, its own messages (WorkloadClassic; gen.go). Both start with the floor. The
// classic workload's phases, in order, on one database:
//
//   - floor: ~2 KB rows into a scratch table on one connection, one row per commit, then 100
//     rows per commit (floor.go);
//   - snapshot: one SCHD DNLD of 3,000 flights, posted while the pump is paused (the
//     operator's pause, store.PumpPause), then the pump resumed; the time from the start to the message SUCCEEDED (decode, diff against
//     the empty board, apply, events committed);
//   - accept: N messages (reference adds and FLOPs on the snapshot's flights, half each)
//     posted by C concurrent clients while the pump is stopped; N over the time from the
//     first post to the last answer (each answer means durable);
//   - process: the pump started on that backlog of N; N over the time from the start to the
//     last one processed;
//   - latency: N FLOPs posted at a steady R per second with the pump running; per message,
//     the time from the client's receipt of the inbox's answer to the dispatcher's commit of
//     the last of its events SENT (observe.go), on the event-by-event targets (KAFKA_SCHD is
//     sent in batches every schd.flush-period by design, so it is left out);
//   - peak heap: the highest heap in use, sampled every 10 ms over all the phases but the
//     floor.
//
// Between phases the bench waits for the outbox to drain, so a phase does not pay for the
// deliveries of the one before.
//
// Both workloads count the writes the backlog makes, accepted, processed and delivered
// (writes.go), and can deliver to more targets than the four the handlers emit to
// (Options.Targets: copies, as webhooks take them).
package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"time"

	"msgx/internal/app"
	"msgx/internal/config"
	"msgx/internal/handler"
	"msgx/internal/pipeline"
	"msgx/internal/store"
)

// Defaults of Options.
const (
	DefaultMessages  = 5000
	DefaultRate      = 500
	DefaultClients   = 16
	DefaultFloorTime = 2 * time.Second
	SnapshotFlights  = 3000
)

// Options configure Run.
type Options struct {
	Config   config.Config // msgx's settings (pipeline, delivery, schd, sis.timezone, http limits)
	DB       DB            // the bench database (not migrated yet); never the production one
	Build    app.Builder   // msgx on DB, as serve builds it (app.On(DB); Scratch.Build)
	WorkDir  string        // a temporary directory for the file sinks (RunOnScratch: ScratchOptions.SinkDir)
	Workload string        // WorkloadDay (when empty) or WorkloadClassic
	// AsOfWait is how long after the first day's backlog its boards as of a past time are
	// asked (day workload; 0: at once; msgx bench --as-of-wait). 125 s lets msgx serve's
	// background fold have its rounds, as it would for an ops room looking back.
	AsOfWait  time.Duration
	Messages  int           // N (DefaultMessages when 0): FLOPs of a day, or the classic phases' messages
	Flights   int           // the day workload's flights (0: as many as give about N FLOPs)
	Rate      float64       // R, messages per second in the latency phase (DefaultRate when 0)
	Clients   int           // C, concurrent clients in the accept phase (DefaultClients when 0)
	FloorTime time.Duration // how long each floor measurement runs (DefaultFloorTime when 0)
	History   int           // finished messages put in the database before the msgx phases
	// Targets is how many delivery targets to add to the four the handlers emit to: file
	// sinks, each taking a copy of every event of one of the four in turn (copyTargets), as
	// a webhook does. 0: the four only.
	Targets  int
	Clock    pipeline.Clock
	Log      *slog.Logger // what msgx's parts log (errors, typically); discarded when nil
	Progress io.Writer    // one line per phase; nil for none
	// CPUProfile, when set, receives a CPU profile (runtime/pprof) of the processed phase
	// only (the backlog processed to SUCCEEDED): what bounds processed/s.
	CPUProfile io.Writer
}

func (o *Options) defaults() {
	if o.Workload == "" {
		o.Workload = WorkloadDay
	}
	o.Messages = pipeline.OrDefault(o.Messages, DefaultMessages)
	o.Rate = pipeline.OrDefault(o.Rate, DefaultRate)
	o.Clients = pipeline.OrDefault(o.Clients, DefaultClients)
	o.FloorTime = pipeline.OrDefault(o.FloorTime, DefaultFloorTime)
	if o.Clock == nil {
		o.Clock = pipeline.SystemClock{}
	}
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
}

// Result is what Run measured. The JSON keys are `msgx bench --json`'s.
type Result struct {
	Driver   string  `json:"driver"`
	Workload string  `json:"workload"`
	Database string  `json:"database"`
	Sinks    string  `json:"sinks_dir"` // where the file sinks wrote (RunOnScratch)
	Messages int     `json:"messages"`
	Clients  int     `json:"clients"`
	Rate     float64 `json:"rate"`
	History  int     `json:"history_rows"`
	// DeliveryTargets is how many targets the run delivered to: the four the handlers emit
	// to and CopyTargets copies of them (--targets).
	DeliveryTargets int `json:"delivery_targets"`
	CopyTargets     int `json:"copy_targets"`

	FloorCommitsPerS     float64 `json:"floor_commits_per_s"`
	FloorBatchedRowsPerS float64 `json:"floor_batched_rows_per_s"`

	AcceptedPerS      float64 `json:"accepted_per_s"`
	ProcessedPerS     float64 `json:"processed_per_s"`
	AcceptToSentP50Ms float64 `json:"accept_to_sent_p50_ms"`
	AcceptToSentP99Ms float64 `json:"accept_to_sent_p99_ms"`
	// AcceptToSentP999Ms and Targets: the day workload's request→SENT, overall (a message's
	// last event on any target) and per target, KAFKA_SCHD included (sent every
	// schd.flush-period, SchdFlushPeriodMs). The classic workload's p50 and p99 run from the
	// client's receipt of the id to the last SENT on the event-by-event targets.
	AcceptToSentP999Ms float64                  `json:"accept_to_sent_p999_ms,omitempty"`
	Targets            map[string]TargetLatency `json:"targets,omitempty"`
	// EventTargets is the day workload's request→SENT of a message's last event on the
	// event-by-event targets (all but KAFKA_SCHD): the figure to read against a latency target.
	EventTargets *TargetLatency `json:"event_targets,omitempty"`
	// Stages splits the day workload's request→SENT on the event-by-event targets in parts.
	Stages                *Stages `json:"stages,omitempty"`
	MessagesWithoutEvents int     `json:"messages_without_events"`
	SchdFlushPeriodMs     float64 `json:"schd_flush_period_ms"`
	// Flights and SnapshotS: the schedule's flights and the time from posting it (and, on
	// the day workload, the reference data before it) to it SUCCEEDED.
	Flights       int     `json:"flights"`
	SnapshotS     float64 `json:"snapshot_s"`
	Snapshot3000S float64 `json:"snapshot_3000_s,omitempty"` // classic: SnapshotS of its 3,000 flights
	PeakHeapMB    float64 `json:"peak_heap_mb"`
	// PumpStartS is the pump's first step on the bench database: the start-up adoption of
	// CMINMSGS, whose cost follows the table (see --history).
	PumpStartS float64 `json:"pump_start_s"`

	// The board as of a past time (day workload, asof.go): one live board refresh of day A
	// (GET /api/v1/flights?day=, median), day A's board rebuilt as of the end of its backlog
	// (?as_of=) two minutes later, first at the end of the backlog and then at five other times
	// within it (median), their ratios to the live refresh, the flights and messages of the rebuilt board, and whether
	// it equals the live board (it must: nothing touched day A since).
	BoardMs          float64 `json:"board_ms,omitempty"`
	AsOfFirstMs      float64 `json:"as_of_first_ms,omitempty"`
	AsOfMs           float64 `json:"as_of_ms,omitempty"`
	AsOfFirstVsBoard float64 `json:"as_of_first_vs_board,omitempty"`
	AsOfVsBoard      float64 `json:"as_of_vs_board,omitempty"`
	AsOfFlights      int     `json:"as_of_flights,omitempty"`
	AsOfMessages     int     `json:"as_of_messages,omitempty"`
	AsOfMatchesLive  bool    `json:"as_of_matches_live,omitempty"`

	// LatencyRatePerS is the rate the latency phase achieved (R unless the inbox fell behind).
	LatencyRatePerS float64 `json:"latency_rate_per_s"`
	// SentObserved says how SENT was observed: "commit" (the dispatcher's commit, always
	// when the dispatcher logs it) or "sink" (a sink's acknowledgement, just before it).
	SentObserved string `json:"sent_observed"`

	// msgx's rates over the floor: messages per durable commit of one connection, and the
	// share of the rows the database can take in batches.
	AcceptedVsCommitFloor   float64 `json:"accepted_vs_commit_floor"`
	AcceptedVsBatchedFloor  float64 `json:"accepted_vs_batched_floor"`
	ProcessedVsCommitFloor  float64 `json:"processed_vs_commit_floor"`
	ProcessedVsBatchedFloor float64 `json:"processed_vs_batched_floor"`

	// The writes of the backlog (writes.go): from the start of its accept phase until the
	// outbox drained after it was processed, the rows each table had inserted, updated and
	// deleted and the b-tree writes they cost, counted per statement, per message of the
	// backlog; and their sums over the tables.
	WritesPerMsg map[string]TableWritesPerMsg `json:"writes_per_msg,omitempty"`
	RowsPerMsg   float64                      `json:"rows_per_msg"`
	BTreePerMsg  float64                      `json:"btree_per_msg"`
}

// Run measures the floor and msgx end to end on o.DB, in the order the package doc gives.
func Run(ctx context.Context, o Options) (Result, error) {
	o.defaults()
	if o.Workload != WorkloadDay && o.Workload != WorkloadClassic {
		return Result{}, fmt.Errorf("unknown workload %q (%s or %s)", o.Workload, WorkloadDay, WorkloadClassic)
	}
	if o.Targets < 0 {
		return Result{}, fmt.Errorf("%d copy targets: want 0 or more", o.Targets)
	}
	r := Result{Driver: string(o.DB.SQLDialect()), Workload: o.Workload, SchdFlushPeriodMs: Millis(o.Config.Schd.FlushPeriod), Messages: o.Messages, Clients: o.Clients, Rate: o.Rate, History: o.History,
		DeliveryTargets: len(handler.Targets) + o.Targets, CopyTargets: o.Targets}
	fmt.Fprintf(o.Progress, "bench: floor, %s per measurement\n", o.FloorTime)
	floor, err := MeasureFloor(ctx, o.DB, o.Clock, o.FloorTime)
	if err != nil {
		return r, err
	}
	r.FloorCommitsPerS, r.FloorBatchedRowsPerS = floor.CommitsPerS, floor.BatchedRowsPerS
	if _, err := o.DB.Migrate(ctx); err != nil {
		return r, fmt.Errorf("migrate the bench database: %w", err)
	}
	if o.History > 0 {
		fmt.Fprintf(o.Progress, "bench: history of %d finished messages\n", o.History)
		if err := FillHistory(ctx, o.DB, o.History, o.Clock.Now()); err != nil {
			return r, err
		}
	}
	heap := StartHeapSampler(10 * time.Millisecond)
	err = runMsgx(ctx, o, &r)
	r.PeakHeapMB = float64(heap.Stop()) / (1 << 20)
	if err != nil {
		return r, err
	}
	r.AcceptedVsCommitFloor = Ratio(r.AcceptedPerS, r.FloorCommitsPerS)
	r.AcceptedVsBatchedFloor = Ratio(r.AcceptedPerS, r.FloorBatchedRowsPerS)
	r.ProcessedVsCommitFloor = Ratio(r.ProcessedPerS, r.FloorCommitsPerS)
	r.ProcessedVsBatchedFloor = Ratio(r.ProcessedPerS, r.FloorBatchedRowsPerS)
	return r, nil
}

// bench is one run of the msgx phases.
type bench struct {
	o      Options
	sys    *system
	rec    *Deliveries
	cl     *client
	sched  Schedule
	writes *store.WriteCounter // the backlog's, while counted (writes.go)
}

func runMsgx(ctx context.Context, o Options, r *Result) error {
	rec := NewDeliveries(o.Clock)
	sys, first, err := startSystem(ctx, o.Config, o.DB, o.Build, o.Clock, o.Log, o.WorkDir, o.Targets, rec)
	if err != nil {
		return err
	}
	defer sys.close()
	r.PumpStartS = first.Seconds()
	loc := o.Config.Location()
	now := o.Clock.Now().In(loc)
	b := &bench{o: o, sys: sys, rec: rec, cl: newClient(sys.url, max(o.Clients, 4)*4),
		// Tomorrow: no flight of the snapshot is in the past, even if the day turns mid-run.
		sched: Schedule{Day: time.Date(now.Year(), now.Month(), now.Day()+1, 0, 0, 0, 0, loc), Flights: SnapshotFlights, Loc: loc}}
	steps := b.classicSteps()
	if o.Workload == WorkloadDay {
		d, err := newDayBench(b)
		if err != nil {
			return err
		}
		steps = d.steps()
	}
	for _, s := range steps {
		fmt.Fprintf(o.Progress, "bench: %s\n", s.name)
		if err := s.fn(ctx, r); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		if err := b.drained(ctx); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
	}
	return nil
}

// step is one phase of a run.
type step struct {
	name string
	fn   func(context.Context, *Result) error
}

func (b *bench) classicSteps() []step {
	o := b.o
	return []step{
		{fmt.Sprintf("snapshot of %d flights", SnapshotFlights), b.snapshot},
		{"count the writes", b.countWrites},
		{fmt.Sprintf("accept %d messages from %d clients", o.Messages, o.Clients), b.accept},
		{fmt.Sprintf("process the backlog of %d", o.Messages), b.process},
		{"stop counting the writes", b.writesCounted},
		{fmt.Sprintf("accept→SENT of %d FLOPs at %g/s", o.Messages, o.Rate), b.latency},
	}
}

// drained waits until every event-by-event delivery is SENT, and on the day workload the
// schedule target's too (at its next flush).
func (b *bench) drained(ctx context.Context) error {
	return waitFor(ctx, 10*time.Millisecond, "the outbox to drain", func() (bool, error) {
		if b.o.Workload == WorkloadDay {
			n, err := b.sys.pendingEventsOn(ctx, b.sys.targets)
			return n == 0, err
		}
		n, err := b.sys.pendingEvents(ctx)
		return n == 0, err
	})
}

// processAll starts the pump and returns the time from its start until no message is
// PENDING; the pump is stopped again.
func (b *bench) processAll(ctx context.Context) (time.Duration, error) {
	start := b.o.Clock.Now()
	if err := b.sys.startPump(ctx); err != nil {
		return 0, err
	}
	defer b.sys.stopPump(ctx)
	err := waitFor(ctx, 10*time.Millisecond, "the pump", func() (bool, error) {
		n, err := b.sys.pendingMessages(ctx)
		return n == 0, err
	})
	return b.o.Clock.Now().Sub(start), err
}

func (b *bench) snapshot(ctx context.Context, r *Result) error {
	if _, err := b.cl.post(ctx, b.sched.Snapshot()); err != nil {
		return err
	}
	took, err := b.processAll(ctx)
	r.Flights, r.SnapshotS, r.Snapshot3000S = SnapshotFlights, took.Seconds(), took.Seconds()
	return err
}

// backlog is the accept phase's messages: reference adds and FLOPs in turn.
func (b *bench) backlog() []string {
	msgs := make([]string, b.o.Messages)
	for i := range msgs {
		if i%2 == 0 {
			msgs[i] = RefAdd(i / 2)
		} else {
			msgs[i] = b.sched.Flop(i / 2)
		}
	}
	return msgs
}

func (b *bench) accept(ctx context.Context, r *Result) error {
	return b.acceptAll(ctx, b.backlog(), r)
}

// acceptAll posts msgs from C concurrent clients, each taking the next in order, with the
// pump stopped, and sets accepted/s.
func (b *bench) acceptAll(ctx context.Context, msgs []string, r *Result) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var next atomic.Int64
	var wg sync.WaitGroup
	start := b.o.Clock.Now()
	for range b.o.Clients {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(msgs) && ctx.Err() == nil; i = int(next.Add(1) - 1) {
				if _, err := b.cl.post(ctx, msgs[i]); err != nil {
					cancel(err)
				}
			}
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return err
	}
	r.AcceptedPerS = PerSecond(len(msgs), b.o.Clock.Now().Sub(start))
	return nil
}

func (b *bench) process(ctx context.Context, r *Result) error {
	return b.processBacklog(ctx, b.o.Messages, r)
}

// processBacklog processes the backlog of n messages and sets processed/s.
func (b *bench) processBacklog(ctx context.Context, n int, r *Result) error {
	if b.o.CPUProfile != nil {
		if err := pprof.StartCPUProfile(b.o.CPUProfile); err != nil {
			return fmt.Errorf("start the CPU profile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	took, err := b.processAll(ctx)
	r.ProcessedPerS = PerSecond(n, took)
	return err
}

// latency posts FLOPs at the steady rate, open loop (a slow answer does not delay the next
// post, up to 4×C posts in flight), with the pump running, then matches each message's
// accept time with the SENT time of its events.
func (b *bench) latency(ctx context.Context, r *Result) error {
	n := b.o.Messages
	msgs := make([]string, n)
	for i := range msgs {
		msgs[i] = b.sched.Flop(b.o.Messages/2 + 1 + i) // after the backlog's FLOPs: new values
	}
	if err := b.sys.startPump(ctx); err != nil {
		return err
	}
	defer b.sys.stopPump(ctx)
	accepted, took, err := b.postAtRate(ctx, msgs)
	if err != nil {
		return err
	}
	r.LatencyRatePerS = PerSecond(n, took)
	if err := b.waitProcessed(ctx); err != nil {
		return err
	}
	if err := b.drained(ctx); err != nil {
		return err
	}
	lat, observed, err := b.latencies(ctx, accepted)
	if err != nil {
		return err
	}
	r.SentObserved = observed
	r.AcceptToSentP50Ms = Millis(Percentile(lat, 50))
	r.AcceptToSentP99Ms = Millis(Percentile(lat, 99))
	return nil
}

// waitProcessed waits until no message is PENDING (the pump running).
func (b *bench) waitProcessed(ctx context.Context) error {
	return waitFor(ctx, 10*time.Millisecond, "the pump", func() (bool, error) {
		n, err := b.sys.pendingMessages(ctx)
		return n == 0, err
	})
}

// postAtRate posts msgs at o.Rate per second and returns each one's id with the times its
// request started and its answer came, and how long the posting took.
func (b *bench) postAtRate(ctx context.Context, msgs []string) (map[int64]postTimes, time.Duration, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var mu sync.Mutex
	accepted := make(map[int64]postTimes, len(msgs))
	inflight := make(chan struct{}, 4*b.o.Clients)
	var wg sync.WaitGroup
	interval := time.Duration(float64(time.Second) / b.o.Rate)
	start := b.o.Clock.Now()
	for i, m := range msgs {
		if d := start.Add(time.Duration(i) * interval).Sub(b.o.Clock.Now()); d > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(d):
			}
		}
		select {
		case <-ctx.Done():
		case inflight <- struct{}{}:
		}
		if ctx.Err() != nil {
			break
		}
		wg.Go(func() {
			defer func() { <-inflight }()
			began := b.o.Clock.Now()
			id, err := b.cl.post(ctx, m)
			at := b.o.Clock.Now()
			if err != nil {
				cancel(err)
				return
			}
			mu.Lock()
			accepted[id] = postTimes{start: began, answered: at}
			mu.Unlock()
		})
	}
	wg.Wait()
	took := b.o.Clock.Now().Sub(start)
	if err := context.Cause(ctx); err != nil {
		return nil, 0, err
	}
	return accepted, took, nil
}

// latencies returns accept→SENT of every accepted message, and how SENT was observed.
func (b *bench) latencies(ctx context.Context, accepted map[int64]postTimes) ([]time.Duration, string, error) {
	each := map[string]bool{}
	for _, t := range b.sys.eachTargets() {
		each[t] = true
	}
	// The dispatcher logs its commit just after it: the last one may be on its way still.
	wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	waitFor(wctx, time.Millisecond, "the last commits' log records", func() (bool, error) {
		return b.rec.Uncommitted(each) == 0, nil
	})
	cancel()
	sent, commits := b.rec.SentAt(each)
	lat := make([]time.Duration, 0, len(accepted))
	var missing []int64
	for id, at := range accepted {
		s, ok := sent[id]
		if !ok {
			missing = append(missing, id)
			continue
		}
		lat = append(lat, s.Sub(at.answered))
	}
	if len(missing) > 0 {
		return nil, "", fmt.Errorf("%w: %d messages processed without an event SENT (message %d, say)", errFailed, len(missing), missing[0])
	}
	if len(lat) == 0 {
		return nil, "", errors.New("no message was accepted")
	}
	if commits {
		return lat, "commit", nil
	}
	return lat, "sink", nil
}
