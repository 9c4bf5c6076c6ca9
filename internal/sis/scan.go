package sis

// scanner is the codec's own XML tokenizer over a document held whole in memory. It yields
// the tokens encoding/xml's RawToken yields (start elements with their attributes, end
// elements, character data with entities resolved and line ends normalised; comments,
// processing instructions and directives are passed over), without an allocation per token
// and without reading the input one byte at a time through an interface: on a 10 MB schedule
// encoding/xml cost most of the decoding time and almost all of its allocations.
//
// It has two modes. The body decoders read with trust (validate false): the envelope has
// already checked the document is well-formed, so the scanner only has to tokenize it the way
// encoding/xml does. The envelope reads with validate true: the scanner then accepts only
// what it can vouch encoding/xml would accept too (ASCII names without a name space, the
// predefined entities, valid UTF-8 within the XML character range, no DOCTYPE…) and answers
// errUnsure for anything else, upon which the envelope reads the document again with
// encoding/xml, which then gives the verdict and the wording of any error.

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

type tokKind uint8

const (
	tokStart tokKind = iota + 1
	tokEnd
	tokText
)

// errUnsure is the validating scanner's answer for a construct it does not certify.
var errUnsure = errors.New("sis: construct left to encoding/xml")

// tokenizer is what the envelope and body readers take tokens from: the scanner, or
// encoding/xml behind xmlTokens. After next, start, end or text hold the token (valid until
// the following call).
type tokenizer interface {
	next() (tokKind, error) // io.EOF at the end of the input
	startElem() *xml.StartElement
	endName() xml.Name
	charData() []byte
}

type scanner struct {
	raw      []byte
	pos      int
	validate bool

	start     xml.StartElement // Attr reuses attrs
	attrs     []xml.Attr
	end       xml.Name
	endRaw    []byte // the end element's name as in the input, until endName makes it
	text      []byte
	buf       []byte // decoded text when it differs from the input
	needClose bool

	names  [1024]string      // interned element and attribute names
	values map[string]string // interned short element texts (codes repeated in every record)
	join   []byte            // readText's buffer for a text in several pieces

	readPast    int // elements read past inside known ones (readText, readInto), for warnUnknown
	recChildren int // child elements of FLTR/FLOP records read (readRecord), for xrec.children
}

func newScanner(raw []byte, validate bool) *scanner {
	return &scanner{raw: raw, validate: validate}
}

// scanners keeps released scanners for the next document: a scanner's name table alone is
// 16 KB, which each of a small message's two scans (the envelope, the body) allocated and
// zeroed. Names and short values interned by earlier documents stay valid (they are
// compared by content), so a reused scanner tokenizes as a new one does.
var scanners = sync.Pool{New: func() any { return new(scanner) }}

// maxKeptValues bounds the value table a released scanner keeps for the next document; a
// larger one (a snapshot's) is dropped.
const maxKeptValues = 256

// getScanner is newScanner with a released scanner when there is one. The caller calls
// release when it no longer reads the scanner or anything it returned but strings.
func getScanner(raw []byte, validate bool) *scanner {
	s := scanners.Get().(*scanner)
	s.raw, s.pos, s.validate = raw, 0, validate
	return s
}

// release resets s and keeps it for getScanner.
func (s *scanner) release() {
	s.reset()
	scanners.Put(s)
}

// reset makes s a scanner of no document, as new but for its tables and buffers.
func (s *scanner) reset() {
	if len(s.values) > maxKeptValues {
		s.values = nil
	}
	// Every field but the tables (names, values) and the buffers' capacity, as new.
	s.raw, s.pos, s.validate = nil, 0, false
	s.start, s.attrs, s.end, s.endRaw = xml.StartElement{}, s.attrs[:0], xml.Name{}, nil
	s.text, s.buf, s.needClose = nil, s.buf[:0], false
	s.join, s.readPast, s.recChildren = s.join[:0], 0, 0
}

