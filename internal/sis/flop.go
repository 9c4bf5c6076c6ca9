package sis

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	"msgx/internal/pipeline"
)

// FlopBody is the body of a FLOP message: one or more FLOP records, in message order, all of
// the message's STYP. A handler applies them together or not at all.
type FlopBody struct {
	Records []Flop `json:"FLOP"`
}

// FlopKind is the group of docs/sis-format.md §2.3 an operation STYP belongs to; it says how the
// payload applies to the flight.
type FlopKind byte

// The kinds of FLOP operation.
const (
	// FlopTime (A) sets one date-time; nil clears it.
	FlopTime FlopKind = 'A'
	// FlopCode (B) sets one code or text (MAXP: a number); "" or nil clears it.
	FlopCode FlopKind = 'B'
	// FlopAttr (C) sets one attribute+text element (FDIV, FRET, FLAB); nil clears it.
	FlopAttr FlopKind = 'C'
	// FlopValues (D) sets several scalars (EXSS, HNAG, TAOP, VIPP) or one PORT time; each
	// field without a value clears its flight field (PORT: an entry without POTM clears that
	// time).
	FlopValues FlopKind = 'D'
	// FlopReplace (E) carries a numbered group list that replaces the flight's list (matched
	// by number); the empty list clears the group.
	FlopReplace FlopKind = 'E'
	// FlopMerge (F) carries a keyed group list (DELY by CODE, ERUT by RTNO, SRVT by SRTC, VIPF
	// by VPCD); the empty list clears the group.
	FlopMerge FlopKind = 'F'
	// FlopStand (G) carries rows that update the flight's PSDT rows of the stand they name.
	FlopStand FlopKind = 'G'
	// FlopDelete (H) deletes the flight; it carries nothing.
	FlopDelete FlopKind = 'H'
)

func (k FlopKind) String() string { return string(rune(k)) }

type flopSpec struct {
	kind   FlopKind
	fields []string
}

// flopOrder is docs/sis-format.md §2.3 groups A–H, in its order.
var flopOrder = []string{
	// A
	"APPT", "BOTM", "CNCL", "EGSR", "EGST", "FINT", "LACL", "COBT", "CTOT", "EOBT", "TOBT", "IEST",
	"PEDT", "PADT", "NEAT", "NAAT",
	// B
	"ACFT", "FLIN", "FLTY", "FTSS", "MAXP", "REMC", "RENO", "RUNW", "STND", "TRML",
	// C
	"FDIV", "FRET", "FLAB",
	// D
	"EXSS", "HNAG", "TAOP", "VIPP", "PORT",
	// E
	"ABTM", "CHDT", "CHOT", "CKDT", "CLDT", "GTDT", "PSDT",
	// F
	"DELY", "ERUT", "SRVT", "VIPF",
	// G
	"PSHT", "TIPT",
	// H
	"FDEL",
}

var flopSpecs = func() map[string]flopSpec {
	kinds := map[FlopKind][]string{}
	kind := FlopTime
	for _, s := range flopOrder {
		switch s {
		case "ACFT":
			kind = FlopCode
		case "FDIV":
			kind = FlopAttr
		case "EXSS":
			kind = FlopValues
		case "ABTM":
			kind = FlopReplace
		case "DELY":
			kind = FlopMerge
		case "PSHT":
			kind = FlopStand
		case "FDEL":
			kind = FlopDelete
		}
		kinds[kind] = append(kinds[kind], s)
	}
	m := map[string]flopSpec{}
	for k, ss := range kinds {
		for _, s := range ss {
			m[s] = flopSpec{kind: k, fields: []string{s}}
		}
	}
	for s, f := range map[string][]string{
		"EXSS": {"EXSC", "EXSR"},
		"HNAG": {"FHAG", "PHAG", "MHAG"},
		"TAOP": {"TAOP", "TAFL", "TAID"},
		"VIPP": {"VIPP", "VIPR"},
		"FDEL": nil,
	} {
		m[s] = flopSpec{kind: m[s].kind, fields: f}
	}
	return m
}()

// flopLists are the payload fields that are lists (their "no value" is the empty list).
var flopLists = map[string]bool{
	"PORT": true, "ABTM": true, "CHDT": true, "CHOT": true, "CKDT": true, "CLDT": true, "GTDT": true,
	"PSDT": true, "DELY": true, "ERUT": true, "SRVT": true, "VIPF": true, "PSHT": true, "TIPT": true,
}

