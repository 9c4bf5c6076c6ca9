// Package sis is the codec of the AODB's SIS XML messages: the envelope (MSG and its META),
// the typed bodies of every TYPE, the date formats, and the line between MALFORMED (never
// valid) and CODEC_ERROR (well-formed SIS the decoder cannot read). It does no I/O.
//
// Decode reads the envelope, checks the whole document is well-formed, then hands the bytes
// to the body decoder registered for the message's TYPE. A TYPE with no body decoder is
// UNSUPPORTED. Errors carry a pipeline.ErrorClass.
//
// # Classes of a rejection
//
// Every rejection is classified by one rule, so replay (which skips MALFORMED) does the right
// thing:
//
//   - MALFORMED: the message breaks SIS itself, as docs/sis-format.md describes it, and no
//     later version of msgx can read it: not well-formed XML, no MSG or no usable META, a
//     required element or attribute missing or empty, a singleton element repeated, a value
//     outside its enumeration (FDIV DDIR="TOO"), an empty mandatory attribute (FLAB
//     ARES=""), a number that does not parse or exceeds the width of §1.5, a date or time
//     that does not exist or has the wrong length, a group number or key used twice, a
//     duplicate FLID in one SCHD or key in one reference message, RECS that is not a count
//     or promises more records than a replace (DNLD/RESP) holds, a FLOP record that lacks
//     its STYP's element and holds an element SIS does not define there (a misspelt tag
//     would otherwise read as "clear").
//   - CODEC_ERROR: well-formed SIS this decoder cannot read yet: an element or structure
//     that docs/sis-format.md does not describe, where the decoder needs to understand it to
//     take the value (an element inside a reference record's simple element), or more
//     records than Options.MaxRecords (sis.max-records) allows. Replaying it after msgx
//     learns the structure, or after the limit is raised, can succeed.
//   - UNSUPPORTED: a TYPE, or a FLOP STYP, that has no decoder.
//
// Every body decoder classifies its errors explicitly; Decode's wrapping of an unclassified
// body error as CODEC_ERROR is only a fallback.
//
// # What the decoder reads past
//
// An element SIS does not define where it appears (META, the SCHD/SCHS wrapper, MSG, a FLTR,
// a FLOP record beside its STYP's element, a reference record) is ignored and reported in
// Message.Warnings, as are RECS mismatches that do not endanger a replace. In a SCHD or a
// reference message, a record that fails validation does not fail the message: it is listed
// in the body's Invalid (with its class and reason) and the others are decoded; only a
// message whose every record is invalid fails whole.
package sis

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
	"time"

	"msgx/internal/config"
	"msgx/internal/pipeline"
)

// Meta is the META block of a message.
type Meta struct {
	SNDR string    `json:"SNDR"`
	SEQN string    `json:"SEQN"`
	DTTM time.Time `json:"DTTM"` // as the sender wrote it, read in the airport's zone, kept in UTC
	TYPE string    `json:"TYPE"`
	STYP string    `json:"STYP"`
	// Day is the sender's calendar day of DTTM (yyyyMMdd), used by the identity's day boundary.
	Day string `json:"-"`
}

// Tag is the type tag of the message, TYPE-STYP (FLOP-CHOT, SCHD-DNLD, AIRL-ADD…): the key of
// the handler registry and of the logs.
func (m Meta) Tag() string { return m.TYPE + "-" + m.STYP }

// Message is a decoded message: its META and its typed body.
type Message struct {
	Meta Meta `json:"meta"`
	// Body is the TYPE's typed body (*RefBody for reference data, …).
	Body any `json:"body"`
	// Warnings are what the decoder read past (an unknown element beside the known ones, a
	// record left out); the pump stores them with the message.
	Warnings []string `json:"warnings,omitempty"`
}

// Tag is the message's type tag.
func (m *Message) Tag() string { return m.Meta.Tag() }