func (s *scanner) startElem() *xml.StartElement { return &s.start }
func (s *scanner) endName() xml.Name {
	if s.endRaw != nil {
		s.end, _ = s.makeName(s.endRaw)
		s.endRaw = nil
	}
	return s.end
}
func (s *scanner) charData() []byte { return s.text }

// inBuf reports whether the last text is in the scanner's buffer, which the next token
// overwrites (otherwise it is a slice of the input).
func (s *scanner) inBuf() bool { return len(s.text) > 0 && len(s.buf) > 0 && &s.text[0] == &s.buf[0] }

// fail is a syntax error: errUnsure when validating (encoding/xml gives the verdict), else an
// error naming the offset.
func (s *scanner) fail(what string) error {
	if s.validate {
		return errUnsure
	}
	return fmt.Errorf("XML syntax error at byte %d: %s", s.pos, what)
}

func (s *scanner) next() (tokKind, error) {
	if s.needClose {
		s.needClose = false
		s.end, s.endRaw = s.start.Name, nil
		return tokEnd, nil
	}
	for {
		if s.pos >= len(s.raw) {
			return 0, io.EOF
		}
		if s.raw[s.pos] != '<' {
			return s.scanText()
		}
		if s.pos+1 >= len(s.raw) {
			return 0, s.fail("unexpected EOF")
		}
		switch s.raw[s.pos+1] {
		case '/':
			return s.scanEnd()
		case '?':
			if err := s.skipPI(); err != nil {
				return 0, err
			}
		case '!':
			isText, err := s.scanBang()
			if err != nil || isText {
				return tokText, err
			}
		default:
			return s.scanStart()
		}
	}
}

func isSpace(b byte) bool { return b == ' ' || b == '\r' || b == '\n' || b == '\t' }

func (s *scanner) space() {
	for s.pos < len(s.raw) && isSpace(s.raw[s.pos]) {
		s.pos++
	}
}

func isNameByte(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' ||
		c == '_' || c == ':' || c == '.' || c == '-'
}

// name reads a name the way encoding/xml does (name bytes and any non-ASCII byte) and splits
// it at its one colon into name space and local part.
func (s *scanner) name() (xml.Name, bool) {
	b, ok := s.nameBytes()
	if !ok {
		return xml.Name{}, false
	}
	return s.makeName(b)
}

// nameBytes reads a name and returns it as in the input.
func (s *scanner) nameBytes() ([]byte, bool) {
	i := s.pos
	for i < len(s.raw) && (s.raw[i] >= utf8.RuneSelf || isNameByte(s.raw[i])) {
		i++
	}
	b := s.raw[s.pos:i]
	if len(b) == 0 {
		return nil, false
	}
	if s.validate && !plainName(b) {
		return nil, false // encoding/xml judges the others
	}
	s.pos = i
	return b, true
}

func (s *scanner) makeName(b []byte) (xml.Name, bool) {
	switch bytes.Count(b, []byte(":")) {
	case 0:
		return xml.Name{Local: s.intern(b)}, true
	case 1:
		sp, loc, _ := bytes.Cut(b, []byte(":"))
		if len(sp) == 0 || len(loc) == 0 {
			return xml.Name{Local: s.intern(b)}, true
		}
		return xml.Name{Space: s.intern(sp), Local: s.intern(loc)}, true
	}
	return xml.Name{}, false
}

// plainName reports whether b is an ASCII name without a colon: the names the validating
// scanner vouches for.
func plainName(b []byte) bool {
	if c := b[0]; !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || c == '_') {
		return false
	}
	for _, c := range b {
		if c >= utf8.RuneSelf || c == ':' || !isNameByte(c) {
			return false
		}
	}
	return true
}

