package sis

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"msgx/internal/pipeline"
)

// baseFLTR is a complete FLTR with only the required elements (docs/sis-format.md §2.4 R).
func baseFLTR(flid int) string {
	return fmt.Sprintf(`<FLTR><FLID>%d</FLID><ALCD>CA</ALCD><FLNO>CA%d</FLNO><MVIN>D</MVIN><SODT>15MAR261230</SODT>`+
		`<FLTY>W</FLTY><FLIN>I</FLIN><ACFT>333</ACFT></FLTR>`, flid, flid)
}

// schdMsg builds a SCHD message of the STYP whose MSG holds body after META.
func schdMsg(styp, body string) []byte {
	return []byte(`<?xml version="1.0" encoding="UTF-8"?><MSG><META><SNDR>AODB</SNDR><SEQN>900002</SEQN>` +
		`<DTTM>20260315080000</DTTM><TYPE>SCHD</TYPE><STYP>` + styp + `</STYP></META>` + body + `</MSG>`)
}

func schdOf(recs int, fltrs ...string) []byte {
	return schdMsg("DNLD", fmt.Sprintf("<SCHD><RECS>%d</RECS>%s</SCHD>", recs, strings.Join(fltrs, "")))
}

// withFLTR returns baseFLTR(7001) with old replaced by new.
func withFLTR(old, new string) string {
	s := baseFLTR(7001)
	if !strings.Contains(s, old) {
		panic("no " + old)
	}
	return strings.Replace(s, old, new, 1)
}

func TestSchdDecode(t *testing.T) {
	msg, err := Decode(schdOf(2, baseFLTR(7001), baseFLTR(7002)), Options{})
	if err != nil {
		t.Fatal(err)
	}
	b := msg.Body.(*SchdBody)
	if b.STYP != "DNLD" || b.Recs != 2 || len(b.Flights) != 2 {
		t.Fatalf("body = %+v", b)
	}
	f := b.Flights[1]
	if f.FLID != 7002 || f.FLNO != "CA7002" || f.SODT.Format(time.RFC3339) != "2026-03-15T04:30:00Z" || f.FFID != "CA-CA7002-D-15MAR261230-I" {
		t.Errorf("flight = %+v", f)
	}
	// Zero records is a valid (empty) schedule; any STYP is read the same way.
	for _, styp := range []string{"DNLD", "RESP", "DEL", "ADFT", "UPD"} {
		msg, err := Decode(schdMsg(styp, "<SCHD><RECS>0</RECS></SCHD>"), Options{})
		if err != nil {
			t.Fatalf("%s: %v", styp, err)
		}
		if b := msg.Body.(*SchdBody); b.STYP != styp || len(b.Flights) != 0 {
			t.Errorf("%s: body %+v", styp, b)
		}
	}
	// Unknown elements are ignored, and FLTR TIPT lands on its stand's PSDT row.
	msg, err = Decode(schdOf(1, withFLTR("<ACFT>333</ACFT>", `<ACFT>333</ACFT><XXXX>?</XXXX>
		<PSDT PSNO="1"><PSST>213</PSST></PSDT><PSDT PSNO="2"><PSST>214</PSST></PSDT><TIPT><TRTM>15MAR261220</TRTM><TRST>214</TRST></TIPT>`)), Options{})
	if err != nil {
		t.Fatal(err)
	}
	ps := msg.Body.(*SchdBody).Flights[0].PSDT
	if len(ps) != 2 || ps[0].TRTM != nil || ps[1].TRTM == nil || ps[1].TRTM.Format(time.RFC3339) != "2026-03-15T04:20:00Z" {
		t.Errorf("PSDT = %+v", ps)
	}
}

