package sis

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
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

// FlopKindOf returns the kind of a FLOP STYP, or false when the codec does not know it.
func FlopKindOf(styp string) (FlopKind, bool) {
	s, ok := flopSpecs[styp]
	return s.kind, ok
}

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
// (elements of other STYPs are ignored, as the legacy did; unknown ones see flopUnknown).
func (c *conv) flop(styp string, x *xrec) Flop {
	f := Flop{FLID: c.flidOf(x.FLID), FFID: c.text("FFID", x.FFID), STYP: styp}
	if c.err != nil {
		return f
	}
	c.flopUnknown(styp, x)
	if c.err != nil {
		return f
	}
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
		if len(x.FDEL) > 1 {
			c.failf("FDEL", ": appears %d times", len(x.FDEL))
		}
		for _, d := range x.FDEL {
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
	return f
}

// flopUnknown applies the rule against silent clears (docs/sis-format.md §2.3 and §5.15): an absent
// payload element means "clear", so a record that lacks one of its STYP's elements while
// holding an element SIS does not define for FLOP (a misspelt or wrong-case tag, most likely
// the missing one) is MALFORMED, naming the element it probably meant. Otherwise unknown
// elements are read past and reported as warnings.
func (c *conv) flopUnknown(styp string, x *xrec) {
	unknown := x.unknown(flopKnown)
	if len(unknown) == 0 {
		x.warnUnknown(flopKnown, flopOwn(styp), "FLOP "+styp, c.n, c.warn)
		return
	}
	var missing []string
	for _, e := range flopOwn(styp) {
		if !x.present(e) {
			missing = append(missing, e)
		}
	}
	if len(missing) == 0 {
		x.warnUnknown(flopKnown, flopOwn(styp), "FLOP "+styp, c.n, c.warn)
		return
	}
	name, hint := unknown[0], ""
	for _, u := range unknown {
		if s := suggest(u, missing); s != "" {
			name, hint = u, " (did you mean "+s+"?)"
			break
		}
	}
	if hint == "" {
		hint = didYouMean(name, append(missing, sortedNames(flopKnown)...))
		hint += fmt.Sprintf("; the record has no %s, which would clear it", strings.Join(missing, ", "))
	}
	if c.err == nil {
		c.err = pipeline.Errorf(pipeline.Malformed, "%s: unknown element %s in FLOP %s%s", c.where(), short(name), styp, hint)
	}
}
