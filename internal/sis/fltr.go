package sis

// The wire form of FLTR and FLOP records and its conversion into the types of flight.go.

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"msgx/internal/pipeline"
	"msgx/internal/suggest"
)

// A FLTR or FLOP element is read in one pass into xrec, whose fields are the raw texts (see
// readRecord); conv then turns it into the typed record, checking every value and naming the
// record, the element and the value in the first error it finds. FLTR and FLOP share xrec and
// the group readers: the elements are the same under both parents.

// xtext is a simple element as read: its text without surrounding white space and how many
// times it occurred (a singleton that occurs twice is an error, not "last one wins").
type xtext struct {
	s   string
	n   int
	sub string // the first element found inside it (SIS has none there), read past
}

// xrec is a FLTR (SCHD or SCHS) or FLOP element as read. Untagged fields match the element of
// the same name.
type xrec struct {
	FLID, FFID, ALCD, ALSC, FLNO, MVIN, SODT, FLTY, FLIN, ACFT, RENO xtext
	TAOP, TAFL, TAID, CSOP, CSFT, MAID                               xtext
	TRML, MAXP, STND, RUNW, ESTT, ACTT, FHAG, PHAG, MHAG             xtext
	APPT, BOTM, CNCL, EGSR, EGST, FINT, LACL                         xtext
	COBT, CTOT, EOBT, TOBT, IEST, PEDT, PADT, NEAT, NAAT             xtext
	EXSC, EXSR, FTSS, REMC, VIPP, VIPR, LBNO, LBWT, PAXC             xtext
	STDT, EDDT, DYOP, SCHT                                           xtext // SCHS only

	FDIV []xfdiv `xml:"FDIV"`
	FRET []xfret `xml:"FRET"`
	FLAB []xflab `xml:"FLAB"`
	PORT []xport `xml:"PORT"`
	PSDT []xpsdt `xml:"PSDT"`
	GTDT []xgtdt `xml:"GTDT"`
	CHDT []xchdt `xml:"CHDT"`
	CKDT []xckdt `xml:"CKDT"`
	CLDT []xcldt `xml:"CLDT"`
	CHOT []xchot `xml:"CHOT"`
	ABTM []xabtm `xml:"ABTM"`
	DELY []xdely `xml:"DELY"`
	ERUT []xerut `xml:"ERUT"`
	SRVT []xsrvt `xml:"SRVT"`
	VIPF []xvipf `xml:"VIPF"`
	PSHT []xpsht `xml:"PSHT"`
	TIPT []xtipt `xml:"TIPT"`
	FDEL []xfdel `xml:"FDEL"`

	Other []string `xml:",any"` // names of the child elements xrec has no field for, in order

	// readPast: the reader met an element inside a known one (nestedUnknown has something
	// to report); false spares the walk over every field of every record.
	readPast bool `xml:"-"`
	// children counts the record's child elements, known or not: with the counts of the
	// expected ones it tells a FLOP record holds nothing else without a walk over every field.
	children int `xml:"-"`
}

type xfdiv struct {
	DDES  *string  `xml:"DDES,attr"`
	DDIR  *string  `xml:"DDIR,attr"`
	Text  string   `xml:",chardata"`
	Other []string `xml:",any"`
}

type xfret struct {
	REID  *string  `xml:"REID,attr"`
	Text  string   `xml:",chardata"`
	Other []string `xml:",any"`
}

type xflab struct {
	ARES  *string  `xml:"ARES,attr"`
	Text  string   `xml:",chardata"`
	Other []string `xml:",any"`
}

type xport struct {
	POTM, POID xtext
	Other      []string `xml:",any"`
}

type xpsdt struct {
	PSNO             *string `xml:"PSNO,attr"`
	PSST, STST, STET xtext
	Other            []string `xml:",any"`
}

type xgtdt struct {
	GTNO                               *string `xml:"GTNO,attr"`
	GATE, PGOT, PGCT, GOTM, GCTM, GTYP xtext
	Other                              []string `xml:",any"`
}

type xchdt struct {
	CHNO                                     *string `xml:"CHNO,attr"`
	CHUT, CCLS, PCBT, PCET, CBTM, CETM, CTYP xtext
	Other                                    []string `xml:",any"`
}

type xckdt struct {
	CKNO                                     *string `xml:"CKNO,attr"`
	CHKC, CCLS, PCOT, PCCT, COTM, CCTM, CTYP xtext
	Other                                    []string `xml:",any"`
}

type xcldt struct {
	CLNO                                     *string `xml:"CLNO,attr"`
	BELT, BCLS, PCOT, PCCT, FBAG, LBAG, BTYP xtext
	Other                                    []string `xml:",any"`
}

type xchot struct {
	CSNO             *string `xml:"CSNO,attr"`
	CHTM, CHID, CHST xtext
	Other            []string `xml:",any"`
}

type xabtm struct {
	ASNO             *string `xml:"ASNO,attr"`
	ABDG, ABOP, AOTM xtext
	Other            []string `xml:",any"`
}

type xdely struct {
	CODE  *string  `xml:"CODE,attr"`
	STRT  *string  `xml:"STRT,attr"`
	DURA  *string  `xml:"DURA,attr"`
	Text  string   `xml:",chardata"`
	Other []string `xml:",any"`
}

type xerut struct {
	RTNO                         *string  `xml:"RTNO,attr"`
	APCD, SCAT, SCDT, SADC, SDDC xtext    // SADC, SDDC: SCHS only
	Other                        []string `xml:",any"`
}

type xsrvt struct {
	SRTC, SRQT, SRST, SRET, SRPR, SANR, SARR xtext
	Other                                    []string `xml:",any"`
}

type xvipf struct {
	VPCD, VFES xtext
	VIPT       []xvipt  `xml:"VIPT"`
	Other      []string `xml:",any"`
}

type xvipt struct {
	VSCD, VTQY, VTST, VTET xtext
	Other                  []string `xml:",any"`
}

type xpsht struct {
	PSHN             *string `xml:"PSHN,attr"`
	PSTM, PSID, PUST xtext
	Other            []string `xml:",any"`
}

type xtipt struct {
	TRTM, TRST xtext
	Other      []string `xml:",any"`
}

