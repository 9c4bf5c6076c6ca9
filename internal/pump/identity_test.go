package pump_test

import (
	"fmt"
	"strings"
	"testing"

	"msgx/internal/pipeline"
	"msgx/internal/sis"
	"msgx/internal/store"
	"msgx/internal/store/storetest"
)

// stnd is a FLOP STND of flight 5001 with SEQN 3 (every one of them reuses it), laid out
// compactly, with MSG's two schema attributes in the order given.
func stnd(stand string, attrsSwapped bool) string {
	return stndAt(stand, attrsSwapped, "20261201080000")
}

// stndAt is stnd stamped with META DTTM dttm: another DTTM is another operation.
func stndAt(stand string, attrsSwapped bool, dttm string) string {
	attrs := `xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:noNamespaceSchemaLocation="unisysaodbsis.xsd"`
	if attrsSwapped {
		attrs = `xsi:noNamespaceSchemaLocation='unisysaodbsis.xsd'   xmlns:xsi='http://www.w3.org/2001/XMLSchema-instance'`
	}
	return `<MSG ` + attrs + `><META><SNDR>AODB</SNDR><SEQN>3</SEQN><DTTM>` + dttm + `</DTTM><TYPE>FLOP</TYPE><STYP>STND</STYP></META>` +
		`<FLOP><FLID>5001</FLID><FFID>X</FFID><STND>` + stand + `</STND></FLOP></MSG>`
}

// stndIndented is stnd(stand, false) sent again later, laid out again: indented with tabs and
// spaces, and an XML declaration (its META DTTM is the one the sender stamped the first time).
func stndIndented(stand string) string {
	return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<MSG xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" xsi:noNamespaceSchemaLocation=\"unisysaodbsis.xsd\">\n" +
		"  <META>\n\t<SNDR>AODB</SNDR>\n\t<SEQN>3</SEQN>\n\t<DTTM>20261201080000</DTTM>\n\t<TYPE>FLOP</TYPE>\n\t<STYP>STND</STYP>\n  </META>\n" +
		"  <FLOP>\n    <FLID>5001</FLID>\n    <FFID>X</FFID>\n    <STND>" + stand + "</STND>\n  </FLOP>\n</MSG>\n"
}

// identityPaths runs fn for each way the pump processes a message, on both databases: one by
// one, batched (on MariaDB the batch queues its writes), and in phase A batched and one by one
// (pumpPaths); stand returns flight 5001's stand.
func identityPaths(t *testing.T, mode pipeline.IdentityMode, fn func(t *testing.T, e *env, stand func() string)) {
	pumpPaths(t, defaultPolicy, mode, func(t *testing.T, e *env, field func(string) string) {
		fn(t, e, func() string { return field("STND") })
	})
}

// wantDuplicate checks message id is SKIPPED as the duplicate of holder.
func (e *env) wantDuplicate(id, holder int64) {
	e.t.Helper()
	if m := e.want(id, pipeline.Skipped, ""); *m.LastError != fmt.Sprintf("duplicate-of:%d", holder) {
		e.t.Fatalf("message %d: %q, want duplicate-of:%d", id, *m.LastError, holder)
	}
}

