package sis

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"msgx/internal/pipeline"
)

// RefTypes lists the 23 reference TYPEs in alphabetical order.
var RefTypes = []string{
	"ABDG", "ABNR", "AIRC", "AIRL", "ARPT", "BLST", "CHLT", "CITY", "CLST", "COUL", "DLYL", "FLTL",
	"GLST", "HLTR", "ORGN", "PLST", "REGL", "REGN", "SLST", "STTS", "TLST", "VIPL", "VIPS",
}

// IsRefType reports whether typ is one of them.
func IsRefType(typ string) bool {
	_, ok := refSpecs[typ]
	return ok
}

// RefBody is the decoded body of a reference-data message, of any STYP.
//
// Records holds only the records that passed validation, in message order; the others are in
// Invalid (a handler must keep what is stored under their keys, even in a replace). Recs is
// the count RECS declared: len(Records)+len(Invalid) is never below it for DNLD and RESP (a
// truncated replace is MALFORMED); any other mismatch was accepted with a warning.
type RefBody struct {
	Type    string      `json:"type"`
	Recs    int         `json:"RECS"`
	Records []RefRecord `json:"records"`
	// Invalid are the records the decoder could not accept; the valid ones are in Records.
	Invalid []Invalid `json:"invalid,omitempty"`
}

// RefRecord is one record: its key (the value of the TYPE's key element, as text) and its fields.
//
// Fields holds every non-empty field of the record under its SIS element name, the key element
// included. Values are string (text and codes, trimmed), bool (Y/N flags), int64 (integers),
// float64 (decimals, so "12.50" and "12.5" are equal), []string (repeated simple elements:
// empty entries dropped, duplicates removed, order as sent), []map[string]string (AIRL SUBC
// sorted by CODE, AIRL TRML sorted by MVIN, FLIN, TRML) and map[string]string (ARPT/CITY ABBR,
// CODE → text). An absent or empty element is left out, so the same record always encodes to
// the same JSON. For an integer key (ORGN OGID) Key is the canonical decimal text.
type RefRecord struct {
	Key    string         `json:"key"`
	Fields map[string]any `json:"fields"` // JSON-ready; encoding/json output must be deterministic
}

func init() {
	for _, typ := range RefTypes {
		register(typ, decodeRef)
	}
}

// refKind is how the value of one record element is read.
type refKind uint8

const (
	refText refKind = iota // trimmed text, never checked (codes and names are free in real data)
	refFlag                // Y/N in any case → bool
	refInt                 // signed integer of refField.bits bits → int64
	refDec                 // plain decimal → float64
	refEnum                // one letter of refField.enum, any case → upper-case string
	refList                // repeated simple element → []string
	refSubc                // AIRL SUBC
	refTrml                // AIRL TRML
	refAbbr                // ARPT/CITY ABBR
)

type refField struct {
	kind refKind
	bits int      // refInt
	enum []string // refEnum
}

type refSpec struct {
	key    string
	fields map[string]refField
}

var (
	refT   = refField{kind: refText}
	refF   = refField{kind: refFlag}
	refD   = refField{kind: refDec}
	refL   = refField{kind: refList}
	refI8  = refField{kind: refInt, bits: 8}
	refI16 = refField{kind: refInt, bits: 16}
	refI32 = refField{kind: refInt, bits: 32}
	refI64 = refField{kind: refInt, bits: 64}
	refDI  = refField{kind: refEnum, enum: []string{"D", "I"}}
	refSL  = refField{kind: refEnum, enum: []string{"S", "L"}}
)

