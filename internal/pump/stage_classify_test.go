package pump

import (
	"context"
	"errors"
	"testing"

	"msgx/internal/handler"
	"msgx/internal/pipeline"
)

// A message that is not XML is DEAD MALFORMED at once (retrying cannot change its bytes),
// and the batch goes on; nothing is decided.
func TestClassifiedRecordsADecodingFailure(t *testing.T) {
	g := newStageRig(t)
	w := g.work(1, "<MSG><META>", true)
	next := &nextCall{}
	end, err := classified(g.rec)(next.handle)(context.Background(), g.r, w)
	if err != nil || end || next.ran {
		t.Fatalf("end %v err %v next ran %v: want it recorded, the batch going on, nothing decided", end, err, next.ran)
	}
	if o := g.only(); o.State != pipeline.Dead || o.Class != pipeline.Malformed || o.Attempts != 1 {
		t.Fatalf("recorded %+v, want DEAD/MALFORMED", o)
	}
}

func TestClassifiedRecordsTheMessagesFailureAndSkip(t *testing.T) {
	g := newStageRig(t)
	next := &nextCall{err: &failure{pipeline.Errorf(pipeline.Unsupported, "no handler for ZZZZ")}}
	if end, err := classified(g.rec)(next.handle)(context.Background(), g.r, g.work(1, sttsText, true)); err != nil || !end {
		t.Fatalf("end %v err %v", end, err)
	}
	if o := g.only(); o.State != pipeline.Failed || o.Class != pipeline.Unsupported || o.TypeTag != "STTS-ADD" {
		t.Fatalf("recorded %s/%s %q, want FAILED/UNSUPPORTED STTS-ADD", o.State, o.Class, o.TypeTag)
	}

	g = newStageRig(t)
	next = &nextCall{err: &failure{handler.Skip("nothing to do")}}
	if end, err := classified(g.rec)(next.handle)(context.Background(), g.r, g.work(2, sttsText, true)); err != nil || end {
		t.Fatalf("end %v err %v", end, err)
	}
	if o := g.only(); o.State != pipeline.Skipped || o.LastError != "nothing to do" {
		t.Fatalf("recorded %s %q, want SKIPPED for its reason", o.State, o.LastError)
	}
}

func TestClassifiedPassesTheBatchsErrorsOn(t *testing.T) {
	g := newStageRig(t)
	batchErr := errors.New("the queue failed")
	next := &nextCall{err: batchErr}
	if _, err := classified(g.rec)(next.handle)(context.Background(), g.r, g.work(1, sttsText, true)); !errors.Is(err, batchErr) || len(g.got) != 0 {
		t.Fatalf("err %v, outcomes %+v: want the batch's error passed on, nothing recorded", err, g.got)
	}
	next = &nextCall{end: true}
	if end, err := classified(g.rec)(next.handle)(context.Background(), g.r, g.work(2, sttsText, true)); !end || err != nil || len(g.got) != 0 {
		t.Fatalf("end %v err %v outcomes %+v: want next's answer", end, err, g.got)
	}
}
