package sis

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"msgx/internal/pipeline"
)

// flopMsg builds a FLOP message of the STYP with one FLOP element per record body.
func flopMsg(styp string, records ...string) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, `<?xml version="1.0" encoding="UTF-8"?>
<MSG><META><SNDR>AODB</SNDR><SEQN>900001</SEQN><DTTM>20260315080000</DTTM><TYPE>FLOP</TYPE><STYP>%s</STYP></META>`, styp)
	for _, r := range records {
		b.WriteString("<FLOP>" + r + "</FLOP>")
	}
	b.WriteString("</MSG>")
	return []byte(b.String())
}

// flop7001 is a FLOP record body for flight 7001 with the payload.
func flop7001(payload string) string {
	return "<FLID>7001</FLID><FFID>3U-3U8881-D-15MAR261030-D</FFID>" + payload
}

func decodeFlops(t *testing.T, raw []byte) []Flop {
	t.Helper()
	msg, err := Decode(raw, Options{})
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	return msg.Body.(*FlopBody).Records
}

func TestFlopSTYPs(t *testing.T) {
	styps := FlopSTYPs()
	if len(styps) != 48 {
		t.Fatalf("%d FLOP STYPs, want the 48 of docs/sis-format.md §2.3", len(styps))
	}
	perKind := map[FlopKind]int{}
	seen := map[string]bool{}
	for _, s := range styps {
		if seen[s] {
			t.Errorf("%s listed twice", s)
		}
		seen[s] = true
		spec, ok := flopSpecs[s]
		k := spec.kind
		if !ok {
			t.Errorf("%s has no kind", s)
		}
		perKind[k]++
		if _, err := os.Stat(filepath.Join(flightTestdata, "flop", strings.ToLower(s)+".xml")); err != nil {
			t.Errorf("%s has no test message: %v", s, err)
		}
	}
	want := map[FlopKind]int{FlopTime: 16, FlopCode: 10, FlopAttr: 3, FlopValues: 5, FlopReplace: 7, FlopMerge: 4, FlopStand: 2, FlopDelete: 1}
	for k, n := range want {
		if perKind[k] != n {
			t.Errorf("kind %s has %d STYPs, want %d", k, perKind[k], n)
		}
	}
	for _, s := range []string{"ESTT", "ACTT", "LBNO", "PAXC", "ALCD", "MAID", "appt"} {
		if _, ok := flopSpecs[s]; ok {
			t.Errorf("%s is known, want unknown", s)
		}
	}
	if got := FlopFields("HNAG"); strings.Join(got, " ") != "FHAG PHAG MHAG" {
		t.Errorf("FlopFields(HNAG) = %v", got)
	}
	if got := FlopFields("FDEL"); len(got) != 0 {
		t.Errorf("FlopFields(FDEL) = %v, want none", got)
	}
}

// The three empty forms (absent, <X/>, <X></X>) decode to the same "no value".
func TestFlopEmptyFormsEquivalent(t *testing.T) {
	tests := []struct {
		styp  string
		forms []string
		want  string // the payload in the Flop's JSON
	}{
		{"APPT", []string{"", "<APPT/>", "<APPT></APPT>", "<APPT>  </APPT>"}, `"APPT":null`},
		{"FDIV", []string{"", "<FDIV/>", "<FDIV></FDIV>"}, `"FDIV":null`},
		{"FLAB", []string{"", "<FLAB/>", "<FLAB></FLAB>"}, `"FLAB":null`},
		{"GTDT", []string{"", "<GTDT/>", "<GTDT></GTDT>", "<GTDT><GATE/></GTDT>"}, `"GTDT":[]`},
		{"DELY", []string{"", "<DELY/>", "<DELY></DELY>", `<DELY CODE="" DURA=""/>`}, `"DELY":[]`},
		{"STND", []string{"", "<STND/>", "<STND></STND>"}, `"STND":null`},
		{"MAXP", []string{"", "<MAXP/>", "<MAXP></MAXP>"}, `"MAXP":null`},
		{"HNAG", []string{"", "<FHAG/><PHAG/><MHAG/>", "<FHAG></FHAG><PHAG></PHAG><MHAG></MHAG>"}, `"FHAG":null,"PHAG":null,"MHAG":null`},
	}
	for _, tt := range tests {
		for _, form := range tt.forms {
			fs := decodeFlops(t, flopMsg(tt.styp, flop7001(form)))
			b, err := json.Marshal(fs[0])
			if err != nil {
				t.Fatal(err)
			}
			want := `{"FLID":7001,"FFID":"3U-3U8881-D-15MAR261030-D","STYP":"` + tt.styp + `",` + tt.want + `}`
			if string(b) != want {
				t.Errorf("%s %q:\n got %s\nwant %s", tt.styp, form, b, want)
			}
		}
	}
}

func TestFlopMixedCaseMonth(t *testing.T) {
	for _, v := range []string{"15MAR261025", "15Mar261025", "15mar261025", "15mAr261025"} {
		fs := decodeFlops(t, flopMsg("EGSR", flop7001("<EGSR>"+v+"</EGSR>")))
		if got := fs[0].EGSR; got == nil || got.Format(time.RFC3339) != "2026-03-15T02:25:00Z" {
			t.Errorf("EGSR %s = %v", v, got)
		}
	}
}