func TestSchdRejects(t *testing.T) {
	mf := pipeline.Malformed
	tests := []struct {
		name    string
		raw     []byte
		message []string
	}{
		{"missing SCHD", schdMsg("DNLD", "<RECS>1</RECS>"+baseFLTR(7001)), []string{"no <SCHD>"}},
		{"two SCHD", schdMsg("DNLD", "<SCHD><RECS>0</RECS></SCHD><SCHD><RECS>0</RECS></SCHD>"), []string{"more than one <SCHD>"}},
		{"RECS missing", schdMsg("DNLD", "<SCHD>"+baseFLTR(7001)+"</SCHD>"), []string{"SCHD/RECS: missing"}},
		{"RECS more", schdOf(3, baseFLTR(7001), baseFLTR(7002)), []string{"SCHD/RECS 3", "only 2 FLTR", "truncated"}},
		{"RECS not a number", schdMsg("DNLD", "<SCHD><RECS>two</RECS></SCHD>"), []string{`SCHD/RECS "two"`}},
		{"RECS negative", schdMsg("DNLD", "<SCHD><RECS>-1</RECS></SCHD>"), []string{`SCHD/RECS "-1"`}},
		{"FLTR without SODT", schdOf(1, withFLTR("<SODT>15MAR261230</SODT>", "")), []string{"FLTR[1] FLID 7001 SODT: missing"}},
		{"FLTR empty SODT", schdOf(1, withFLTR("<SODT>15MAR261230</SODT>", "<SODT></SODT>")), []string{"FLID 7001 SODT: missing"}},
		{"SODT day 32", schdOf(1, withFLTR("15MAR261230", "32MAR261230")), []string{`FLID 7001 SODT "32MAR261230"`, "day 32"}},
		{"SODT minute 75", schdOf(1, withFLTR("15MAR261230", "15MAR261275")), []string{`SODT "15MAR261275"`, "minute 75"}},
		{"SODT wrong length", schdOf(1, withFLTR("15MAR261230", "15MAR2612300")), []string{`SODT "15MAR2612300"`, "12 characters"}},
		{"missing FLID", schdOf(1, withFLTR("<FLID>7001</FLID>", "")), []string{"FLTR[1] FLID: missing"}},
		{"non-numeric FLID", schdOf(1, withFLTR("<FLID>7001</FLID>", "<FLID>A7001</FLID>")), []string{`FLTR[1] FLID "A7001"`}},
		{"missing ALCD", schdOf(1, withFLTR("<ALCD>CA</ALCD>", "<ALCD/>")), []string{"FLID 7001 ALCD: missing"}},
		{"missing FLNO", schdOf(1, withFLTR("<FLNO>CA7001</FLNO>", "")), []string{"FLID 7001 FLNO: missing"}},
		{"missing MVIN", schdOf(1, withFLTR("<MVIN>D</MVIN>", "")), []string{"FLID 7001 MVIN: missing"}},
		{"bad MVIN", schdOf(1, withFLTR("<MVIN>D</MVIN>", "<MVIN>X</MVIN>")), []string{`FLID 7001 MVIN "X": want A or D`}},
		{"missing FLTY", schdOf(1, withFLTR("<FLTY>W</FLTY>", "")), []string{"FLID 7001 FLTY: missing"}},
		{"missing FLIN", schdOf(1, withFLTR("<FLIN>I</FLIN>", "<FLIN></FLIN>")), []string{"FLID 7001 FLIN: missing"}},
		{"bad FLIN", schdOf(1, withFLTR("<FLIN>I</FLIN>", "<FLIN>Q</FLIN>")), []string{`FLIN "Q"`}},
		{"missing ACFT", schdOf(1, withFLTR("<ACFT>333</ACFT>", "")), []string{"FLID 7001 ACFT: missing"}},
		{"DDIR TOO", schdOf(1, withFLTR("<ACFT>333</ACFT>", `<ACFT>333</ACFT><FDIV DDES="CKG" DDIR="TOO"/>`)), []string{`FLID 7001 FDIV@DDIR "TOO": want TO or FROM`}},
		{"ARES empty", schdOf(1, withFLTR("<ACFT>333</ACFT>", `<ACFT>333</ACFT><FLAB ARES=""/>`)), []string{"FLID 7001 FLAB@ARES", "empty"}},
		{"group number 200", schdOf(1, withFLTR("<ACFT>333</ACFT>", `<ACFT>333</ACFT><PSDT PSNO="200"><PSST>1</PSST></PSDT>`)), []string{`FLID 7001 PSDT[1]@PSNO "200"`}},
		{"group number twice", schdOf(1, withFLTR("<ACFT>333</ACFT>", `<ACFT>333</ACFT><ERUT RTNO="1"><APCD>A</APCD></ERUT><ERUT RTNO="1"><APCD>B</APCD></ERUT>`)), []string{"ERUT[2]@RTNO 1", "twice"}},
		{"group date", schdOf(1, withFLTR("<ACFT>333</ACFT>", `<ACFT>333</ACFT><GTDT GTNO="1"><PGOT>29FEB251000</PGOT></GTDT>`)), []string{`GTDT[1]/PGOT "29FEB251000"`, "day 29"}},
		{"TAID overflow", schdOf(1, withFLTR("<ACFT>333</ACFT>", `<ACFT>333</ACFT><TAID>9223372036854775808</TAID>`)), []string{`TAID "9223372036854775808"`}},
		{"LBWT not decimal", schdOf(1, withFLTR("<ACFT>333</ACFT>", `<ACFT>333</ACFT><LBWT>12,5</LBWT>`)), []string{`LBWT "12,5"`}},
		{"PORT POID bad", schdOf(1, withFLTR("<ACFT>333</ACFT>", `<ACFT>333</ACFT><PORT><POTM>15MAR261000</POTM><POID>X</POID></PORT>`)), []string{`PORT[1]/POID "X"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { wantReject(t, tt.raw, mf, tt.message...) })
	}
}

// A SCHD survives its bad FLTRs: they go to Invalid (index, FLID when readable, class,
// reason), the valid ones to Flights; a later duplicate FLID is the invalid one.
func TestSchdInvalid(t *testing.T) {
	bad := strings.Replace(baseFLTR(7002), "<MVIN>D</MVIN>", "<MVIN>d</MVIN>", 1)
	noFLID := strings.Replace(baseFLTR(7003), "<FLID>7003</FLID>", "<FLID>x</FLID>", 1)
	nested := strings.Replace(baseFLTR(7005), "<ALCD>CA</ALCD>", "<ALCD><IATA>CA</IATA></ALCD>", 1)
	msg, err := Decode(schdOf(6, baseFLTR(7001), bad, noFLID, baseFLTR(7001), baseFLTR(7004), nested), Options{})
	if err != nil {
		t.Fatal(err)
	}
	b := msg.Body.(*SchdBody)
	if b.Recs != 6 || len(b.Flights) != 2 || b.Flights[0].FLID != 7001 || b.Flights[1].FLID != 7004 {
		t.Fatalf("body = %+v", b)
	}
	want := []Invalid{
		{2, "7002", pipeline.Malformed, `FLTR[2] FLID 7002 MVIN "d": want A or D`},
		{3, "", pipeline.Malformed, `FLTR[3] FLID "x"`},
		{4, "7001", pipeline.Malformed, "FLTR[4] FLID 7001: FLID already used by FLTR[1]"},
		{6, "7005", pipeline.CodecError, "FLTR[6] FLID 7005 ALCD contains an element <IATA>"},
	}
	if len(b.Invalid) != len(want) {
		t.Fatalf("invalid = %+v", b.Invalid)
	}
	for i, w := range want {
		if g := b.Invalid[i]; g.Index != w.Index || g.Key != w.Key || g.Class != w.Class || !strings.HasPrefix(g.Reason, w.Reason) {
			t.Errorf("invalid %d = %+v, want %+v", i, g, w)
		}
	}
	// Every FLTR invalid: the message fails whole, naming the first ones.
	wantReject(t, schdOf(4, bad, noFLID, bad, bad), pipeline.Malformed, "every FLTR of the message is invalid (4)", "FLTR[1] FLID 7002", `FLTR[2] FLID "x"`, "and 1 more")
	wantReject(t, schdOf(2, bad, nested), pipeline.CodecError, "every FLTR")
}

// RECS: fewer FLTRs than RECS in a DNLD or RESP is MALFORMED (a truncated replace), any other
// mismatch a warning; invalid FLTRs count.
func TestSchdRecs(t *testing.T) {
	bad := strings.Replace(baseFLTR(7002), "<MVIN>D</MVIN>", "", 1)
	for _, tt := range []struct {
		styp    string
		recs    int
		fltrs   []string
		fail    bool
		warning string
	}{
		{"DNLD", 3, []string{baseFLTR(7001), bad}, true, ""},
		{"RESP", 1, nil, true, ""},
		{"DNLD", 2, []string{baseFLTR(7001), bad}, false, ""},
		{"DNLD", 1, []string{baseFLTR(7001), baseFLTR(7002)}, false, "SCHD/RECS 1: the message holds 2 FLTR"},
		{"RESP", 0, []string{baseFLTR(7001)}, false, "SCHD/RECS 0: the message holds 1 FLTR"},
		{"ADFT", 3, []string{baseFLTR(7001)}, false, "SCHD/RECS 3: the message holds 1 FLTR"},
		{"DEL", 2, []string{baseFLTR(7001)}, false, "SCHD/RECS 2"},
		{"DEL", 0, []string{baseFLTR(7001)}, false, "SCHD/RECS 0"},
	} {
		raw := schdMsg(tt.styp, fmt.Sprintf("<SCHD><RECS>%d</RECS>%s</SCHD>", tt.recs, strings.Join(tt.fltrs, "")))
		msg, err := Decode(raw, Options{})
		if tt.fail {
			if pipeline.ClassOf(err) != pipeline.Malformed || !strings.Contains(err.Error(), "truncated") {
				t.Errorf("%s RECS %d: %v, want MALFORMED", tt.styp, tt.recs, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s RECS %d: %v", tt.styp, tt.recs, err)
			continue
		}
		got := strings.Join(msg.Warnings, "|")
		if (tt.warning == "") != (got == "") || !strings.Contains(got, tt.warning) {
			t.Errorf("%s RECS %d: warnings %q, want %q", tt.styp, tt.recs, got, tt.warning)
		}
		if b := msg.Body.(*SchdBody); b.Recs != tt.recs {
			t.Errorf("%s: Recs %d, want the declared %d", tt.styp, b.Recs, tt.recs)
		}
	}
}

// Unknown elements around and in FLTRs are read past and reported, deduplicated and bounded.
func TestSchdWarnings(t *testing.T) {
	raw := schdMsg("DNLD", "<XTRA/><SCHD><RECS>1</RECS><NOTE>x</NOTE>"+withFLTR("<ACFT>333</ACFT>",
		`<ACFT>333</ACFT><ROUT RTNO="1"><APCD>PEK</APCD></ROUT><acft>333</acft><DYOP>1234567</DYOP><GTDT GTNO="1"><GATE>B1</GATE><GATX/></GTDT>`)+"</SCHD>")
	msg, err := Decode(raw, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"unknown element XTRA in MSG ignored",
		"unknown element NOTE in SCHD ignored",
		"unknown element acft in SCHD FLTR record 1 ignored (did you mean ACFT?)",
		"unknown element DYOP in SCHD FLTR record 1 ignored (did you mean CSOP?)", // edit distance 2
		"unknown element GATX in SCHD FLTR record 1 GTDT[1] ignored (did you mean GATE?)",
	}
	if strings.Join(msg.Warnings, "\n") != strings.Join(want, "\n") {
		t.Errorf("warnings\n got %q\nwant %q", msg.Warnings, want)
	}
	// 30 FLTRs with the same stray element: 20 warnings and a count of the rest.
	var fltrs []string
	for i := 0; i < 30; i++ {
		fltrs = append(fltrs, strings.Replace(baseFLTR(8000+i), "</FLTR>", "<ZZZZ/><ZZZZ/></FLTR>", 1))
	}
	msg, err = Decode(schdOf(30, fltrs...), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(msg.Warnings); n != maxWarnings+1 || msg.Warnings[n-1] != "and 10 more warnings" || msg.Warnings[0] != "unknown element ZZZZ in SCHD FLTR record 1 ignored" {
		t.Errorf("%d warnings: %q", n, msg.Warnings)
	}
}

func TestSchdLBWT(t *testing.T) {
	for in, want := range map[string]string{"2130.5": "2130.5", "+12": "12", "0012.50": "12.50", ".5": "0.5", "7.": "7", "-0.25": "-0.25", "000": "0"} {
		msg, err := Decode(schdOf(1, withFLTR("<ACFT>333</ACFT>", "<ACFT>333</ACFT><LBWT>"+in+"</LBWT>")), Options{})
		if err != nil {
			t.Fatalf("LBWT %s: %v", in, err)
		}
		if got := msg.Body.(*SchdBody).Flights[0].LBWT; string(got) != want {
			t.Errorf("LBWT %s = %s, want %s", in, got, want)
		}
	}
}

// benchFLTR is a FLTR of about 3.3 KB (with its indentation), the size of a busy day's records.
const benchFLTR = `
		<FLTR>
			<FLID>%d</FLID>
			<ALCD>CA</ALCD>
			<ALSC></ALSC>
			<FLNO>CA%d</FLNO>
			<MVIN>A</MVIN>
			<SODT>15MAR26%02d%02d</SODT>
			<FLTY>W</FLTY>
			<FLIN>I</FLIN>
			<ROUT RTNO="1"><APCD>HKG</APCD><SCDT>15MAR260640</SCDT></ROUT>
			<ACFT>333</ACFT>
			<RENO>B-6513</RENO>
			<TAOP>CA</TAOP>
			<TAFL>CA4103</TAFL>
			<TAID>7001</TAID>
			<TRML>T2</TRML>
			<MAXP>300</MAXP>
			<STND>213</STND>
			<ESTT>15MAR260905</ESTT>
			<PSDT PSNO="1">
				<PSST>213</PSST>
				<STST>15MAR260905</STST>
				<STET>15MAR261150</STET>
			</PSDT>
			<GTDT GTNO="1">
				<GATE>B12</GATE>
				<PGOT>15MAR260900</PGOT>
				<PGCT>15MAR260930</PGCT>
				<GOTM/>
				<GCTM/>
				<GTYP>I</GTYP>
			</GTDT>
			<CHDT CHNO="1">
				<CHUT>C12</CHUT>
				<CCLS>Y</CCLS>
				<PCBT>15MAR261000</PCBT>
				<PCET>15MAR261150</PCET>
				<CTYP>I</CTYP>
			</CHDT>
			<CKDT CKNO="1">
				<CHKC>K201</CHKC>
				<CCLS>C</CCLS>
				<PCOT>15MAR261000</PCOT>
				<PCCT>15MAR261150</PCCT>
				<CTYP>I</CTYP>
			</CKDT>
			<CKDT CKNO="2">
				<CHKC>K202</CHKC>
				<CCLS>Y</CCLS>
				<PCOT>15MAR261000</PCOT>
				<PCCT>15MAR261150</PCCT>
				<CTYP>I</CTYP>
			</CKDT>
			<CHOT CSNO="1">
				<CHTM>15MAR260907</CHTM>
				<CHID>ON</CHID>
				<CHST>213</CHST>
			</CHOT>
			<ABTM ASNO="1">
				<ABDG>B213</ABDG>
				<ABOP>A</ABOP>
				<AOTM>15MAR260909</AOTM>
			</ABTM>
			<CLDT CLNO="1">
				<BELT>7</BELT>
				<BCLS>Y</BCLS>
				<PCOT>15MAR260920</PCOT>
				<PCCT>15MAR261000</PCCT>
				<FBAG/>
				<LBAG/>
				<BTYP>I</BTYP>
			</CLDT>
			<CHOT CSNO="2">
				<CHTM>15MAR261148</CHTM>
				<CHID>OFF</CHID>
				<CHST>213</CHST>
			</CHOT>
			<VIPF>
				<VPCD>V0031</VPCD>
				<VFES>2</VFES>
				<VIPT>
					<VSCD>LNG</VSCD>
					<VTQY>1</VTQY>
					<VTST>15MAR260920</VTST>
					<VTET>15MAR260950</VTET>
				</VIPT>
			</VIPF>
			<GTDT GTNO="2">
				<GATE>B14</GATE>
				<PGOT>15MAR260900</PGOT>
				<PGCT>15MAR260930</PGCT>
				<GOTM/>
				<GCTM/>
				<GTYP>I</GTYP>
			</GTDT>
			<PHAG>1002</PHAG>
			<FHAG>1001</FHAG>
			<MHAG>1003</MHAG>
			<CNCL/>
			<BOTM></BOTM>
			<LACL></LACL>
			<FINT>15MAR260855</FINT>
			<APPT></APPT>
			<EGSR></EGSR>
			<EGST></EGST>
			<COBT></COBT>
			<TOBT></TOBT>
			<EOBT></EOBT>
			<IEST></IEST>
			<PEDT>15MAR260640</PEDT>
			<NEAT></NEAT>
			<PADT>15MAR260648</PADT>
			<NAAT></NAAT>
			<DELY CODE="AT" STRT="15MAR260900" DURA="0010">航路拥挤</DELY>
			<SRVT>
				<SRTC>GPU</SRTC>
				<SRQT>1</SRQT>
				<SRST>15MAR261150</SRST>
				<SRET/>
				<SRPR>1001</SRPR>
				<SANR></SANR>
				<SARR></SARR>
			</SRVT>
			<FDIV/>
			<FRET></FRET>
			<FLAB></FLAB>
			<ERUT RTNO="1">
				<APCD>HKG</APCD>
				<SCAT/>
				<SCDT>15MAR260640</SCDT>
			</ERUT>
			<ERUT RTNO="2">
				<APCD>CTU</APCD>
				<SCAT>15MAR260915</SCAT>
				<SCDT/>
			</ERUT>
			<EXSC>ARR</EXSC>
			<EXSR></EXSR>
			<FTSS>LND</FTSS>
			<REMC>到达 arrival</REMC>
			<VIPP>1</VIPP>
			<VIPR>2</VIPR>
			<LBNO>142</LBNO>
			<LBWT>2130.5</LBWT>
			<PAXC>276</PAXC>
			<PORT><POTM>15MAR261145</POTM><POID>O</POID></PORT>
			<RUNW>02R</RUNW>
			<TIPT>
				<TRTM>15MAR260902</TRTM>
				<TRST>213</TRST>
			</TIPT>
		</FLTR>`

// benchSCHD builds a SCHD DNLD with n FLTR records.
func benchSCHD(n int) []byte {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>
<MSG><META><SNDR>AODB</SNDR><SEQN>900009</SEQN><DTTM>20260314220000</DTTM><TYPE>SCHD</TYPE><STYP>DNLD</STYP></META>
	<SCHD>
		<RECS>` + fmt.Sprint(n) + `</RECS>`)
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, benchFLTR, 100000+i, 1000+i, i/60%24, i%60)
	}
	b.WriteString("\n\t</SCHD>\n</MSG>\n")
	return []byte(b.String())
}

// BenchmarkDecodeSCHD3000 decodes a 3,000-FLTR (about 10 MB) SCHD DNLD. Besides time and
// allocations it reports the document's size (doc-MB) and the heap one decoded message keeps
// alive (result-MB): decoding streams one FLTR at a time, so the raw bytes and the typed
// result are all that stays.
func BenchmarkDecodeSCHD3000(b *testing.B) {
	raw := benchSCHD(3000)
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		msg, err := Decode(raw, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if n := len(msg.Body.(*SchdBody).Flights); n != 3000 {
			b.Fatalf("%d flights", n)
		}
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	msg, _ := Decode(raw, Options{})
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(msg)
	runtime.KeepAlive(raw) // else the GC frees it and the difference understates the result
	b.ReportMetric(float64(len(raw))/1e6, "doc-MB")
	b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/1e6, "result-MB")
}
