package dispatch_test

// Sink outages under the delivery policy (issue 8): no attempt limit, backoff capped, a head
// deadline of a day. An INFRA failure keeps the head PENDING however long the outage; only a
// refusal of the event itself kills it. The loop sleeps a failing head's whole backoff.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"msgx/client"
	"msgx/internal/dispatch"
	"msgx/internal/pipeline"
	"msgx/internal/store"
	"msgx/internal/store/storetest"
	"msgx/internal/target"
	"msgx/internal/testkit"
)

// deliveryPolicy is what `msgx serve` gives the dispatcher: the pump's steps and cap, no
// attempt limit, delivery.head-deadline.
var deliveryPolicy = pipeline.RetryPolicy{Steps: pipeline.DefaultBackoff, Cap: 60 * time.Second, HeadDeadline: 24 * time.Hour}

func TestDeliveryClass(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		err  error
		want pipeline.ErrorClass
	}{
		{"unclassified", errors.New("dial tcp 127.0.0.1:6379: connect: connection refused"), pipeline.Infra},
		{"timeout", fmt.Errorf("publish: %w", context.DeadlineExceeded), pipeline.Infra},
		{"infra", pipeline.Wrap(pipeline.Infra, errDown), pipeline.Infra},
		{"rejected", pipeline.Wrap(pipeline.Rejected, errors.New("HTTP 400")), pipeline.Rejected},
		{"rejected, wrapped again", fmt.Errorf("target X: %w", pipeline.Wrap(pipeline.Rejected, errors.New("too large"))), pipeline.Rejected},
		{"mapping error as CODEC_ERROR", pipeline.Errorf(pipeline.CodecError, "cannot map"), pipeline.Rejected},
		{"malformed", pipeline.Errorf(pipeline.Malformed, "not JSON"), pipeline.Rejected},
		{"unsupported", pipeline.Errorf(pipeline.Unsupported, "no encoder"), pipeline.Rejected},
		{"orphan is no delivery class", pipeline.Errorf(pipeline.Orphan, "?"), pipeline.Infra},
		{"exhausted is no delivery class", pipeline.Errorf(pipeline.Exhausted, "?"), pipeline.Infra},
	} {
		if got := dispatch.DeliveryClass(tc.err); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

// An outage far longer than five attempts of the default backoff (1+2+4+8+16 s) leaves the
// head PENDING as INFRA, its first failure kept; once the sink is back every event goes out,
// in order, and the target is no longer blocked.
func TestOutageKeepsTheHeadPending(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		h := newHarness(t, db, dispatch.Options{Policy: deliveryPolicy}, "REDIS_NOTIFY")
		sink := h.sinks["REDIS_NOTIFY"]
		var want []int64
		for range 3 {
			want = append(want, insert(t, db, ev{target: "REDIS_NOTIFY", kind: "notify"}))
		}
		sink.failAll(errDown)
		for i := 1; i <= 40; i++ { // 40 attempts over about 35 minutes
			_, wait := h.deliver(t, "REDIS_NOTIFY")
			if wantWait := deliveryPolicy.Delay(i); wait != wantWait {
				t.Fatalf("attempt %d: wait %s, want %s", i, wait, wantWait)
			}
			r := get(t, db, want[0])
			if r.State != "PENDING" || r.Attempts != i || r.Class.String != "INFRA" || !r.FirstFailedAt.Valid || !r.FirstFailedAt.Time.Equal(t0) {
				t.Fatalf("attempt %d: head %+v", i, r)
			}
			st := targetStats(t, db, h.clock.Now(), "REDIS_NOTIFY")
			if st.BlockedSince == nil || !st.BlockedSince.Equal(t0) || st.LastError == nil || st.NextAttemptAt == nil ||
				!st.NextAttemptAt.Equal(h.clock.Now().Add(wait)) || st.Pending != 3 || st.Dead != 0 {
				t.Fatalf("attempt %d: stats %+v", i, st)
			}
			h.clock.Add(wait)
		}
		wantState(t, db, "PENDING", want...)
		sink.succeed()
		if n, _ := h.deliver(t, "REDIS_NOTIFY"); n != 3 {
			t.Fatalf("after the outage sent %d, want 3", n)
		}
		wantState(t, db, "SENT", want...)
		if got := ids(sink.last(t)); !slices.Equal(got, want) {
			t.Fatalf("sent %v, want %v", got, want)
		}
		if st := targetStats(t, db, h.clock.Now(), "REDIS_NOTIFY"); st.BlockedSince != nil || st.Pending != 0 {
			t.Fatalf("stats after recovery: %+v", st)
		}
	})
}