func TestFlopMultipleRecords(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(flightTestdata, "flop", "multi_chot.xml"))
	if err != nil {
		t.Fatal(err)
	}
	fs := decodeFlops(t, raw)
	if len(fs) != 3 {
		t.Fatalf("%d records, want 3", len(fs))
	}
	for i, want := range []struct {
		flid int64
		n    int
	}{{7002, 1}, {7004, 2}, {7005, 0}} {
		if fs[i].FLID != want.flid || fs[i].STYP != "CHOT" || len(fs[i].CHOT) != want.n {
			t.Errorf("record %d = FLID %d STYP %s %d CHOT, want FLID %d %d CHOT", i, fs[i].FLID, fs[i].STYP, len(fs[i].CHOT), want.flid, want.n)
		}
	}
	// One bad record rejects the whole message, naming the record.
	wantReject(t, flopMsg("CHOT", flop7001(`<CHOT CSNO="1"><CHTM>15MAR261000</CHTM></CHOT>`),
		`<FLID>7009</FLID><CHOT CSNO="1"><CHTM>15MAR261099</CHTM></CHOT>`),
		pipeline.Malformed, "FLOP[2] FLID 7009", "CHOT[1]/CHTM", `"15MAR261099"`, "minute 99")
}

func TestFlopValues(t *testing.T) {
	fs := decodeFlops(t, flopMsg("PORT", flop7001(`<PORT><POID>C</POID></PORT><PORT><POID>O</POID><POTM>15MAR260940</POTM></PORT>`)))
	if p := fs[0].PORT; len(p) != 2 || p[0].POID != "C" || p[0].POTM != nil || p[1].POID != "O" || p[1].POTM == nil {
		t.Errorf("PORT = %+v", p)
	}
	fs = decodeFlops(t, flopMsg("DELY", flop7001(`<DELY CODE="WX" DURA="0200"/>`)))
	if d := fs[0].DELY; len(d) != 1 || d[0].DURA == nil || *d[0].DURA != 120 {
		t.Errorf("DELY DURA 0200 = %+v, want 120 minutes", d)
	}
	fs = decodeFlops(t, flopMsg("FRET", flop7001(`<FRET REID="G"></FRET>`)))
	if r := fs[0].FRET; r == nil || r.REID != "G" || r.TEXT != "" {
		t.Errorf("FRET = %+v", r)
	}
	fs = decodeFlops(t, flopMsg("MAXP", flop7001(`<MAXP>32767</MAXP>`)))
	if m := fs[0].MAXP; m == nil || *m != 32767 {
		t.Errorf("MAXP = %v", m)
	}
	// Elements of other STYPs are ignored, even when they would not decode.
	fs = decodeFlops(t, flopMsg("APPT", flop7001(`<APPT>15MAR261012</APPT><BOTM>99XXX</BOTM><ESTT>bad</ESTT>`)))
	if fs[0].APPT == nil || fs[0].BOTM != nil {
		t.Errorf("APPT record = %+v", fs[0])
	}
	// Zone: the airport's, from Options.
	msg, err := Decode(flopMsg("APPT", flop7001(`<APPT>15MAR261012</APPT>`)), Options{Location: time.UTC})
	if err != nil {
		t.Fatal(err)
	}
	if got := msg.Body.(*FlopBody).Records[0].APPT.Format(time.RFC3339); got != "2026-03-15T10:12:00Z" {
		t.Errorf("APPT in UTC zone = %s", got)
	}
}