// Options are the settings a body decoder may need.
type Options struct {
	// Location is the airport's zone; every body time is local time in it. Nil means Asia/Shanghai.
	Location *time.Location
	// MaxRecords bounds the records one message may carry (config sis.max-records): the
	// FLOP, reference-data and other children of MSG, and the FLTRs of a SCHD or SCHS. A
	// message with more is a CODEC_ERROR before its body is decoded, so one huge message
	// cannot take the memory of the server. 0 means DefaultMaxRecords.
	MaxRecords int
}

// DefaultMaxRecords is the records a message may carry when Options.MaxRecords is 0: the
// configuration's default of sis.max-records, so that a decoder given no limit holds the one
// an operator who set none runs with.
const DefaultMaxRecords = config.DefaultSISMaxRecords

func (o Options) maxRecords() int {
	if o.MaxRecords > 0 {
		return o.MaxRecords
	}
	return DefaultMaxRecords
}

func (o Options) location() *time.Location {
	if o.Location != nil {
		return o.Location
	}
	return defaultLocation
}

var defaultLocation = mustLoad("Asia/Shanghai")

func mustLoad(name string) *time.Location {
	loc, err := time.LoadLocation(name)
	if err != nil {
		return time.FixedZone("UTC+8", 8*3600)
	}
	return loc
}

// BodyDecoder decodes the body of one TYPE from the whole raw document. meta is already
// decoded. It returns a *pipeline.Error (MALFORMED, CODEC_ERROR, UNSUPPORTED) when it cannot,
// and adds to w what it read past (unknown elements, a RECS count it tolerated).
type BodyDecoder func(raw []byte, meta Meta, opt Options, w *Warnings) (any, error)

// maxWarnings bounds Message.Warnings: a 10 MB schedule with a stray element in every record
// must not produce a 3,000-line list.
const maxWarnings = 20

// Warnings collects the warnings of one decoding: deduplicated, in the order first met, at
// most maxWarnings of them followed by "and N more warnings". The zero value is ready; a nil
// *Warnings drops everything.
type Warnings struct {
	seen map[string]struct{}
	list []string
	more int
}

// Addf adds one warning unless the same text was already added.
func (w *Warnings) Addf(format string, args ...any) {
	if w == nil {
		return
	}
	s := fmt.Sprintf(format, args...)
	if _, dup := w.seen[s]; dup {
		return
	}
	if w.seen == nil {
		w.seen = map[string]struct{}{}
	}
	w.seen[s] = struct{}{}
	if len(w.list) < maxWarnings {
		w.list = append(w.list, s)
		return
	}
	w.more++
}

// List returns the warnings, nil when there are none.
func (w *Warnings) List() []string {
	if w == nil || len(w.list) == 0 {
		return nil
	}
	out := append([]string(nil), w.list...)
	if w.more > 0 {
		out = append(out, fmt.Sprintf("and %d more warnings", w.more))
	}
	return out
}

var bodyDecoders = map[string]BodyDecoder{}

// register adds the body decoder of a TYPE; each body file calls it from init.
func register(typ string, d BodyDecoder) { bodyDecoders[typ] = d }

// Decode decodes one message. On error the returned Message still carries the META when the
// envelope was usable, so the caller can record the type tag. Warnings (what the decoder read
// past) are on the Message, deduplicated and capped, success or not.
func Decode(raw []byte, opt Options) (*Message, error) {
	var w Warnings
	meta, err := decodeEnvelope(raw, opt, &w)
	if err != nil {
		return nil, err
	}
	msg := &Message{Meta: meta}
	dec, ok := bodyDecoders[meta.TYPE]
	if !ok {
		msg.Warnings = w.List()
		return msg, pipeline.Errorf(pipeline.Unsupported, "no decoder for TYPE %q", meta.TYPE)
	}
	body, err := dec(raw, meta, opt, &w)
	msg.Warnings = w.List()
	if err != nil {
		var pe *pipeline.Error
		if !errors.As(err, &pe) {
			err = pipeline.Wrap(pipeline.CodecError, err)
		}
		return msg, fmt.Errorf("%s: %w", meta.Tag(), err)
	}
	msg.Body = body
	return msg, nil
}