// The schedule batch rides out an outage the same way.
func TestSchdOutageKeepsTheBatchPending(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		h := newHarness(t, db, dispatch.Options{Policy: deliveryPolicy, SchdTarget: "KAFKA_SCHD"}, "KAFKA_SCHD")
		a := insert(t, db, ev{target: "KAFKA_SCHD", kind: "schd", key: "1"})
		b := insert(t, db, ev{target: "KAFKA_SCHD", kind: "schd", key: "2"})
		h.sinks["KAFKA_SCHD"].failAll(errDown)
		for i := 1; i <= 20; i++ {
			_, wait := h.flush(t, true)
			if wait != deliveryPolicy.Delay(i) {
				t.Fatalf("attempt %d: wait %s", i, wait)
			}
			h.clock.Add(wait)
		}
		if r := get(t, db, a); r.State != "PENDING" || r.Attempts != 20 || r.Class.String != "INFRA" || !r.FirstFailedAt.Time.Equal(t0) {
			t.Fatalf("schd head after the outage: %+v", r)
		}
		h.sinks["KAFKA_SCHD"].succeed()
		h.flush(t, true)
		wantState(t, db, "SENT", a, b)
	})
}

// Only a refusal of the event itself kills it at once, whatever class the sink used for it.
func TestRefusalsDieAtOnceUnderTheDeliveryPolicy(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"REJECTED", pipeline.Wrap(pipeline.Rejected, errors.New("HTTP 422"))},
		{"CODEC_ERROR", pipeline.Errorf(pipeline.CodecError, "cannot encode the event")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := storetest.SQLite(t)
			h := newHarness(t, db, dispatch.Options{Policy: deliveryPolicy}, "WEBHOOK")
			bad := insert(t, db, ev{target: "WEBHOOK", kind: "notify"})
			next := insert(t, db, ev{target: "WEBHOOK", kind: "notify"})
			h.sinks["WEBHOOK"].setFail(func(recs []target.Record) (int, error) {
				if recs[0].EventID == bad {
					return 0, tc.err
				}
				return len(recs), nil
			})
			h.deliver(t, "WEBHOOK")
			if r := get(t, db, bad); r.State != "DEAD" || r.Class.String != "REJECTED" || r.Attempts != 1 {
				t.Fatalf("refused event: %+v", r)
			}
			h.deliver(t, "WEBHOOK")
			wantState(t, db, "SENT", next)
		})
	}
}

func targetStats(t *testing.T, db *store.DB, now time.Time, name string) dispatch.TargetStats {
	t.Helper()
	all, err := dispatch.Stats(context.Background(), db.Outbox, now)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range all {
		if s.Target == name {
			return s
		}
	}
	t.Fatalf("no stats for %s in %+v", name, all)
	return dispatch.TargetStats{}
}