// refSpecs is docs/sis-format.md §2.2 and §1.5: per TYPE, its key element and the elements it reads.
var refSpecs = map[string]refSpec{
	"ABDG": {"ABCD", map[string]refField{"ABCD": refT, "DESC": refT, "CDSC": refT, "AHGT": refD,
		"ATML": refT, "ATHE": refF, "STND": refL, "GATE": refL, "AMNO": refI8}},
	"ABNR": {"ANRC", map[string]refField{"ANRC": refT, "ANRD": refT, "ARDC": refT}},
	"AIRC": {"ITAT", map[string]refField{"ITAT": refT, "ICAT": refT, "DESC": refT, "CDSC": refT,
		"CHAP": refT, "MAXP": refI16, "MFWT": refD, "MTWT": refD, "ALEN": refD, "WSPN": refD,
		"MHTM": refD, "MABR": refI8}},
	"AIRL": {"ITOP", map[string]refField{"ITOP": refT, "ICOP": refT, "ONAM": refT, "ONMC": refT,
		"CTRY": refT, "TRML": {kind: refTrml}, "OGRP": refL, "SUBC": {kind: refSubc}, "DORI": refDI}},
	"ARPT": {"ITCD", map[string]refField{"ITCD": refT, "ICCD": refT, "ANAM": refT, "ANMC": refT,
		"BDIS": refI64, "CTRY": refT, "ACTY": refT, "ATYP": refDI, "HAUL": refSL, "ABBR": {kind: refAbbr}}},
	"BLST": {"BCOD", map[string]refField{"BCOD": refT, "BTNM": refT, "BNMC": refT, "BCAT": refT, "BTML": refT}},
	"CHLT": {"CCOD", map[string]refField{"CCOD": refT, "CHNM": refT, "CNMC": refT, "CTML": refT, "CCAT": refT}},
	"CITY": {"ITCD", map[string]refField{"ITCD": refT, "ICCD": refT, "CNAM": refT, "CNMC": refT,
		"CTRY": refT, "ABBR": {kind: refAbbr}}},
	"CLST": {"CCOD", map[string]refField{"CCOD": refT, "CTNM": refT, "CNMC": refT, "CCAT": refT,
		"CTML": refT, "CTRA": refF}},
	"COUL": {"COUC", map[string]refField{"COUC": refT, "COUN": refT, "CNMC": refT, "REGC": refL}},
	"DLYL": {"DCOD", map[string]refField{"DCOD": refT, "DCDN": refI16, "DDES": refT, "DDSC": refT}},
	"FLTL": {"FTYP", map[string]refField{"FTYP": refT, "CTYP": refT, "FDES": refT, "FDSC": refT, "FCML": refF}},
	"GLST": {"GCOD", map[string]refField{"GCOD": refT, "GTNM": refT, "GNMC": refT, "GCAT": refT,
		"GTML": refT, "PIER": refT}},
	"HLTR": {"HLTC", map[string]refField{"HLTC": refT, "HLTD": refT, "HTDC": refT, "HLTT": refT, "UMNM": refT}},
	"ORGN": {"OGID", map[string]refField{"OGID": refI32, "ONAM": refT, "ONMC": refT, "OCAT": refL}},
	"PLST": {"PCOD", map[string]refField{"PCOD": refT, "PRNM": refT, "PNMC": refT, "PCAT": refT, "PTML": refT}},
	"REGL": {"REGC", map[string]refField{"REGC": refT, "REGN": refT, "RGNC": refT}},
	"REGN": {"RNUM", map[string]refField{"RNUM": refT, "ITAT": refT, "OWID": refI32, "ACAL": refT,
		"ALSC": refT, "MAXP": refI16, "MFWT": refD, "MTWT": refD}},
	"SLST": {"SCOD", map[string]refField{"SCOD": refT, "STNM": refT, "SNMC": refT, "SATC": refT,
		"STGP": refT, "SWID": refD, "SHGT": refD, "STML": refT, "MABS": refI8, "DIGT": refT,
		"DDGT": refT, "REMT": refT, "FEPU": refF}},
	"STTS": {"STTC", map[string]refField{"STTC": refT, "STTD": refT, "STDC": refT, "ABNS": refF}},
	"TLST": {"TCOD", map[string]refField{"TCOD": refT, "TNAM": refT, "TNMC": refT, "TCAT": refT, "TPAX": refF}},
	"VIPL": {"VPCD", map[string]refField{"VPCD": refT, "VPNC": refT, "VFNM": refT, "VLNM": refT,
		"VDES": refT, "VDSC": refT, "VPON": refT, "VRNK": refT, "VPTC": refT, "VCTN": refT,
		"VCMN": refT, "VRMK": refT, "VPWU": refT, "VPPS": refT}},
	"VIPS": {"VSCD", map[string]refField{"VSCD": refT, "VSDS": refT, "VSDC": refT, "VSQC": refI8, "VSUC": refT}},
}

// refOcc is one occurrence of a known element in a record, as read from the wire (trimmed).
type refOcc struct {
	text  string
	attrs map[string]string   // TRML: MVIN, FLIN; ABBR: CODE
	subc  map[string][]string // SUBC: CODE, NAME, NAMC
}

// refRaw is one record as read, before typing; typing waits for the end of the record so that
// errors can name the key wherever it stands.
type refRaw struct {
	index int // 1-based position among the message's records
	occ   map[string][]refOcc
	err   error // the first error met while reading it (the record is then invalid)
}