// In identity.mode content (the default) a duplicate is the same message sent again: a
// message reusing an earlier one's SEQN with other content is applied, and a re-send (the very
// bytes, or laid out again, or with MSG's attributes in another order)
// of either is SKIPPED as the duplicate of the one it repeats, inside one batch and across
// batches, on every path of the pump.
func TestAReusedSEQNIsAppliedAndAResendIsADuplicate(t *testing.T) {
	t.Parallel()
	identityPaths(t, pipeline.IdentityContent, func(t *testing.T, e *env, stand func() string) {
		ids := e.post(
			schd("1", "DNLD", flightRec(5001, "CA1501", "01DEC261300")),
			stnd("118", false),
			stnd("119", false), // the SEQN of the one before, other content
			stndIndented("118"),
			stnd("119", false),
		)
		e.drain()
		e.want(ids[0], pipeline.Succeeded, "")
		e.want(ids[1], pipeline.Succeeded, "")
		m := e.want(ids[2], pipeline.Succeeded, "")
		if !strings.HasPrefix(*m.Identity, "AODB|FLOP|STND|3|#") {
			t.Fatalf("identity of a reused SEQN: %q", *m.Identity)
		}
		e.wantDuplicate(ids[3], ids[1])
		e.wantDuplicate(ids[4], ids[2])
		if s := stand(); s != "119" {
			t.Fatalf("stand after 118, 119 and two re-sends: %s", s)
		}
		// Later, against committed holders (their raw text read back from CMINMSGS).
		more := e.post(stnd("118", false), stnd("119", true), stnd("120", false), stndIndented("120"))
		e.drain()
		e.wantDuplicate(more[0], ids[1])
		e.wantDuplicate(more[1], ids[2])
		e.want(more[2], pipeline.Succeeded, "")
		e.wantDuplicate(more[3], more[2])
		if s := stand(); s != "120" {
			t.Fatalf("stand after a third content: %s", s)
		}
	})
}

// A new operation that repeats an earlier one (stand 201, 202, then 201 again, one SEQN, each
// with its own META DTTM) is applied, not taken for a re-send of the first, inside one batch and
// across batches, on every path; the very bytes of the first sent again after the third are
// still its duplicate.
func TestARepeatedOperationIsApplied(t *testing.T) {
	t.Parallel()
	identityPaths(t, pipeline.IdentityContent, func(t *testing.T, e *env, stand func() string) {
		ids := e.post(
			schd("1", "DNLD", flightRec(5001, "CA1501", "01DEC261300")),
			stndAt("201", false, "20261201080000"),
			stndAt("202", false, "20261201080100"),
			stndAt("201", false, "20261201080200"),
		)
		e.drain()
		for _, id := range ids {
			e.want(id, pipeline.Succeeded, "")
		}
		if s := stand(); s != "201" {
			t.Fatalf("stand after 201, 202, 201: %s", s)
		}
		more := e.post(stndAt("201", false, "20261201080000"), stndAt("202", true, "20261201080300"), stndAt("201", false, "20261201080200"))
		e.drain()
		e.wantDuplicate(more[0], ids[1])
		e.want(more[1], pipeline.Succeeded, "")
		e.wantDuplicate(more[2], ids[3])
		if s := stand(); s != "202" {
			t.Fatalf("stand after two re-sends and 202 again: %s", s)
		}
	})
}

