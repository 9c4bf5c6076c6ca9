package sis

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"msgx/internal/pipeline"
)

func TestEnvelopeRejections(t *testing.T) {
	meta := func(inner string) string {
		return `<MSG><META>` + inner + `</META></MSG>`
	}
	good := `<SNDR>AODB</SNDR><SEQN>12</SEQN><DTTM>20261201101500</DTTM><TYPE>AIRL</TYPE><STYP>ADD</STYP>`
	for name, raw := range map[string]string{
		"not xml":           "hello",
		"empty":             "",
		"unclosed":          `<MSG><META>`,
		"second close":      `<MSG>` + `<META>` + good + `</META><RECS>0</RECS></MSG></MSG>`,
		"two roots":         meta(good) + meta(good),
		"wrong root":        `<MESSAGE><META>` + good + `</META></MESSAGE>`,
		"no meta":           `<MSG><RECS>0</RECS></MSG>`,
		"no type":           meta(`<SNDR>AODB</SNDR><SEQN>1</SEQN><DTTM>20261201101500</DTTM><STYP>ADD</STYP>`),
		"lower type":        meta(`<SNDR>AODB</SNDR><SEQN>1</SEQN><DTTM>20261201101500</DTTM><TYPE>airl</TYPE><STYP>ADD</STYP>`),
		"seqn letters":      meta(`<SNDR>AODB</SNDR><SEQN>12a</SEQN><DTTM>20261201101500</DTTM><TYPE>AIRL</TYPE><STYP>ADD</STYP>`),
		"dttm day 32":       meta(`<SNDR>AODB</SNDR><SEQN>1</SEQN><DTTM>20261232101500</DTTM><TYPE>AIRL</TYPE><STYP>ADD</STYP>`),
		"dttm short":        meta(`<SNDR>AODB</SNDR><SEQN>1</SEQN><DTTM>202612011015</DTTM><TYPE>AIRL</TYPE><STYP>ADD</STYP>`),
		"dttm year 0":       meta(`<SNDR>AODB</SNDR><SEQN>1</SEQN><DTTM>00000101000000</DTTM><TYPE>AIRL</TYPE><STYP>ADD</STYP>`),
		"no sender":         meta(`<SEQN>1</SEQN><DTTM>20261201101500</DTTM><TYPE>AIRL</TYPE><STYP>ADD</STYP>`),
		"meta twice":        `<MSG><META>` + good + `</META><META>` + good + `</META></MSG>`,
		"text after root":   meta(good) + "trailing",
		"duplicate in meta": meta(good + `<TYPE>FLOP</TYPE>`),
	} {
		_, err := Decode([]byte(raw), Options{})
		if pipeline.ClassOf(err) != pipeline.Malformed {
			t.Errorf("%s: class %s (%v), want MALFORMED", name, pipeline.ClassOf(err), err)
		}
	}
	msg, err := Decode([]byte(meta(`<SNDR>AODB</SNDR><SEQN>1</SEQN><DTTM>20261201101500</DTTM><TYPE>QQQQ</TYPE><STYP>ADD</STYP>`)), Options{})
	if pipeline.ClassOf(err) != pipeline.Unsupported || msg == nil || msg.Tag() != "QQQQ-ADD" {
		t.Errorf("unknown TYPE: %v %v, want UNSUPPORTED with the tag kept", msg, err)
	}
	m, err := decodeEnvelope([]byte(meta(good)), Options{}, nil)
	if err != nil || m.DTTM.Format("2006-01-02T15:04:05Z07:00") != "2026-12-01T02:15:00Z" || m.Day != "20261201" {
		t.Errorf("DTTM is local time in Asia/Shanghai: %+v %v", m, err)
	}
}

