package pump_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"msgx/internal/handler"
	"msgx/internal/jobs"
	"msgx/internal/pipeline"
	"msgx/internal/pump"
	"msgx/internal/sis"
	"msgx/internal/store"
	"msgx/internal/store/storetest"
	"msgx/internal/testkit"
)

// withMeta is a reference message with the given META values.
func withMeta(sndr, seqn, typ, styp, body string) string {
	return fmt.Sprintf(`<MSG><META><SNDR>%s</SNDR><SEQN>%s</SEQN><DTTM>20261201080000</DTTM><TYPE>%s</TYPE><STYP>%s</STYP></META>%s</MSG>`,
		sndr, seqn, typ, styp, body)
}

// A META value wider than any column (a 200-character sender, a 1,400-character CJK type,
// 4-byte characters) reaches a final state, and the message behind it is processed: nothing a
// message contains can stop the pump.
func TestValuesWiderThanTheirColumnsNeverStopThePump(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		policy := defaultPolicy
		policy.MaxAttempts = 1
		e := newEnv(t, db, policy)
		longSndr := strings.Repeat("S", 200)
		cjkType := strings.Repeat("航", 5000) // wider than LAST_ERROR when quoted
		emoji := strings.Repeat("\U0001F6EB", 170)
		body := "<RECS>1</RECS>" + stts("ARR", "arrived")
		ids := e.post(
			withMeta(longSndr, "1", "STTS", "ADD", body),
			withMeta(longSndr, "2", cjkType, "ADD", body),
			withMeta(emoji, "3", "STTS", "ADD", body),
			withMeta(emoji, "4", "STTS", "ADD", body), // same sender, other SEQN: not a duplicate
			withMeta("AODB", "5", "STTS", "UPD", "<RECS>1</RECS>"+stts("ARR", "landed")),
		)
		e.drain()
		m := e.want(ids[0], pipeline.Succeeded, "")
		if got := len([]rune(*m.Identity)); got > store.IdentityWidth || !strings.HasSuffix(*m.Identity, "…") {
			t.Fatalf("identity not cut to its column: %d characters %q", got, *m.Identity)
		}
		m = e.want(ids[1], pipeline.Dead, pipeline.Malformed) // TYPE is not 4 letters
		if got := len([]rune(*m.LastError)); got > store.LastErrorWidth || !strings.HasSuffix(*m.LastError, "…") {
			t.Fatalf("last error not cut to its column: %d characters", got)
		}
		e.want(ids[2], pipeline.Succeeded, "")
		e.want(ids[3], pipeline.Succeeded, "")
		e.want(ids[4], pipeline.Succeeded, "")
		// The same long identity again is a duplicate of the first, though its key is a digest.
		again := e.post(withMeta(longSndr, "1", "STTS", "ADD", body))
		e.drain()
		dup := e.want(again[0], pipeline.Skipped, "")
		if *dup.LastError != fmt.Sprintf("duplicate-of:%d", ids[0]) {
			t.Fatalf("duplicate of a long identity: %q", *dup.LastError)
		}
	})
}

// A handler that panics fails its message with CODEC_ERROR and the panic text; the pump goes on.
func TestPanicInAHandlerIsTheMessagesCodecError(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		reg := handler.NewRegistry()
		add, _ := handler.Default(handler.Options{}).Lookup("STTS-ADD")
		reg.Register("STTS-ADD", add)
		reg.Register("STTS-DEL", handler.Func(func(context.Context, handler.View, *sis.Message) (pipeline.Decision, error) {
			var m map[string]int
			//lint:ignore SA5000 the nil-map write is the point: a real bug, not a deliberate panic(...)
			m["boom"]++ // a nil-map write: a real bug, not a deliberate panic(...)
			return pipeline.Decision{}, nil
		}))
		clock := testkit.NewClock(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
		policy := defaultPolicy
		policy.MaxAttempts = 1
		p := pump.New(storetest.Pump(db), reg, pump.Options{Policy: policy, Clock: clock, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			Jobs: &jobs.Runner{DB: db.Archiver, Clock: clock}})
		e := &env{db: db, clock: clock, pump: p, t: t}
		ids := e.post(withMeta("AODB", "1", "STTS", "DEL", "<RECS>1</RECS>"+stts("X", "x")), refMsg("STTS", "ADD", "2", stts("Y", "y"), 1))
		e.drain()
		m := e.msg(ids[0])
		if m.State != pipeline.Dead || m.LastError == nil || !strings.Contains(*m.LastError, "panic while deciding STTS-DEL") {
			t.Fatalf("panicking handler: %+v", m)
		}
		if !strings.Contains(*m.LastError, "CODEC_ERROR") && m.Class() != pipeline.Exhausted {
			t.Fatalf("class %s", m.Class())
		}
		e.want(ids[1], pipeline.Succeeded, "")
		res, err := db.Operations.Replay(context.Background(), nil, []int64{ids[0]}, clock.Now())
		if err != nil || res.Moved != 1 {
			t.Fatalf("a panicked message must be replayable: %+v %v", res, err)
		}
	})
}

// When the database refuses every write of the head's outcome, the pump counts the attempt,
// backs off and says so, instead of spinning; once the database takes it, the head is recorded.
func TestAnOutcomeTheDatabaseRefusesIsRetriedWithBackoff(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db, defaultPolicy)
		ids := e.post(unknownType, refMsg("STTS", "ADD", "2", stts("Y", "y"), 1))
		if db.Dialect == store.MySQL {
			storetest.Exec(t, db, fmt.Sprintf(`CREATE TRIGGER REFUSE_ONE BEFORE UPDATE ON PROC_STATE FOR EACH ROW BEGIN
				IF NEW.CMINMSGS_ID = %d THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'refused by a test trigger'; END IF; END`, ids[0]))
		} else {
			storetest.Exec(t, db, fmt.Sprintf(`CREATE TRIGGER REFUSE_ONE BEFORE UPDATE ON PROC_STATE WHEN NEW.CMINMSGS_ID = %d
				BEGIN SELECT RAISE(ABORT, 'refused by a test trigger'); END`, ids[0]))
		}
		waits := []time.Duration{}
		for i := 0; i < 3; i++ {
			wait, err := e.pump.Step(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if wait <= 0 {
				t.Fatalf("step %d: the pump went on at once after failing to record its head", i)
			}
			waits = append(waits, wait)
			e.clock.Add(wait)
		}
		tr := e.pump.Trouble()
		if tr == nil || tr.MsgID != ids[0] || tr.Failures < 2 || !strings.Contains(tr.LastError, "refused by a test trigger") {
			t.Fatalf("trouble not reported: %+v (waits %v)", tr, waits)
		}
		e.want(ids[0], pipeline.Pending, "")
		e.want(ids[1], pipeline.Pending, "") // the order holds
		storetest.Exec(t, db, `DROP TRIGGER REFUSE_ONE`)
		e.clock.Add(time.Minute)
		e.drain()
		e.want(ids[0], pipeline.Failed, pipeline.Unsupported)
		if e.pump.Trouble() != nil {
			t.Fatalf("trouble kept after the head was recorded: %+v", e.pump.Trouble())
		}
	})
}