// targetSection is target name as the status's "targets" section answers it at now.
func targetSection(t *testing.T, db *store.DB, now time.Time, name string) client.TargetStatus {
	t.Helper()
	v, err := dispatch.StatusSection(db.Outbox, testkit.NewClock(now), nil)(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range v.([]client.TargetStatus) {
		if s.Target == name {
			return s
		}
	}
	t.Fatalf("no section for %s in %+v", name, v)
	return client.TargetStatus{}
}

// The status JSON names the blocked state.
func TestStatsJSONShowsBlockedSince(t *testing.T) {
	t.Parallel()
	db := storetest.SQLite(t)
	h := newHarness(t, db, dispatch.Options{Policy: deliveryPolicy}, "REDIS_NOTIFY")
	insert(t, db, ev{target: "REDIS_NOTIFY", kind: "notify"})
	b, _ := json.Marshal(targetSection(t, db, t0, "REDIS_NOTIFY"))
	var idle map[string]any
	json.Unmarshal(b, &idle)
	if idle["blocked_since"] != nil || idle["blocked_for_s"] != nil || idle["last_error"] != nil {
		t.Fatalf("a target whose head never failed shows blocked: %s", b)
	}
	h.sinks["REDIS_NOTIFY"].failAll(errDown)
	h.deliver(t, "REDIS_NOTIFY")
	b, _ = json.Marshal(targetSection(t, db, t0.Add(90*time.Second), "REDIS_NOTIFY"))
	var st struct {
		BlockedSince *time.Time `json:"blocked_since"`
		BlockedFor   *float64   `json:"blocked_for_s"`
		ErrorClass   *string    `json:"error_class"`
		LastError    *string    `json:"last_error"`
		NextAttempt  *time.Time `json:"next_attempt_at"`
		Pending      int        `json:"pending"`
	}
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	if st.BlockedSince == nil || !st.BlockedSince.Equal(t0) || st.BlockedFor == nil || *st.BlockedFor != 90 ||
		st.ErrorClass == nil || *st.ErrorClass != "INFRA" || st.LastError == nil || st.NextAttempt == nil || st.Pending != 1 {
		t.Fatalf("blocked target: %s", b)
	}
}

// timers hands the loops timers the test fires by hand and records every wait asked for.
type timers struct {
	mu    sync.Mutex
	waits map[string][]time.Duration
	fire  map[string]chan time.Time
}

func newTimers(names ...string) *timers {
	tm := &timers{waits: map[string][]time.Duration{}, fire: map[string]chan time.Time{}}
	for _, n := range names {
		tm.fire[n] = make(chan time.Time, 1)
	}
	return tm
}

func (tm *timers) timer(name string, wait time.Duration) (<-chan time.Time, func()) {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	tm.waits[name] = append(tm.waits[name], wait)
	return tm.fire[name], func() {}
}

func (tm *timers) asked(name string) []time.Duration {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	return slices.Clone(tm.waits[name])
}

// A failing head's loop sleeps the head's whole backoff, far beyond the poll interval, and
// Wake (new events, for it and for others) does not make it try early; another target's loop
// delivers on Wake meanwhile.
func TestLoopSleepsTheWholeBackoff(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		pol := deliveryPolicy
		pol.Steps = []time.Duration{10 * time.Second}
		h := newHarness(t, db, dispatch.Options{Policy: pol, PollInterval: 50 * time.Millisecond}, "DOWN", "UP")
		tm := newTimers("DOWN", "UP")
		dispatch.SetTimer(h.d, tm.timer)
		down := h.sinks["DOWN"]
		down.failAll(errDown)
		stuck := insert(t, db, ev{target: "DOWN", kind: "notify"})

		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- h.d.Run(ctx) }()
		defer func() { cancel(); <-done }()

		testkit.Eventually(t, 5*time.Second, "the failing head's loop to sleep", func() bool { return len(tm.asked("DOWN")) == 1 })
		if w := tm.asked("DOWN"); w[0] != 10*time.Second {
			t.Fatalf("failing head's loop sleeps %s, want its backoff 10s (not the 50ms poll)", w[0])
		}
		for i := range 10 {
			behind := insert(t, db, ev{target: "DOWN", kind: "notify"})
			other := insert(t, db, ev{target: "UP", kind: "notify"})
			h.d.Wake()
			testkit.Eventually(t, 5*time.Second, fmt.Sprintf("UP event %d delivered on Wake", i), func() bool { return state(t, db, other) == "SENT" })
			if state(t, db, behind) != "PENDING" {
				t.Fatalf("event %d behind the failing head was sent", behind)
			}
		}
		if n := down.numCalls(); n != 1 {
			t.Fatalf("failing head was tried %d times during its backoff, want 1", n)
		}
		if w := tm.asked("DOWN"); len(w) != 1 {
			t.Fatalf("Wake ended the backoff: waits %v", w)
		}
		if r := get(t, db, stuck); r.Attempts != 1 || r.State != "PENDING" {
			t.Fatalf("head during its backoff: %+v", r)
		}

		// The backoff ends: the head and everything behind it go, in order.
		down.succeed()
		h.clock.Add(10 * time.Second)
		tm.fire["DOWN"] <- time.Time{}
		testkit.Eventually(t, 5*time.Second, "the DOWN target drained", func() bool {
			all, _ := dispatch.List(context.Background(), db.Outbox, dispatch.Filter{Target: "DOWN", State: "PENDING"})
			return len(all) == 0
		})
		if n := down.numCalls(); n != 2 {
			t.Fatalf("sends after the backoff: %d calls, want 2 (1 failed, 1 with all 11)", n)
		}
		if got := ids(down.last(t)); len(got) != 11 || got[0] != stuck || !slices.IsSorted(got) {
			t.Fatalf("sent after the backoff: %v", got)
		}
	})
}