// errNotWellFormed marks the errors of the XML reader itself: they fail the whole message.
var errNotWellFormed = errors.New("not well-formed XML")

func refSyntax(err error) error {
	return pipeline.Errorf(pipeline.Malformed, "%w: %v", errNotWellFormed, err)
}

// decodeRef decodes a reference message of any STYP (ADD, UPD, DEL, DNLD, RESP or another,
// which the handler treats as an upsert). A record that fails validation goes to Invalid;
// the message fails only when its envelope or RECS is broken or every record is invalid.
func decodeRef(raw []byte, meta Meta, _ Options, w *Warnings) (any, error) {
	typ := meta.TYPE
	spec, ok := refSpecs[typ]
	if !ok {
		return nil, pipeline.Errorf(pipeline.Unsupported, "%s is not a reference TYPE", typ)
	}
	recs, sawRecs, raws, err := refRead(raw, typ, spec, w)
	if err != nil {
		return nil, err
	}
	n := len(raws)
	declared, err := refRecs(typ, recs, sawRecs, n)
	if err != nil {
		return nil, err
	}
	if err := checkRecs(typ+"/RECS", typ+" records", replaces(meta.STYP), declared, n, w); err != nil {
		return nil, err
	}
	body := &RefBody{Type: typ, Recs: declared, Records: make([]RefRecord, 0, n)}
	seen := make(map[string]int, n)
	for _, r := range raws {
		var rec RefRecord
		err := r.err
		if err == nil {
			rec, err = refType(spec, r)
		}
		if err != nil {
			rec.Key = refKeyOf(spec, r)
		}
		if err == nil {
			if first, dup := seen[rec.Key]; dup {
				err = pipeline.Errorf(pipeline.Malformed, "records %d and %d have the same key %s=%q", first, r.index, spec.key, rec.Key)
			}
		}
		if err != nil {
			body.Invalid = append(body.Invalid, invalidOf(r.index, rec.Key, refWrap(typ, r.index, err)))
			continue
		}
		seen[rec.Key] = r.index
		body.Records = append(body.Records, rec)
	}
	if err := allInvalid(typ+" record", n, body.Invalid); err != nil {
		return nil, err
	}
	return body, nil
}

// refRead reads the direct children of MSG: RECS (its text) and the records of the TYPE;
// others are reported in w and skipped.
func refRead(raw []byte, typ string, spec refSpec, w *Warnings) (recs string, sawRecs bool, raws []*refRaw, err error) {
	// The codec's scanner, trusting: the envelope has checked the document is well-formed.
	d := getScanner(raw, false)
	defer d.release()
	depth := 0
	msgFound := false
	for {
		kind, err := d.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", false, nil, refSyntax(err)
		}
		switch kind {
		case tokStart:
			t := d.startElem()
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
				if recs, err = refReadText(d, "RECS"); err != nil {
					if errors.Is(err, errNotWellFormed) {
						return "", false, nil, err
					}
					return "", false, nil, pipeline.Errorf(pipeline.Malformed, "%s: RECS is not a count: %v", typ, err)
				}
			case typ:
				r := &refRaw{index: len(raws) + 1, occ: map[string][]refOcc{}}
				if err := refReadRecord(d, spec, r, fmt.Sprintf("%s record %d", typ, r.index), w); err != nil {
					return "", false, nil, err
				}
				raws = append(raws, r)
			default: // META and unknown elements
				msgChild(w, t.Name.Local)
				if err := refSkip(d); err != nil {
					return "", false, nil, err
				}
			}
		case tokEnd:
			depth--
		}
	}
	if !msgFound {
		return "", false, nil, pipeline.Errorf(pipeline.Malformed, "no <MSG> element")
	}
	return recs, sawRecs, raws, nil
}

// refRecs checks the RECS text and returns the count it declares; anything but a
// non-negative decimal is MALFORMED.
func refRecs(typ, recs string, sawRecs bool, n int) (int, error) {
	switch {
	case !sawRecs:
		return 0, pipeline.Errorf(pipeline.Malformed, "%s: RECS is missing (%d %s records found)", typ, n, typ)
	case recs == "":
		return 0, pipeline.Errorf(pipeline.Malformed, "%s: RECS is empty (%d %s records found)", typ, n, typ)
	}
	if !refDigits.MatchString(recs) {
		return 0, pipeline.Errorf(pipeline.Malformed, "%s: RECS %q is not a non-negative integer (%d %s records found)", typ, recs, n, typ)
	}
	count, err := strconv.ParseUint(recs, 10, 31)
	if err != nil {
		return 0, pipeline.Errorf(pipeline.Malformed, "%s: RECS %q is out of range (%d %s records found)", typ, recs, n, typ)
	}
	return int(count), nil
}