// A message bound under its content identity before META DTTM counted (the legacy digest,
// SNDR|TYPE|STYP|SEQN|#<digest without DTTM>) still holds its re-sends after the upgrade, and
// a new operation repeating it with another DTTM is applied.
func TestALegacyContentIdentityStillHoldsItsResends(t *testing.T) {
	t.Parallel()
	identityPaths(t, pipeline.IdentityContent, func(t *testing.T, e *env, stand func() string) {
		ids := e.post(schd("1", "DNLD", flightRec(5001, "CA1501", "01DEC261300")), stnd("118", false))
		e.drain()
		// As the old build left a reused SEQN with other content: SUCCEEDED under the legacy digest.
		raw := stnd("120", false)
		_, legacy, err := sis.ContentDigests([]byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		old := e.post(raw)
		identity := pipeline.ContentIdentity("AODB|FLOP|STND|3", legacy)
		storetest.Exec(t, e.db, fmt.Sprintf(`UPDATE PROC_STATE SET STATE = 'SUCCEEDED', IDENTITY = '%s', IDENTITY_KEY = '%s' WHERE CMINMSGS_ID = %d`,
			identity, store.IdentityKey(identity), old[0]))
		resent := e.post(stndIndented("120"))
		e.drain()
		e.want(ids[1], pipeline.Succeeded, "")
		e.wantDuplicate(resent[0], old[0])
		if s := stand(); s != "118" {
			t.Fatalf("stand %s: a re-send of a message bound under its legacy digest was applied", s)
		}
		again := e.post(stndAt("120", false, "20261201090000"))
		e.drain()
		e.want(again[0], pipeline.Succeeded, "")
		if s := stand(); s != "120" {
			t.Fatalf("stand %s: a new operation repeating a legacy-bound message was not applied", s)
		}
	})
}

// identity.mode seqn keeps the old rule exactly: SNDR|TYPE|STYP|SEQN alone, so every message
// after the first with SEQN 3 is SKIPPED, whatever its content.
func TestIdentityModeSeqnSkipsEveryReuse(t *testing.T) {
	t.Parallel()
	identityPaths(t, pipeline.IdentitySeqn, func(t *testing.T, e *env, stand func() string) {
		ids := e.post(
			schd("1", "DNLD", flightRec(5001, "CA1501", "01DEC261300")),
			stnd("118", false),
			stnd("119", false),
			stndIndented("118"),
		)
		e.drain()
		e.want(ids[1], pipeline.Succeeded, "")
		if m := e.msg(ids[1]); *m.Identity != "AODB|FLOP|STND|3" {
			t.Fatalf("identity %q", *m.Identity)
		}
		e.wantDuplicate(ids[2], ids[1])
		e.wantDuplicate(ids[3], ids[1])
		more := e.post(stnd("120", true))
		e.drain()
		e.wantDuplicate(more[0], ids[1])
		if s := stand(); s != "118" {
			t.Fatalf("stand: %s, want 118 (every reuse skipped)", s)
		}
	})
}

// A message bound under SNDR|TYPE|STYP|SEQN by an older msgx (whose only rule that was) is
// still the holder after the upgrade: sent again it is SKIPPED as its duplicate, and a message
// with its SEQN and other content is applied.
func TestAnIdentityBoundBeforeTheUpgradeStillHoldsItsResends(t *testing.T) {
	t.Parallel()
	identityPaths(t, pipeline.IdentityContent, func(t *testing.T, e *env, stand func() string) {
		ids := e.post(schd("1", "DNLD", flightRec(5001, "CA1501", "01DEC261300")))
		e.drain()
		// As the old build left it: applied, SUCCEEDED, holding the plain key.
		old := e.post(stnd("118", false))
		storetest.Exec(t, e.db, fmt.Sprintf(`UPDATE PROC_STATE SET STATE = 'SUCCEEDED', IDENTITY = 'AODB|FLOP|STND|3', IDENTITY_KEY = 'AODB|FLOP|STND|3' WHERE CMINMSGS_ID = %d`, old[0]))
		more := e.post(stndIndented("118"), stnd("119", false))
		e.drain()
		e.want(ids[0], pipeline.Succeeded, "")
		e.wantDuplicate(more[0], old[0])
		e.want(more[1], pipeline.Succeeded, "")
		if s := stand(); s != "119" {
			t.Fatalf("stand: %s", s)
		}
	})
}

// A message whose row already holds its content identity (its commit went through, the answer
// was lost) is recorded SUCCEEDED, not applied again, on every path.
func TestAnAppliedReusedSEQNIsNotAppliedAgain(t *testing.T) {
	t.Parallel()
	identityPaths(t, pipeline.IdentityContent, func(t *testing.T, e *env, stand func() string) {
		ids := e.post(schd("1", "DNLD", flightRec(5001, "CA1501", "01DEC261300")), stnd("118", false))
		e.drain()
		raw := stnd("119", false)
		d, err := sis.ContentDigest([]byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		applied := e.post(raw)
		key := store.IdentityKey(pipeline.ContentIdentity("AODB|FLOP|STND|3", d))
		storetest.Exec(t, e.db, fmt.Sprintf(`UPDATE PROC_STATE SET IDENTITY_KEY = '%s' WHERE CMINMSGS_ID = %d`, key, applied[0]))
		e.drain()
		e.want(ids[1], pipeline.Succeeded, "")
		if m := e.want(applied[0], pipeline.Succeeded, ""); !strings.Contains(m.Note, "already applied") {
			t.Fatalf("note %q", m.Note)
		}
		if s := stand(); s != "118" {
			t.Fatalf("stand %s: an applied message was applied again", s)
		}
	})
}