// intern returns the name b as a string, shared with the equal names seen before: a small
// direct-mapped table (a document of random names only evicts) is cheaper than a map for the
// few dozen names a SIS document repeats.
func (s *scanner) intern(b []byte) string {
	i := hashBytes(b) % uint32(len(s.names))
	a, c := &s.names[i], &s.names[i^1] // two ways: a pair of names that collide both stay
	switch {
	case *a == string(b):
		return *a
	case *c == string(b):
		return *c
	case *a == "":
		*a = string(b)
		return *a
	}
	*a, *c = string(b), *a // the older of a full pair goes
	return *a
}

func hashBytes(b []byte) uint32 {
	h := uint32(2166136261)
	for _, c := range b {
		h = (h ^ uint32(c)) * 16777619
	}
	return h
}

// maxInternedValue is the longest text value interned: airline codes, aircraft types,
// terminals, flags and group numbers repeat across the records of a schedule; times and
// remarks do not, and are allocated each.
const maxInternedValue = 8

// value returns b as a string, shared with the equal short values seen before.
func (s *scanner) value(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if len(b) > maxInternedValue {
		return string(b)
	}
	if v, ok := s.values[string(b)]; ok {
		return v
	}
	v := string(b)
	if s.values == nil {
		s.values = make(map[string]string, 64)
	}
	if len(s.values) < maxValues {
		s.values[v] = v
	}
	return v
}

// maxValues bounds the value table: a document of distinct values must not grow it unbounded.
const maxValues = 4096

func (s *scanner) scanEnd() (tokKind, error) {
	s.pos += 2
	b, ok := s.nameBytes()
	if ok && !s.validate && bytes.Count(b, []byte(":")) > 1 {
		ok = false
	}
	if !ok {
		return 0, s.fail("expected element name after </")
	}
	s.space()
	if s.pos >= len(s.raw) || s.raw[s.pos] != '>' {
		return 0, s.fail("invalid characters between </" + string(b) + " and >")
	}
	s.pos++
	s.endRaw, s.end = b, xml.Name{} // made by endName when asked: the body readers never ask
	return tokEnd, nil
}

func (s *scanner) scanStart() (tokKind, error) {
	s.pos++
	n, ok := s.name()
	if !ok {
		return 0, s.fail("expected element name after <")
	}
	s.attrs = s.attrs[:0]
	for {
		s.space()
		if s.pos >= len(s.raw) {
			return 0, s.fail("unexpected EOF")
		}
		switch s.raw[s.pos] {
		case '/':
			if s.pos+1 >= len(s.raw) || s.raw[s.pos+1] != '>' {
				return 0, s.fail("expected /> in element")
			}
			s.pos += 2
			s.needClose = true
			s.start = xml.StartElement{Name: n, Attr: s.attrs}
			return tokStart, nil
		case '>':
			s.pos++
			s.start = xml.StartElement{Name: n, Attr: s.attrs}
			return tokStart, nil
		}
		a, err := s.attr()
		if err != nil {
			return 0, err
		}
		s.attrs = append(s.attrs, a)
	}
}

func (s *scanner) attr() (xml.Attr, error) {
	n, ok := s.name()
	if !ok {
		return xml.Attr{}, s.fail("expected attribute name in element")
	}
	s.space()
	if s.pos >= len(s.raw) || s.raw[s.pos] != '=' {
		return xml.Attr{}, s.fail("attribute name without = in element")
	}
	s.pos++
	s.space()
	if s.pos >= len(s.raw) || (s.raw[s.pos] != '"' && s.raw[s.pos] != '\'') {
		return xml.Attr{}, s.fail("unquoted or missing attribute value in element")
	}
	q := s.raw[s.pos]
	s.pos++
	end := bytes.IndexByte(s.raw[s.pos:], q)
	if end < 0 {
		return xml.Attr{}, s.fail("unexpected EOF in attribute value")
	}
	seg := s.raw[s.pos : s.pos+end]
	if bytes.IndexByte(seg, '<') >= 0 {
		return xml.Attr{}, s.fail("unescaped < inside quoted string")
	}
	v, err := s.decode(seg, true)
	if err != nil {
		return xml.Attr{}, err
	}
	s.pos += end + 1
	return xml.Attr{Name: n, Value: string(v)}, nil
}

