package sis

import (
	"encoding/xml"
	"strconv"

	"msgx/internal/pipeline"
)

// SchdBody is the body of a SCHD (daily schedule) message: <SCHD><RECS>n</RECS><FLTR>…</FLTR>*
// </SCHD>. STYP is the message's (DNLD and RESP replace a window, DEL deletes the listed
// flights, ADFT and any other STYP add or update); the codec reads every STYP the same way.
// Recs always equals len(Flights): a message whose RECS disagrees is a CODEC_ERROR.
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
// the raw document and the typed flights are held.
func decodeSCHD(raw []byte, meta Meta, opt Options) (any, error) {
	body := &SchdBody{STYP: meta.STYP}
	recs := -1
	seen := map[int64]int{}
	n := 0
	err := forWrapperChildren(raw, "SCHD", func(d *xml.Decoder, st *xml.StartElement) error {
		switch st.Name.Local {
		case "RECS":
			if recs >= 0 {
				return pipeline.Errorf(pipeline.CodecError, "SCHD/RECS: appears twice")
			}
			v, err := readRecs(d, st, "SCHD/RECS")
			if err != nil {
				return err
			}
			recs = v
			if body.Flights == nil {
				body.Flights = make([]Flight, 0, min(recs, len(raw)/256+1))
			}
			return nil
		case "FLTR":
			n++
			var x xrec
			if err := readRecord(d, st, &x); err != nil {
				return pipeline.Errorf(pipeline.CodecError, "FLTR[%d]: %v", n, err)
			}
			c := conv{loc: opt.location(), kind: "FLTR", n: n}
			f := c.flight(&x)
			if c.err != nil {
				return c.err
			}
			if first, dup := seen[f.FLID]; dup {
				return pipeline.Errorf(pipeline.CodecError, "FLTR[%d] FLID %d: FLID already used by FLTR[%d]", n, f.FLID, first)
			}
			seen[f.FLID] = n
			body.Flights = append(body.Flights, f)
			return nil
		}
		return skipElement(d)
	})
	if err != nil {
		return nil, err
	}
	if recs < 0 {
		return nil, pipeline.Errorf(pipeline.CodecError, "SCHD/RECS: missing")
	}
	if recs != len(body.Flights) {
		return nil, pipeline.Errorf(pipeline.CodecError, "SCHD/RECS %d: the message holds %d FLTR", recs, len(body.Flights))
	}
	body.Recs = recs
	return body, nil
}

// readRecs reads a RECS element: a non-negative decimal count.
func readRecs(d *xml.Decoder, st *xml.StartElement, where string) (int, error) {
	var x xtext
	if err := readText(d, &x); err != nil {
		return 0, pipeline.Errorf(pipeline.CodecError, "%s: %v", where, err)
	}
	s := x.s
	if s == "" {
		return 0, pipeline.Errorf(pipeline.CodecError, "%s: missing", where)
	}
	v, err := strconv.ParseUint(s, 10, 31)
	if err != nil {
		return 0, pipeline.Errorf(pipeline.CodecError, "%s %q: not a count", where, s)
	}
	return int(v), nil
}
