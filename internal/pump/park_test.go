package pump_test

import (
	"context"
	"strings"
	"testing"

	"msgx/internal/pipeline"
	"msgx/internal/store"
	"msgx/internal/store/storetest"
)

// unknownFLOP is valid SIS whose FLOP STYP (ESTT, FORMAT §2.1) msgx has no decoder for.
const unknownFLOP = `<MSG><META><SNDR>AODB</SNDR><SEQN>31</SEQN><DTTM>20261201080000</DTTM><TYPE>FLOP</TYPE><STYP>ESTT</STYP></META>` +
	`<FLOP><FLID>1</FLID><ESTT>20261201090000</ESTT></FLOP></MSG>`

// A deterministic failure is parked at once: DEAD under its own class, replayable, the message
// behind it processed in the same drain with no time passing, its warnings and note kept.
func TestDeterministicFailuresAreParkedAtOnce(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		policy := defaultPolicy
		policy.Park = pipeline.DefaultPark
		e := newEnv(t, db, policy)
		ids := e.post(unknownType, unknownFLOP, refMsg("STTS", "ADD", "1", stts("DEP", "departed"), 1))
		if wait := e.drain(); wait <= 0 {
			t.Fatalf("drain returned %s", wait)
		}
		for _, id := range ids[:2] {
			m := e.want(id, pipeline.Dead, pipeline.Unsupported)
			if m.Attempts != 1 || !strings.Contains(m.Note, "park") {
				t.Errorf("parked message %d: attempts %d note %q", id, m.Attempts, m.Note)
			}
		}
		e.want(ids[2], pipeline.Succeeded, "") // no time passed: the queue moved on at once

		res, err := db.Operations.Replay(context.Background(), []pipeline.ErrorClass{pipeline.Unsupported}, ids[:1], e.clock.Now())
		if err != nil || res.Moved != 1 {
			t.Fatalf("replay of a parked message: %+v %v", res, err)
		}
		e.want(ids[0], pipeline.Pending, pipeline.Unsupported)
	})
}

// With pipeline.park-classes empty the same failure retries, then goes EXHAUSTED.
func TestEmptyParkClassesRetryThenExhaust(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db, defaultPolicy)
		ids := e.post(unknownFLOP)
		e.drain()
		e.want(ids[0], pipeline.Failed, pipeline.Unsupported)
	})
}

// A reference message whose records are all as stored says so in its note.
func TestAReferenceMessageThatChangedNothingSaysSo(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db, defaultPolicy)
		ids := e.post(refMsg("STTS", "ADD", "1", stts("DEP", "departed"), 1), refMsg("STTS", "UPD", "2", stts("DEP", "departed"), 1))
		e.drain()
		if m := e.want(ids[0], pipeline.Succeeded, ""); strings.Contains(m.Note, "nothing changed") {
			t.Errorf("first message changed a record, note %q", m.Note)
		}
		if m := e.want(ids[1], pipeline.Succeeded, ""); !strings.Contains(m.Note, "nothing changed") || m.Warnings == nil {
			t.Errorf("second message changed nothing, note %q warnings %v", m.Note, m.Warnings)
		}
	})
}