// NewDecoder returns an xml.Decoder over raw, set up the way every SIS decoder reads:
// strict, and taking the stored text as UTF-8 whatever its declaration says (the inbox
// converts declared charsets on receipt).
func NewDecoder(raw []byte) *xml.Decoder {
	d := xml.NewDecoder(bytes.NewReader(raw))
	d.Strict = true
	d.CharsetReader = func(_ string, in io.Reader) (io.Reader, error) { return in, nil }
	return d
}

var (
	seqnPattern = regexp.MustCompile(`^[0-9]{1,18}$`)
	typePattern = regexp.MustCompile(`^[A-Z]{4}$`)
	stypPattern = regexp.MustCompile(`^[A-Z]{3,4}$`)
)

// metaFields are the META children SIS defines (§1.2); any other is reported and ignored.
var metaFields = map[string]bool{"SNDR": true, "SEQN": true, "DTTM": true, "TYPE": true, "STYP": true}

// decodeEnvelope reads the META of raw and checks that the whole document is well-formed XML
// with one MSG root, adding what it read past to w (nil: nowhere). Any failure is MALFORMED.
func decodeEnvelope(raw []byte, opt Options, w *Warnings) (Meta, error) {
	// First with the codec's own scanner, which vouches only for documents encoding/xml
	// accepts too; anything it does not vouch for is read again with encoding/xml, which
	// then gives the verdict. The warnings of the first try are kept only if it stands.
	var fast Warnings
	s := getScanner(raw, true)
	meta, err := envelopeOf(s, opt, &fast)
	s.release()
	if !errors.Is(err, errUnsure) {
		if w != nil {
			*w = fast
		}
		return meta, err
	}
	return envelopeOf(&xmlTokens{d: NewDecoder(raw)}, opt, w)
}

// envelopeOf reads the META of the document d tokenizes and checks that the whole document is
// well-formed with one MSG root. It passes errUnsure through unclassified.
func envelopeOf(d tokenizer, opt Options, w *Warnings) (Meta, error) {
	// Raw tokens (no name-space work, no copies; SIS has no name spaces) leave matching end
	// tags to us. The open elements stay here, where their first few need no allocation.
	var stack []xml.Name
	e := envelopeScan{maxRecords: opt.maxRecords()}
	for {
		kind, err := d.next()
		if err == io.EOF {
			break
		}
		if errors.Is(err, errUnsure) {
			return Meta{}, err
		}
		if err != nil {
			return Meta{}, pipeline.Errorf(pipeline.Malformed, "not well-formed XML: %v", err)
		}
		switch kind {
		case tokStart:
			t := d.startElem()
			if err := e.start(stack, t, w); err != nil {
				return Meta{}, err
			}
			stack = append(stack, t.Name)
		case tokEnd:
			name := d.endName()
			if len(stack) == 0 || stack[len(stack)-1] != name {
				return Meta{}, pipeline.Errorf(pipeline.Malformed, "not well-formed XML: unexpected end element </%s>", qname(name))
			}
			stack = stack[:len(stack)-1]
			if err := e.end(stack); err != nil {
				return Meta{}, err
			}
		case tokText:
			if err := e.text(stack, d.charData()); err != nil {
				return Meta{}, err
			}
		}
	}
	if err := e.finished(stack); err != nil {
		return Meta{}, err
	}
	return metaOf(e.fields, opt)
}

// envelopeScan is what envelopeOf has read so far, besides the open elements.
type envelopeScan struct {
	rootDone            bool
	sawMeta             bool
	metaLike            string // a child of MSG named META but for letter case (<Meta>)
	records, maxRecords int
	fields              map[string]string
	field               string       // the META child being read
	fieldText           bytes.Buffer // its text
}

