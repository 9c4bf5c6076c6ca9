package sis

import (
	"encoding/xml"
	"fmt"
	"strconv"
	"strings"

	"msgx/internal/pipeline"
)

// SchdBody is the body of a SCHD (daily schedule) message: <SCHD><RECS>n</RECS><FLTR>…</FLTR>*
// </SCHD>. STYP is the message's (DNLD and RESP replace a window, DEL deletes the listed
// flights, ADFT and any other STYP add or update); the codec reads every STYP the same way.
//
// Flights holds only the FLTRs that passed validation, in message order; the others are in
// Invalid, so a handler must not take Flights for every FLTR the sender listed (for a
// replace, a flight in Invalid must be kept, not deleted). Recs is the count RECS declared:
// len(Flights)+len(Invalid) is never below it for DNLD and RESP (a truncated replace is
// MALFORMED), and any other mismatch was accepted with a warning on the message.
type SchdBody struct {
	STYP    string   `json:"STYP"`
	Recs    int      `json:"RECS"`
	Flights []Flight `json:"FLTR"`
	// Invalid are the FLTRs the decoder could not accept; the valid ones are in Flights.
	Invalid []Invalid `json:"invalid,omitempty"`
}

// Invalid is one record of a multi-record message (a FLTR of a SCHD, a record of a reference
// message) that the decoder could not accept while it accepted others: the handler applies
// the rest, lists it in the message's warnings and keeps what is stored under its key.
type Invalid struct {
	Index  int                 `json:"index"`  // 1-based position among the records
	Key    string              `json:"key"`    // its FLID or reference key when readable, else ""
	Class  pipeline.ErrorClass `json:"class"`  // what it would have failed the message with
	Reason string              `json:"reason"` // why
}

func init() { register("SCHD", decodeSCHD) }

// decodeSCHD streams the FLTR elements of the SCHD wrapper, decoding one at a time, so only
// the raw document and the typed flights are held. A FLTR that fails validation goes to
// Invalid; the message fails only when its envelope, wrapper or RECS is broken or when every
// FLTR is invalid.
func decodeSCHD(raw []byte, meta Meta, opt Options, w *Warnings) (any, error) {
	body := &SchdBody{STYP: meta.STYP}
	recs := -1
	seen := map[int64]int{}
	n := 0
	err := forWrapperChildren(raw, "SCHD", w, func(d *scanner, st *xml.StartElement) error {
		switch st.Name.Local {
		case "RECS":
			if err := readRecs(d, st, "SCHD", &recs); err != nil {
				return err
			}
			if body.Flights == nil {
				body.Flights = make([]Flight, 0, min(recs, len(raw)/256+1))
			}
			return nil
		case "FLTR":
			n++
			var x xrec
			if err := readRecord(d, st, &x); err != nil {
				return pipeline.Errorf(pipeline.Malformed, "FLTR[%d]: not well-formed XML: %v", n, err)
			}
			x.warnUnknown(fltrKnown, nil, "SCHD FLTR", n, w)
			c := conv{loc: opt.location(), kind: "FLTR", n: n, warn: w}
			f := c.flight(&x)
			if c.err == nil {
				if first, dup := seen[f.FLID]; dup {
					c.err = pipeline.Errorf(pipeline.Malformed, "FLTR[%d] FLID %d: FLID already used by FLTR[%d]", n, f.FLID, first)
				}
			}
			if c.err != nil {
				body.Invalid = append(body.Invalid, invalidOf(n, c.flid, c.err))
				return nil
			}
			seen[f.FLID] = n
			body.Flights = append(body.Flights, f)
			return nil
		}
		w.Addf("unknown element %s in SCHD ignored", short(st.Name.Local))
		return skipElement(d)
	})
	if err != nil {
		return nil, err
	}
	if recs < 0 {
		return nil, pipeline.Errorf(pipeline.Malformed, "SCHD/RECS: missing")
	}
	if err := checkRecs("SCHD/RECS", "FLTR", replaces(meta.STYP), recs, n, w); err != nil {
		return nil, err
	}
	if err := allInvalid("FLTR", n, body.Invalid); err != nil {
		return nil, err
	}
	body.Recs = recs
	return body, nil
}

// invalidOf describes a record left out of the message: its 1-based index, its key when it
// was readable and the class and text of its first error.
func invalidOf(index int, key string, err error) Invalid {
	return Invalid{Index: index, Key: key, Class: pipeline.ClassOf(err), Reason: err.Error()}
}

// replaces reports whether a STYP replaces the stored records of its TYPE (or window) with
// the message's: then a record missing from the message would be deleted.
func replaces(styp string) bool { return styp == "DNLD" || styp == "RESP" }

// checkRecs compares RECS with the records the message holds (invalid ones count). Fewer
// records than RECS in a replace (DNLD, RESP) is MALFORMED: the message was cut and applying
// it would delete what it lost. Any other mismatch is a warning.
func checkRecs(where, record string, replace bool, recs, n int, w *Warnings) error {
	switch {
	case n == recs:
		return nil
	case n < recs && replace:
		return pipeline.Errorf(pipeline.Malformed, "%s %d: the message holds only %d %s (applying a truncated replace would delete the missing ones)", where, recs, n, record)
	}
	w.Addf("%s %d: the message holds %d %s", where, recs, n, record)
	return nil
}

// maxReasons bounds how many invalid records the error of an all-invalid message names.
const maxReasons = 3

// allInvalid fails a message of n records (n > 0) that are all invalid. The class is
// MALFORMED, or CODEC_ERROR when one of them is a CODEC_ERROR (a later decoder could then
// accept it, so the message must stay replayable).
func allInvalid(record string, n int, inv []Invalid) error {
	if n == 0 || len(inv) < n {
		return nil
	}
	class := pipeline.Malformed
	for _, v := range inv {
		if v.Class == pipeline.CodecError {
			class = pipeline.CodecError
		}
	}
	var reasons []string
	for _, v := range inv[:min(len(inv), maxReasons)] {
		reasons = append(reasons, v.Reason)
	}
	more := ""
	if len(inv) > maxReasons {
		more = fmt.Sprintf("; and %d more", len(inv)-maxReasons)
	}
	return pipeline.Errorf(class, "every %s of the message is invalid (%d): %s%s", record, n, strings.Join(reasons, "; "), more)
}

// readRecs reads the RECS element of wrapper (SCHD, SCHS) into *recs, which is -1 until
// then: a non-negative decimal count, once. Anything else is MALFORMED.
func readRecs(d *scanner, st *xml.StartElement, wrapper string, recs *int) error {
	where := wrapper + "/RECS"
	if *recs >= 0 {
		return pipeline.Errorf(pipeline.Malformed, "%s: appears twice", where)
	}
	var x xtext
	if err := readText(d, &x); err != nil {
		return pipeline.Errorf(pipeline.Malformed, "%s: not well-formed XML: %v", where, err)
	}
	s := x.s
	if s == "" {
		return pipeline.Errorf(pipeline.Malformed, "%s: missing", where)
	}
	v, err := strconv.ParseUint(s, 10, 31)
	if err != nil {
		return pipeline.Errorf(pipeline.Malformed, "%s %q: not a count", where, s)
	}
	*recs = int(v)
	return nil
}
