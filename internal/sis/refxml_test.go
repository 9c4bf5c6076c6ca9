package sis

// The reference decoder's reading of the document as it was before it moved to the codec's
// scanner (on encoding/xml's Token), kept as the reference TestRefReadMatchesXML and
// FuzzRefRead compare the scanner's reading with.

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"msgx/internal/pipeline"
)

// refRead reads the direct children of MSG: RECS (its text) and the records of the TYPE;
// others are reported in w and skipped.
func refReadXML(raw []byte, typ string, spec refSpec, w *Warnings) (recs string, sawRecs bool, raws []*refRaw, err error) {
	d := NewDecoder(raw)
	depth := 0
	msgFound := false
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", false, nil, refSyntax(err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			depth++
			if depth == 1 {
				msgFound = true
				continue
			}
			// depth 2: a direct child of MSG; each branch consumes it up to its end element.
			depth--
			switch t.Name.Local {
			case "RECS":
				if sawRecs {
					return "", false, nil, pipeline.Errorf(pipeline.Malformed, "%s: RECS appears more than once", typ)
				}
				sawRecs = true
				if recs, err = refReadTextXML(d, "RECS"); err != nil {
					if errors.Is(err, errNotWellFormed) {
						return "", false, nil, err
					}
					return "", false, nil, pipeline.Errorf(pipeline.Malformed, "%s: RECS is not a count: %v", typ, err)
				}
			case typ:
				r := &refRaw{index: len(raws) + 1, occ: map[string][]refOcc{}}
				if err := refReadRecordXML(d, spec, r, fmt.Sprintf("%s record %d", typ, r.index), w); err != nil {
					return "", false, nil, err
				}
				raws = append(raws, r)
			default: // META and unknown elements
				msgChild(w, t.Name.Local)
				if err := refSkipXML(d); err != nil {
					return "", false, nil, err
				}
			}
		case xml.EndElement:
			depth--
		}
	}
	if !msgFound {
		return "", false, nil, pipeline.Errorf(pipeline.Malformed, "no <MSG> element")
	}
	return recs, sawRecs, raws, nil
}