// refKeyOf returns the record's key when it reads cleanly, else "".
func refKeyOf(spec refSpec, r *refRaw) string {
	v, err := refScalar(spec.key, spec.fields[spec.key], r.occ[spec.key])
	if err != nil || v == nil {
		return ""
	}
	return fmt.Sprint(v)
}

// refWrap gives err the TYPE and, when index > 0, the record as context, keeping its class;
// an error without one is MALFORMED (a value that breaks the format).
func refWrap(typ string, index int, err error) error {
	class := pipeline.Malformed
	var pe *pipeline.Error
	if errors.As(err, &pe) {
		class = pe.Class
	}
	if index > 0 {
		return pipeline.Errorf(class, "%s record %d: %w", typ, index, err)
	}
	return pipeline.Errorf(class, "%s: %w", typ, err)
}

// refReadRecord reads the children of one record element up to and including its end element.
// Elements the TYPE does not know are reported in w and skipped. A value that cannot be read
// makes the record invalid (r.err) and reading goes on; only an XML error stops it.
func refReadRecord(d *scanner, spec refSpec, r *refRaw, what string, w *Warnings) error {
	for {
		kind, err := d.next()
		if err != nil {
			return refSyntax(err)
		}
		switch kind {
		case tokStart:
			t := d.startElem()
			name := t.Name.Local
			f, known := spec.fields[name]
			if !known {
				w.Addf("unknown element %s in %s ignored%s", short(name), what, didYouMean(name, sortedFields(spec)))
				if err := refSkip(d); err != nil {
					return err
				}
				continue
			}
			var o refOcc
			switch f.kind {
			case refSubc:
				o.subc, err = refReadSubc(d, what, w)
			case refTrml, refAbbr:
				var aerr error
				o.attrs, aerr = refAttrs(t, name)
				o.text, err = refReadText(d, name)
				if err == nil {
					err = aerr
				}
			default:
				o.text, err = refReadText(d, name)
			}
			if errors.Is(err, errNotWellFormed) {
				return err
			}
			if err != nil && r.err == nil {
				r.err = err
			}
			r.occ[name] = append(r.occ[name], o)
		case tokEnd:
			return nil
		}
	}
}

