package pump

import (
	"context"
	"testing"
)

func TestTracedShowsTheMessageBeingDecided(t *testing.T) {
	g := newStageRig(t)
	var seen *InHand
	next := &nextCall{also: func(*work) { seen = g.status.inHand() }}
	if _, err := traced(g.status)(next.handle)(context.Background(), g.r, g.work(4, sttsText, true)); err != nil {
		t.Fatal(err)
	}
	if seen == nil || seen.MsgID != 4 || seen.Tag != "STTS-ADD" || seen.Doing != "deciding" {
		t.Fatalf("in hand while deciding: %+v", seen)
	}
}