// flopKnown are the children SIS defines for a FLOP record (docs/sis-format.md §2.3): FLID, FFID, the
// elements of every STYP's payload, and those of §2.3 I bound inside FLOP without an STYP.
var flopKnown = func() map[string]bool {
	m := setOf("FLID FFID FDEL ALCD ALSC FLNO MVIN SODT CSOP CSFT MAID ESTT ACTT LBNO LBWT PAXC")
	for _, spec := range flopSpecs {
		for _, f := range spec.fields {
			m[f] = true
		}
	}
	return m
}()

// flopOwn returns the elements of a FLOP record that carry its STYP's payload: the ones
// whose absence means "clear" (FDEL: the element that must be empty).
func flopOwn(styp string) []string {
	if styp == "FDEL" {
		return []string{"FDEL"}
	}
	return flopSpecs[styp].fields
}

// FlopSTYPs returns the 48 FLOP operation STYPs the codec decodes (docs/sis-format.md §2.3 A–H), in
// that order. Any other FLOP STYP is UNSUPPORTED.
func FlopSTYPs() []string { return append([]string(nil), flopOrder...) }

// FlopFields returns the payload fields a FLOP of the STYP carries, by SIS name: the fields of
// Flop (and, except for G, of Flight) that the operation sets or clears. FDEL carries none.
// For G (PSHT, TIPT) the rows update the flight's PSDT entries.
func FlopFields(styp string) []string {
	return append([]string(nil), flopSpecs[styp].fields...)
}

// Flop is one FLOP record: the flight it is for (FLID, the only lookup key; FFID as sent,
// informative), the operation (STYP) and its payload, typed, in the fields named by
// FlopFields(STYP). Every other payload field is left empty and must be ignored. The payload
// fields have the name and the type of the Flight field they set, so a handler copies them:
//
//   - A (APPT … NAAT): the time, nil = clear.
//   - B (ACFT … TRML): the code or text, "" = clear (MAXP: nil = clear).
//   - C (FDIV, FRET, FLAB): the element, nil = clear (an element without attributes and text).
//   - D: EXSS sets EXSC and EXSR, HNAG FHAG PHAG MHAG, TAOP TAOP TAFL TAID, VIPP VIPP VIPR;
//     each one without a value clears that field (the legacy unlinked the turnaround when any
//     of TAOP TAFL TAID was missing; the values are passed as sent for the handler to decide).
//     PORT carries one or more entries with distinct POID, at least one; an entry's POTM nil
//     clears that time.
//   - E (ABTM … PSDT): the whole numbered list; empty = clear the group.
//   - F (DELY, ERUT, SRVT, VIPF): the keyed list; empty = clear the group.
//   - G: PSHT and TIPT rows, each naming its stand (PUST, TRST; distinct within the message).
//   - H (FDEL): nothing; the flight is deleted.
//
// In JSON a Flop holds FLID, FFID, STYP and exactly the fields of its STYP, with null (or [])
// for "no value".
type Flop struct {
	FLID int64  `json:"FLID"`
	FFID string `json:"FFID,omitempty"`
	STYP string `json:"STYP"`

	// A
	APPT *time.Time `json:"APPT,omitempty"`
	BOTM *time.Time `json:"BOTM,omitempty"`
	CNCL *time.Time `json:"CNCL,omitempty"`
	EGSR *time.Time `json:"EGSR,omitempty"`
	EGST *time.Time `json:"EGST,omitempty"`
	FINT *time.Time `json:"FINT,omitempty"`
	LACL *time.Time `json:"LACL,omitempty"`
	COBT *time.Time `json:"COBT,omitempty"`
	CTOT *time.Time `json:"CTOT,omitempty"`
	EOBT *time.Time `json:"EOBT,omitempty"`
	TOBT *time.Time `json:"TOBT,omitempty"`
	IEST *time.Time `json:"IEST,omitempty"`
	PEDT *time.Time `json:"PEDT,omitempty"`
	PADT *time.Time `json:"PADT,omitempty"`
	NEAT *time.Time `json:"NEAT,omitempty"`
	NAAT *time.Time `json:"NAAT,omitempty"`

	// B
	ACFT string `json:"ACFT,omitempty"`
	FLIN string `json:"FLIN,omitempty"`
	FLTY string `json:"FLTY,omitempty"`
	FTSS string `json:"FTSS,omitempty"`
	MAXP *int16 `json:"MAXP,omitempty"`
	REMC string `json:"REMC,omitempty"`
	RENO string `json:"RENO,omitempty"`
	RUNW string `json:"RUNW,omitempty"`
	STND string `json:"STND,omitempty"`
	TRML string `json:"TRML,omitempty"`

	// C
	FDIV *Divert       `json:"FDIV,omitempty"`
	FRET *AirReturn    `json:"FRET,omitempty"`
	FLAB *LandingAbort `json:"FLAB,omitempty"`

	// D
	EXSC string `json:"EXSC,omitempty"`
	EXSR string `json:"EXSR,omitempty"`
	FHAG *int32 `json:"FHAG,omitempty"`
	PHAG *int32 `json:"PHAG,omitempty"`
	MHAG *int32 `json:"MHAG,omitempty"`
	TAOP string `json:"TAOP,omitempty"`
	TAFL string `json:"TAFL,omitempty"`
	TAID *int64 `json:"TAID,omitempty"`
	VIPP *int16 `json:"VIPP,omitempty"`
	VIPR *int8  `json:"VIPR,omitempty"`
	PORT []Port `json:"PORT,omitempty"`

	// E
	ABTM []AirbridgeOp  `json:"ABTM,omitempty"`
	CHDT []ChuteAlloc   `json:"CHDT,omitempty"`
	CHOT []Chocks       `json:"CHOT,omitempty"`
	CKDT []CounterAlloc `json:"CKDT,omitempty"`
	CLDT []BeltAlloc    `json:"CLDT,omitempty"`
	GTDT []GateAlloc    `json:"GTDT,omitempty"`
	PSDT []StandAlloc   `json:"PSDT,omitempty"`

	// F
	DELY []Delay     `json:"DELY,omitempty"`
	ERUT []RouteStop `json:"ERUT,omitempty"`
	SRVT []Service   `json:"SRVT,omitempty"`
	VIPF []VIP       `json:"VIPF,omitempty"`

	// G
	PSHT []StandPush    `json:"PSHT,omitempty"`
	TIPT []StandTractor `json:"TIPT,omitempty"`
}

