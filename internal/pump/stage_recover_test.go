package pump

import (
	"context"
	"testing"

	"msgx/internal/pipeline"
)

func TestRecoveredMakesAPanicTheMessagesCodecError(t *testing.T) {
	g := newStageRig(t)
	panicking := func(context.Context, *batch, *work) (bool, error) { panic("handler bug") }
	end, err := recovered(g.log)(panicking)(context.Background(), g.r, g.work(1, sttsText, true))
	if end || err == nil || pipeline.ClassOf(err) != pipeline.CodecError {
		t.Fatalf("end %v err %v, want a CODEC_ERROR", end, err)
	}
	next := &nextCall{end: true}
	if end, err := recovered(g.log)(next.handle)(context.Background(), g.r, g.work(2, sttsText, true)); !end || err != nil {
		t.Fatalf("without a panic: end %v err %v, want next's answer", end, err)
	}
}
