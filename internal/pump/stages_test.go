package pump

// What the tests of the message path's middlewares (stage_*_test.go) share: each wraps a fake
// next around one middleware, with outcomes recorded into memory instead of a batch.

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"msgx/internal/handler"
	"msgx/internal/pipeline"
	"msgx/internal/store"
	"msgx/internal/testkit"
)

// sttsText is a message the default handlers decide (STTS-ADD), with SEQN 7.
const sttsText = `<MSG><META><SNDR>AODB</SNDR><SEQN>7</SEQN><DTTM>20261201080000</DTTM><TYPE>STTS</TYPE><STYP>ADD</STYP></META>` +
	`<RECS>1</RECS><STTS><STTC>A</STTC><STTD>a</STTD><ABNS>N</ABNS></STTS></MSG>`

var stagePolicy = pipeline.RetryPolicy{MaxAttempts: 5, Steps: pipeline.DefaultBackoff, Cap: time.Minute, HeadDeadline: 10 * time.Minute}

// stageRig is one middleware's test bench: its pump's parts, a batch that writes nothing, and
// the outcomes recorded.
type stageRig struct {
	t       *testing.T
	clock   *testkit.Clock
	log     *slog.Logger
	status  *status
	rec     *outcomes
	ids     *identities
	order   *order
	dec     decoder
	reg     *handler.Registry
	kit     *kit
	r       *batch
	got     []store.Outcome // what the outcomes recorded, in order
	reports []func()        // their reports, run once "durable"
}

func newStageRig(t *testing.T) *stageRig {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	g := &stageRig{t: t, clock: testkit.NewClock(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)), log: log,
		reg: handler.Default(handler.Options{}), dec: decoder{identity: pipeline.IdentitySeqn, log: log}}
	g.status = &status{clock: g.clock}
	g.order = &order{known: true, log: log}
	g.ids = &identities{mode: pipeline.IdentitySeqn, log: log, raw: rawFunc(func(context.Context, int64) (string, bool, error) {
		t.Fatal("the identity rule read a raw text")
		return "", false, nil
	})}
	g.rec = newOutcomes(stagePolicy, g.reg, nil, g.status, g.order, log)
	g.kit = &kit{opt: &Options{Clock: g.clock}, rec: g.rec, ids: g.ids, status: g.status, dec: g.dec, log: log}
	g.r = &batch{kit: g.kit, commit: direct{}, reads: reads{bound: map[string]int64{}}}
	return g
}

// work returns message id, PENDING with no attempt, as the batch takes it: its raw text came
// with the batch read, and it is decoded ahead when decoded says so.
func (g *stageRig) work(id int64, raw string, decoded bool) *work {
	due := &store.Due{Message: store.Message{ID: id, State: pipeline.Pending}, Raw: raw, RawOK: true}
	w := &work{due: due, m: &due.Message, now: g.clock.Now(), out: outlet{
		record: func(_ context.Context, _ int64, o store.Outcome, _ time.Time) error {
			g.got = append(g.got, o)
			return nil
		},
		later: func(f func()) { g.reports = append(g.reports, f) },
	}}
	if decoded {
		w.d = g.dec.text(id, raw)
	}
	return w
}

// only returns the one outcome recorded, failing the test when there is not exactly one.
func (g *stageRig) only() store.Outcome {
	g.t.Helper()
	if len(g.got) != 1 {
		g.t.Fatalf("%d outcomes recorded, want 1: %+v", len(g.got), g.got)
	}
	return g.got[0]
}

// rawFunc is a rawReader made of a function.
type rawFunc func(ctx context.Context, id int64) (string, bool, error)

func (f rawFunc) Raw(ctx context.Context, id int64) (string, bool, error) { return f(ctx, id) }

// nextCall is a fake next: it notes that it ran (and with what), and answers end, err.
type nextCall struct {
	ran  bool
	w    *work
	end  bool
	err  error
	also func(w *work) // run inside, to look at what the middleware set up
}

func (n *nextCall) handle(_ context.Context, _ *batch, w *work) (bool, error) {
	n.ran, n.w = true, w
	if n.also != nil {
		n.also(w)
	}
	return n.end, n.err
}
