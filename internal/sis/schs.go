package sis

import (
	"encoding/xml"
	"errors"
	"fmt"
	"strings"
	"time"

	"msgx/internal/pipeline"
)

// SchsBody is the body of a SCHS (seasonal schedule) message: <SCHS> with SNAM, APCD, SDAT,
// EDAT, RECS, then FLTR*. A season is identified by (SDAT, EDAT), both local midnight in UTC.
// The STYP (DNLD, RESP) does not change the meaning: a SCHS always replaces its season. Recs
// is the count RECS declared; len(Flights) is never below it (a truncated season is
// MALFORMED) and may exceed it (a warning on the message). One invalid FLTR fails the
// message.
type SchsBody struct {
	SNAM    string         `json:"SNAM"`           // season name, e.g. Winter
	APCD    string         `json:"APCD,omitempty"` // airport the schedule is for
	SDAT    time.Time      `json:"SDAT"`           // season start (ddMMMyy, local midnight)
	EDAT    time.Time      `json:"EDAT"`           // season end (ddMMMyy, local midnight)
	Recs    int            `json:"RECS"`
	Flights []SeasonFlight `json:"FLTR"`
}

// SeasonFlight is one SCHS FLTR: a flight operated on some days of a period at a fixed local
// time. SCHS records carry no FLID; ALCD FLNO MVIN name one in errors. ROUT is not decoded
// (the legacy ignored it; ERUT carries the route).
type SeasonFlight struct {
	ALCD string       `json:"ALCD"`           // airline
	FLNO string       `json:"FLNO"`           // flight number
	MVIN string       `json:"MVIN"`           // A/D
	STDT time.Time    `json:"STDT"`           // first day of validity (local midnight)
	EDDT time.Time    `json:"EDDT"`           // last day of validity (local midnight)
	DYOP string       `json:"DYOP"`           // days of operation: 7 characters Monday…Sunday, the day's digit or 0
	SCHT TimeOfDay    `json:"SCHT"`           // scheduled local time (STA/STD)
	FLTY string       `json:"FLTY"`           // flight type
	FLIN string       `json:"FLIN"`           // D/I/M
	ACFT string       `json:"ACFT"`           // aircraft type
	RENO string       `json:"RENO,omitempty"` // registration
	TAOP string       `json:"TAOP,omitempty"` // turnaround operator
	TAFL string       `json:"TAFL,omitempty"` // turnaround flight number
	TRML string       `json:"TRML,omitempty"` // terminal
	MAXP *int16       `json:"MAXP,omitempty"` // maximum passengers
	CSOP string       `json:"CSOP,omitempty"` // code-share master operator
	CSFT string       `json:"CSFT,omitempty"` // code-share master flight number
	ERUT []SeasonStop `json:"ERUT,omitempty"` // the route, keyed by RTNO
}

// SeasonStop is one SCHS ERUT entry: a station of the route with local clock times and day
// offsets relative to the flight's day. SCAT/SCDT are read from HHmm, or from ddMMMyyHHmm
// (which some senders put there, docs/sis-format.md §5.8), keeping its clock time.
type SeasonStop struct {
	RTNO int8       `json:"RTNO"`           // position
	APCD string     `json:"APCD"`           // airport
	SCAT *TimeOfDay `json:"SCAT,omitempty"` // scheduled arrival (local clock)
	SADC int8       `json:"SADC,omitempty"` // arrival day change (+1, -1, …)
	SCDT *TimeOfDay `json:"SCDT,omitempty"` // scheduled departure (local clock)
	SDDC int8       `json:"SDDC,omitempty"` // departure day change
}

func init() { register("SCHS", decodeSCHS) }