// flakyEvents fails PendingEvents while down is set, and counts its calls.
type flakyEvents struct {
	store.Events
	down  atomic.Bool
	calls atomic.Int64
}

func (f *flakyEvents) PendingEvents(ctx context.Context, target string, limit int) ([]store.Event, error) {
	f.calls.Add(1)
	if f.down.Load() {
		return nil, store.Unavailable(errors.New("database down"))
	}
	return f.Events.PendingEvents(ctx, target, limit)
}

// A database failure of a step is retried after the policy's delay, not at the next poll or
// Wake.
func TestLoopBacksOffADatabaseFailure(t *testing.T) {
	t.Parallel()
	db := storetest.SQLite(t)
	flaky := &flakyEvents{Events: db.Outbox}
	flaky.down.Store(true)
	sink := &fakeSink{}
	pol := deliveryPolicy
	pol.Steps = []time.Duration{7 * time.Second}
	d := dispatch.New(flaky, map[string]target.Sink{"UP": sink}, dispatch.Options{Policy: pol, PollInterval: 50 * time.Millisecond, Logger: quiet()})
	tm := newTimers("UP")
	dispatch.SetTimer(d, tm.timer)
	id := insert(t, db, ev{target: "UP", kind: "notify"})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	defer func() { cancel(); <-done }()

	testkit.Eventually(t, 5*time.Second, "the loop to back off", func() bool { return len(tm.asked("UP")) == 1 })
	if w := tm.asked("UP")[0]; w != 7*time.Second {
		t.Fatalf("after a database failure the loop sleeps %s, want 7s", w)
	}
	for range 5 {
		d.Wake()
	}
	// A negative check: nothing to wait for but the absence of a read, so the test gives the
	// loop a real moment (several poll intervals' worth of wake-ups) to do the wrong thing.
	time.Sleep(50 * time.Millisecond)
	if n := flaky.calls.Load(); n != 1 {
		t.Fatalf("Wake retried the failed step: %d reads", n)
	}
	flaky.down.Store(false)
	tm.fire["UP"] <- time.Time{}
	testkit.Eventually(t, 5*time.Second, "delivery after the database is back", func() bool { return state(t, db, id) == "SENT" })
}

// A replay through the dispatcher kicks even a loop whose head is backing off: the replayed
// event comes before that head and is due at once.
func TestReplayKicksABackingOffLoop(t *testing.T) {
	t.Parallel()
	db := storetest.SQLite(t)
	pol := deliveryPolicy
	pol.Steps = []time.Duration{10 * time.Second}
	h := newHarness(t, db, dispatch.Options{Policy: pol, PollInterval: 50 * time.Millisecond}, "DOWN")
	tm := newTimers("DOWN")
	dispatch.SetTimer(h.d, tm.timer)
	down := h.sinks["DOWN"]
	down.failAll(errDown)
	dead := insert(t, db, ev{target: "DOWN", kind: "notify"})
	kill(t, db, dead, pipeline.Rejected)
	head := insert(t, db, ev{target: "DOWN", kind: "notify"})

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.d.Run(ctx) }()
	defer func() { cancel(); <-done }()
	testkit.Eventually(t, 5*time.Second, "the head to back off", func() bool { return len(tm.asked("DOWN")) == 1 })
	if got := ids(down.last(t)); got[0] != head {
		t.Fatalf("first send %v, want head %d first", got, head)
	}
	if moved, _, err := h.d.Replay(context.Background(), "DOWN", []int64{dead}); err != nil || moved != 1 {
		t.Fatalf("replay: %d, %v", moved, err)
	}
	testkit.Eventually(t, 5*time.Second, "the replayed event to be tried", func() bool { return down.numCalls() == 2 })
	if got := ids(down.last(t)); got[0] != dead {
		t.Fatalf("send after the replay %v, want the replayed event %d first", got, dead)
	}
}