// Kind returns the kind of the record's STYP (0 if unknown).
func (f Flop) Kind() FlopKind { return flopSpecs[f.STYP].kind }

// MarshalJSON writes FLID, FFID, STYP and exactly the payload fields of the STYP, with null
// (scalars) or [] (lists) where there is no value, so a "clear" is visible.
func (f Flop) MarshalJSON() ([]byte, error) {
	type plain Flop
	all, err := json.Marshal(plain(f))
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(all, &m); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"FLID":%d`, f.FLID)
	if f.FFID != "" {
		ffid, _ := json.Marshal(f.FFID)
		b.WriteString(`,"FFID":`)
		b.Write(ffid)
	}
	styp, _ := json.Marshal(f.STYP)
	b.WriteString(`,"STYP":`)
	b.Write(styp)
	for _, name := range flopSpecs[f.STYP].fields {
		b.WriteString(`,"` + name + `":`)
		switch v, ok := m[name]; {
		case ok:
			b.Write(v)
		case flopLists[name]:
			b.WriteString("[]")
		default:
			b.WriteString("null")
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func init() { register("FLOP", decodeFLOP) }

// decodeFLOP decodes the FLOP elements of a FLOP message one at a time.
func decodeFLOP(raw []byte, meta Meta, opt Options, w *Warnings) (any, error) {
	styp := meta.STYP
	if _, ok := flopSpecs[styp]; !ok {
		return nil, pipeline.Errorf(pipeline.Unsupported, "FLOP STYP %q is not one the codec decodes", styp)
	}
	body := &FlopBody{}
	n := 0
	err := forBody(raw, func(d *scanner, st *xml.StartElement) error {
		if st.Name.Local != "FLOP" {
			msgChild(w, st.Name.Local)
			return skipElement(d)
		}
		n++
		var x xrec
		if err := readRecord(d, st, &x); err != nil {
			return pipeline.Errorf(pipeline.Malformed, "FLOP[%d]: not well-formed XML: %v", n, err)
		}
		c := conv{loc: opt.location(), kind: "FLOP", n: n, warn: w}
		f := c.flop(styp, &x)
		if c.err != nil {
			return c.err
		}
		body.Records = append(body.Records, f)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, pipeline.Errorf(pipeline.Malformed, "no <FLOP> element in the message")
	}
	return body, nil
}

// flop converts a FLOP element into a Flop of the STYP, reading only that STYP's payload
// (what else it holds: see flopExtra).
func (c *conv) flop(styp string, x *xrec) Flop {
	f := Flop{FLID: c.flidOf(x.FLID), FFID: c.text("FFID", x.FFID), STYP: styp}
	if c.err != nil {
		return f
	}
	c.flopExtra(styp, x)
	if c.err != nil {
		return f
	}
	if !c.flopValue(styp, x, &f) {
		c.flopGroup(styp, x, &f)
	}
	return f
}

// flopValue reads the payload of a STYP of groups A and B (one time, or one value) into f,
// and reports whether styp is one of them.
func (c *conv) flopValue(styp string, x *xrec, f *Flop) bool {
	switch styp {
	// A
	case "APPT":
		f.APPT = c.time(styp, x.APPT)
	case "BOTM":
		f.BOTM = c.time(styp, x.BOTM)
	case "CNCL":
		f.CNCL = c.time(styp, x.CNCL)
	case "EGSR":
		f.EGSR = c.time(styp, x.EGSR)
	case "EGST":
		f.EGST = c.time(styp, x.EGST)
	case "FINT":
		f.FINT = c.time(styp, x.FINT)
	case "LACL":
		f.LACL = c.time(styp, x.LACL)
	case "COBT":
		f.COBT = c.time(styp, x.COBT)
	case "CTOT":
		f.CTOT = c.time(styp, x.CTOT)
	case "EOBT":
		f.EOBT = c.time(styp, x.EOBT)
	case "TOBT":
		f.TOBT = c.time(styp, x.TOBT)
	case "IEST":
		f.IEST = c.time(styp, x.IEST)
	case "PEDT":
		f.PEDT = c.time(styp, x.PEDT)
	case "PADT":
		f.PADT = c.time(styp, x.PADT)
	case "NEAT":
		f.NEAT = c.time(styp, x.NEAT)
	case "NAAT":
		f.NAAT = c.time(styp, x.NAAT)
	// B
	case "ACFT":
		f.ACFT = c.text(styp, x.ACFT)
	case "FLIN":
		f.FLIN = c.enum(styp, x.FLIN, "D", "I", "M")
	case "FLTY":
		f.FLTY = c.text(styp, x.FLTY)
	case "FTSS":
		f.FTSS = c.text(styp, x.FTSS)
	case "MAXP":
		f.MAXP = c.i16(styp, x.MAXP)
	case "REMC":
		f.REMC = c.text(styp, x.REMC)
	case "RENO":
		f.RENO = c.text(styp, x.RENO)
	case "RUNW":
		f.RUNW = c.text(styp, x.RUNW)
	case "STND":
		f.STND = c.text(styp, x.STND)
	case "TRML":
		f.TRML = c.text(styp, x.TRML)
	default:
		return false
	}
	return true
}

// flopGroup reads the payload of a STYP of groups C to H (elements with children, or a set
// of values) into f.
func (c *conv) flopGroup(styp string, x *xrec, f *Flop) {
	switch styp {
	// C
	case "FDIV":
		f.FDIV = c.fdiv(x.FDIV)
	case "FRET":
		f.FRET = c.fret(x.FRET)
	case "FLAB":
		f.FLAB = c.flab(x.FLAB)
	// D
	case "EXSS":
		f.EXSC, f.EXSR = c.text("EXSC", x.EXSC), c.text("EXSR", x.EXSR)
	case "HNAG":
		f.FHAG, f.PHAG, f.MHAG = c.i32("FHAG", x.FHAG), c.i32("PHAG", x.PHAG), c.i32("MHAG", x.MHAG)
	case "TAOP":
		f.TAOP, f.TAFL, f.TAID = c.text("TAOP", x.TAOP), c.text("TAFL", x.TAFL), c.i64("TAID", x.TAID)
	case "VIPP":
		f.VIPP, f.VIPR = c.i16("VIPP", x.VIPP), c.i8("VIPR", x.VIPR)
	case "PORT":
		f.PORT = c.ports(x.PORT)
		if len(f.PORT) == 0 {
			c.failf("PORT", ": missing (a PORT operation needs a PORT element with its POID)")
		}
	// E
	case "ABTM":
		f.ABTM = c.abtm(x.ABTM)
	case "CHDT":
		f.CHDT = c.chdt(x.CHDT)
	case "CHOT":
		f.CHOT = c.chot(x.CHOT)
	case "CKDT":
		f.CKDT = c.ckdt(x.CKDT)
	case "CLDT":
		f.CLDT = c.cldt(x.CLDT)
	case "GTDT":
		f.GTDT = c.gtdt(x.GTDT)
	case "PSDT":
		f.PSDT = c.psdt(x.PSDT)
	// F
	case "DELY":
		f.DELY = c.dely(x.DELY)
	case "ERUT":
		f.ERUT = c.erut(x.ERUT)
	case "SRVT":
		f.SRVT = c.srvt(x.SRVT)
	case "VIPF":
		f.VIPF = c.vipf(x.VIPF)
	// G
	case "PSHT":
		f.PSHT = c.psht(x.PSHT)
	case "TIPT":
		f.TIPT = c.tipt(x.TIPT)
	// H
	case "FDEL":
		c.fdel(x.FDEL)
	}
}

// fdel checks the FDEL elements of a FDEL operation: one, and empty.
func (c *conv) fdel(fdel []xfdel) {
	if len(fdel) > 1 {
		c.failf("FDEL", ": appears %d times", len(fdel))
	}
	for _, d := range fdel {
		switch text := strings.TrimSpace(d.Text); {
		case text != "":
			c.bad("FDEL", text, errors.New("must be empty"))
		case len(d.Elems) > 0:
			c.failf("FDEL", " has a child <%s>: must be empty", d.Elems[0])
		case len(d.Attrs) > 0:
			c.failf("FDEL", " has an attribute %s: must be empty", d.Attrs[0].Name.Local)
		}
	}
}

// flopCommon are the elements any FLOP record may hold beside its STYP's own: FLID and FFID
// (docs/sis-format.md §2.3) and the flight's schedule identity the legacy bound inside FLOP (§2.3 I).
// Every other element of flopKnown is the payload of another operation (ESTT, ACTT, LBNO,
// LBWT, PAXC among them: operations msgx does not decode).
var flopCommon = setOf("FLID FFID ALCD ALSC FLNO MVIN SODT CSOP CSFT MAID")

// flopCommonSlots are the fields of flopCommon in xrec, to count them without a map lookup.
var flopCommonSlots = func() []xslot {
	var out []xslot
	for _, n := range sortedNames(flopCommon) {
		out = append(out, xrecPlan.elems[n])
	}
	return out
}()

// flopAllowed maps each STYP to the elements its record may hold without a remark: the
// common ones and its own.
var flopAllowed = func() map[string]map[string]bool {
	m := map[string]map[string]bool{}
	for styp := range flopSpecs {
		set := maps.Clone(flopCommon)
		for _, e := range flopOwn(styp) {
			set[e] = true
		}
		m[styp] = set
	}
	return m
}()

// flopEntryOmit are, per group, the children the reader knows for an entry that a FLOP entry
// does not carry (SCHS's day offsets of an ERUT stop): their absence clears nothing.
var flopEntryOmit = map[string][]string{"ERUT": {"SADC", "SDDC"}}

// entryText stands, in what an element lacks, for its text where the element carries a value
// as text (the reason of FDIV, FRET and FLAB; the description of a DELY entry).
const entryText = "#text"

// flopExtra applies the rule against silent clears (docs/sis-format.md §6.1-2: an absent payload
// element, or a child absent from a group entry, means "clear") to the record and to each
// entry of its STYP's groups alike: one that lacks some of what it carries and holds a stray
// element (another STYP's, or one SIS does not define there) is MALFORMED (see strayClear).
// Everything else it reads past is reported as a warning.
func (c *conv) flopExtra(styp string, x *xrec) {
	own := flopOwn(styp)
	expected := 0
	v := reflect.ValueOf(x).Elem()
	for _, slot := range flopCommonSlots {
		expected += countIn(v, slot)
	}
	var missing []string
	for _, e := range own {
		n := x.count(e)
		expected += n
		if n == 0 {
			missing = append(missing, e)
		}
	}
	var unknown, other []string
	if x.children != expected {
		for _, e := range x.unknown(flopAllowed[styp]) {
			if flopKnown[e] {
				other = append(other, e)
			} else {
				unknown = append(unknown, e)
			}
		}
	}
	if c.err = strayClear(c.where(), "FLOP "+styp+" record", append(other, unknown...), missing); c.err != nil {
		return
	}
	label := "FLOP " + styp
	x.warnTop(unknown, flopKnown, own, label, c.n, c.warn)
	for _, e := range other {
		c.warn.Addf("element %s in %s record %d ignored: not an element of FLOP %s", e, label, c.n, styp)
	}
	x.nestedUnknown(flopKnown, func(u nested) {
		if c.err != nil {
			return
		}
		if u.group() != "" && slices.Contains(own, u.path[0].name) {
			what := u.group() + " entry"
			if !flopLists[u.group()] && u.group() != "VIPT" {
				what = u.group() + " element"
			}
			if c.err = strayClear(c.where()+" "+u.where(), what, u.strays(), u.flopLacks()); c.err != nil {
				return
			}
		}
		u.warn(label, c.n, c.warn)
	})
}

// strayClear is the rule against silent clears, in one place for a FLOP record and for an
// entry of its STYP's groups: what (at where) holds the stray elements found and lacks
// missing, whose absence would clear a value the stray may have been meant for. With either
// list empty it returns nil; otherwise a MALFORMED error naming both, with the element
// probably meant where a stray is one edit (or a letter case) from a missing one:
//
//	FLOP[1] FLID 7001 CHOT[1]: CHOT entry has <STND> but no <CHST>, which would clear it
//	FLOP[1] FLID 7001: FLOP STND record has <STDN> but no <STND>, which would clear it (did you mean STND?)
func strayClear(where, what string, found, missing []string) error {
	if len(found) == 0 || len(missing) == 0 {
		return nil
	}
	lacks := make([]string, len(missing))
	for i, m := range missing {
		lacks[i] = "<" + m + ">"
		if m == entryText {
			lacks[i] = "text"
		}
	}
	var hints []string
	for _, f := range found {
		if s := oneEdit(f, missing); s != "" {
			if len(found) == 1 {
				hints = append(hints, s)
			} else {
				hints = append(hints, s+" for "+short(f))
			}
		}
	}
	hint := ""
	if len(hints) > 0 {
		hint = " (did you mean " + strings.Join(hints, ", ") + "?)"
	}
	return pipeline.Errorf(pipeline.Malformed, "%s: %s has %s but no %s, which would clear it%s",
		where, what, tags(found), strings.Join(lacks, ", "), hint)
}

// oneEdit returns the candidate name is one edit (or a letter case) away from, or "".
func oneEdit(name string, candidates []string) string {
	for _, c := range candidates {
		if c != entryText && (strings.EqualFold(c, name) || editDistance(strings.ToUpper(name), c) <= 1) {
			return c
		}
	}
	return ""
}

// flopLacks returns what the FLOP group entry holding u lacks of what it carries, each
// absence a clear: the children it does not hold (not even empty), and its text (entryText)
// where the group carries one and it is blank.
func (u nested) flopLacks() []string {
	var out []string
	for _, name := range u.children() {
		if !slices.Contains(flopEntryOmit[u.group()], name) && !presentIn(u.entry, u.plan, name) {
			out = append(out, name)
		}
	}
	if u.plan.char >= 0 && strings.TrimSpace(u.entry.Field(u.plan.char).String()) == "" {
		out = append(out, entryText)
	}
	return out
}

// strays returns the children of the entry holding u that its group does not define, each
// once, in message order.
func (u nested) strays() []string {
	var out []string
	for _, n := range *u.entry.Field(u.plan.anyElem).Addr().Interface().(*[]string) {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// tags formats names as <A>, <B>.
func tags(names []string) string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = "<" + short(n) + ">"
	}
	return strings.Join(out, ", ")
}
