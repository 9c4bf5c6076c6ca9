package main_test

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// abdgUpd is an ABDG UPD of one airbridge with SEQN 1243, the SEQN real AODBs put on most of
// their messages (docs/sis-format.md §5.1). pretty lays it out indented, as a sender building
// the same message again might; otherwise it is on one line.
func abdgUpd(code, desc string, pretty bool) string {
	m := fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8"?>
<MSG xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:noNamespaceSchemaLocation="unisysaodbsis.xsd">
  <META>
    <SNDR>AODB</SNDR>
    <SEQN>1243</SEQN>
    <DTTM>20261201090311</DTTM>
    <TYPE>ABDG</TYPE>
    <STYP>UPD</STYP>
  </META>
  <RECS>1</RECS>
  <ABDG>
    <ABCD>%s</ABCD>
    <DESC>%s</DESC>
    <CDSC>廊桥 %s</CDSC>
    <ATML>T2</ATML>
    <ATHE>N</ATHE>
    <STND>%s1</STND>
    <STND>%s2</STND>
  </ABDG>
</MSG>
`, code, desc, code, code, code)
	if pretty {
		return strings.ReplaceAll(m, "  ", "\t ")
	}
	return strings.NewReplacer("\n", "", "  ", "").Replace(m)
}

// airlUpd is an AIRL UPD from sender sndr with SEQN 77.
func airlUpd(sndr, itop, name string) string {
	return fmt.Sprintf(`<MSG><META><SNDR>%s</SNDR><SEQN>77</SEQN><DTTM>20261201090500</DTTM><TYPE>AIRL</TYPE><STYP>UPD</STYP></META>`+
		`<RECS>1</RECS><AIRL><ITOP>%s</ITOP><ICOP>%sA</ICOP><ONAM>%s</ONAM><DORI>D</DORI></AIRL></MSG>`, sndr, itop, itop, name)
}

// duplicateOf waits for message id to be SKIPPED as the duplicate of holder.
func (s *server) duplicateOf(id, holder int64) {
	s.t.Helper()
	m := s.await(id, "SKIPPED", state("SKIPPED", ""))
	if want := fmt.Sprintf("duplicate-of:%d", holder); m.LastError == nil || *m.LastError != want {
		s.t.Fatalf("message %d: last error %v, want %s", id, m.LastError, want)
	}
}

// By default (identity.mode content) a duplicate is the same message sent again: two ABDG
// UPDs with the same SNDR, TYPE, STYP and SEQN but different airbridges are both applied, a
// byte-identical re-send of the first and a re-send of the second laid out again are SKIPPED
// as their duplicates, and two AIRL UPDs with one SEQN from senders `AODB` and `aodb` are
// both applied.
func TestIdentityE2EAReusedSEQNIsNotADuplicate(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db dbEnv) {
		s := db.start(t, "MSGX_PIPELINE_POLL_INTERVAL=100ms")
		first := s.post(abdgUpd("A214", "Bridge 214", false))
		second := s.post(abdgUpd("A215", "Bridge 215", false))
		again := s.post(abdgUpd("A214", "Bridge 214", false))
		relaid := s.post(abdgUpd("A215", "Bridge 215", true))
		upper := s.post(airlUpd("AODB", "3U", "Sichuan Airlines"))
		lower := s.post(airlUpd("aodb", "TV", "Tibet Airlines"))
		for _, id := range []int64{first, second, upper, lower} {
			s.await(id, "SUCCEEDED", state("SUCCEEDED", ""))
		}
		s.duplicateOf(again, first)
		s.duplicateOf(relaid, second)
		s.ref("ABDG", "A214")
		s.ref("ABDG", "A215")
		s.ref("AIRL", "3U")
		s.ref("AIRL", "TV")
		if m := s.message(second); m.Identity == nil || !strings.HasPrefix(*m.Identity, "AODB|ABDG|UPD|1243|#") {
			t.Fatalf("identity of the reused SEQN: %v", m.Identity)
		}
	})
}

// identity.mode seqn keeps the old rule: the second ABDG UPD with SEQN 1243 is SKIPPED as the
// first's duplicate, though its content differs (the AIRL from `aodb` is still applied beside
// the one from `AODB`: identities compare exactly on MariaDB too). Upgraded to the default
// content mode on the same database, a re-send of the message bound under the old rule is
// still its duplicate, and the message the old rule skipped, sent again, is applied.
func TestIdentityE2EModeSeqnAndTheUpgradeToContent(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db dbEnv) {
		s := db.start(t, "MSGX_PIPELINE_POLL_INTERVAL=100ms", "MSGX_IDENTITY_MODE=seqn")
		first := s.post(abdgUpd("A214", "Bridge 214", false))
		second := s.post(abdgUpd("A215", "Bridge 215", false))
		upper := s.post(airlUpd("AODB", "3U", "Sichuan Airlines"))
		lower := s.post(airlUpd("aodb", "TV", "Tibet Airlines"))
		s.await(first, "SUCCEEDED", state("SUCCEEDED", ""))
		s.duplicateOf(second, first)
		s.await(upper, "SUCCEEDED", state("SUCCEEDED", ""))
		s.await(lower, "SUCCEEDED", state("SUCCEEDED", ""))
		s.ref("AIRL", "TV")
		if m := s.message(first); m.Identity == nil || *m.Identity != "AODB|ABDG|UPD|1243" {
			t.Fatalf("identity under mode seqn: %v", m.Identity)
		}
		if err := s.stop(); err != nil {
			t.Fatal(err)
		}
		s = db.start(t, "MSGX_PIPELINE_POLL_INTERVAL=100ms")
		again := s.post(abdgUpd("A214", "Bridge 214", true))
		resent := s.post(abdgUpd("A215", "Bridge 215", false))
		s.duplicateOf(again, first)
		s.await(resent, "SUCCEEDED", state("SUCCEEDED", ""))
		s.ref("ABDG", "A215")
	})
}

// stamped is msg (built with META DTTM 20260101000000, as the e2e builders do) stamped at dttm.
func stamped(msg, dttm string) string {
	return strings.Replace(msg, "<DTTM>20260101000000</DTTM>", "<DTTM>"+dttm+"</DTTM>", 1)
}

// A new operation that repeats an earlier one is applied, a re-send is SKIPPED: stand 201,
// 202, then 201 again for one flight, the three FLOPs with one SEQN and each its own META DTTM,
// are all SUCCEEDED and the flight ends at 201; AIRL ADD, DEL, ADD of one airline with one SEQN
// leave it present; a byte-identical re-send of the first FLOP after the third is SKIPPED as
// its duplicate and changes nothing.
func TestIdentityE2EARepeatedOperationIsApplied(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db dbEnv) {
		s := db.start(t, "MSGX_PIPELINE_POLL_INTERVAL=50ms")
		day := tomorrow(t)
		dnld := s.post(e2eSchd(830001, e2eFltr(93001, "CA1401", "D", day.Add(10*time.Hour), "")))
		s.await(dnld, "snapshot SUCCEEDED", state("SUCCEEDED", ""))
		stand := func(st, dttm string) string {
			return stamped(e2eFlop(830002, "STND", 93001, "<STND>"+st+"</STND>"), dttm)
		}
		ops := []int64{
			s.post(stand("201", "20260101080000")),
			s.post(stand("202", "20260101080100")),
			s.post(stand("201", "20260101080200")),
		}
		for _, id := range ops {
			s.await(id, "SUCCEEDED", state("SUCCEEDED", ""))
		}
		if got := s.flight(93001)["STND"]; got != "201" {
			t.Fatalf("stand after 201, 202, 201: %v", got)
		}
		airl := func(styp, dttm string) string {
			return fmt.Sprintf(`<MSG><META><SNDR>AODB</SNDR><SEQN>830003</SEQN><DTTM>%s</DTTM><TYPE>AIRL</TYPE><STYP>%s</STYP></META>`+
				`<RECS>1</RECS><AIRL><ITOP>3U</ITOP><ICOP>CSC</ICOP><ONAM>Sichuan Airlines</ONAM><ONMC>四川航空</ONMC><DORI>D</DORI></AIRL></MSG>`, dttm, styp)
		}
		refs := []int64{s.post(airl("ADD", "20260101090000")), s.post(airl("DEL", "20260101090100")), s.post(airl("ADD", "20260101090200"))}
		for _, id := range refs {
			s.await(id, "SUCCEEDED", state("SUCCEEDED", ""))
		}
		s.ref("AIRL", "3U")
		resent := s.post(stand("201", "20260101080000"))
		s.duplicateOf(resent, ops[0])
		later := s.post(stand("203", "20260101080300"))
		s.await(later, "SUCCEEDED", state("SUCCEEDED", ""))
		if got := s.flight(93001)["STND"]; got != "203" {
			t.Fatalf("stand after a re-send of 201 and 203: %v", got)
		}
	})
}