func TestFlopRejects(t *testing.T) {
	mf := pipeline.Malformed
	tests := []struct {
		name    string
		raw     []byte
		class   pipeline.ErrorClass
		message []string
	}{
		{"bad date", flopMsg("APPT", flop7001("<APPT>15MAR26XX12</APPT>")), mf, []string{"FLOP[1] FLID 7001", "APPT", `"15MAR26XX12"`}},
		{"day 32", flopMsg("BOTM", flop7001("<BOTM>32MAR261012</BOTM>")), mf, []string{"FLID 7001", "BOTM", "day 32"}},
		{"30 FEB", flopMsg("CTOT", flop7001("<CTOT>30FEB261012</CTOT>")), mf, []string{"CTOT", "day 30"}},
		{"minute 75", flopMsg("EOBT", flop7001("<EOBT>15MAR261075</EOBT>")), mf, []string{"EOBT", "minute 75"}},
		{"hour 25", flopMsg("TOBT", flop7001("<TOBT>15MAR262510</TOBT>")), mf, []string{"TOBT", "hour 25"}},
		{"wrong length", flopMsg("PADT", flop7001("<PADT>15MAR2610</PADT>")), mf, []string{"PADT", `"15MAR2610"`, "9 characters"}},
		{"DDIR TOO", flopMsg("FDIV", flop7001(`<FDIV DDES="CKG" DDIR="TOO">x</FDIV>`)), mf, []string{`FLOP[1] FLID 7001 FDIV@DDIR "TOO": want TO or FROM`}},
		{"DDIR empty", flopMsg("FDIV", flop7001(`<FDIV DDES="CKG" DDIR="">x</FDIV>`)), mf, []string{"FDIV@DDIR", "empty"}},
		{"DDES empty", flopMsg("FDIV", flop7001(`<FDIV DDES="" DDIR="TO"/>`)), mf, []string{"FDIV@DDES", "empty"}},
		{"DDES missing", flopMsg("FDIV", flop7001(`<FDIV DDIR="TO">reason</FDIV>`)), mf, []string{"FDIV@DDES", "missing"}},
		{"ARES empty", flopMsg("FLAB", flop7001(`<FLAB ARES=""></FLAB>`)), mf, []string{"FLAB@ARES", "empty"}},
		{"ARES bad", flopMsg("FLAB", flop7001(`<FLAB ARES="X"/>`)), mf, []string{`FLAB@ARES "X"`, "O or G"}},
		{"REID bad", flopMsg("FRET", flop7001(`<FRET REID="B"/>`)), mf, []string{`FRET@REID "B"`, "A or G"}},
		{"FRET text only", flopMsg("FRET", flop7001(`<FRET>reason</FRET>`)), mf, []string{"FRET@REID", "missing"}},
		{"FLIN bad", flopMsg("FLIN", flop7001(`<FLIN>X</FLIN>`)), mf, []string{`FLIN "X"`, "D or I or M"}},
		{"missing FLID", flopMsg("APPT", `<FFID>x</FFID><APPT>15MAR261012</APPT>`), mf, []string{"FLOP[1] FLID: missing"}},
		{"empty FLID", flopMsg("APPT", `<FLID/><APPT>15MAR261012</APPT>`), mf, []string{"FLOP[1] FLID: missing"}},
		{"non-numeric FLID", flopMsg("APPT", `<FLID>70O1</FLID>`), mf, []string{`FLOP[1] FLID "70O1"`, "not a decimal number"}},
		{"negative FLID", flopMsg("APPT", `<FLID>-7</FLID>`), mf, []string{`FLID "-7"`}},
		{"FLID overflow", flopMsg("APPT", `<FLID>99999999999999999999</FLID>`), mf, []string{`FLID "99999999999999999999"`, "out of range"}},
		{"FLID twice", flopMsg("APPT", `<FLID>7001</FLID><FLID>7002</FLID>`), mf, []string{"FLID", "appears 2 times"}},
		{"singleton twice", flopMsg("STND", flop7001(`<STND>213</STND><STND>214</STND>`)), mf, []string{"FLID 7001 STND", "appears 2 times"}},
		{"number overflow", flopMsg("GTDT", flop7001(`<GTDT GTNO="200"><GATE>A1</GATE></GTDT>`)), mf, []string{"FLID 7001", `GTDT[1]@GTNO "200"`, "8-bit"}},
		{"number not a number", flopMsg("CHOT", flop7001(`<CHOT CSNO="one"/>`)), mf, []string{`CHOT[1]@CSNO "one"`}},
		{"number missing", flopMsg("PSDT", flop7001(`<PSDT><PSST>213</PSST></PSDT>`)), mf, []string{"PSDT[1]@PSNO: missing"}},
		{"number empty", flopMsg("CLDT", flop7001(`<CLDT CLNO=""><BELT>3</BELT></CLDT>`)), mf, []string{"CLDT[1]@CLNO", "empty"}},
		{"number twice", flopMsg("CKDT", flop7001(`<CKDT CKNO="1"><CHKC>K1</CHKC></CKDT><CKDT CKNO="1"><CHKC>K2</CHKC></CKDT>`)), mf, []string{"CKDT[2]@CKNO 1", "twice"}},
		{"group date", flopMsg("ABTM", flop7001(`<ABTM ASNO="1"><AOTM>15MAR26</AOTM></ABTM><ABTM ASNO="2"><AOTM>31APR261000</AOTM></ABTM>`)), mf, []string{"ABTM[2]/AOTM", "day 31"}},
		{"MAXP overflow", flopMsg("MAXP", flop7001(`<MAXP>40000</MAXP>`)), mf, []string{`MAXP "40000"`, "16-bit"}},
		{"MAXP text", flopMsg("MAXP", flop7001(`<MAXP>many</MAXP>`)), mf, []string{`MAXP "many"`}},
		{"VIPR overflow", flopMsg("VIPP", flop7001(`<VIPP>1</VIPP><VIPR>128</VIPR>`)), mf, []string{`VIPR "128"`}},
		{"FHAG overflow", flopMsg("HNAG", flop7001(`<FHAG>3000000000</FHAG>`)), mf, []string{`FHAG "3000000000"`, "32-bit"}},
		{"TAID not a number", flopMsg("TAOP", flop7001(`<TAOP>CA</TAOP><TAFL>CA1</TAFL><TAID>x</TAID>`)), mf, []string{`TAID "x"`}},
		{"PORT without PORT", flopMsg("PORT", flop7001("")), mf, []string{"FLOP[1] FLID 7001 PORT: missing"}},
		{"PORT empty", flopMsg("PORT", flop7001("<PORT/>")), mf, []string{"PORT: missing"}},
		{"PORT without POID", flopMsg("PORT", flop7001("<PORT><POTM>15MAR261000</POTM></PORT>")), mf, []string{"PORT[1]/POID: missing"}},
		{"POID bad", flopMsg("PORT", flop7001("<PORT><POID>X</POID></PORT>")), mf, []string{`PORT[1]/POID "X"`, "O or C"}},
		{"POID twice", flopMsg("PORT", flop7001("<PORT><POID>O</POID></PORT><PORT><POID>O</POID></PORT>")), mf, []string{`PORT[2]/POID "O"`, "twice"}},
		{"non-empty FDEL", flopMsg("FDEL", flop7001("<FDEL>yes</FDEL>")), mf, []string{"FLID 7001 FDEL", `"yes"`, "must be empty"}},
		{"FDEL with child", flopMsg("FDEL", flop7001("<FDEL><X/></FDEL>")), mf, []string{"FDEL", "must be empty"}},
		{"DELY code empty", flopMsg("DELY", flop7001(`<DELY CODE="" DURA="0010"/>`)), mf, []string{"DELY[1]@CODE: missing"}},
		{"DELY code missing", flopMsg("DELY", flop7001(`<DELY STRT="15MAR261000">late</DELY>`)), mf, []string{"DELY[1]@CODE: missing"}},
		{"DURA 3 digits", flopMsg("DELY", flop7001(`<DELY CODE="WX" DURA="130"/>`)), mf, []string{`DELY[1]@DURA "130"`, "4 digits"}},
		{"DURA minutes", flopMsg("DELY", flop7001(`<DELY CODE="WX" DURA="0175"/>`)), mf, []string{`DELY[1]@DURA "0175"`}},
		{"DELY STRT", flopMsg("DELY", flop7001(`<DELY CODE="WX" STRT="15MAR26100"/>`)), mf, []string{`DELY[1]@STRT "15MAR26100"`}},
		{"DELY code twice", flopMsg("DELY", flop7001(`<DELY CODE="WX"/><DELY CODE="WX" DURA="0010"/>`)), mf, []string{`DELY[2]@CODE "WX"`, "twice"}},
		{"ERUT without RTNO", flopMsg("ERUT", flop7001(`<ERUT><APCD>PVG</APCD></ERUT>`)), mf, []string{"ERUT[1]@RTNO: missing"}},
		{"ERUT without APCD", flopMsg("ERUT", flop7001(`<ERUT RTNO="1"><SCAT>15MAR261000</SCAT></ERUT>`)), mf, []string{"ERUT[1]/APCD: missing"}},
		{"SRVT without SRTC", flopMsg("SRVT", flop7001(`<SRVT><SRQT>1</SRQT></SRVT>`)), mf, []string{"SRVT[1]/SRTC: missing"}},
		{"SRVT without SRQT", flopMsg("SRVT", flop7001(`<SRVT><SRTC>GPU</SRTC></SRVT>`)), mf, []string{"SRVT[1]/SRQT: missing"}},
		{"SRQT overflow", flopMsg("SRVT", flop7001(`<SRVT><SRTC>GPU</SRTC><SRQT>300</SRQT></SRVT>`)), mf, []string{`SRVT[1]/SRQT "300"`}},
		{"VIPT date", flopMsg("VIPF", flop7001(`<VIPF><VPCD>V1</VPCD><VIPT><VSCD>L</VSCD><VTST>x</VTST></VIPT></VIPF>`)), mf, []string{`VIPF[1]/VIPT[1]/VTST "x"`}},
		{"PSHT without stand", flopMsg("PSHT", flop7001(`<PSHT PSHN="1"><PSTM>15MAR261000</PSTM></PSHT>`)), mf, []string{"PSHT[1]/PUST: missing"}},
		{"TIPT without stand", flopMsg("TIPT", flop7001(`<TIPT><TRTM>15MAR261000</TRTM></TIPT>`)), mf, []string{"TIPT[1]/TRST: missing"}},
		{"PSHT stand twice", flopMsg("PSHT", flop7001(`<PSHT PSHN="1"><PUST>213</PUST></PSHT><PSHT PSHN="2"><PUST>213</PUST></PSHT>`)), mf, []string{`PSHT[2]/PUST "213": stand appears twice`}},
		{"TIPT stand twice", flopMsg("TIPT", flop7001(`<TIPT><TRST>214</TRST></TIPT><TIPT><TRTM>15MAR261000</TRTM><TRST>214</TRST></TIPT>`)), mf, []string{`TIPT[2]/TRST "214": stand appears twice`}},
		{"no FLOP element", flopMsg("APPT"), mf, []string{"no <FLOP>"}},
		{"unknown STYP ESTT", flopMsg("ESTT", flop7001("<ESTT>15MAR261000</ESTT>")), pipeline.Unsupported, []string{"ESTT"}},
		{"unknown STYP ACTT", flopMsg("ACTT", flop7001("<ACTT>15MAR261000</ACTT>")), pipeline.Unsupported, []string{"ACTT"}},
		{"lower-case STYP", []byte(strings.Replace(string(flopMsg("APPT", flop7001(""))), "<STYP>APPT", "<STYP>appt", 1)), pipeline.Malformed, []string{"STYP"}},
		{"not well-formed", []byte(strings.Replace(string(flopMsg("APPT", flop7001("<APPT>x</APPT>"))), "</APPT>", "</APPX>", 1)), pipeline.Malformed, []string{"well-formed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { wantReject(t, tt.raw, tt.class, tt.message...) })
	}
}

// A Flop's JSON (only its STYP's fields, null/[] for no value) reads back into the same Flop.
func TestFlopJSONRoundTrip(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(flightTestdata, "flop", "*.xml"))
	for _, file := range files {
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range decodeFlops(t, raw) {
			b1, err := json.Marshal(f)
			if err != nil {
				t.Fatal(err)
			}
			var back Flop
			if err := json.Unmarshal(b1, &back); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			if b2, _ := json.Marshal(back); string(b1) != string(b2) {
				t.Errorf("%s: JSON round trip changes the record:\n%s\n%s", file, b1, b2)
			}
		}
	}
}

// No silent clears: a FLOP record that lacks its STYP's element(s) and holds anything beyond
// the common elements (one SIS does not define for FLOP, or another STYP's) is MALFORMED,
// naming what it holds and lacks (a misspelt tag: the element probably meant); beside a
// present STYP element an unexpected one is read past with a warning.
func TestFlopUnknownElements(t *testing.T) {
	rejects := []struct {
		name, styp, payload string
		part                string
	}{
		{"misspelt", "STND", "<STDN>214</STDN>", "FLOP[1] FLID 7001: FLOP STND record has <STDN> but no <STND>, which would clear it (did you mean STND?)"},
		{"longer tag", "CHOT", `<CHOTX CSNO="1"><CHTM>15MAR261000</CHTM></CHOTX>`, "FLOP CHOT record has <CHOTX> but no <CHOT>, which would clear it (did you mean CHOT?)"},
		{"wrong case", "APPT", "<appt>15MAR261000</appt>", "FLOP APPT record has <appt> but no <APPT>, which would clear it (did you mean APPT?)"},
		{"empty misspelt clear", "PADT", "<PDAT/>", "FLOP PADT record has <PDAT> but no <PADT>, which would clear it (did you mean PADT?)"},
		{"one of several", "HNAG", "<FHAG>1</FHAG><PHAG>2</PHAG><MHGA>3</MHGA>", "FLOP HNAG record has <MHGA> but no <MHAG>, which would clear it (did you mean MHAG?)"},
		{"the close one is named", "TOBT", "<XXXXXXXX/><TBOT>15MAR261000</TBOT>", "FLOP TOBT record has <XXXXXXXX>, <TBOT> but no <TOBT>, which would clear it (did you mean TOBT for TBOT?)"},
		{"nothing close", "TOBT", "<REMARKS>x</REMARKS>", "FLOP TOBT record has <REMARKS> but no <TOBT>, which would clear it"},
		{"PORT", "PORT", "<PROT><POID>O</POID></PROT>", "did you mean PORT?"},
		{"FDEL", "FDEL", "<FDELL/>", "did you mean FDEL?"},
		{"second record", "STND", "<STND>1</STND></FLOP><FLOP><FLID>7002</FLID><Stnd>2</Stnd>", "FLOP[2] FLID 7002: FLOP STND record has <Stnd> but no <STND>, which would clear it (did you mean STND?)"},
		{"other STYP's element", "STND", "<TRML>T2</TRML>", "FLOP[1] FLID 7001: FLOP STND record has <TRML> but no <STND>, which would clear it"},
		{"other STYP's time", "APPT", "<BOTM>15MAR261000</BOTM>", "FLOP APPT record has <BOTM> but no <APPT>"},
		{"an operation msgx does not decode", "STND", "<ESTT>15MAR261000</ESTT>", "FLOP STND record has <ESTT> but no <STND>"},
		{"other and unknown", "HNAG", "<FHAG>1</FHAG><TRML>T2</TRML><ZZZZ/>", "FLOP HNAG record has <TRML>, <ZZZZ> but no <PHAG>, <MHAG>, which would clear it"},
		{"other STYP's group", "PSDT", `<GTDT GTNO="1"><GATE>B1</GATE></GTDT>`, "FLOP PSDT record has <GTDT> but no <PSDT>"},
		{"FDEL beside another STYP's element", "FDEL", "<STND>1</STND>", "FLOP FDEL record has <STND> but no <FDEL>"},
	}
	for _, tt := range rejects {
		t.Run(tt.name, func(t *testing.T) {
			wantReject(t, flopMsg(tt.styp, flop7001(tt.payload)), pipeline.Malformed, tt.part)
		})
	}
	accepts := []struct {
		name, styp, payload string
		warnings            []string
	}{
		{"beside the element", "STND", "<STND>214</STND><STDN>215</STDN><ZZZZ/>", []string{
			"unknown element STDN in FLOP STND record 1 ignored (did you mean STND?)",
			"unknown element ZZZZ in FLOP STND record 1 ignored"}},
		{"absent, nothing unknown: clear", "TOBT", "", nil},
		{"absent, only the flight's identity: clear", "TOBT", "<ALCD>3U</ALCD><FLNO>3U8881</FLNO><MVIN>D</MVIN><SODT>15MAR261030</SODT>", nil},
		{"other STYP's element beside the element", "APPT", "<APPT/><BOTM>15MAR261000</BOTM>", []string{
			"element BOTM in FLOP APPT record 1 ignored: not an element of FLOP APPT"}},
		{"inside a complete group entry", "CHOT", `<CHOT CSNO="1"><CHTM>15MAR261000</CHTM><CHID>ON</CHID><CHST/><CHTX/></CHOT>`, []string{
			"unknown element CHTX in FLOP CHOT record 1 CHOT[1] ignored (did you mean CHTM?)"}},
		{"around the record", "APPT", "<APPT/></FLOP><NOTE/><FLOP><FLID>7002</FLID><APPT/>", []string{
			"unknown element NOTE in MSG ignored"}},
	}
	for _, tt := range accepts {
		t.Run(tt.name, func(t *testing.T) {
			msg, err := Decode(flopMsg(tt.styp, flop7001(tt.payload)), Options{})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(msg.Warnings, tt.warnings) {
				t.Errorf("warnings\n got %q\nwant %q", msg.Warnings, tt.warnings)
			}
		})
	}
}

// A misspelt or unknown child of a group entry: the entry would be stored without the
// children it lacks (a clear), so it is MALFORMED when the entry lacks any, naming the unknown
// child and what the entry lacks (did-you-mean when one edit away); beside a complete entry a
// warning with the did-you-mean.
func TestFlopGroupUnknownChildren(t *testing.T) {
	rejects := []struct {
		name, styp, payload string
		part                string
	}{
		{"chocks time misspelt", "CHOT", `<CHOT CSNO="1"><CHTN>15MAR261000</CHTN><CHID>ON</CHID><CHST>213</CHST></CHOT>`,
			"FLOP[1] FLID 7001 CHOT[1]: CHOT entry has <CHTN> but no <CHTM>, which would clear it (did you mean CHTM?)"},
		{"stand start misspelt", "PSDT", `<PSDT PSNO="1"><PSST>213</PSST><STTS>15MAR261000</STTS><STET>15MAR261100</STET></PSDT>`,
			"FLOP[1] FLID 7001 PSDT[1]: PSDT entry has <STTS> but no <STST>, which would clear it (did you mean STST?)"},
		{"wrong case", "GTDT", `<GTDT GTNO="1"><GATE>B1</GATE><gotm>15MAR261000</gotm></GTDT>`, "GTDT[1]: GTDT entry has <gotm> but no <PGOT>, <PGCT>, <GOTM>, <GCTM>, <GTYP>, which would clear it (did you mean GOTM?)"},
		{"second entry", "CKDT", `<CKDT CKNO="1"><CHKC>A1</CHKC></CKDT><CKDT CKNO="2"><CHCK>A2</CHCK></CKDT>`,
			"CKDT[2]: CKDT entry has <CHCK> but no <CHKC>, <CCLS>, <PCOT>, <PCCT>, <COTM>, <CCTM>, <CTYP>, which would clear it (did you mean CHKC?)"},
		{"required child missing", "CHOT", `<CHOT CSNO="1"><CHID>ON</CHID><NOTE>x</NOTE></CHOT>`,
			"CHOT[1]: CHOT entry has <NOTE> but no <CHTM>, <CHST>, which would clear it"},
		{"an entry of only a misspelt child", "ERUT", `<ERUT><APDC>PEK</APDC></ERUT>`, "ERUT[1]: ERUT entry has <APDC> but no <APCD>, <SCAT>, <SCDT>, which would clear it (did you mean APCD?)"},
		{"PORT time", "PORT", `<PORT><POTN>15MAR261000</POTN><POID>O</POID></PORT>`, "PORT[1]: PORT entry has <POTN> but no <POTM>, which would clear it (did you mean POTM?)"},
		{"nothing close, optional child lacking", "GTDT", `<GTDT GTNO="1"><GATE>B1</GATE><PGOT/><PGCT/><GOTM/><GTYP/><REMARK>x</REMARK></GTDT>`,
			"GTDT[1]: GTDT entry has <REMARK> but no <GCTM>, which would clear it"},
		{"a child missing beside another STYP's element", "CHOT", `<CHOT CSNO="1"><CHTM>15MAR261000</CHTM><CHID>ON</CHID><STND>214</STND></CHOT>`,
			"CHOT[1]: CHOT entry has <STND> but no <CHST>, which would clear it"},
		{"nested entry", "VIPF", `<VIPF><VPCD>V1</VPCD><VIPT><VSDC>S1</VSDC></VIPT></VIPF>`, "VIPF[1]/VIPT[1]: VIPT entry has <VSDC> but no <VSCD>, <VTQY>, <VTST>, <VTET>, which would clear it (did you mean VSCD?)"},
	}
	for _, tt := range rejects {
		t.Run(tt.name, func(t *testing.T) {
			wantReject(t, flopMsg(tt.styp, flop7001(tt.payload)), pipeline.Malformed, tt.part)
		})
	}
	accepts := []struct {
		name, styp, payload string
		warnings            []string
	}{
		{"beside every child", "CHOT", `<CHOT CSNO="1"><CHTM>15MAR261000</CHTM><CHID>ON</CHID><CHST>213</CHST><CHDI/></CHOT>`, []string{
			"unknown element CHDI in FLOP CHOT record 1 CHOT[1] ignored (did you mean CHID?)"}},
		{"nothing close, every child present", "GTDT", `<GTDT GTNO="1"><GATE>B1</GATE><PGOT/><PGCT/><GOTM/><GCTM/><GTYP/><REMARK>x</REMARK></GTDT>`, []string{
			"unknown element REMARK in FLOP GTDT record 1 GTDT[1] ignored"}},
	}
	for _, tt := range accepts {
		t.Run(tt.name, func(t *testing.T) {
			msg, err := Decode(flopMsg(tt.styp, flop7001(tt.payload)), Options{})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(msg.Warnings, tt.warnings) {
				t.Errorf("warnings\n got %q\nwant %q", msg.Warnings, tt.warnings)
			}
		})
	}
}

// Unknown META children are read past and reported.
func TestMetaWarnings(t *testing.T) {
	raw := strings.Replace(string(flopMsg("APPT", flop7001("<APPT/>"))), "<STYP>", "<RCVR>VIEW</RCVR><RCVR>X</RCVR><STYP>", 1)
	msg, err := Decode([]byte(raw), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"unknown element RCVR in META ignored"}; !slices.Equal(msg.Warnings, want) {
		t.Errorf("warnings %q, want %q", msg.Warnings, want)
	}
}

// No value lost by any stray element (issue 32): a FLOP record or group entry that lacks one
// of the elements it carries (whose absence clears a value) and holds a stray element (another
// STYP's, or one SIS does not define there, at any edit distance) is MALFORMED, naming what it
// holds and what it lacks, with a did-you-mean where the stray is one edit from the lacking
// element; the same entry with nothing lacking reads past the stray with a warning. Every
// group a FLOP STYP carries, and every STYP's record, is held to it.
func TestFlopStrayElementNeverClears(t *testing.T) {
	const stray = "<ZZZZ>214</ZZZZ>"
	groups := []struct {
		styp, full string
		drop       string // a child (or the text) to take out of full; the stray stands in its place
		lacks      string // how the refusal names what drop took out
	}{
		{"PORT", `<PORT><POID>O</POID><POTM>15MAR261000</POTM></PORT>`, "<POTM>15MAR261000</POTM>", "<POTM>"},
		{"ABTM", `<ABTM ASNO="1"><ABDG>B1</ABDG><ABOP>A</ABOP><AOTM>15MAR261000</AOTM></ABTM>`, "<AOTM>15MAR261000</AOTM>", "<AOTM>"},
		{"CHDT", `<CHDT CHNO="1"><CHUT>C3</CHUT><CCLS>Y</CCLS><PCBT>15MAR260800</PCBT><PCET>15MAR260930</PCET><CBTM>15MAR260805</CBTM><CETM>15MAR260935</CETM><CTYP>D</CTYP></CHDT>`, "<CETM>15MAR260935</CETM>", "<CETM>"},
		{"CHOT", `<CHOT CSNO="1"><CHTM>15MAR261000</CHTM><CHID>ON</CHID><CHST>213</CHST></CHOT>`, "<CHST>213</CHST>", "<CHST>"},
		{"CKDT", `<CKDT CKNO="1"><CHKC>K12</CHKC><CCLS>Y</CCLS><PCOT>15MAR260700</PCOT><PCCT>15MAR260900</PCCT><COTM>15MAR260702</COTM><CCTM>15MAR260901</CCTM><CTYP>D</CTYP></CKDT>`, "<CCTM>15MAR260901</CCTM>", "<CCTM>"},
		{"CLDT", `<CLDT CLNO="1"><BELT>7</BELT><BCLS>Y</BCLS><PCOT>15MAR261100</PCOT><PCCT>15MAR261140</PCCT><FBAG>15MAR261105</FBAG><LBAG>15MAR261135</LBAG><BTYP>D</BTYP></CLDT>`, "<LBAG>15MAR261135</LBAG>", "<LBAG>"},
		{"GTDT", `<GTDT GTNO="1"><GATE>B1</GATE><PGOT>15MAR260900</PGOT><PGCT>15MAR261000</PGCT><GOTM>15MAR260905</GOTM><GCTM>15MAR261002</GCTM><GTYP>D</GTYP></GTDT>`, "<GCTM>15MAR261002</GCTM>", "<GCTM>"},
		{"PSDT", `<PSDT PSNO="1"><PSST>213</PSST><STST>15MAR260900</STST><STET>15MAR261100</STET></PSDT>`, "<STET>15MAR261100</STET>", "<STET>"},
		{"ERUT", `<ERUT RTNO="1"><APCD>PEK</APCD><SCAT>15MAR260900</SCAT><SCDT>15MAR261000</SCDT></ERUT>`, "<SCDT>15MAR261000</SCDT>", "<SCDT>"},
		{"SRVT", `<SRVT><SRTC>GPU</SRTC><SRQT>1</SRQT><SRST>15MAR260900</SRST><SRET>15MAR260930</SRET><SRPR>12</SRPR><SANR>AB</SANR><SARR>late truck</SARR></SRVT>`, "<SARR>late truck</SARR>", "<SARR>"},
		{"VIPF", `<VIPF><VPCD>V1</VPCD><VFES>3</VFES><VIPT><VSCD>L</VSCD><VTQY>1</VTQY><VTST>15MAR260900</VTST><VTET>15MAR260930</VTET></VIPT></VIPF>`, "<VFES>3</VFES>", "<VFES>"},
		{"VIPF", `<VIPF><VPCD>V1</VPCD><VFES>3</VFES><VIPT><VSCD>L</VSCD><VTQY>1</VTQY><VTST>15MAR260900</VTST><VTET>15MAR260930</VTET></VIPT></VIPF>`, "<VTET>15MAR260930</VTET>", "<VTET>"},
		{"PSHT", `<PSHT PSHN="1"><PSTM>15MAR261030</PSTM><PSID>IN</PSID><PUST>213</PUST></PSHT>`, "<PSID>IN</PSID>", "<PSID>"},
		{"TIPT", `<TIPT><TRTM>15MAR261020</TRTM><TRST>213</TRST></TIPT>`, "<TRTM>15MAR261020</TRTM>", "<TRTM>"},
		{"DELY", `<DELY CODE="WX" DURA="0010">thunderstorm</DELY>`, "thunderstorm", "text"},
		{"FDIV", `<FDIV DDES="CKG" DDIR="TO">fog</FDIV>`, "fog", "text"},
		{"FRET", `<FRET REID="A">bird strike</FRET>`, "bird strike", "text"},
		{"FLAB", `<FLAB ARES="G">wind shear</FLAB>`, "wind shear", "text"},
	}
	for _, g := range groups {
		t.Run(g.styp+" without "+g.lacks, func(t *testing.T) {
			if !strings.Contains(g.full, g.drop) {
				t.Fatalf("%q is not in %s", g.drop, g.full)
			}
			// Nothing lacking: the stray is read past with a warning.
			msg, err := Decode(flopMsg(g.styp, flop7001(strings.Replace(g.full, g.drop, g.drop+stray, 1))), Options{})
			if err != nil {
				t.Fatalf("complete entry beside a stray: %v", err)
			}
			if len(msg.Warnings) != 1 || !strings.Contains(msg.Warnings[0], "unknown element ZZZZ in FLOP "+g.styp+" record 1 ") {
				t.Errorf("complete entry beside a stray: warnings %q, want one naming ZZZZ", msg.Warnings)
			}
			// Lacking what the stray stands in for: refused, naming both.
			part := "has <ZZZZ> but no " + g.lacks + ", which would clear it"
			wantReject(t, flopMsg(g.styp, flop7001(strings.Replace(g.full, g.drop, stray, 1))), pipeline.Malformed, part)
			// Lacking it with nothing stray beside: cleared, as before.
			if _, err := Decode(flopMsg(g.styp, flop7001(strings.Replace(g.full, g.drop, "", 1))), Options{}); err != nil {
				t.Errorf("entry without %s and nothing stray: %v", g.lacks, err)
			}
		})
	}

	// Every STYP's record: a stray where its element belongs is refused, naming both.
	for _, styp := range FlopSTYPs() {
		t.Run(styp+" record", func(t *testing.T) {
			wantReject(t, flopMsg(styp, flop7001(stray)), pipeline.Malformed,
				fmt.Sprintf("FLOP[1] FLID 7001: FLOP %s record has <ZZZZ> but no <%s>", styp, flopOwn(styp)[0]))
		})
	}

	// The case of issue 32: a chocks-on entry with the stand under STND, not CHST.
	for _, tt := range []struct {
		name, entry string
		parts       []string
	}{
		{"stand under another STYP's tag", `<CHOT CSNO="1"><CHTM>15MAR261005</CHTM><CHID>ON</CHID><STND>214</STND></CHOT>`,
			[]string{"FLOP[1] FLID 7001 CHOT[1]: CHOT entry has <STND> but no <CHST>, which would clear it"}},
		{"one edit away", `<CHOT CSNO="1"><CHTM>15MAR261005</CHTM><CHID>ON</CHID><CHTS>214</CHTS></CHOT>`,
			[]string{"CHOT[1]: CHOT entry has <CHTS> but no <CHST>, which would clear it (did you mean CHST?)"}},
		{"letter case", `<CHOT CSNO="1"><CHTM>15MAR261005</CHTM><CHID>ON</CHID><chst>214</chst></CHOT>`,
			[]string{"CHOT entry has <chst> but no <CHST>", "(did you mean CHST?)"}},
		{"second entry", `<CHOT CSNO="1"><CHTM>15MAR261005</CHTM><CHID>ON</CHID><CHST>213</CHST></CHOT><CHOT CSNO="2"><CHTM>15MAR261105</CHTM><CHID>OFF</CHID><STAND>214</STAND></CHOT>`,
			[]string{"CHOT[2]: CHOT entry has <STAND> but no <CHST>"}},
		{"several strays", `<CHOT CSNO="1"><CHTM>15MAR261005</CHTM><STND>214</STND><CHDI>ON</CHDI></CHOT>`,
			[]string{"CHOT[1]: CHOT entry has <STND>, <CHDI> but no <CHID>, <CHST>, which would clear it (did you mean CHID for CHDI?)"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			wantReject(t, flopMsg("CHOT", flop7001(tt.entry)), pipeline.Malformed, tt.parts...)
		})
	}
	if err := wantNoHint(flopMsg("CHOT", flop7001(`<CHOT CSNO="1"><CHTM>15MAR261005</CHTM><CHID>ON</CHID><STND>214</STND></CHOT>`))); err != nil {
		t.Error(err)
	}

	// The documented ways to clear the stand where chocked keep clearing it, silently.
	for _, entry := range []string{
		`<CHOT CSNO="1"><CHTM>15MAR261005</CHTM><CHID>ON</CHID></CHOT>`,
		`<CHOT CSNO="1"><CHTM>15MAR261005</CHTM><CHID>ON</CHID><CHST/></CHOT>`,
		`<CHOT CSNO="1"><CHTM>15MAR261005</CHTM><CHID>ON</CHID><CHST></CHST></CHOT>`,
	} {
		msg, err := Decode(flopMsg("CHOT", flop7001(entry)), Options{})
		if err != nil {
			t.Errorf("%s: %v", entry, err)
			continue
		}
		f := msg.Body.(*FlopBody).Records[0]
		if len(f.CHOT) != 1 || f.CHOT[0].CHST != "" || f.CHOT[0].CHID != "ON" || len(msg.Warnings) != 0 {
			t.Errorf("%s: CHOT %+v, warnings %q; want the entry with no CHST and no warning", entry, f.CHOT, msg.Warnings)
		}
	}
	// An explicit empty <CHST/> says "clear" itself: a stray beside it is only read past.
	msg, err := Decode(flopMsg("CHOT", flop7001(`<CHOT CSNO="1"><CHTM>15MAR261005</CHTM><CHID>ON</CHID><CHST/><STND>214</STND></CHOT>`)), Options{})
	if err != nil {
		t.Fatalf("explicit clear beside a stray: %v", err)
	}
	if want := []string{"unknown element STND in FLOP CHOT record 1 CHOT[1] ignored"}; !slices.Equal(msg.Warnings, want) {
		t.Errorf("explicit clear beside a stray: warnings %q, want %q", msg.Warnings, want)
	}
}

// wantNoHint returns an error when the refusal of raw suggests an element: a stray far from
// what the entry lacks gets no did-you-mean.
func wantNoHint(raw []byte) error {
	_, err := Decode(raw, Options{})
	if err == nil {
		return fmt.Errorf("accepted, want MALFORMED")
	}
	if strings.Contains(err.Error(), "did you mean") {
		return fmt.Errorf("refusal %q suggests an element; the stray is not one edit from it", err)
	}
	return nil
}
