package dispatch_test

import (
	"fmt"
	"testing"

	"msgx/internal/dispatch"
	"msgx/internal/store/storetest"
)

// The "events sent" and "schd batch sent" lines name the messages whose events they sent, so
// one message's journey can be followed to its delivery (and its trace id added).
func TestSentLinesCarryMsgIDs(t *testing.T) {
	t.Parallel()
	db := storetest.SQLite(t)
	h := newHarness(t, db, dispatch.Options{Policy: policy, SchdTarget: "KAFKA_SCHD"}, "KAFKA_FLOP", "KAFKA_SCHD")
	for _, m := range []int64{5, 5, 9} {
		insert(t, db, ev{target: "KAFKA_FLOP", msgID: m})
		insert(t, db, ev{target: "KAFKA_SCHD", key: fmt.Sprint(m), msgID: m})
	}
	if n, _ := h.deliver(t, "KAFKA_FLOP"); n != 3 {
		t.Fatalf("sent %d", n)
	}
	if n, _ := h.flush(t, true); n != 3 {
		t.Fatalf("flushed %d", n)
	}
	for _, msg := range []string{"events sent", "schd batch sent"} {
		lines := h.log.lines(t, msg)
		if len(lines) != 1 || fmt.Sprint(lines[0]["msg_ids"]) != "[5 9]" {
			t.Fatalf("%s lines: %v", msg, lines)
		}
	}
}
