package pump

import (
	"context"
	"errors"
	"testing"

	"msgx/internal/handler"
	"msgx/internal/pipeline"
)

// written is a fake write of a success: it notes the Decision it was given.
type written struct {
	ran bool
	dec pipeline.Decision
}

func (wr *written) write(_ *batch, _ context.Context, _ *work, dec pipeline.Decision) (bool, error) {
	wr.ran, wr.dec = true, dec
	return false, nil
}

func TestApplyingDecidesThenWritesTheSuccess(t *testing.T) {
	g := newStageRig(t)
	want := pipeline.Decision{Note: "decided"}
	next := &nextCall{also: func(w *work) {
		if w.h == nil {
			t.Error("the handler was not looked up before deciding")
		}
		w.dec = want
	}}
	var wr written
	w := g.work(1, sttsText, true)
	if _, err := applying(g.reg, g.order, &phaseB{kit: g.kit}, wr.write)(next.handle)(context.Background(), g.r, w); err != nil {
		t.Fatal(err)
	}
	if !next.ran || !wr.ran || wr.dec.Note != "decided" {
		t.Fatalf("next ran %v, written %v with %+v", next.ran, wr.ran, wr.dec)
	}
}

func TestApplyingFailsAMessageNoHandlerKnows(t *testing.T) {
	g := newStageRig(t)
	next := &nextCall{}
	var wr written
	w := g.work(1, sttsText, true)
	w.d.tag = "ZZZZ-ADD"
	_, err := applying(g.reg, g.order, &phaseB{kit: g.kit}, wr.write)(next.handle)(context.Background(), g.r, w)
	var f *failure
	if !errors.As(err, &f) || pipeline.ClassOf(err) != pipeline.Unsupported || next.ran || wr.ran {
		t.Fatalf("err %v, next ran %v, written %v: want the message's UNSUPPORTED failure", err, next.ran, wr.ran)
	}
}

func TestApplyingReturnsTheDecisionsFailure(t *testing.T) {
	g := newStageRig(t)
	orphan := pipeline.Errorf(pipeline.Orphan, "flight 5001 not found")
	next := &nextCall{err: orphan}
	var wr written
	_, err := applying(g.reg, g.order, &phaseB{kit: g.kit}, wr.write)(next.handle)(context.Background(), g.r, g.work(1, sttsText, true))
	var f *failure
	if !errors.As(err, &f) || !errors.Is(err, orphan) || wr.ran {
		t.Fatalf("err %v, written %v: want the message's failure, nothing written", err, wr.ran)
	}
}

// A handler that read a view blind to the batch, after the batch changed state, is decided
// again at the next batch's head: the batch ends before its message.
func TestApplyingEndsTheBatchBeforeAStaleRead(t *testing.T) {
	g := newStageRig(t)
	g.r.reads.watched = &watchView{View: stubView{}}
	g.r.reads.view = g.r.reads.watched
	g.r.changed = true
	next := &nextCall{also: func(w *work) { _, _, _ = w.view.Flight(context.Background(), 5001) }}
	var wr written
	_, err := applying(g.reg, g.order, &phaseB{kit: g.kit}, wr.write)(next.handle)(context.Background(), g.r, g.work(1, sttsText, true))
	if !errors.Is(err, errDecideAgain) || wr.ran {
		t.Fatalf("err %v, written %v: want the batch to end before the message", err, wr.ran)
	}
}

// stubView is a view with nothing stored.
type stubView struct{ handler.View }

func (stubView) Flight(context.Context, int64) ([]byte, bool, error) { return nil, false, nil }