// sortedFields returns the element names of a reference TYPE, sorted.
func sortedFields(spec refSpec) []string {
	out := make([]string, 0, len(spec.fields))
	for n := range spec.fields {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// refReadSubc reads the children of one SUBC up to and including its end element.
func refReadSubc(d *scanner, what string, w *Warnings) (map[string][]string, error) {
	sub := map[string][]string{}
	var first error
	for {
		kind, err := d.next()
		if err != nil {
			return nil, refSyntax(err)
		}
		switch kind {
		case tokStart:
			name := d.startElem().Name.Local
			if name != "CODE" && name != "NAME" && name != "NAMC" {
				w.Addf("unknown element %s in %s SUBC ignored", short(name), what)
				if err := refSkip(d); err != nil {
					return nil, err
				}
				continue
			}
			v, err := refReadText(d, "SUBC/"+name)
			if errors.Is(err, errNotWellFormed) {
				return nil, err
			}
			if err != nil && first == nil {
				first = err
			}
			sub[name] = append(sub[name], v)
		case tokEnd:
			return sub, first
		}
	}
}

// refAttrs returns the attributes of start that TRML and ABBR read, trimmed.
func refAttrs(start *xml.StartElement, name string) (map[string]string, error) {
	attrs := map[string]string{}
	for _, a := range start.Attr {
		k := a.Name.Local
		if a.Name.Space != "" || (k != "MVIN" && k != "FLIN" && k != "CODE") {
			continue
		}
		v := strings.TrimSpace(a.Value)
		if old, dup := attrs[k]; dup && old != v {
			return attrs, pipeline.Errorf(pipeline.Malformed, "%s@%s has two values %q and %q", name, k, old, v)
		}
		attrs[k] = v
	}
	return attrs, nil
}

// refReadText reads the text of a simple element up to and including its end element and
// returns it trimmed. An element inside a simple element is a structure the format does not
// describe: CODEC_ERROR (the element is still read to its end).
func refReadText(d *scanner, name string) (string, error) {
	// Usually one piece of text, trimmed and copied once; pieces (split by a comment, a
	// CDATA section or a nested element) are gathered in d.join.
	// A piece in the scanner's buffer is copied at once: the next token overwrites it.
	var text []byte
	pieces, joined := 0, false
	var nested error
	for {
		kind, err := d.next()
		if err != nil {
			return "", refSyntax(err)
		}
		switch kind {
		case tokText:
			text, joined = d.gatherText(text, pieces, joined)
			pieces++
		case tokStart:
			if nested == nil {
				nested = pipeline.Errorf(pipeline.CodecError, "%s contains an element <%s>; want text", name, short(d.startElem().Name.Local))
			}
			if err := refSkip(d); err != nil {
				return "", err
			}
		case tokEnd:
			if nested != nil {
				return "", nested
			}
			return string(bytes.TrimSpace(text)), nil
		}
	}
}

// refSkip skips the element whose start was just read, without recursion.
func refSkip(d *scanner) error {
	for depth := 1; depth > 0; {
		kind, err := d.next()
		if err != nil {
			return refSyntax(err)
		}
		switch kind {
		case tokStart:
			depth++
		case tokEnd:
			depth--
		}
	}
	return nil
}

var (
	refDigits  = regexp.MustCompile(`^[0-9]+$`)
	refInteger = regexp.MustCompile(`^[+-]?[0-9]+$`)
	refDecimal = regexp.MustCompile(`^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)$`)
)

// refType turns a record as read into a RefRecord.
func refType(spec refSpec, r *refRaw) (RefRecord, error) {
	keyVal, err := refScalar(spec.key, spec.fields[spec.key], r.occ[spec.key])
	if err != nil {
		return RefRecord{}, err
	}
	if keyVal == nil {
		return RefRecord{}, fmt.Errorf("key element %s is missing or empty", spec.key)
	}
	key := fmt.Sprint(keyVal) // string, or the canonical decimal of an integer key
	fields := make(map[string]any, len(r.occ))
	names := make([]string, 0, len(r.occ))
	for name := range r.occ {
		names = append(names, name)
	}
	sort.Strings(names) // the first error reported does not depend on map order
	for _, name := range names {
		f, occ := spec.fields[name], r.occ[name]
		var v any
		switch f.kind {
		case refList:
			v, err = refStrings(occ), nil
		case refSubc:
			v, err = refSubcs(occ)
		case refTrml:
			v, err = refTrmls(occ)
		case refAbbr:
			v, err = refAbbrs(occ)
		default:
			v, err = refScalar(name, f, occ)
		}
		if err != nil {
			return RefRecord{}, fmt.Errorf("%s=%s: %w", spec.key, strconv.Quote(key), err)
		}
		if v != nil {
			fields[name] = v
		}
	}
	return RefRecord{Key: key, Fields: fields}, nil
}

// refScalar types a single-valued element. Empty occurrences count as absent; repeated
// occurrences must agree. It returns nil when there is no value.
func refScalar(name string, f refField, occ []refOcc) (any, error) {
	var val any
	for _, o := range occ {
		if o.text == "" {
			continue
		}
		v, err := refValue(name, f, o.text)
		if err != nil {
			return nil, err
		}
		if val != nil && val != v {
			return nil, fmt.Errorf("%s appears more than once with different values (%q, %q)", name, fmt.Sprint(val), fmt.Sprint(v))
		}
		val = v
	}
	return val, nil
}

// refValue types one non-empty text value.
func refValue(name string, f refField, s string) (any, error) {
	switch f.kind {
	case refFlag:
		switch strings.ToUpper(s) {
		case "Y":
			return true, nil
		case "N":
			return false, nil
		}
		return nil, fmt.Errorf("%s %q is not a Y/N flag", name, s)
	case refInt:
		if !refInteger.MatchString(s) {
			return nil, fmt.Errorf("%s %q is not an integer", name, s)
		}
		n, err := strconv.ParseInt(s, 10, f.bits)
		if err != nil {
			lo, hi := -(int64(1) << (f.bits - 1)), int64(1)<<(f.bits-1)-1
			if f.bits == 64 {
				lo, hi = -1<<63, 1<<63-1
			}
			return nil, fmt.Errorf("%s %q is out of range for a signed %d-bit integer [%d, %d]", name, s, f.bits, lo, hi)
		}
		return n, nil
	case refDec:
		if !refDecimal.MatchString(s) {
			return nil, fmt.Errorf("%s %q is not a decimal number", name, s)
		}
		x, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("%s %q is out of range for a decimal number", name, s)
		}
		if x == 0 {
			x = 0 // no negative zero
		}
		return x, nil
	case refEnum:
		return refEnumValue(name, f.enum, s)
	}
	return s, nil
}

func refEnumValue(name string, allowed []string, s string) (string, error) {
	u := strings.ToUpper(s)
	if slices.Contains(allowed, u) {
		return u, nil
	}
	return "", fmt.Errorf("%s %q is not one of %s", name, s, strings.Join(allowed, ", "))
}

// refStrings returns the non-empty values of a repeated simple element, first occurrence kept.
func refStrings(occ []refOcc) any {
	var out []string
	for _, o := range occ {
		if o.text != "" && !slices.Contains(out, o.text) {
			out = append(out, o.text)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// refSubcs types AIRL SUBC: each needs a CODE, unique in the record; sorted by CODE.
func refSubcs(occ []refOcc) (any, error) {
	var out []map[string]string
	for i, o := range occ {
		m := map[string]string{}
		for _, part := range []string{"CODE", "NAME", "NAMC"} {
			for _, v := range o.subc[part] {
				if v == "" {
					continue
				}
				if old, ok := m[part]; ok && old != v {
					return nil, fmt.Errorf("SUBC %d: %s appears more than once with different values (%q, %q)", i+1, part, old, v)
				}
				m[part] = v
			}
		}
		if len(m) == 0 {
			continue // an empty SUBC is no SUBC
		}
		code, ok := m["CODE"]
		if !ok {
			return nil, fmt.Errorf("SUBC %d has no CODE", i+1)
		}
		for _, prev := range out {
			if prev["CODE"] == code {
				return nil, fmt.Errorf("SUBC CODE %q appears more than once", code)
			}
		}
		out = append(out, m)
	}
	if len(out) == 0 {
		return nil, nil
	}
	sort.Slice(out, func(i, j int) bool { return out[i]["CODE"] < out[j]["CODE"] })
	return out, nil
}

// refTrmls types AIRL TRML: text and the attributes MVIN (A/D) and FLIN (D/I), any of them may
// be empty; an entirely empty TRML is dropped, identical ones are merged; sorted.
func refTrmls(occ []refOcc) (any, error) {
	var out []map[string]string
	for _, o := range occ {
		m := map[string]string{}
		for _, a := range []struct {
			attr    string
			allowed []string
		}{{"MVIN", []string{"A", "D"}}, {"FLIN", []string{"D", "I"}}} {
			v := o.attrs[a.attr]
			if v == "" {
				continue
			}
			u, err := refEnumValue("TRML@"+a.attr, a.allowed, v)
			if err != nil {
				return nil, err
			}
			m[a.attr] = u
		}
		if o.text != "" {
			m["TRML"] = o.text
		}
		if len(m) == 0 {
			continue
		}
		dup := slices.ContainsFunc(out, func(p map[string]string) bool {
			return p["MVIN"] == m["MVIN"] && p["FLIN"] == m["FLIN"] && p["TRML"] == m["TRML"] && len(p) == len(m)
		})
		if !dup {
			out = append(out, m)
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a["MVIN"] != b["MVIN"] {
			return a["MVIN"] < b["MVIN"]
		}
		if a["FLIN"] != b["FLIN"] {
			return a["FLIN"] < b["FLIN"]
		}
		return a["TRML"] < b["TRML"]
	})
	return out, nil
}

// refAbbrs types ARPT/CITY ABBR into CODE → text. An ABBR with text needs a CODE; one CODE
// cannot carry two texts; an ABBR with no text is left out.
func refAbbrs(occ []refOcc) (any, error) {
	out := map[string]string{}
	for _, o := range occ {
		code := o.attrs["CODE"]
		if code == "" {
			if o.text == "" {
				continue // an empty ABBR is no ABBR
			}
			return nil, fmt.Errorf("ABBR %q has no CODE attribute", o.text)
		}
		if o.text == "" {
			continue
		}
		if old, ok := out[code]; ok && old != o.text {
			return nil, fmt.Errorf("ABBR CODE %q appears more than once with different texts (%q, %q)", code, old, o.text)
		}
		out[code] = o.text
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}
