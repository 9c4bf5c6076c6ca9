package sis

import (
	"strings"
	"testing"

	"msgx/internal/pipeline"
)

// envMsg builds a message whose META holds meta and whose MSG then holds body.
func envMsg(meta, body string) []byte {
	return []byte(`<MSG><META>` + meta + `</META>` + body + `</MSG>`)
}

const goodMeta = `<SNDR>AODB</SNDR><SEQN>12</SEQN><DTTM>20261201101500</DTTM><TYPE>ABNR</TYPE><STYP>ADD</STYP>`

// refStyp builds a reference message of TYPE typ and STYP styp around body.
func refStyp(typ, styp, body string) []byte {
	return []byte(strings.Replace(string(refInline(typ, body)), "<STYP>ADD<", "<STYP>"+styp+"<", 1))
}

// TestRejectionClasses lists every kind of rejection of the package with the class it gets,
// by the rule of the package doc: MALFORMED when the message breaks SIS, CODEC_ERROR when it
// is SIS the decoder cannot read yet, UNSUPPORTED when no decoder exists for it.
func TestRejectionClasses(t *testing.T) {
	mf, ce, un := pipeline.Malformed, pipeline.CodecError, pipeline.Unsupported
	flop := func(styp, payload string) []byte { return flopMsg(styp, flop7001(payload)) }
	fltr := func(old, new string) []byte { return schdOf(1, withFLTR(old, new)) }
	acft := func(extra string) []byte { return fltr("<ACFT>333</ACFT>", "<ACFT>333</ACFT>"+extra) }
	schs := func(old, new string) []byte { return schsOf(schsHead, "1", strings.Replace(schsFLTR, old, new, 1)) }
	tests := []struct {
		name  string
		raw   []byte
		class pipeline.ErrorClass
		part  string // a substring of the error
	}{
		// envelope
		{"not XML", []byte("hello"), mf, "text outside <MSG>"},
		{"not well-formed", []byte("<MSG><META></MSG>"), mf, "well-formed"},
		{"unclosed element", []byte("<MSG><META>"), mf, "not closed"},
		{"root not MSG", []byte("<MESSAGE><META>" + goodMeta + "</META></MESSAGE>"), mf, "root element"},
		{"text after MSG", append(envMsg(goodMeta, ""), "x"...), mf, "text outside"},
		{"no META", []byte("<MSG><RECS>0</RECS></MSG>"), mf, "no <META>"},
		{"two META", []byte("<MSG><META>" + goodMeta + "</META><META>" + goodMeta + "</META></MSG>"), mf, "more than one <META>"},
		{"META field twice", envMsg(goodMeta+"<STYP>UPD</STYP>", ""), mf, "META/STYP appears twice"},
		{"META field holds an element", envMsg(strings.Replace(goodMeta, "<SNDR>AODB", "<SNDR><X/>AODB", 1), ""), mf, "META/SNDR holds"},
		{"SNDR empty", envMsg(strings.Replace(goodMeta, "AODB", "", 1), ""), mf, "SNDR"},
		{"TYPE not 4 letters", envMsg(strings.Replace(goodMeta, "ABNR", "abnr", 1), ""), mf, "META/TYPE"},
		{"STYP not letters", envMsg(strings.Replace(goodMeta, "<STYP>ADD", "<STYP>A1", 1), ""), mf, "META/STYP"},
		{"SEQN not a number", envMsg(strings.Replace(goodMeta, "<SEQN>12", "<SEQN>1x", 1), ""), mf, "META/SEQN"},
		{"DTTM does not exist", envMsg(strings.Replace(goodMeta, "20261201", "20261301", 1), ""), mf, "META/DTTM"},
		{"DTTM year out of range", envMsg(strings.Replace(goodMeta, "20261201", "00010101", 1), ""), mf, "out of range"},
		// no decoder
		{"unknown TYPE", envMsg(strings.Replace(goodMeta, "ABNR", "QQQQ", 1), ""), un, `TYPE "QQQQ"`},
		{"unknown FLOP STYP", flop("ESTT", "<ESTT>15MAR261000</ESTT>"), un, "ESTT"},
		// FLOP
		{"no FLOP record", flopMsg("APPT"), mf, "no <FLOP>"},
		{"FLID missing", flopMsg("APPT", "<APPT/>"), mf, "FLID: missing"},
		{"FLID not a number", flopMsg("APPT", "<FLID>7x</FLID>"), mf, `FLID "7x"`},
		{"FLID holds an element", flopMsg("APPT", "<FLID><N/>7</FLID>"), ce, "FLID contains an element <N>"},
		{"singleton twice", flop("STND", "<STND>1</STND><STND>2</STND>"), mf, "appears 2 times"},
		{"enum outside its values (DDIR TOO)", flop("FDIV", `<FDIV DDES="CKG" DDIR="TOO"/>`), mf, `FDIV@DDIR "TOO"`},
		{"empty mandatory attribute (ARES)", flop("FLAB", `<FLAB ARES=""/>`), mf, "FLAB@ARES: present but empty"},
		{"mandatory attribute missing", flop("FRET", `<FRET>x</FRET>`), mf, "FRET@REID: missing"},
		{"date does not exist", flop("APPT", "<APPT>30FEB261000</APPT>"), mf, "day 30"},
		{"date wrong length", flop("APPT", "<APPT>30FEB2610</APPT>"), mf, "9 characters"},
		{"number does not parse", flop("MAXP", "<MAXP>many</MAXP>"), mf, `MAXP "many"`},
		{"number wider than §1.5", flop("MAXP", "<MAXP>40000</MAXP>"), mf, "16-bit"},
		{"decimal does not parse", acft("<LBWT>1,5</LBWT>"), mf, `LBWT "1,5"`},
		{"group number missing", flop("PSDT", "<PSDT><PSST>1</PSST></PSDT>"), mf, "PSDT[1]@PSNO: missing"},
		{"group number twice", flop("GTDT", `<GTDT GTNO="1"><GATE>A</GATE></GTDT><GTDT GTNO="1"><GATE>B</GATE></GTDT>`), mf, "twice"},
		{"group key missing", flop("SRVT", "<SRVT><SRQT>1</SRQT></SRVT>"), mf, "SRTC: missing"},
		{"group key twice", flop("DELY", `<DELY CODE="WX"/><DELY CODE="WX" DURA="0010"/>`), mf, "code appears twice"},
		{"duration does not exist", flop("DELY", `<DELY CODE="WX" DURA="0175"/>`), mf, `DURA "0175"`},
		{"FDEL not empty", flop("FDEL", "<FDEL>x</FDEL>"), mf, "must be empty"},
		{"PORT without PORT", flop("PORT", ""), mf, "PORT: missing"},
		{"misspelt STYP element", flop("STND", "<STDN>214</STDN>"), mf, "FLOP STND record has <STDN> but no <STND>, which would clear it (did you mean STND?)"},
		{"element inside a simple element", flop("STND", "<STND><CODE>214</CODE></STND>"), ce, "STND contains an element <CODE>"},
		// SCHD
		{"no SCHD wrapper", schdMsg("DNLD", "<RECS>0</RECS>"), mf, "no <SCHD>"},
		{"two SCHD wrappers", schdMsg("DNLD", "<SCHD><RECS>0</RECS></SCHD><SCHD><RECS>0</RECS></SCHD>"), mf, "more than one <SCHD>"},
		{"SCHD RECS missing", schdMsg("DNLD", "<SCHD>"+baseFLTR(7001)+"</SCHD>"), mf, "SCHD/RECS: missing"},
		{"SCHD RECS twice", schdMsg("DNLD", "<SCHD><RECS>0</RECS><RECS>0</RECS></SCHD>"), mf, "appears twice"},
		{"SCHD RECS not a count", schdMsg("DNLD", "<SCHD><RECS>-1</RECS></SCHD>"), mf, "not a count"},
		{"SCHD DNLD truncated", schdOf(2, baseFLTR(7001)), mf, "only 1 FLTR"},
		{"every FLTR invalid", fltr("<SODT>15MAR261230</SODT>", ""), mf, "every FLTR of the message is invalid (1): FLTR[1] FLID 7001 SODT: missing"},
		{"every FLTR invalid, a codec error among them", fltr("<ALCD>CA</ALCD>", "<ALCD><A/></ALCD>"), ce, "ALCD contains an element"},
		{"FLTR enum (MVIN)", fltr("<MVIN>D</MVIN>", "<MVIN>X</MVIN>"), mf, `MVIN "X"`},
		{"FLTR required element missing", fltr("<ACFT>333</ACFT>", ""), mf, "ACFT: missing"},
		// SCHS
		{"no SCHS wrapper", schsMsg("<RECS>0</RECS>"), mf, "no <SCHS>"},
		{"SCHS SNAM missing", schsOf(strings.Replace(schsHead, "Summer", "", 1), "0"), mf, "SCHS/SNAM: missing"},
		{"SCHS SDAT does not exist", schsOf(strings.Replace(schsHead, "29MAR26", "30FEB26", 1), "0"), mf, "SCHS/SDAT"},
		{"SCHS EDAT before SDAT", schsOf(strings.Replace(schsHead, "24OCT26", "01MAR26", 1), "0"), mf, "before SDAT"},
		{"SCHS RECS missing", schsMsg("<SCHS>" + schsHead + "</SCHS>"), mf, "SCHS/RECS: missing"},
		{"SCHS truncated", schsOf(schsHead, "2", schsFLTR), mf, "only 1 FLTR"},
		{"SCHS FLTR DYOP", schs("1030507", "1130507"), mf, `DYOP "1130507"`},
		{"SCHS FLTR SCHT", schs("0915", "0975"), mf, "minute 75"},
		// reference data
		{"ref RECS missing", refInline("ABNR", "<ABNR><ANRC>X</ANRC></ABNR>"), mf, "RECS is missing"},
		{"ref RECS twice", refInline("ABNR", "<RECS>1</RECS><RECS>1</RECS>"), mf, "more than once"},
		{"ref RECS empty", refInline("ABNR", "<RECS/>"), mf, "RECS is empty"},
		{"ref RECS not a count", refInline("ABNR", "<RECS>x</RECS>"), mf, "not a non-negative integer"},
		{"ref RECS holds an element", refInline("ABNR", "<RECS><N/></RECS>"), mf, "RECS is not a count"},
		{"ref RECS out of range", refInline("ABNR", "<RECS>99999999999</RECS>"), mf, "out of range"},
		{"ref DNLD truncated", refStyp("ABNR", "DNLD", "<RECS>2</RECS><ABNR><ANRC>X</ANRC></ABNR>"), mf, "only 1 ABNR records"},
		{"ref RESP truncated", refStyp("ABNR", "RESP", "<RECS>1</RECS>"), mf, "only 0 ABNR records"},
		{"ref key missing", refInline("ABNR", "<RECS>1</RECS><ABNR><ANRD>x</ANRD></ABNR>"), mf, "key element ANRC is missing"},
		{"ref flag not Y/N", refInline("TLST", "<RECS>1</RECS><TLST><TCOD>T</TCOD><TPAX>X</TPAX></TLST>"), mf, "Y/N"},
		{"ref integer does not parse", refInline("ORGN", "<RECS>1</RECS><ORGN><OGID>x</OGID></ORGN>"), mf, "not an integer"},
		{"ref integer wider than §1.5", refInline("ABDG", "<RECS>1</RECS><ABDG><ABCD>1</ABCD><AMNO>200</AMNO></ABDG>"), mf, "8-bit"},
		{"ref decimal does not parse", refInline("AIRC", "<RECS>1</RECS><AIRC><ITAT>1</ITAT><ALEN>1e3</ALEN></AIRC>"), mf, "decimal"},
		{"ref enum outside its values", refInline("ARPT", "<RECS>1</RECS><ARPT><ITCD>X</ITCD><HAUL>M</HAUL></ARPT>"), mf, "HAUL"},
		{"ref singleton with two values", refInline("BLST", "<RECS>1</RECS><BLST><BCOD>1</BCOD><BCOD>2</BCOD></BLST>"), mf, "more than once"},
		{"ref SUBC without CODE", refInline("AIRL", "<RECS>1</RECS><AIRL><ITOP>CA</ITOP><SUBC><NAME>x</NAME></SUBC></AIRL>"), mf, "has no CODE"},
		{"ref SUBC CODE twice", refInline("AIRL", "<RECS>1</RECS><AIRL><ITOP>CA</ITOP><SUBC><CODE>A</CODE></SUBC><SUBC><CODE>A</CODE></SUBC></AIRL>"), mf, "appears more than once"},
		{"ref ABBR without CODE", refInline("CITY", "<RECS>1</RECS><CITY><ITCD>X</ITCD><ABBR>y</ABBR></CITY>"), mf, "no CODE attribute"},
		{"ref TRML enum", refInline("AIRL", `<RECS>1</RECS><AIRL><ITOP>CA</ITOP><TRML MVIN="Q">T1</TRML></AIRL>`), mf, "TRML@MVIN"},
		{"ref element inside a simple element", refInline("BLST", "<RECS>1</RECS><BLST><BCOD>1</BCOD><BTNM><EN>x</EN></BTNM></BLST>"), ce, "contains an element <EN>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { wantReject(t, tt.raw, tt.class, tt.part) })
	}
	// A duplicate FLID or reference key leaves the later record out as MALFORMED (see
	// TestSchdInvalid, TestRefInvalidRecords); the message fails only if no record is left.
	msg, err := Decode(refInline("ABNR", "<RECS>2</RECS><ABNR><ANRC>X</ANRC></ABNR><ABNR><ANRC>X</ANRC></ABNR>"), Options{})
	if err != nil || len(msg.Body.(*RefBody).Invalid) != 1 || msg.Body.(*RefBody).Invalid[0].Class != mf {
		t.Errorf("duplicate key: %v", err)
	}
}