// refReadRecord reads the children of one record element up to and including its end element.
// Elements the TYPE does not know are reported in w and skipped. A value that cannot be read
// makes the record invalid (r.err) and reading goes on; only an XML error stops it.
func refReadRecordXML(d *xml.Decoder, spec refSpec, r *refRaw, what string, w *Warnings) error {
	for {
		tok, err := d.Token()
		if err != nil {
			return refSyntax(err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			name := t.Name.Local
			f, known := spec.fields[name]
			if !known {
				w.Addf("unknown element %s in %s ignored%s", short(name), what, didYouMean(name, sortedFields(spec)))
				if err := refSkipXML(d); err != nil {
					return err
				}
				continue
			}
			var o refOcc
			switch f.kind {
			case refSubc:
				o.subc, err = refReadSubcXML(d, what, w)
			case refTrml, refAbbr:
				var aerr error
				o.attrs, aerr = refAttrs(&t, name)
				o.text, err = refReadTextXML(d, name)
				if err == nil {
					err = aerr
				}
			default:
				o.text, err = refReadTextXML(d, name)
			}
			if errors.Is(err, errNotWellFormed) {
				return err
			}
			if err != nil && r.err == nil {
				r.err = err
			}
			r.occ[name] = append(r.occ[name], o)
		case xml.EndElement:
			return nil
		}
	}
}

// refReadSubc reads the children of one SUBC up to and including its end element.
func refReadSubcXML(d *xml.Decoder, what string, w *Warnings) (map[string][]string, error) {
	sub := map[string][]string{}
	var first error
	for {
		tok, err := d.Token()
		if err != nil {
			return nil, refSyntax(err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			name := t.Name.Local
			if name != "CODE" && name != "NAME" && name != "NAMC" {
				w.Addf("unknown element %s in %s SUBC ignored", short(name), what)
				if err := refSkipXML(d); err != nil {
					return nil, err
				}
				continue
			}
			v, err := refReadTextXML(d, "SUBC/"+name)
			if errors.Is(err, errNotWellFormed) {
				return nil, err
			}
			if err != nil && first == nil {
				first = err
			}
			sub[name] = append(sub[name], v)
		case xml.EndElement:
			return sub, first
		}
	}
}

// refReadText reads the text of a simple element up to and including its end element and
// returns it trimmed. An element inside a simple element is a structure the format does not
// describe: CODEC_ERROR (the element is still read to its end).
func refReadTextXML(d *xml.Decoder, name string) (string, error) {
	var b strings.Builder
	var nested error
	for {
		tok, err := d.Token()
		if err != nil {
			return "", refSyntax(err)
		}
		switch t := tok.(type) {
		case xml.CharData:
			b.Write(t)
		case xml.StartElement:
			if nested == nil {
				nested = pipeline.Errorf(pipeline.CodecError, "%s contains an element <%s>; want text", name, short(t.Name.Local))
			}
			if err := refSkipXML(d); err != nil {
				return "", err
			}
		case xml.EndElement:
			if nested != nil {
				return "", nested
			}
			return strings.TrimSpace(b.String()), nil
		}
	}
}

// refSkip skips the element whose start was just read, without recursion.
func refSkipXML(d *xml.Decoder) error {
	for depth := 1; depth > 0; {
		tok, err := d.Token()
		if err != nil {
			return refSyntax(err)
		}
		switch tok.(type) {
		case xml.StartElement:
			depth++
		case xml.EndElement:
			depth--
		}
	}
	return nil
}

// checkRefRead compares refRead with refReadXML on one document the envelope accepts: the
// same RECS, records (every occurrence, text, attribute, SUBC, error) and warnings, or the
// same error.
func checkRefRead(t *testing.T, raw []byte) {
	t.Helper()
	meta, err := decodeEnvelope(raw, Options{}, nil)
	if err != nil {
		return
	}
	spec, ok := refSpecs[meta.TYPE]
	if !ok {
		return
	}
	var w1, w2 Warnings
	recs1, saw1, raws1, err1 := refRead(raw, meta.TYPE, spec, &w1)
	recs2, saw2, raws2, err2 := refReadXML(raw, meta.TYPE, spec, &w2)
	if fmt.Sprint(err1) != fmt.Sprint(err2) || recs1 != recs2 || saw1 != saw2 ||
		!reflect.DeepEqual(raws1, raws2) || !reflect.DeepEqual(w1.List(), w2.List()) {
		t.Fatalf("refRead on %q:\n got %q %v %s %v %q\nwant %q %v %s %v %q", raw,
			recs1, saw1, dumpRaws(raws1), err1, w1.List(), recs2, saw2, dumpRaws(raws2), err2, w2.List())
	}
}

func dumpRaws(raws []*refRaw) string {
	var b strings.Builder
	for _, r := range raws {
		fmt.Fprintf(&b, "%+v ", *r)
	}
	return b.String()
}

// refReadCases are reference documents with what the scanner must read as encoding/xml does:
// comments, CDATA and entities in a text, a nested element, SUBC, attributes, unknown
// elements, name spaces, white space.
var refReadCases = []string{
	`<MSG><META><SNDR>A</SNDR><SEQN>1</SEQN><DTTM>20260315080000</DTTM><TYPE>AIRL</TYPE><STYP>ADD</STYP></META>` +
		`<RECS> 2 </RECS><AIRL><ITOP>C<!-- x -->A</ITOP><ICOP><![CDATA[C&A]]>X</ICOP><ONAM> Air &amp; &#x4e2d;
 China </ONAM><TRML MVIN=" A " FLIN="D">T<b>2</b>3</TRML><BOGUS>1</BOGUS><ONMC>a&amp;b<!--c-->d&lt;e<![CDATA[f]]>&#65;</ONMC></AIRL>` +
		`<AIRL><ITOP>MU</ITOP><TRML MVIN="A" MVIN="D">T1</TRML><x:ONAM xmlns:x="u">e</x:ONAM></AIRL><EXTRA/></MSG>`,
	`<MSG><META><SNDR>A</SNDR><SEQN>1</SEQN><DTTM>20260315080000</DTTM><TYPE>AIRL</TYPE><STYP>ADD</STYP></META><RECS><x/>1</RECS><AIRL/></MSG>`,
}

func TestRefReadMatchesXML(t *testing.T) {
	for _, c := range refReadCases {
		checkRefRead(t, []byte(c))
	}
	for _, c := range refFuzzSeeds() {
		checkRefRead(t, c)
	}
}

// FuzzRefRead compares the scanner's reading of reference documents with encoding/xml's.
func FuzzRefRead(f *testing.F) {
	for _, c := range refReadCases {
		f.Add([]byte(c))
	}
	for _, c := range refFuzzSeeds() {
		f.Add(c)
	}
	f.Fuzz(func(t *testing.T, raw []byte) { checkRefRead(t, raw) })
}

// refFuzzSeeds are the reference test files.
func refFuzzSeeds() [][]byte {
	files, _ := filepath.Glob(filepath.Join(refTestdata, "*.xml"))
	var out [][]byte
	for _, file := range files {
		if raw, err := os.ReadFile(file); err == nil {
			out = append(out, raw)
		}
	}
	return out
}
