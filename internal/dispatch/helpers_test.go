package dispatch_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"msgx/internal/dispatch"
	"msgx/internal/pipeline"
	"msgx/internal/store"
	"msgx/internal/store/storetest"
	"msgx/internal/target"
	"msgx/internal/testkit"
)

// t0 is the fake clock's start: microsecond-aligned, as the database keeps it.
var t0 = time.Date(2026, 3, 14, 8, 0, 0, 0, time.UTC)

// fakeSink records every Send call; fail, when set, decides each call's outcome.
type fakeSink struct {
	mu    sync.Mutex
	calls [][]target.Record
	fail  func(recs []target.Record) (int, error)
}

func (s *fakeSink) Send(ctx context.Context, recs []target.Record) (int, error) {
	s.mu.Lock()
	s.calls = append(s.calls, append([]target.Record(nil), recs...))
	fail := s.fail
	s.mu.Unlock()
	if fail != nil {
		return fail(recs)
	}
	return len(recs), nil
}

func (s *fakeSink) Close() error { return nil }

func (s *fakeSink) setFail(f func([]target.Record) (int, error)) {
	s.mu.Lock()
	s.fail = f
	s.mu.Unlock()
}

// failAll makes every Send deliver nothing and fail with err.
func (s *fakeSink) failAll(err error) {
	s.setFail(func([]target.Record) (int, error) { return 0, err })
}

func (s *fakeSink) succeed() { s.setFail(nil) }

// numCalls returns how many times Send was called.
func (s *fakeSink) numCalls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.calls)
}

// last returns the records of the last Send call.
func (s *fakeSink) last(t *testing.T) []target.Record {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.calls) == 0 {
		t.Fatal("sink was never called")
	}
	return s.calls[len(s.calls)-1]
}

// ids returns the event ids of recs.
func ids(recs []target.Record) []int64 {
	out := make([]int64, len(recs))
	for i, r := range recs {
		out[i] = r.EventID
	}
	return out
}

var errDown = errors.New("broker down")

// ev describes an event to insert.
type ev struct {
	target, kind, key, payload string
	msgID                      int64
}

// insert adds a PENDING event and returns its id.
func insert(t *testing.T, db *store.DB, e ev) int64 {
	t.Helper()
	if e.kind == "" {
		e.kind = "flop"
	}
	if e.payload == "" {
		e.payload = `{"n":1}`
	}
	if e.msgID == 0 {
		e.msgID = 7
	}
	var key any
	if e.key != "" {
		key = e.key
	}
	id, err := storetest.TakeEventIDs(db.SQL, 1)
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.SQL.Exec(`INSERT INTO MSG_EVENT (EVENT_ID, CMINMSGS_ID, TYPE_TAG, TARGET, KIND, FLIGHT_KEY, PAYLOAD, STATE, ATTEMPTS, CREATED_AT)
VALUES (?, ?, 'FLOP-CHOT', ?, ?, ?, ?, 'PENDING', 0, ?)`, id, e.msgID, e.target, e.kind, key, e.payload, store.T(t0))
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// row is the delivery state of one event as the store shows it (ListEvents: a row the
// delivery mark covers is SENT).
type row struct {
	State         string
	Attempts      int
	NextAttemptAt store.NullTime
	FirstFailedAt store.NullTime
	SentAt        store.NullTime
	Class         sql.NullString
	LastError     sql.NullString
}

func get(t *testing.T, db *store.DB, id int64) row {
	t.Helper()
	evs, err := db.Outbox.ListEvents(context.Background(), store.EventFilter{AfterID: id - 1, Limit: 1})
	if err != nil || len(evs) == 0 || evs[0].EventID != id {
		t.Fatalf("event %d: %v", id, err)
	}
	e := evs[0]
	at := func(p *time.Time) store.NullTime {
		if p == nil {
			return store.NullTime{}
		}
		return store.NullTime{Time: *p, Valid: true}
	}
	str := func(p *string) sql.NullString {
		if p == nil {
			return sql.NullString{}
		}
		return sql.NullString{String: *p, Valid: true}
	}
	return row{State: string(e.State), Attempts: e.Attempts, NextAttemptAt: at(e.NextAttemptAt), FirstFailedAt: at(e.FirstFailedAt),
		SentAt: at(e.SentAt), Class: str(e.ErrorClass), LastError: str(e.LastError)}
}

// wantState fails t unless each event is in state.
func wantState(t *testing.T, db *store.DB, state string, evIDs ...int64) {
	t.Helper()
	for _, id := range evIDs {
		if got := get(t, db, id).State; got != state {
			t.Errorf("event %d: state %s, want %s", id, got, state)
		}
	}
}

// logBuf collects JSON log lines.
type logBuf struct{ testkit.Buffer }

// lines returns the decoded log lines whose msg is msg.
func (l *logBuf) lines(t *testing.T, msg string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(l.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

// policy is the retry policy of most tests: the default steps capped at 60s.
var policy = pipeline.RetryPolicy{MaxAttempts: 5, Steps: pipeline.DefaultBackoff, Cap: 60 * time.Second, HeadDeadline: 10 * time.Minute}

// harness is a dispatcher on db with fake sinks for the targets named, a fake clock and a
// captured log.
type harness struct {
	d     *dispatch.Dispatcher
	db    *store.DB
	clock *testkit.Clock
	sinks map[string]*fakeSink
	log   *logBuf
}

func newHarness(t *testing.T, db *store.DB, opt dispatch.Options, targets ...string) *harness {
	t.Helper()
	h := &harness{db: db, clock: testkit.NewClock(t0), sinks: map[string]*fakeSink{}, log: &logBuf{}}
	sinks := map[string]target.Sink{}
	for _, name := range targets {
		s := &fakeSink{}
		h.sinks[name] = s
		sinks[name] = s
	}
	if opt.Clock == nil {
		opt.Clock = h.clock
	}
	opt.Logger = slog.New(slog.NewJSONHandler(h.log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	h.d = dispatch.New(db.Outbox, sinks, opt)
	return h
}

// deliver runs one DeliverOnce step and fails t on error.
func (h *harness) deliver(t *testing.T, name string) (int, time.Duration) {
	t.Helper()
	n, wait, err := h.d.DeliverOnce(context.Background(), name)
	if err != nil {
		t.Fatalf("DeliverOnce(%s): %v", name, err)
	}
	return n, wait
}

// flush runs one FlushSchd step and fails t on error.
func (h *harness) flush(t *testing.T, force bool) (int, time.Duration) {
	t.Helper()
	n, wait, err := h.d.FlushSchd(context.Background(), force)
	if err != nil {
		t.Fatalf("FlushSchd: %v", err)
	}
	return n, wait
}