// scanText reads the character data up to the next '<' or the end of the input.
func (s *scanner) scanText() (tokKind, error) {
	end := bytes.IndexByte(s.raw[s.pos:], '<')
	if end < 0 {
		end = len(s.raw) - s.pos
	}
	seg := s.raw[s.pos : s.pos+end]
	if bytes.Contains(seg, []byte("]]>")) {
		return 0, s.fail("unescaped ]]> not in CDATA section")
	}
	v, err := s.decode(seg, true)
	if err != nil {
		return 0, err
	}
	s.pos += end
	s.text = v
	return tokText, nil
}

// decode turns \r\n and \r into \n and, with entities (a text or an attribute value, not a
// CDATA section), resolves the entities; it returns seg itself when there is nothing to
// change. Validating, it also checks the result is UTF-8 within the XML character range.
func (s *scanner) decode(seg []byte, entities bool) ([]byte, error) {
	out := seg
	if (entities && bytes.IndexByte(seg, '&') >= 0) || bytes.IndexByte(seg, '\r') >= 0 {
		s.buf = s.buf[:0]
		var prev byte
		for i := 0; i < len(seg); i++ {
			b := seg[i]
			switch {
			case b == '&' && entities:
				r, n, ok := entityAt(seg[i:])
				if !ok {
					return nil, s.fail("invalid character entity")
				}
				s.buf = utf8.AppendRune(s.buf, r)
				i += n - 1
				prev = 0
				continue
			case b == '\r':
				s.buf = append(s.buf, '\n')
			case b == '\n' && prev == '\r':
			default:
				s.buf = append(s.buf, b)
			}
			prev = b
		}
		out = s.buf
	}
	if s.validate && !validChars(out) {
		return nil, errUnsure
	}
	return out, nil
}

// entityAt reads the entity reference at the start of b (&name; or &#n; or &#xh;) the way a
// strict encoding/xml decoder does: the rune it stands for and its length.
func entityAt(b []byte) (rune, int, bool) {
	semi := bytes.IndexByte(b, ';')
	if semi < 2 {
		return 0, 0, false
	}
	ref := b[1:semi]
	if ref[0] == '#' {
		digits, base := ref[1:], 10
		if len(digits) > 0 && digits[0] == 'x' {
			digits, base = digits[1:], 16
		}
		if len(digits) == 0 {
			return 0, 0, false
		}
		for _, c := range digits {
			if !('0' <= c && c <= '9' || base == 16 && ('a' <= c && c <= 'f' || 'A' <= c && c <= 'F')) {
				return 0, 0, false
			}
		}
		n, err := strconv.ParseUint(string(digits), base, 64)
		if err != nil || n > unicode.MaxRune {
			return 0, 0, false
		}
		return rune(n), semi + 1, true
	}
	switch string(ref) {
	case "lt":
		return '<', semi + 1, true
	case "gt":
		return '>', semi + 1, true
	case "amp":
		return '&', semi + 1, true
	case "apos":
		return '\'', semi + 1, true
	case "quot":
		return '"', semi + 1, true
	}
	return 0, 0, false
}

// validChars reports whether b is UTF-8 made of XML characters only.
func validChars(b []byte) bool {
	for i := 0; i < len(b); {
		c := b[i]
		if c < utf8.RuneSelf {
			if c < 0x20 && c != '\t' && c != '\n' && c != '\r' {
				return false
			}
			i++
			continue
		}
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 || !(r >= 0x20 && r <= 0xD7FF || r >= 0xE000 && r <= 0xFFFD || r >= 0x10000 && r <= 0x10FFFF) {
			return false
		}
		i += n
	}
	return true
}