type xfdel struct {
	Attrs []xml.Attr `xml:",any,attr"`
	Text  string     `xml:",chardata"`
	Elems []string   `xml:",any"` // names of child elements
}

// ---- the reader ----
//
// The intermediate types are read by a small reader driven by their struct tags (an
// encoding/xml subset: untagged xtext fields and []struct fields are child elements named like
// the field, ",attr" *string fields attributes, ",chardata" the element's text, ",any,attr"
// other attributes, ",any" the names of other child elements). It takes its tokens from the
// trusting scanner (scan.go): the envelope has already checked the whole document is
// well-formed, so the body pass needs neither end-tag matching nor name spaces, and it avoids
// encoding/xml's per-field reflection and per-token allocations, which made decoding a large
// SCHD several times slower.

type xplan struct {
	elems   map[string]xslot
	order   []string // the element names of elems, in field order
	attrs   map[string]int
	char    int // field index of ",chardata", or -1
	anyAttr int
	anyElem int
}

type xslot struct {
	index int
	plan  *xplan // nil for an xtext
}

var (
	xtextType = reflect.TypeFor[xtext]()
	xrecPlan  = planOf(reflect.TypeFor[xrec]())
)

func planOf(t reflect.Type) *xplan {
	p := &xplan{elems: map[string]xslot{}, attrs: map[string]int{}, char: -1, anyAttr: -1, anyElem: -1}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("xml"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		switch {
		case opts == "attr":
			p.attrs[name] = i
		case opts == "chardata":
			p.char = i
		case opts == "any,attr":
			p.anyAttr = i
		case opts == "any":
			p.anyElem = i
		case f.Type == xtextType:
			p.elems[name] = xslot{index: i}
			p.order = append(p.order, name)
		case f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() == reflect.Struct:
			p.elems[name] = xslot{index: i, plan: planOf(f.Type.Elem())}
			p.order = append(p.order, name)
		default:
			panic("sis: no reader for field " + t.Name() + "." + f.Name)
		}
	}
	return p
}

// readRecord reads the FLTR or FLOP element whose start was just read into x.
func readRecord(d *scanner, start *xml.StartElement, x *xrec) error {
	before, kids := d.readPast, d.recChildren
	err := readInto(d, start, reflect.ValueOf(x).Elem(), xrecPlan)
	x.readPast = d.readPast != before
	x.children = d.recChildren - kids
	return err
}

func readInto(d *scanner, start *xml.StartElement, v reflect.Value, p *xplan) error {
	for _, a := range start.Attr {
		if i, ok := p.attrs[a.Name.Local]; ok && a.Name.Space == "" {
			s := a.Value
			v.Field(i).Set(reflect.ValueOf(&s))
		} else if p.anyAttr >= 0 {
			f := v.Field(p.anyAttr)
			f.Set(reflect.Append(f, reflect.ValueOf(a)))
		}
	}
	var text []byte
	for {
		kind, err := d.next()
		if err != nil {
			return err
		}
		switch kind {
		case tokStart:
			if p == xrecPlan {
				d.recChildren++
			}
			t := d.startElem()
			slot, ok := p.elems[t.Name.Local]
			switch {
			case !ok:
				if p.anyElem >= 0 {
					d.readPast++
					f := v.Field(p.anyElem)
					f.Set(reflect.Append(f, reflect.ValueOf(t.Name.Local)))
				}
				if err := skipElement(d); err != nil {
					return err
				}
			case slot.plan == nil:
				if err := readText(d, v.Field(slot.index).Addr().Interface().(*xtext)); err != nil {
					return err
				}
			default:
				f := v.Field(slot.index)
				if f.Len() == f.Cap() {
					f.Grow(max(2, f.Len()))
				}
				f.SetLen(f.Len() + 1)
				if err := readInto(d, t, f.Index(f.Len()-1), slot.plan); err != nil {
					return err
				}
			}
		case tokText:
			if p.char >= 0 {
				text = append(text, d.charData()...)
			}
		case tokEnd:
			if p.char >= 0 {
				v.Field(p.char).SetString(string(text))
			}
			return nil
		}
	}
}

// readText reads a simple element whose start was just read: its own text without
// surrounding white space (the text of nested elements is skipped).
func readText(d *scanner, x *xtext) error {
	// Usually one piece, taken as is; a piece the scanner decoded into its buffer, or pieces
	// split by a comment, a CDATA section or a nested element, are gathered in d.join.
	var text []byte
	pieces, joined := 0, false
	depth := 0
	for {
		kind, err := d.next()
		if err != nil {
			return err
		}
		switch kind {
		case tokText:
			if depth > 0 {
				continue
			}
			text, joined = d.gatherText(text, pieces, joined)
			pieces++
		case tokStart:
			if depth == 0 && x.sub == "" {
				x.sub = d.startElem().Name.Local
				d.readPast++
			}
			depth++
		case tokEnd:
			if depth > 0 {
				depth--
				continue
			}
			x.s = d.value(bytes.TrimSpace(text))
			x.n++
			return nil
		}
	}
}

// skipElement consumes the rest of the element whose start was just read.
func skipElement(d *scanner) error {
	for depth := 0; ; {
		kind, err := d.next()
		if err != nil {
			return err
		}
		switch kind {
		case tokStart:
			depth++
		case tokEnd:
			if depth == 0 {
				return nil
			}
			depth--
		}
	}
}

// forBody calls fn for each direct child element of the document's root (MSG); fn must
// consume the element (readRecord, readText or skipElement). The envelope has already checked
// the document is well-formed, so a syntax error here is MALFORMED only in theory.
func forBody(raw []byte, fn func(d *scanner, start *xml.StartElement) error) error {
	d := getScanner(raw, false)
	defer d.release()
	for {
		kind, err := d.next()
		if err != nil {
			return pipeline.Errorf(pipeline.Malformed, "not well-formed XML: %v", err)
		}
		if kind == tokStart {
			break
		}
	}
	return forChildren(d, func(st *xml.StartElement) error { return fn(d, st) })
}