// start takes the start tag t opened under the open elements stack.
func (e *envelopeScan) start(stack []xml.Name, t *xml.StartElement, w *Warnings) error {
	if e.rootDone {
		return pipeline.Errorf(pipeline.Malformed, "element <%s> after the end of <MSG>", t.Name.Local)
	}
	if isRecord(stack, t.Name.Local) {
		if e.records++; e.records > e.maxRecords {
			// Not MALFORMED: the message may be valid SIS, which msgx reads once the
			// limit is raised; CODEC_ERROR is parked and stays replayable.
			return pipeline.Errorf(pipeline.CodecError, "more than %d records in one message (the limit sis.max-records sets); record %d is a <%s>", e.maxRecords, e.records, t.Name.Local)
		}
	}
	switch depth := len(stack); {
	case depth == 0 && (t.Name.Local != "MSG" || t.Name.Space != ""):
		return pipeline.Errorf(pipeline.Malformed, "root element is <%s>, want <MSG>", qname(t.Name))
	case depth == 1 && t.Name.Local == "META":
		if e.sawMeta {
			return pipeline.Errorf(pipeline.Malformed, "more than one <META>")
		}
		e.sawMeta = true
		e.fields = map[string]string{}
	case depth == 1 && e.metaLike == "" && strings.EqualFold(t.Name.Local, "META"):
		e.metaLike = t.Name.Local
	case depth == 2 && inMeta(stack):
		e.field = t.Name.Local
		e.fieldText.Reset()
		if !metaFields[e.field] {
			w.Addf("unknown element %s in META ignored", short(e.field))
		}
	case depth == 3 && inMeta(stack[:2]):
		return pipeline.Errorf(pipeline.Malformed, "META/%s holds an element <%s>", stack[2].Local, t.Name.Local)
	}
	return nil
}

// end takes the end of an element, which left the open elements stack.
func (e *envelopeScan) end(stack []xml.Name) error {
	if len(stack) == 2 && inMeta(stack) {
		if _, dup := e.fields[e.field]; dup && metaFields[e.field] {
			return pipeline.Errorf(pipeline.Malformed, "META/%s appears twice", e.field)
		}
		e.fields[e.field] = strings.TrimSpace(e.fieldText.String())
	}
	if len(stack) == 0 {
		e.rootDone = true
	}
	return nil
}

// text takes the character data t read inside the open elements stack.
func (e *envelopeScan) text(stack []xml.Name, t []byte) error {
	if len(stack) == 0 && len(bytes.TrimSpace(t)) > 0 {
		return pipeline.Errorf(pipeline.Malformed, "text outside <MSG>")
	}
	if len(stack) == 3 && inMeta(stack[:2]) {
		e.fieldText.Write(t)
	}
	return nil
}

// finished checks, at the end of the document, with stack the elements still open, that MSG
// was read whole and held a META.
func (e *envelopeScan) finished(stack []xml.Name) error {
	if len(stack) > 0 {
		return pipeline.Errorf(pipeline.Malformed, "not well-formed XML: <%s> is not closed", qname(stack[len(stack)-1]))
	}
	if !e.rootDone {
		return pipeline.Errorf(pipeline.Malformed, "no <MSG> element")
	}
	if !e.sawMeta {
		if e.metaLike != "" {
			return pipeline.Errorf(pipeline.Malformed, "MSG has <%s> where <META> is expected (tags are case-sensitive)", e.metaLike)
		}
		return pipeline.Errorf(pipeline.Malformed, "no <META> in <MSG>")
	}
	return nil
}

// isRecord reports whether an element name opened under the open elements stack is a record
// that sis.max-records counts: a child of MSG other than META, RECS and the SCHD/SCHS wrapper
// (a FLOP, a reference record), or a FLTR of the wrapper.
func isRecord(stack []xml.Name, name string) bool {
	switch len(stack) {
	case 1:
		return name != "META" && name != "RECS" && name != "SCHD" && name != "SCHS"
	case 2:
		return name == "FLTR" && (stack[1].Local == "SCHD" || stack[1].Local == "SCHS")
	}
	return false
}