func decodeSCHS(raw []byte, _ Meta, opt Options, w *Warnings) (any, error) {
	loc := opt.location()
	body := &SchsBody{}
	recs := -1
	head := map[string]xtext{}
	n := 0
	err := forWrapperChildren(raw, "SCHS", w, func(d *scanner, st *xml.StartElement) error {
		switch name := st.Name.Local; name {
		case "RECS":
			if err := readRecs(d, st, "SCHS", &recs); err != nil {
				return err
			}
			if body.Flights == nil {
				body.Flights = make([]SeasonFlight, 0, min(recs, len(raw)/256+1))
			}
			return nil
		case "SNAM", "APCD", "SDAT", "EDAT":
			x := head[name]
			if err := readText(d, &x); err != nil {
				return pipeline.Errorf(pipeline.Malformed, "SCHS/%s: not well-formed XML: %v", name, err)
			}
			if x.n > 1 {
				return pipeline.Errorf(pipeline.Malformed, "SCHS/%s: appears twice", name)
			}
			head[name] = x
			return nil
		case "FLTR":
			n++
			var x xrec
			if err := readRecord(d, st, &x); err != nil {
				return pipeline.Errorf(pipeline.Malformed, "SCHS FLTR[%d]: not well-formed XML: %v", n, err)
			}
			x.warnUnknown(schsKnown, nil, "SCHS FLTR", n, w)
			c := conv{loc: loc, kind: "SCHS FLTR", n: n, warn: w}
			f := c.seasonFlight(&x)
			if c.err != nil {
				return c.err
			}
			body.Flights = append(body.Flights, f)
			return nil
		}
		w.Addf("unknown element %s in SCHS ignored", short(st.Name.Local))
		return skipElement(d)
	})
	if err != nil {
		return nil, err
	}
	if err := body.readHead(head, loc); err != nil {
		return nil, err
	}
	if recs < 0 {
		return nil, pipeline.Errorf(pipeline.Malformed, "SCHS/RECS: missing")
	}
	if err := checkRecs("SCHS/RECS", "FLTR", true, recs, n, w); err != nil {
		return nil, err
	}
	body.Recs = recs
	return body, nil
}

// readHead sets the season's name, airport and dates from the head elements read (SNAM,
// APCD, SDAT, EDAT); name and dates are mandatory, and the season may not end before it
// starts.
func (b *SchsBody) readHead(head map[string]xtext, loc *time.Location) error {
	b.SNAM = head["SNAM"].s
	b.APCD = head["APCD"].s
	if b.SNAM == "" {
		return pipeline.Errorf(pipeline.Malformed, "SCHS/SNAM: missing")
	}
	for _, name := range []string{"SDAT", "EDAT"} {
		s := head[name].s
		if s == "" {
			return pipeline.Errorf(pipeline.Malformed, "SCHS/%s: missing", name)
		}
		t, err := parseDate(s, loc)
		if err != nil {
			return pipeline.Errorf(pipeline.Malformed, "SCHS/%s %q: %v", name, s, err)
		}
		if name == "SDAT" {
			b.SDAT = t
		} else {
			b.EDAT = t
		}
	}
	if b.EDAT.Before(b.SDAT) {
		return pipeline.Errorf(pipeline.Malformed, "SCHS/EDAT %q: before SDAT %q", head["EDAT"].s, head["SDAT"].s)
	}
	return nil
}