// BenchmarkDecodeSmall decodes the small messages the pump sees most: a one-record FLOP and
// a one-record reference add.
func BenchmarkDecodeSmall(b *testing.B) {
	for _, name := range []string{"flop/chot.xml", "ref/airl_add.xml"} {
		raw, err := os.ReadFile(filepath.Join(flightTestdata, name))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(filepath.Base(filepath.Dir(name)), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Decode(raw, Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A META element written in the wrong letter case, or a typo away, is named in the reason
// instead of reported as missing or empty: the sender sees what to fix.
func TestEnvelopeNamesMisspeltMeta(t *testing.T) {
	const rest = `<SNDR>AODB</SNDR><SEQN>7</SEQN><DTTM>20261201101500</DTTM>`
	for name, tc := range map[string]struct{ raw, want string }{
		"Type": {`<MSG><META>` + rest + `<Type>FLOP</Type><STYP>CHOT</STYP></META></MSG>`,
			`META has <Type> where <TYPE> is expected (tags are case-sensitive)`},
		"styp": {`<MSG><META>` + rest + `<TYPE>FLOP</TYPE><styp>CHOT</styp></META></MSG>`,
			`META has <styp> where <STYP> is expected (tags are case-sensitive)`},
		"TPYE": {`<MSG><META>` + rest + `<TPYE>FLOP</TPYE><STYP>CHOT</STYP></META></MSG>`,
			`META has <TPYE> where <TYPE> is expected (misspelt?)`},
		"Meta": {`<MSG><Meta>` + rest + `<TYPE>FLOP</TYPE><STYP>CHOT</STYP></Meta></MSG>`,
			`MSG has <Meta> where <META> is expected (tags are case-sensitive)`},
		"absent": {`<MSG><META>` + rest + `<STYP>CHOT</STYP></META></MSG>`,
			`META/TYPE "" is not 4 upper-case letters`},
	} {
		_, err := Decode([]byte(tc.raw), Options{})
		if pipeline.ClassOf(err) != pipeline.Malformed || err == nil || err.Error() != tc.want {
			t.Errorf("%s: %v (class %s), want MALFORMED %q", name, err, pipeline.ClassOf(err), tc.want)
		}
	}
}

// sis.max-records: a message with as many records as the limit decodes; one more is a
// CODEC_ERROR (replayable once the limit is raised) before its body is read, naming the limit
// and its key. FLOP records, reference records and the FLTRs of a SCHD all count.
func TestEnvelopeBoundsTheRecords(t *testing.T) {
	head := func(typ, styp string) string {
		return `<MSG><META><SNDR>AODB</SNDR><SEQN>9</SEQN><DTTM>20261201101500</DTTM><TYPE>` + typ + `</TYPE><STYP>` + styp + `</STYP></META>`
	}
	flops := func(n int) string {
		return head("FLOP", "CTOT") + strings.Repeat(`<FLOP><FLID>7</FLID><FFID>X</FFID><CTOT>01DEC261030</CTOT></FLOP>`, n) + `</MSG>`
	}
	regls := func(n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, `<REGL><REGC>R%d</REGC><REGN>REGION %d</REGN></REGL>`, i, i)
		}
		return head("REGL", "ADD") + fmt.Sprintf(`<RECS>%d</RECS>`, n) + b.String() + `</MSG>`
	}
	fltrs := func(n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, `<FLTR><FLID>%d</FLID><ALCD>CA</ALCD><FLNO>CA%d</FLNO><MVIN>D</MVIN><SODT>01DEC261030</SODT><FLTY>W</FLTY><FLIN>D</FLIN><ACFT>320</ACFT></FLTR>`, i+1, 100+i)
		}
		return head("SCHD", "DNLD") + fmt.Sprintf(`<SCHD><RECS>%d</RECS>`, n) + b.String() + `</SCHD></MSG>`
	}
	opt := Options{MaxRecords: 3}
	for name, build := range map[string]func(int) string{"FLOP": flops, "REGL": regls, "SCHD": fltrs} {
		if _, err := Decode([]byte(build(3)), opt); err != nil {
			t.Errorf("%s with 3 records, limit 3: %v", name, err)
		}
		_, err := Decode([]byte(build(4)), opt)
		if pipeline.ClassOf(err) != pipeline.CodecError || !strings.Contains(fmt.Sprint(err), "more than 3 records in one message (the limit sis.max-records sets)") {
			t.Errorf("%s with 4 records, limit 3: %v (class %s), want CODEC_ERROR naming the limit", name, err, pipeline.ClassOf(err))
		}
	}
	if _, err := Decode([]byte(flops(DefaultMaxRecords+1)), Options{}); pipeline.ClassOf(err) != pipeline.CodecError {
		t.Errorf("%d FLOP records under the default limit: %v, want CODEC_ERROR", DefaultMaxRecords+1, err)
	}
}