// forWrapperChildren calls fn for each child of the body's one <name> element (the SCHD or
// SCHS wrapper); the body's other elements are skipped (reported in w, except META), and a
// second <name>, or none, is MALFORMED (SIS has exactly one).
func forWrapperChildren(raw []byte, name string, w *Warnings, fn func(d *scanner, start *xml.StartElement) error) error {
	found := false
	err := forBody(raw, func(d *scanner, st *xml.StartElement) error {
		if st.Name.Local != name {
			msgChild(w, st.Name.Local)
			return skipElement(d)
		}
		if found {
			return pipeline.Errorf(pipeline.Malformed, "%s: more than one <%s> element", name, name)
		}
		found = true
		return forChildren(d, func(st *xml.StartElement) error { return fn(d, st) })
	})
	if err == nil && !found {
		err = pipeline.Errorf(pipeline.Malformed, "%s: no <%s> element in the message", name, name)
	}
	return err
}

// msgChild reports a direct child of MSG that the body decoder does not read (META aside).
func msgChild(w *Warnings, name string) {
	if name != "META" {
		w.Addf("unknown element %s in MSG ignored", short(name))
	}
}

// forChildren calls fn for each child element of the element whose start was just read, up
// to its end element; fn must consume the child.
func forChildren(d *scanner, fn func(start *xml.StartElement) error) error {
	for {
		kind, err := d.next()
		if err != nil {
			return pipeline.Errorf(pipeline.Malformed, "not well-formed XML: %v", err)
		}
		switch kind {
		case tokStart:
			if err := fn(d.startElem()); err != nil {
				return err
			}
		case tokEnd:
			return nil
		}
	}
}

// blank reports whether every text is empty: together with "no attribute" it makes an
// element empty, which means no value.
func blank(ts ...xtext) bool {
	for _, t := range ts {
		if t.s != "" {
			return false
		}
	}
	return true
}

func (x *xport) empty() bool { return blank(x.POTM, x.POID) }
func (x *xpsdt) empty() bool { return x.PSNO == nil && blank(x.PSST, x.STST, x.STET) }
func (x *xgtdt) empty() bool {
	return x.GTNO == nil && blank(x.GATE, x.PGOT, x.PGCT, x.GOTM, x.GCTM, x.GTYP)
}
func (x *xchdt) empty() bool {
	return x.CHNO == nil && blank(x.CHUT, x.CCLS, x.PCBT, x.PCET, x.CBTM, x.CETM, x.CTYP)
}
func (x *xckdt) empty() bool {
	return x.CKNO == nil && blank(x.CHKC, x.CCLS, x.PCOT, x.PCCT, x.COTM, x.CCTM, x.CTYP)
}
func (x *xcldt) empty() bool {
	return x.CLNO == nil && blank(x.BELT, x.BCLS, x.PCOT, x.PCCT, x.FBAG, x.LBAG, x.BTYP)
}
func (x *xchot) empty() bool { return x.CSNO == nil && blank(x.CHTM, x.CHID, x.CHST) }
func (x *xabtm) empty() bool { return x.ASNO == nil && blank(x.ABDG, x.ABOP, x.AOTM) }
func (x *xdely) empty() bool {
	return attrVal(x.CODE) == "" && attrVal(x.STRT) == "" && attrVal(x.DURA) == "" && strings.TrimSpace(x.Text) == ""
}
func (x *xerut) empty() bool {
	return x.RTNO == nil && blank(x.APCD, x.SCAT, x.SCDT, x.SADC, x.SDDC)
}
func (x *xsrvt) empty() bool {
	return blank(x.SRTC, x.SRQT, x.SRST, x.SRET, x.SRPR, x.SANR, x.SARR)
}
func (x *xvipf) empty() bool {
	if !blank(x.VPCD, x.VFES) {
		return false
	}
	for i := range x.VIPT {
		if !x.VIPT[i].empty() {
			return false
		}
	}
	return true
}
func (x *xvipt) empty() bool { return blank(x.VSCD, x.VTQY, x.VTST, x.VTET) }
func (x *xpsht) empty() bool { return x.PSHN == nil && blank(x.PSTM, x.PSID, x.PUST) }
func (x *xtipt) empty() bool { return blank(x.TRTM, x.TRST) }

func attrVal(p *string) string {
	if p == nil {
		return ""
	}
	return strings.TrimSpace(*p)
}

// ---- elements SIS does not define where they stand ----

// setOf returns the set of the space-separated names.
func setOf(names string) map[string]bool {
	m := map[string]bool{}
	for _, n := range strings.Fields(names) {
		m[n] = true
	}
	return m
}

// fltrKnown are the children of a SCHD FLTR (docs/sis-format.md §2.4), FFID included (the decoder
// reads it when sent); schsKnown those of a SCHS FLTR (§2.5).
var (
	fltrKnown = setOf(`FLID FFID ALCD ALSC FLNO MVIN SODT FLTY FLIN ROUT ACFT RENO TAOP TAFL TAID
		CSOP CSFT MAID TRML MAXP STND ESTT ACTT PSDT GTDT CHDT CKDT CLDT CHOT ABTM PHAG FHAG MHAG
		CNCL BOTM LACL FINT APPT EGSR EGST COBT TOBT EOBT IEST PEDT NEAT PADT NAAT DELY SRVT VIPF
		FDIV FRET FLAB ERUT EXSC EXSR FTSS REMC VIPP VIPR LBNO LBWT PAXC PORT RUNW TIPT`)
	schsKnown = setOf(`ALCD FLNO MVIN STDT EDDT DYOP SCHT FLTY FLIN ACFT ROUT RENO TAOP TAFL TRML
		MAXP CSOP CSFT ERUT`)
)

// present reports whether the record holds the element name (even empty).
func (x *xrec) present(name string) bool { return x.count(name) > 0 }

// count returns how many times the record holds the element name (even empty).
func (x *xrec) count(name string) int {
	slot, ok := xrecPlan.elems[name]
	if !ok {
		n := 0
		for _, o := range x.Other {
			if o == name {
				n++
			}
		}
		return n
	}
	return countIn(reflect.ValueOf(x).Elem(), slot)
}

// presentIn reports whether v, read by plan p, holds the child element name (even empty).
func presentIn(v reflect.Value, p *xplan, name string) bool {
	slot, ok := p.elems[name]
	return ok && countIn(v, slot) > 0
}