// seasonFlight converts a SCHS FLTR.
func (c *conv) seasonFlight(x *xrec) SeasonFlight {
	f := SeasonFlight{
		ALCD: c.req("ALCD", x.ALCD), FLNO: c.req("FLNO", x.FLNO),
		MVIN: c.enum("MVIN", x.MVIN, "A", "D"),
	}
	if c.err == nil {
		c.key = f.ALCD + " " + f.FLNO + " " + f.MVIN
	}
	if f.MVIN == "" {
		c.missing("MVIN")
	}
	f.STDT = c.date("STDT", x.STDT)
	f.EDDT = c.date("EDDT", x.EDDT)
	f.DYOP = c.req("DYOP", x.DYOP)
	if f.DYOP != "" {
		if err := checkDYOP(f.DYOP); err != nil {
			c.bad("DYOP", f.DYOP, err)
		}
	}
	if s := c.req("SCHT", x.SCHT); s != "" {
		t, err := parseClock(s)
		if err != nil {
			c.bad("SCHT", s, err)
		}
		f.SCHT = t
	}
	f.FLTY = c.req("FLTY", x.FLTY)
	f.FLIN = c.enum("FLIN", x.FLIN, "D", "I", "M")
	if f.FLIN == "" {
		c.missing("FLIN")
	}
	f.ACFT = c.req("ACFT", x.ACFT)
	f.RENO = c.text("RENO", x.RENO)
	f.TAOP = c.text("TAOP", x.TAOP)
	f.TAFL = c.text("TAFL", x.TAFL)
	f.TRML = c.text("TRML", x.TRML)
	f.MAXP = c.i16("MAXP", x.MAXP)
	f.CSOP = c.text("CSOP", x.CSOP)
	f.CSFT = c.text("CSFT", x.CSFT)
	f.ERUT = c.seasonRoute(x.ERUT)
	return f
}

func (c *conv) date(elem string, x xtext) time.Time {
	s := c.req(elem, x)
	if s == "" {
		return time.Time{}
	}
	t, err := parseDate(s, c.loc)
	if err != nil {
		c.bad(elem, s, err)
	}
	return t
}

// checkDYOP checks the days of operation: 7 characters, position i (1 = Monday) either '0' or
// the digit i.
func checkDYOP(s string) error {
	if len(s) != 7 {
		return fmt.Errorf("want 7 characters, got %d", len(s))
	}
	for i := 0; i < 7; i++ {
		if s[i] != '0' && s[i] != byte('1'+i) {
			return fmt.Errorf("position %d must be 0 or %d", i+1, i+1)
		}
	}
	return nil
}

func (c *conv) seasonRoute(xs []xerut) []SeasonStop {
	var out []SeasonStop
	for i := range xs {
		x := &xs[i]
		if x.empty() {
			continue
		}
		c.enter("ERUT", i+1)
		g := SeasonStop{RTNO: c.groupNo("@RTNO", x.RTNO), APCD: c.req("APCD", x.APCD),
			SCAT: c.seasonClock("SCAT", x.SCAT), SADC: c.dayChange("SADC", x.SADC),
			SCDT: c.seasonClock("SCDT", x.SCDT), SDDC: c.dayChange("SDDC", x.SDDC)}
		for _, o := range out {
			if o.RTNO == g.RTNO {
				c.failf("@RTNO", " %d: number appears twice", g.RTNO)
			}
		}
		out = append(out, g)
	}
	c.leave()
	return out
}

// seasonClock reads HHmm, or ddMMMyyHHmm keeping its clock time.
func (c *conv) seasonClock(elem string, x xtext) *TimeOfDay {
	s := c.text(elem, x)
	if s == "" {
		return nil
	}
	var t TimeOfDay
	var err error
	switch len(s) {
	case 4:
		t, err = parseClock(s)
	case 11:
		if _, err = parseDateTime(s, c.loc); err == nil {
			t, err = parseClock(s[7:])
		}
	default:
		err = fmt.Errorf("want HHmm (4 characters) or ddMMMyyHHmm (11), got %d characters", len(s))
	}
	if err != nil {
		c.bad(elem, s, err)
		return nil
	}
	return &t
}

// dayChange reads a signed day offset (+1, -1, 0, 2): a sign and one or two digits.
func (c *conv) dayChange(elem string, x xtext) int8 {
	s := c.text(elem, x)
	if s == "" {
		return 0
	}
	d := strings.TrimLeft(s, "+-")
	if len(s)-len(d) > 1 || len(d) < 1 || len(d) > 2 || strings.Trim(d, "0123456789") != "" {
		c.bad(elem, s, errors.New("want a signed day offset such as +1 or -1"))
		return 0
	}
	v, _ := c.integer(elem, s, 8)
	return int8(v)
}
