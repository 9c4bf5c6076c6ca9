package sis

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// tokensOf lists the tokens of a tokenizer in a comparable form, up to the first error.
func tokensOf(t tokenizer) ([]string, error) {
	var out []string
	for {
		kind, err := t.next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		switch kind {
		case tokStart:
			st := t.startElem()
			s := fmt.Sprintf("<%q:%q", st.Name.Space, st.Name.Local)
			for _, a := range st.Attr {
				s += fmt.Sprintf(" %q:%q=%q", a.Name.Space, a.Name.Local, a.Value)
			}
			out = append(out, s+">")
		case tokEnd:
			n := t.endName()
			out = append(out, fmt.Sprintf("</%q:%q>", n.Space, n.Local))
		case tokText:
			out = append(out, fmt.Sprintf("%q", t.charData()))
		}
	}
}

// checkScanner compares the scanner with encoding/xml on one document: when encoding/xml reads
// it without error, the trusting scanner must yield the same tokens; when the validating
// scanner reads it without error, encoding/xml must too, with the same tokens.
func checkScanner(t *testing.T, raw []byte) {
	t.Helper()
	want, wantErr := tokensOf(&xmlTokens{d: NewDecoder(raw)})
	if wantErr == nil {
		got, err := tokensOf(newScanner(raw, false))
		if err != nil || !equalTokens(got, want) {
			t.Fatalf("trusting scanner on %q:\n got %v (%v)\nwant %v", raw, got, err, want)
		}
	}
	got, err := tokensOf(newScanner(raw, true))
	if err != nil && !errors.Is(err, errUnsure) {
		t.Fatalf("validating scanner on %q: error %v, want errUnsure", raw, err)
	}
	if err == nil {
		if wantErr != nil {
			t.Fatalf("validating scanner accepts %q, encoding/xml says %v", raw, wantErr)
		}
		if !equalTokens(got, want) {
			t.Fatalf("validating scanner on %q:\n got %v\nwant %v", raw, got, want)
		}
	}
}

func equalTokens(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

var scannerCases = []string{
	`<?xml version="1.0" encoding="UTF-8"?><MSG><META><SNDR>A</SNDR></META></MSG>`,
	`<?xml version='1.0' encoding='GB2312'?>` + "\r\n<MSG a='1' b = \"x&amp;y&#65;&#x42;\"\r\n/>",
	"<MSG><A>x\r\ny\rz&lt;&gt;&apos;&quot;</A><!-- c -- --><B><![CDATA[a<b&c\r\n]]></B></MSG>",
	`<!DOCTYPE MSG [<!ENTITY x "y"> <!-- > -->]><MSG/>`,
	`<MSG><x:A xmlns:x="u">t</x:A><a:b:c/></MSG>`,
	`<MSG>]]></MSG>`, `<MSG>&bogus;</MSG>`, `<MSG>&#0;</MSG>`, `<MSG>&#xD800;</MSG>`,
	"<MSG>\x01</MSG>", "<MSG>\xff</MSG>", `<MSG a=1/>`, `<MSG a/>`, `<MSG><</MSG>`,
	`<?xml version="1.1"?><MSG/>`, `<MSG><!- x --></MSG>`, `<MSG><![CDAT[x]]></MSG>`,
	`<MSG>` + "\u00e9\u822a" + `<R\u00e9/></MSG>`, `<MSG></MSG  >`, `<MSG></MSG x>`, "<MSG", "<", "",
	`<MSG a="<"/>`, `<MSG a="]]>"/>`, `<?pi?><MSG/><?x a?>`, `<!--->--><MSG/>`,
}

func TestScannerMatchesEncodingXML(t *testing.T) {
	for _, c := range scannerCases {
		checkScanner(t, []byte(c))
	}
	for _, dir := range []string{"flop", "schd", "schs", "ref"} {
		files, _ := filepath.Glob(filepath.Join(flightTestdata, dir, "*.xml"))
		for _, file := range files {
			raw, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			checkScanner(t, raw)
		}
	}
	checkScanner(t, benchSCHD(3))
}

// FuzzScanner checks the scanner against encoding/xml on arbitrary documents.
func FuzzScanner(f *testing.F) {
	for _, c := range scannerCases {
		f.Add([]byte(c))
	}
	f.Add(benchSCHD(1))
	f.Fuzz(func(t *testing.T, raw []byte) {
		if bytes.Count(raw, []byte("<")) > 2000 {
			return
		}
		checkScanner(t, raw)
		_ = xml.Name{}
	})
}

// TestResetScannerIsNew checks that a scanner reset after any part of one document (ended,
// failed, or left in the middle, an element still open) tokenizes the next document exactly
// as a new scanner does, in both modes: released scanners are reused (getScanner).
func TestResetScannerIsNew(t *testing.T) {
	docs := append([]string{string(benchSCHD(1))}, scannerCases...)
	for _, validate := range []bool{false, true} {
		for _, a := range docs {
			for stop := 1; stop <= 7; stop += 3 {
				s := newScanner([]byte(a), validate)
				for range stop {
					if _, err := s.next(); err != nil {
						break
					}
				}
				s.reset()
				for _, b := range docs {
					want, wantErr := tokensOf(newScanner([]byte(b), validate))
					s.raw, s.validate = []byte(b), validate
					got, err := tokensOf(s)
					if fmt.Sprint(err) != fmt.Sprint(wantErr) || !equalTokens(got, want) {
						t.Fatalf("after %d tokens of %q, %q: got %v (%v), want %v (%v)", stop, a, b, got, err, want, wantErr)
					}
					s.reset()
				}
			}
		}
	}
}