// inMeta reports whether the open elements are exactly MSG, META.
func inMeta(stack []xml.Name) bool {
	return len(stack) == 2 && stack[1].Local == "META" && stack[1].Space == ""
}

func qname(n xml.Name) string {
	if n.Space != "" {
		return n.Space + ":" + n.Local
	}
	return n.Local
}

// metaOrder is the order in which metaOf checks the META elements.
var metaOrder = []string{"SNDR", "TYPE", "STYP", "SEQN", "DTTM"}

func metaOf(f map[string]string, opt Options) (Meta, error) {
	m := Meta{SNDR: f["SNDR"], SEQN: f["SEQN"], TYPE: f["TYPE"], STYP: f["STYP"]}
	for _, name := range metaOrder {
		if reason := misspeltMeta(f, name); reason != "" {
			return m, pipeline.Errorf(pipeline.Malformed, "%s", reason)
		}
	}
	if m.SNDR == "" {
		return m, pipeline.Errorf(pipeline.Malformed, "META/SNDR is missing or empty")
	}
	if !typePattern.MatchString(m.TYPE) {
		return m, pipeline.Errorf(pipeline.Malformed, "META/TYPE %q is not 4 upper-case letters", m.TYPE)
	}
	if !stypPattern.MatchString(m.STYP) {
		return m, pipeline.Errorf(pipeline.Malformed, "META/STYP %q is not 3 or 4 upper-case letters", m.STYP)
	}
	if !seqnPattern.MatchString(m.SEQN) {
		return m, pipeline.Errorf(pipeline.Malformed, "META/SEQN %q is not a decimal number", m.SEQN)
	}
	dttm := f["DTTM"]
	t, err := parseStrict("20060102150405", dttm, opt.location())
	if err != nil {
		return m, pipeline.Errorf(pipeline.Malformed, "META/DTTM %q is not yyyyMMddHHmmss", dttm)
	}
	if y := t.Year(); y < 1970 || y > 2999 {
		return m, pipeline.Errorf(pipeline.Malformed, "META/DTTM %q: year %d is out of range", dttm, y)
	}
	m.DTTM = t.UTC()
	m.Day = dttm[:8]
	return m, nil
}

// misspeltMeta says what META holds in place of its element name when name itself is absent:
// an element spelt the same but for letter case (<Type> for <TYPE>), or one a typo away
// (<TPYE>). It returns "" when name is present or nothing stands in for it, and the caller's
// "missing" or "not 4 upper-case letters" reason applies.
func misspeltMeta(f map[string]string, name string) string {
	if _, ok := f[name]; ok {
		return ""
	}
	var others []string
	for k := range f {
		if !metaFields[k] {
			others = append(others, k)
		}
	}
	sort.Strings(others)
	for _, k := range others {
		if strings.EqualFold(k, name) {
			return fmt.Sprintf("META has <%s> where <%s> is expected (tags are case-sensitive)", k, name)
		}
	}
	for _, k := range others {
		if closestTag(k, []string{name}) != "" {
			return fmt.Sprintf("META has <%s> where <%s> is expected (misspelt?)", k, name)
		}
	}
	return ""
}

// parseStrict parses value with layout in loc and rejects anything that would not format back
// to the same text, so no field rolls over (day 32, minute 75).
func parseStrict(layout, value string, loc *time.Location) (time.Time, error) {
	if len(value) != len(layout) {
		return time.Time{}, fmt.Errorf("%q: want %d characters", value, len(layout))
	}
	t, err := time.ParseInLocation(layout, value, loc)
	if err != nil {
		return time.Time{}, err
	}
	if t.Format(layout) != value {
		return time.Time{}, fmt.Errorf("%q is not a real time", value)
	}
	return t, nil
}
