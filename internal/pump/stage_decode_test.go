package pump

import (
	"context"
	"errors"
	"testing"

	"msgx/internal/pipeline"
)

func TestDecodingDecodesAMessageAtItsTurn(t *testing.T) {
	g := newStageRig(t)
	raw := func(context.Context, int64) (string, bool, error) {
		t.Fatal("read a text that came with the batch read")
		return "", false, nil
	}
	var doing string
	next := &nextCall{also: func(*work) { doing = g.status.inHand().Doing }}
	w := g.work(1, sttsText, false)
	if _, err := decoding(g.dec, rawFunc(raw), g.rec, g.status)(next.handle)(context.Background(), g.r, w); err != nil {
		t.Fatal(err)
	}
	if !next.ran || w.d == nil || w.d.msg == nil || w.d.tag != "STTS-ADD" || w.d.err != nil {
		t.Fatalf("next ran %v with %+v, want the message decoded", next.ran, w.d)
	}
	if doing != "decoding" || len(g.got) != 0 {
		t.Fatalf("status %q, outcomes %+v", doing, g.got)
	}
}

func TestDecodingTakesWhatTheModeDecodedAhead(t *testing.T) {
	g := newStageRig(t)
	w := g.work(1, sttsText, true)
	ahead := w.d
	w.due.Raw, w.due.RawOK = "", false // would be DEAD if it were decoded again
	next := &nextCall{}
	if _, err := decoding(g.dec, nil, g.rec, g.status)(next.handle)(context.Background(), g.r, w); err != nil {
		t.Fatal(err)
	}
	if !next.ran || w.d != ahead || len(g.got) != 0 || g.status.inHand() != nil {
		t.Fatalf("next ran %v, decoded again %v, outcomes %+v", next.ran, w.d != ahead, g.got)
	}
}

func TestDecodingReadsALongTextAndPassesAFailureOn(t *testing.T) {
	g := newStageRig(t)
	w := g.work(1, "", false)
	w.due.RawLater = true
	raw := func(_ context.Context, id int64) (string, bool, error) { return "<MSG><META>", true, nil }
	next := &nextCall{}
	if _, err := decoding(g.dec, rawFunc(raw), g.rec, g.status)(next.handle)(context.Background(), g.r, w); err != nil {
		t.Fatal(err)
	}
	if !next.ran || w.d == nil || w.d.err == nil {
		t.Fatalf("next ran %v with %+v, want the decoding's failure passed on (classified records it)", next.ran, w.d)
	}

	g = newStageRig(t)
	w = g.work(2, "", false)
	w.due.RawLater = true
	down := errors.New("database away")
	raw = func(context.Context, int64) (string, bool, error) { return "", false, down }
	next = &nextCall{}
	if _, err := decoding(g.dec, rawFunc(raw), g.rec, g.status)(next.handle)(context.Background(), g.r, w); !errors.Is(err, down) || next.ran || len(g.got) != 0 {
		t.Fatalf("a failed read of the text: err %v, next ran %v, outcomes %+v", err, next.ran, g.got)
	}
}

func TestDecodingRecordsAMissingTextDeadMalformed(t *testing.T) {
	g := newStageRig(t)
	w := g.work(1, "", false)
	w.due.RawOK = false
	next := &nextCall{}
	end, err := decoding(g.dec, nil, g.rec, g.status)(next.handle)(context.Background(), g.r, w)
	if err != nil || end || next.ran {
		t.Fatalf("end %v err %v next ran %v", end, err, next.ran)
	}
	if o := g.only(); o.State != pipeline.Dead || o.Class != pipeline.Malformed {
		t.Fatalf("recorded %s/%s, want DEAD/MALFORMED", o.State, o.Class)
	}
}
