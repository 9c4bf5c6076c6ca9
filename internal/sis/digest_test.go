package sis

import (
	"strings"
	"testing"
)

// An ABDG UPD with one airbridge record, the base the variants below are compared with.
const digestBase = `<?xml version="1.0" encoding="UTF-8"?>
<MSG xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:noNamespaceSchemaLocation="unisysaodbsis.xsd">
  <META>
    <SNDR>AODB</SNDR>
    <SEQN>1243</SEQN>
    <DTTM>20261201080000</DTTM>
    <TYPE>ABDG</TYPE>
    <STYP>UPD</STYP>
  </META>
  <RECS>1</RECS>
  <ABDG>
    <ABDG>214</ABDG>
    <DESC>Bridge 214 &amp; apron</DESC>
    <CDSC>廊桥214 🛫</CDSC>
    <STND RTNO="1" TYPE="A">213</STND>
  </ABDG>
</MSG>`

// The legacy digest is the digest msgx bound content identities with before META DTTM counted
// (the value the build before gave for digestBase), whatever the DTTM, and the digest is not.
func TestLegacyContentDigest(t *testing.T) {
	const before = "9225defa05d5b3d23f1209d5fbe65186"
	d, legacy, err := ContentDigests([]byte(digestBase))
	if err != nil || legacy != before || d == before {
		t.Fatalf("digest %s, legacy %s, %v: want the legacy %s and another digest", d, legacy, err, before)
	}
	for _, dttm := range []string{"20270315235959", "x", ""} {
		_, l, err := ContentDigests([]byte(strings.Replace(digestBase, "20261201080000", dttm, 1)))
		if err != nil || l != before {
			t.Errorf("DTTM %q: legacy digest %s, %v; want %s", dttm, l, err, before)
		}
	}
}

// The content digest tells a message sent again (however laid out and stamped) from a
// different message that reuses its SEQN.
func TestContentDigest(t *testing.T) {
	base, err := ContentDigest([]byte(digestBase))
	if err != nil {
		t.Fatal(err)
	}
	if len(base) != 32 || strings.Trim(base, "0123456789abcdef") != "" {
		t.Fatalf("digest %q is not 32 lower-case hex digits", base)
	}
	compact := strings.NewReplacer("\n", "", "  ", "").Replace(digestBase)
	same := map[string]string{
		"byte-identical":          digestBase,
		"compact, no indentation": compact,
		"tabs and CRLF line ends": strings.NewReplacer("\n", "\r\n", "  ", "\t").Replace(digestBase),
		"no XML declaration":      strings.TrimPrefix(digestBase, `<?xml version="1.0" encoding="UTF-8"?>`+"\n"),
		"attributes in another order, spaced, single-quoted": strings.Replace(strings.Replace(digestBase,
			`<STND RTNO="1" TYPE="A">`, `<STND TYPE = 'A'  RTNO=" 1 ">`, 1),
			`xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:noNamespaceSchemaLocation="unisysaodbsis.xsd"`,
			`xsi:noNamespaceSchemaLocation="unisysaodbsis.xsd" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"`, 1),
		"whitespace around values":     strings.Replace(digestBase, "<ABDG>214</ABDG>", "<ABDG>\n\t214 </ABDG>", 1),
		"a character reference":        strings.Replace(digestBase, "&amp;", "&#38;", 1),
		"a comment":                    strings.Replace(digestBase, "<RECS>", "<!-- resent --><RECS>", 1),
		"an empty element self-closed": strings.Replace(digestBase, "</ABDG>\n</MSG>", "<REMK></REMK></ABDG>\n</MSG>", 1),
		"CDATA for a value":            strings.Replace(digestBase, "<ABDG>214</ABDG>", "<ABDG><![CDATA[214]]></ABDG>", 1),
	}
	selfClosed, _ := ContentDigest([]byte(strings.Replace(digestBase, "</ABDG>\n</MSG>", "<REMK/></ABDG>\n</MSG>", 1)))
	for name, raw := range same {
		d, err := ContentDigest([]byte(raw))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want := base
		if name == "an empty element self-closed" {
			want = selfClosed // <REMK></REMK> and <REMK/> are the same; both differ from no REMK
		}
		if d != want {
			t.Errorf("%s: digest %s, want %s (the same message)", name, d, want)
		}
	}
	different := map[string]string{
		"another description":                 strings.Replace(digestBase, "apron", "Apron", 1),
		"another CJK description":             strings.Replace(digestBase, "廊桥214", "廊桥215", 1),
		"another 4-byte character":            strings.Replace(digestBase, "🛫", "🛬", 1),
		"another stand":                       strings.Replace(digestBase, ">213<", ">215<", 1),
		"another attribute value":             strings.Replace(digestBase, `RTNO="1"`, `RTNO="2"`, 1),
		"an attribute more":                   strings.Replace(digestBase, `TYPE="A"`, `TYPE="A" CODE="X"`, 1),
		"whitespace inside a value":           strings.Replace(digestBase, "Bridge 214", "Bridge  214", 1),
		"another SEQN":                        strings.Replace(digestBase, "1243", "1244", 1),
		"another STYP":                        strings.Replace(digestBase, "<STYP>UPD", "<STYP>ADD", 1),
		"another sender, case only":           strings.Replace(digestBase, "<SNDR>AODB", "<SNDR>aodb", 1),
		"an element more":                     strings.Replace(digestBase, "</ABDG>\n</MSG>", "<REMK>x</REMK></ABDG>\n</MSG>", 1),
		"a value moved to another element":    strings.Replace(strings.Replace(digestBase, "<DESC>", "<REMK>", 1), "</DESC>", "</REMK>", 1),
		"a value split across elements":       strings.Replace(digestBase, "<ABDG>214</ABDG>", "<ABDG>21</ABDG><ABDG>4</ABDG>", 1),
		"DTTM outside META":                   strings.Replace(digestBase, "</ABDG>\n</MSG>", "<DTTM>20261201080000</DTTM></ABDG>\n</MSG>", 1),
		"another META DTTM (a new operation)": strings.Replace(digestBase, "20261201080000", "20261201080001", 1),
		"a META DTTM of another length":       strings.Replace(digestBase, "20261201080000", "x", 1),
	}
	for name, raw := range different {
		d, err := ContentDigest([]byte(raw))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if d == base {
			t.Errorf("%s: the same digest as the base (a different message taken for a re-send)", name)
		}
	}
	for _, bad := range []string{"", "plain text", "<MSG><META>", "<MSG></META></MSG>"} {
		if d, err := ContentDigest([]byte(bad)); err == nil {
			t.Errorf("%q: digest %s, want an error", bad, d)
		}
	}
}
