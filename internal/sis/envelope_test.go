package sis

import (
	"os"
	"path/filepath"
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
	m, err := DecodeEnvelope([]byte(meta(good)), Options{})
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