func countIn(v reflect.Value, slot xslot) int {
	f := v.Field(slot.index)
	if slot.plan == nil {
		return f.Addr().Interface().(*xtext).n // through a pointer: no copy, no allocation
	}
	return f.Len()
}

// unknown returns the record's child elements that known does not hold, each once: first
// those the reader has no field for (in message order), then the others (in field order).
func (x *xrec) unknown(known map[string]bool) []string {
	var out []string
	for _, n := range x.Other {
		if !known[n] && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	for _, n := range xrecPlan.order {
		if !known[n] && x.present(n) {
			out = append(out, n)
		}
	}
	return out
}

// pathStep is one step down from a record to a group entry: GTDT[2], VIPF[1]/VIPT[3].
type pathStep struct {
	name string
	idx  int // 1-based; 0 for a simple element
}

func formatPath(steps []pathStep) string {
	var b strings.Builder
	for i, s := range steps {
		if i > 0 {
			b.WriteByte('/')
		}
		b.WriteString(s.name)
		if s.idx > 0 {
			fmt.Fprintf(&b, "[%d]", s.idx)
		}
	}
	return b.String()
}

// nested is an element read past inside one of a record's known elements: inside a simple
// element, or a child of a group entry that the group does not define.
type nested struct {
	path  []pathStep // to the element or entry holding it (valid during the call only)
	name  string
	entry reflect.Value // the group entry holding it; invalid inside a simple element
	plan  *xplan        // the entry's plan
}

// where formats the path: GTDT[2], VIPF[1]/VIPT[3], REMC.
func (u nested) where() string { return formatPath(u.path) }

// group is the group of the entry holding the element ("" inside a simple element).
func (u nested) group() string {
	if !u.entry.IsValid() {
		return ""
	}
	return u.path[len(u.path)-1].name
}

// children are the children SIS defines for the entry, in order; missing those it lacks.
func (u nested) children() []string {
	if u.plan == nil {
		return nil
	}
	return u.plan.order
}

func (u nested) missing() []string {
	var out []string
	for _, name := range u.children() {
		if !presentIn(u.entry, u.plan, name) {
			out = append(out, name)
		}
	}
	return out
}

// hint is " (did you mean X?)" for the child of the entry the element probably stands for,
// those the entry lacks first, or "".
func (u nested) hint() string {
	if u.plan == nil {
		return ""
	}
	return didYouMean(u.name, append(u.missing(), u.children()...))
}

// nestedUnknown calls fn for every element read past inside the record's known elements: an
// element inside a simple element, an unknown child of a group entry. FDEL's content has its
// own rule (it must be empty). The path is only formatted for what is reported.
func (x *xrec) nestedUnknown(known map[string]bool, fn func(nested)) {
	if !x.readPast {
		return
	}
	var steps [4]pathStep
	walkUnknown(reflect.ValueOf(x).Elem(), xrecPlan, steps[:0], known, fn)
}

func walkUnknown(v reflect.Value, p *xplan, path []pathStep, known map[string]bool, fn func(nested)) {
	if p.anyElem >= 0 && known == nil {
		for _, n := range *v.Field(p.anyElem).Addr().Interface().(*[]string) {
			fn(nested{path: path, name: n, entry: v, plan: p})
		}
	}
	for _, name := range p.order {
		if (known != nil && !known[name]) || name == "FDEL" {
			continue
		}
		slot := p.elems[name]
		f := v.Field(slot.index)
		if slot.plan == nil {
			if sub := f.Addr().Interface().(*xtext).sub; sub != "" {
				fn(nested{path: append(path, pathStep{name: name}), name: sub})
			}
			continue
		}
		for i := 0; i < f.Len(); i++ {
			walkUnknown(f.Index(i), slot.plan, append(path, pathStep{name, i + 1}), nil, fn)
		}
	}
}

// warnUnknown reports in w every element of the record that known does not define, and
// every element read past inside the known ones; the record is named by label and its
// 1-based position n ("SCHD FLTR record 3"). A name close to one SIS defines gets a "did you
// mean"; prefer are the names to suggest first (a FLOP record's own elements).
func (x *xrec) warnUnknown(known map[string]bool, prefer []string, label string, n int, w *Warnings) {
	x.warnTop(x.unknown(known), known, prefer, label, n, w)
	x.nestedUnknown(known, func(u nested) { u.warn(label, n, w) })
}

// warnTop reports the record's children in unknown, elements SIS does not define for it.
func (x *xrec) warnTop(unknown []string, known map[string]bool, prefer []string, label string, n int, w *Warnings) {
	var candidates []string
	if len(unknown) > 0 {
		candidates = append(append(candidates, prefer...), sortedNames(known)...)
	}
	for _, u := range unknown {
		w.Addf("unknown element %s in %s record %d ignored%s", short(u), label, n, didYouMean(u, candidates))
	}
}

// warn reports the element read past in w.
func (u nested) warn(label string, n int, w *Warnings) {
	w.Addf("unknown element %s in %s record %d %s ignored%s", short(u.name), label, n, u.where(), u.hint())
}

// short returns name cut to a length fit for a message (an element name is not bounded).
func short(name string) string {
	const max = 40
	if len(name) <= max {
		return name
	}
	return strings.ToValidUTF8(name[:max], "") + "…"
}

// sortedNames returns the names of a set in order, for deterministic suggestions.
func sortedNames(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// closestTag returns the candidate name probably meant by name: one equal ignoring letter case,
// else the first of the nearest within edit distance 2 (so list the likeliest first); "" if
// none is close.
func closestTag(name string, candidates []string) string {
	for _, c := range candidates {
		if strings.EqualFold(c, name) {
			return c
		}
	}
	best, bestD := "", 3
	for _, c := range candidates {
		if d := editDistance(name, c); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// didYouMean formats closestTag's answer as " (did you mean X?)", or "".
func didYouMean(name string, candidates []string) string {
	if s := closestTag(name, candidates); s != "" {
		return " (did you mean " + s + "?)"
	}
	return ""
}

// editDistance is suggest.Distance, without the work when the lengths alone put a and b
// farther apart than any suggestion goes (a tag is short and the candidates four letters).
func editDistance(a, b string) int {
	if len(a) > len(b)+2 || len(b) > len(a)+2 {
		return 3
	}
	return suggest.Distance(a, b)
}

// conv converts one record as read into typed values and keeps the first error. Its place
// (record, group entry) is only formatted when there is an error.
type conv struct {
	loc  *time.Location
	kind string // FLTR or FLOP
	n    int    // 1-based position of the record in the message
	flid string // the record's FLID as sent, once known
	key  string // what identifies a record without FLID (SCHS: ALCD FLNO MVIN)
	grp  string // the group being read (GTDT…), "" at record level
	idx  int    // 1-based position in the group
	sub  string // nested group (VIPT) inside grp
	sidx int
	err  error
	warn *Warnings // where what is read past goes (nil: dropped)
}

// where names the record: FLOP[1] FLID 7001.
func (c *conv) where() string {
	s := fmt.Sprintf("%s[%d]", c.kind, c.n)
	if c.flid != "" {
		s += " FLID " + c.flid
	}
	if c.key != "" {
		s += " " + c.key
	}
	return s
}

// place names elem in its group: GTDT[2]/PGOT, GTDT[2]@GTNO, FDIV@DDIR.
func (c *conv) place(elem string) string {
	p := ""
	if c.grp != "" {
		p = fmt.Sprintf("%s[%d]", c.grp, c.idx)
		if c.sub != "" {
			p += fmt.Sprintf("/%s[%d]", c.sub, c.sidx)
		}
		if elem != "" && elem[0] != '@' {
			p += "/"
		}
	}
	return p + elem
}

func (c *conv) failf(elem, format string, args ...any) {
	if c.err != nil {
		return
	}
	c.err = pipeline.Errorf(pipeline.Malformed, "%s %s%s", c.where(), c.place(elem), fmt.Sprintf(format, args...))
}

// bad records that value v of elem is not valid, and why.
func (c *conv) bad(elem, v string, reason error) {
	c.failf(elem, " %q: %v", v, reason)
}

func (c *conv) missing(elem string) { c.failf(elem, ": missing") }

func (c *conv) enter(grp string, idx int) { c.grp, c.idx, c.sub = grp, idx, "" }
func (c *conv) leave()                    { c.grp, c.sub = "", "" }

// text returns the text of a singleton element ("" = no value). An element inside it is a
// structure SIS does not describe there, which may hold the value: CODEC_ERROR.
func (c *conv) text(elem string, x xtext) string {
	if x.n > 1 {
		c.failf(elem, ": appears %d times", x.n)
	}
	if x.sub != "" && c.err == nil {
		c.err = pipeline.Errorf(pipeline.CodecError, "%s %s contains an element <%s>; want text", c.where(), c.place(elem), short(x.sub))
	}
	return x.s
}

// req returns the text of a required singleton element.
func (c *conv) req(elem string, x xtext) string {
	s := c.text(elem, x)
	if s == "" {
		c.missing(elem)
	}
	return s
}

func (c *conv) enum(elem string, x xtext, allowed ...string) string {
	s := c.text(elem, x)
	return c.enumValue(elem, s, allowed...)
}

func (c *conv) enumValue(elem, s string, allowed ...string) string {
	if s == "" {
		return ""
	}
	for _, a := range allowed {
		if s == a {
			return s
		}
	}
	c.bad(elem, s, fmt.Errorf("want %s", strings.Join(allowed, " or ")))
	return s
}

func (c *conv) time(elem string, x xtext) *time.Time {
	return c.timeValue(elem, c.text(elem, x))
}

func (c *conv) timeValue(elem, s string) *time.Time {
	if s == "" {
		return nil
	}
	t, err := parseDateTime(s, c.loc)
	if err != nil {
		c.bad(elem, s, err)
		return nil
	}
	return &t
}

// integer parses s as a signed integer of the given bit size (docs/sis-format.md §1.5 widths).
func (c *conv) integer(elem, s string, bits int) (int64, bool) {
	if s == "" {
		return 0, false
	}
	digits := s
	if digits[0] == '+' || digits[0] == '-' {
		digits = digits[1:]
	}
	if digits == "" || strings.Trim(digits, "0123456789") != "" {
		c.bad(elem, s, errors.New("not a whole number"))
		return 0, false
	}
	v, err := strconv.ParseInt(s, 10, bits)
	if err != nil {
		lim := int64(1) << (bits - 1)
		c.bad(elem, s, fmt.Errorf("out of range %d … %d (signed %d-bit)", -lim, lim-1, bits))
		return 0, false
	}
	return v, true
}

func numPtr[T int8 | int16 | int32 | int64](c *conv, elem, s string, bits int) *T {
	v, ok := c.integer(elem, s, bits)
	if !ok {
		return nil
	}
	t := T(v)
	return &t
}

func (c *conv) i8(elem string, x xtext) *int8   { return numPtr[int8](c, elem, c.text(elem, x), 8) }
func (c *conv) i16(elem string, x xtext) *int16 { return numPtr[int16](c, elem, c.text(elem, x), 16) }
func (c *conv) i32(elem string, x xtext) *int32 { return numPtr[int32](c, elem, c.text(elem, x), 32) }
func (c *conv) i64(elem string, x xtext) *int64 { return numPtr[int64](c, elem, c.text(elem, x), 64) }

var decimalPattern = regexp.MustCompile(`^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)$`)

func (c *conv) decimal(elem string, x xtext) json.Number {
	s := c.text(elem, x)
	if s == "" {
		return ""
	}
	if !decimalPattern.MatchString(s) {
		c.bad(elem, s, errors.New("not a decimal number"))
		return ""
	}
	// A form JSON accepts as a number: no leading '+', no bare '.', digits on both sides.
	s = strings.TrimPrefix(s, "+")
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	if strings.HasPrefix(s, ".") {
		s = "0" + s
	}
	s = strings.TrimSuffix(s, ".")
	if t := strings.TrimLeft(s, "0"); t == "" || t[0] == '.' {
		s = "0" + t
	} else {
		s = t
	}
	if neg {
		s = "-" + s
	}
	return json.Number(s)
}

// groupNo reads the mandatory numbering attribute of a group entry (signed 8-bit, §1.5).
func (c *conv) groupNo(attr string, p *string) int8 {
	if p == nil {
		c.missing(attr)
		return 0
	}
	s := strings.TrimSpace(*p)
	if s == "" {
		c.failf(attr, ": present but empty")
		return 0
	}
	v, _ := c.integer(attr, s, 8)
	return int8(v)
}

// mandatoryAttr reads an attribute that must be present and not empty.
func (c *conv) mandatoryAttr(attr string, p *string) string {
	if p == nil {
		c.missing(attr)
		return ""
	}
	s := strings.TrimSpace(*p)
	if s == "" {
		c.failf(attr, ": present but empty")
	}
	return s
}

// flidOf reads the record's FLID (required, a positive decimal that fits 64 bits) and makes
// it part of every later error's place.
func (c *conv) flidOf(x xtext) int64 {
	if x.n > 1 {
		c.failf("FLID", ": appears %d times", x.n)
		return 0
	}
	if x.s == "" {
		c.missing("FLID")
		return 0
	}
	if x.sub != "" {
		c.err = pipeline.Errorf(pipeline.CodecError, "%s FLID contains an element <%s>; want text", c.where(), short(x.sub))
		return 0
	}
	if strings.Trim(x.s, "0123456789") != "" {
		c.bad("FLID", x.s, errors.New("not a decimal number"))
		return 0
	}
	v, err := strconv.ParseInt(x.s, 10, 64)
	if err != nil || v <= 0 {
		c.bad("FLID", x.s, errors.New("out of range 1 … 2^63-1"))
		return 0
	}
	c.flid = x.s
	return v
}

// ---- single attribute + text elements (kind C) ----

// An element with no attribute and no text is no value (nil); otherwise its mandatory
// attribute must be present, not empty and valid.

// only returns the one occurrence of a singleton element, or nil when it is absent or (an
// error) repeated.
func only[X any](c *conv, elem string, xs []X) *X {
	if len(xs) > 1 {
		c.failf(elem, ": appears %d times", len(xs))
		return nil
	}
	if len(xs) == 0 {
		return nil
	}
	return &xs[0]
}

func (c *conv) fdiv(xs []xfdiv) *Divert {
	x := only(c, "FDIV", xs)
	if x == nil {
		return nil
	}
	text := strings.TrimSpace(x.Text)
	if x.DDES == nil && x.DDIR == nil && text == "" {
		return nil
	}
	v := &Divert{DDES: c.mandatoryAttr("FDIV@DDES", x.DDES), DDIR: c.mandatoryAttr("FDIV@DDIR", x.DDIR), TEXT: text}
	if v.DDIR != "" {
		c.enumValue("FDIV@DDIR", v.DDIR, "TO", "FROM")
	}
	return v
}

func (c *conv) fret(xs []xfret) *AirReturn {
	if x := only(c, "FRET", xs); x != nil {
		if code, text, ok := c.coded("FRET@REID", x.REID, x.Text, "A", "G"); ok {
			return &AirReturn{REID: code, TEXT: text}
		}
	}
	return nil
}

func (c *conv) flab(xs []xflab) *LandingAbort {
	if x := only(c, "FLAB", xs); x != nil {
		if code, text, ok := c.coded("FLAB@ARES", x.ARES, x.Text, "O", "G"); ok {
			return &LandingAbort{ARES: code, TEXT: text}
		}
	}
	return nil
}

// coded reads an element of one mandatory coded attribute and a free text (FRET, FLAB): not
// ok when both are absent (the element is empty), else the code, checked against allowed,
// and the text.
func (c *conv) coded(attr string, code *string, text string, allowed ...string) (string, string, bool) {
	text = strings.TrimSpace(text)
	if code == nil && text == "" {
		return "", "", false
	}
	v := c.mandatoryAttr(attr, code)
	if v != "" {
		c.enumValue(attr, v, allowed...)
	}
	return v, text, true
}

// ---- groups ----
//
// Every group reader skips empty entries (no attribute, no text), so a list of only empty
// entries, or none, is the empty list. Entries need their number (or key) and a number may
// occur once per list.

func (c *conv) ports(xs []xport) []Port {
	var out []Port
	for i := range xs {
		x := &xs[i]
		if x.empty() {
			continue
		}
		c.enter("PORT", i+1)
		p := Port{POID: c.text("POID", x.POID), POTM: c.time("POTM", x.POTM)}
		if p.POID == "" {
			c.missing("POID")
		} else {
			c.enumValue("POID", p.POID, "O", "C")
		}
		for _, o := range out {
			if o.POID == p.POID {
				c.failf("POID", " %q: appears twice", p.POID)
			}
		}
		out = append(out, p)
	}
	c.leave()
	return out
}

// groupEntries converts the non-empty entries of a repeated group element: build makes one
// entry (with c placed on it, so errors name the group and its index), key gives its number
// or key, and a key that appears twice is an error on keyElem worded by dupFormat.
func groupEntries[X any, PX interface {
	*X
	empty() bool
}, T any, K comparable](c *conv, elem string, xs []X, build func(PX) T, key func(T) K, keyElem, dupFormat string) []T {
	var out []T
	seen := map[K]bool{}
	for i := range xs {
		x := PX(&xs[i])
		if x.empty() {
			continue
		}
		c.enter(elem, i+1)
		g := build(x)
		if k := key(g); seen[k] {
			c.failf(keyElem, dupFormat, k)
		} else {
			seen[k] = true
		}
		out = append(out, g)
	}
	c.leave()
	return out
}

func (c *conv) psdt(xs []xpsdt) []StandAlloc {
	return groupEntries(c, "PSDT", xs, func(x *xpsdt) StandAlloc {
		return StandAlloc{PSNO: c.groupNo("@PSNO", x.PSNO), PSST: c.text("PSST", x.PSST),
			STST: c.time("STST", x.STST), STET: c.time("STET", x.STET)}
	}, func(g StandAlloc) int8 { return g.PSNO }, "@PSNO", " %d: number appears twice")
}

func (c *conv) gtdt(xs []xgtdt) []GateAlloc {
	return groupEntries(c, "GTDT", xs, func(x *xgtdt) GateAlloc {
		return GateAlloc{GTNO: c.groupNo("@GTNO", x.GTNO), GATE: c.text("GATE", x.GATE),
			PGOT: c.time("PGOT", x.PGOT), PGCT: c.time("PGCT", x.PGCT),
			GOTM: c.time("GOTM", x.GOTM), GCTM: c.time("GCTM", x.GCTM), GTYP: c.text("GTYP", x.GTYP)}
	}, func(g GateAlloc) int8 { return g.GTNO }, "@GTNO", " %d: number appears twice")
}

func (c *conv) chdt(xs []xchdt) []ChuteAlloc {
	return groupEntries(c, "CHDT", xs, func(x *xchdt) ChuteAlloc {
		return ChuteAlloc{CHNO: c.groupNo("@CHNO", x.CHNO), CHUT: c.text("CHUT", x.CHUT), CCLS: c.text("CCLS", x.CCLS),
			PCBT: c.time("PCBT", x.PCBT), PCET: c.time("PCET", x.PCET),
			CBTM: c.time("CBTM", x.CBTM), CETM: c.time("CETM", x.CETM), CTYP: c.text("CTYP", x.CTYP)}
	}, func(g ChuteAlloc) int8 { return g.CHNO }, "@CHNO", " %d: number appears twice")
}

func (c *conv) ckdt(xs []xckdt) []CounterAlloc {
	return groupEntries(c, "CKDT", xs, func(x *xckdt) CounterAlloc {
		return CounterAlloc{CKNO: c.groupNo("@CKNO", x.CKNO), CHKC: c.text("CHKC", x.CHKC), CCLS: c.text("CCLS", x.CCLS),
			PCOT: c.time("PCOT", x.PCOT), PCCT: c.time("PCCT", x.PCCT),
			COTM: c.time("COTM", x.COTM), CCTM: c.time("CCTM", x.CCTM), CTYP: c.text("CTYP", x.CTYP)}
	}, func(g CounterAlloc) int8 { return g.CKNO }, "@CKNO", " %d: number appears twice")
}

func (c *conv) cldt(xs []xcldt) []BeltAlloc {
	return groupEntries(c, "CLDT", xs, func(x *xcldt) BeltAlloc {
		return BeltAlloc{CLNO: c.groupNo("@CLNO", x.CLNO), BELT: c.text("BELT", x.BELT), BCLS: c.text("BCLS", x.BCLS),
			PCOT: c.time("PCOT", x.PCOT), PCCT: c.time("PCCT", x.PCCT),
			FBAG: c.time("FBAG", x.FBAG), LBAG: c.time("LBAG", x.LBAG), BTYP: c.text("BTYP", x.BTYP)}
	}, func(g BeltAlloc) int8 { return g.CLNO }, "@CLNO", " %d: number appears twice")
}

func (c *conv) chot(xs []xchot) []Chocks {
	return groupEntries(c, "CHOT", xs, func(x *xchot) Chocks {
		return Chocks{CSNO: c.groupNo("@CSNO", x.CSNO), CHTM: c.time("CHTM", x.CHTM),
			CHID: c.text("CHID", x.CHID), CHST: c.text("CHST", x.CHST)}
	}, func(g Chocks) int8 { return g.CSNO }, "@CSNO", " %d: number appears twice")
}

func (c *conv) abtm(xs []xabtm) []AirbridgeOp {
	return groupEntries(c, "ABTM", xs, func(x *xabtm) AirbridgeOp {
		return AirbridgeOp{ASNO: c.groupNo("@ASNO", x.ASNO), ABDG: c.text("ABDG", x.ABDG),
			ABOP: c.text("ABOP", x.ABOP), AOTM: c.time("AOTM", x.AOTM)}
	}, func(g AirbridgeOp) int8 { return g.ASNO }, "@ASNO", " %d: number appears twice")
}

func (c *conv) dely(xs []xdely) []Delay {
	return groupEntries(c, "DELY", xs, func(x *xdely) Delay {
		g := Delay{CODE: attrVal(x.CODE), STRT: c.timeValue("@STRT", attrVal(x.STRT)), TEXT: strings.TrimSpace(x.Text)}
		if g.CODE == "" {
			c.missing("@CODE")
		}
		if s := attrVal(x.DURA); s != "" {
			if m, err := parseDuration(s); err != nil {
				c.bad("@DURA", s, err)
			} else {
				g.DURA = &m
			}
		}
		return g
	}, func(g Delay) string { return g.CODE }, "@CODE", " %q: code appears twice")
}

func (c *conv) erut(xs []xerut) []RouteStop {
	return groupEntries(c, "ERUT", xs, func(x *xerut) RouteStop {
		return RouteStop{RTNO: c.groupNo("@RTNO", x.RTNO), APCD: c.req("APCD", x.APCD),
			SCAT: c.time("SCAT", x.SCAT), SCDT: c.time("SCDT", x.SCDT)}
	}, func(g RouteStop) int8 { return g.RTNO }, "@RTNO", " %d: number appears twice")
}

func (c *conv) srvt(xs []xsrvt) []Service {
	return groupEntries(c, "SRVT", xs, func(x *xsrvt) Service {
		g := Service{SRTC: c.req("SRTC", x.SRTC), SRST: c.time("SRST", x.SRST), SRET: c.time("SRET", x.SRET),
			SRPR: c.i32("SRPR", x.SRPR), SANR: c.text("SANR", x.SANR), SARR: c.text("SARR", x.SARR)}
		if q := c.i8("SRQT", x.SRQT); q != nil {
			g.SRQT = *q
		} else if x.SRQT.s == "" {
			c.missing("SRQT")
		}
		return g
	}, func(g Service) string { return g.SRTC }, "SRTC", " %q: service appears twice")
}

func (c *conv) vipf(xs []xvipf) []VIP {
	var out []VIP
	for i := range xs {
		x := &xs[i]
		if x.empty() {
			continue
		}
		c.enter("VIPF", i+1)
		g := VIP{VPCD: c.req("VPCD", x.VPCD), VFES: c.i16("VFES", x.VFES)}
		for j := range x.VIPT {
			t := &x.VIPT[j]
			if t.empty() {
				continue
			}
			c.sub, c.sidx = "VIPT", j+1
			g.VIPT = append(g.VIPT, VIPT{VSCD: c.req("VSCD", t.VSCD), VTQY: c.i64("VTQY", t.VTQY),
				VTST: c.time("VTST", t.VTST), VTET: c.time("VTET", t.VTET)})
		}
		c.sub = ""
		for _, o := range out {
			if o.VPCD == g.VPCD {
				c.failf("VPCD", " %q: VIP appears twice", g.VPCD)
			}
		}
		out = append(out, g)
	}
	c.leave()
	return out
}

func (c *conv) psht(xs []xpsht) []StandPush {
	return groupEntries(c, "PSHT", xs, func(x *xpsht) StandPush {
		g := StandPush{PSTM: c.time("PSTM", x.PSTM), PSID: c.text("PSID", x.PSID), PUST: c.req("PUST", x.PUST)}
		if x.PSHN != nil {
			n := c.groupNo("@PSHN", x.PSHN)
			g.PSHN = &n
		}
		return g
	}, func(g StandPush) string { return g.PUST }, "PUST", " %q: stand appears twice")
}

func (c *conv) tipt(xs []xtipt) []StandTractor {
	return groupEntries(c, "TIPT", xs, func(x *xtipt) StandTractor {
		return StandTractor{TRTM: c.time("TRTM", x.TRTM), TRST: c.req("TRST", x.TRST)}
	}, func(g StandTractor) string { return g.TRST }, "TRST", " %q: stand appears twice")
}

// flight converts a SCHD FLTR into a Flight.
func (c *conv) flight(x *xrec) Flight {
	f := Flight{
		FLID: c.flidOf(x.FLID),
		ALCD: c.req("ALCD", x.ALCD), ALSC: c.text("ALSC", x.ALSC),
		FLNO: c.req("FLNO", x.FLNO),
		MVIN: c.enum("MVIN", x.MVIN, "A", "D"),
		FLTY: c.req("FLTY", x.FLTY),
		FLIN: c.enum("FLIN", x.FLIN, "D", "I", "M"),
		ACFT: c.req("ACFT", x.ACFT), RENO: c.text("RENO", x.RENO),
		TAOP: c.text("TAOP", x.TAOP), TAFL: c.text("TAFL", x.TAFL), TAID: c.i64("TAID", x.TAID),
		CSOP: c.text("CSOP", x.CSOP), CSFT: c.text("CSFT", x.CSFT), MAID: c.i64("MAID", x.MAID),
		TRML: c.text("TRML", x.TRML), MAXP: c.i16("MAXP", x.MAXP), STND: c.text("STND", x.STND),
		RUNW: c.text("RUNW", x.RUNW),
		ESTT: c.time("ESTT", x.ESTT), ACTT: c.time("ACTT", x.ACTT),
		FHAG: c.i32("FHAG", x.FHAG), PHAG: c.i32("PHAG", x.PHAG), MHAG: c.i32("MHAG", x.MHAG),
		APPT: c.time("APPT", x.APPT), BOTM: c.time("BOTM", x.BOTM), CNCL: c.time("CNCL", x.CNCL),
		EGSR: c.time("EGSR", x.EGSR), EGST: c.time("EGST", x.EGST), FINT: c.time("FINT", x.FINT),
		LACL: c.time("LACL", x.LACL),
		COBT: c.time("COBT", x.COBT), EOBT: c.time("EOBT", x.EOBT), TOBT: c.time("TOBT", x.TOBT),
		IEST: c.time("IEST", x.IEST),
		PEDT: c.time("PEDT", x.PEDT), PADT: c.time("PADT", x.PADT), NEAT: c.time("NEAT", x.NEAT),
		NAAT: c.time("NAAT", x.NAAT),
		FDIV: c.fdiv(x.FDIV), FRET: c.fret(x.FRET), FLAB: c.flab(x.FLAB),
		EXSC: c.text("EXSC", x.EXSC), EXSR: c.text("EXSR", x.EXSR), FTSS: c.text("FTSS", x.FTSS),
		REMC: c.text("REMC", x.REMC),
		VIPP: c.i16("VIPP", x.VIPP), VIPR: c.i8("VIPR", x.VIPR),
		LBNO: c.i32("LBNO", x.LBNO), LBWT: c.decimal("LBWT", x.LBWT), PAXC: c.i32("PAXC", x.PAXC),
		PSDT: c.psdt(x.PSDT), GTDT: c.gtdt(x.GTDT), CHDT: c.chdt(x.CHDT), CKDT: c.ckdt(x.CKDT),
		CLDT: c.cldt(x.CLDT), CHOT: c.chot(x.CHOT), ABTM: c.abtm(x.ABTM),
		DELY: c.dely(x.DELY), ERUT: c.erut(x.ERUT), SRVT: c.srvt(x.SRVT), VIPF: c.vipf(x.VIPF),
	}
	if f.MVIN == "" {
		c.missing("MVIN")
	}
	if f.FLIN == "" {
		c.missing("FLIN")
	}
	if t := c.time("SODT", x.SODT); t != nil {
		f.SODT = *t
	} else if x.SODT.s == "" {
		c.missing("SODT")
	}
	// PORT: entries without a time carry no value in a record.
	for _, p := range c.ports(x.PORT) {
		if p.POTM != nil {
			f.PORT = append(f.PORT, p)
		}
	}
	// TIPT: onto the stand rows it names.
	for _, t := range c.tipt(x.TIPT) {
		for i := range f.PSDT {
			if f.PSDT[i].PSST == t.TRST {
				f.PSDT[i].TRTM = t.TRTM
			}
		}
	}
	if f.FFID = c.text("FFID", x.FFID); f.FFID == "" && c.err == nil {
		f.FFID = f.ALCD + "-" + f.FLNO + "-" + f.MVIN + "-" + FormatDateTime(f.SODT, c.loc) + "-" + f.FLIN
	}
	return f
}

// gatherText adds the text piece just read to text, the element's text so far (pieces read
// before it, joined saying text is already d.join). The first piece is taken as is when it
// points into the input; a piece the scanner decoded into its buffer (the next token
// overwrites it), or any later piece, is copied into d.join.
func (d *scanner) gatherText(text []byte, pieces int, joined bool) ([]byte, bool) {
	c := d.charData()
	switch {
	case pieces == 0 && !d.inBuf():
		return c, joined
	case joined:
		d.join = append(d.join, c...)
		return d.join, true
	default:
		d.join = append(append(d.join[:0], text...), c...)
		return d.join, true
	}
}