// skipPI passes over a processing instruction <?target …?>. Validating, it vouches for an XML
// declaration only when it plainly says version 1.0.
func (s *scanner) skipPI() error {
	s.pos += 2
	if !s.validate {
		// Trusted: the target was checked by the envelope; only the end matters.
		end := bytes.Index(s.raw[s.pos:], []byte("?>"))
		if end < 0 {
			return s.fail("unexpected EOF in processing instruction")
		}
		s.pos += end + 2
		return nil
	}
	n, ok := s.name()
	if !ok {
		return s.fail("expected target name after <?")
	}
	s.space()
	end := bytes.Index(s.raw[s.pos:], []byte("?>"))
	if end < 0 {
		return s.fail("unexpected EOF in processing instruction")
	}
	content := s.raw[s.pos : s.pos+end]
	if n.Local == "xml" {
		c := string(content)
		if !(strings.HasPrefix(c, `version="1.0"`) || strings.HasPrefix(c, `version='1.0'`)) || strings.Count(c, "version") != 1 {
			return errUnsure
		}
	}
	s.pos += end + 2
	return nil
}

// scanBang reads what starts with <!: a comment (passed over), a CDATA section (character
// data: isText) or a directive (passed over; validating, left to encoding/xml).
func (s *scanner) scanBang() (isText bool, err error) {
	rest := s.raw[s.pos:]
	switch {
	case bytes.HasPrefix(rest, []byte("<!--")):
		body := rest[4:]
		i := bytes.Index(body, []byte("--"))
		if i < 0 || i+2 >= len(body) || body[i+2] != '>' {
			return false, s.fail(`invalid sequence "--" not allowed in comments`)
		}
		s.pos += 4 + i + 3
		return false, nil
	case bytes.HasPrefix(rest, []byte("<![CDATA[")):
		body := rest[9:]
		i := bytes.Index(body, []byte("]]>"))
		if i < 0 {
			return false, s.fail("unexpected EOF in CDATA section")
		}
		v, err := s.decode(body[:i], false)
		if err != nil {
			return false, err
		}
		s.pos += 9 + i + 3
		s.text = v
		return true, nil
	case len(rest) > 2 && (rest[2] == '-' || rest[2] == '['):
		return false, s.fail("invalid <! sequence")
	}
	if s.validate {
		return false, errUnsure
	}
	return false, s.skipDirective()
}

// skipDirective passes over <!DOCTYPE …> and the like as encoding/xml does: quoted '>' and
// '<' do not count, nested <…> do, and comments inside are skipped.
func (s *scanner) skipDirective() error {
	i := s.pos + 3 // like encoding/xml, the byte after <! is taken as is
	var inquote byte
	depth := 0
	for i < len(s.raw) {
		b := s.raw[i]
		switch {
		case inquote == 0 && b == '>' && depth == 0:
			s.pos = i + 1
			return nil
		case b == inquote:
			inquote = 0
		case inquote != 0:
		case b == '\'' || b == '"':
			inquote = b
		case b == '>':
			depth--
		case b == '<':
			if bytes.HasPrefix(s.raw[i:], []byte("<!--")) {
				j := bytes.Index(s.raw[i+4:], []byte("-->"))
				if j < 0 {
					return s.fail("unexpected EOF in comment")
				}
				i += 4 + j + 3
				continue
			}
			depth++
		}
		i++
	}
	return s.fail("unexpected EOF in directive")
}

// xmlTokens is encoding/xml behind the tokenizer interface: the envelope's reader when the
// scanner cannot vouch for a document.
type xmlTokens struct {
	d     *xml.Decoder
	start xml.StartElement
	end   xml.Name
	text  []byte
}

func (x *xmlTokens) startElem() *xml.StartElement { return &x.start }
func (x *xmlTokens) endName() xml.Name            { return x.end }
func (x *xmlTokens) charData() []byte             { return x.text }

func (x *xmlTokens) next() (tokKind, error) {
	for {
		tok, err := x.d.RawToken()
		if err != nil {
			return 0, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			x.start = t
			return tokStart, nil
		case xml.EndElement:
			x.end = t.Name
			return tokEnd, nil
		case xml.CharData:
			x.text = t
			return tokText, nil
		}
	}
}
