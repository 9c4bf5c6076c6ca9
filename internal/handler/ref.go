package handler

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"msgx/internal/pipeline"
	"msgx/internal/sis"
)

// Reference-data STYPs. ADD and UPD are the same upsert; DNLD and RESP replace the TYPE.
var refSTYPs = []string{"ADD", "UPD", "DEL", "DNLD", "RESP"}

// RegisterRef registers the reference-data handlers: every TYPE of sis.RefTypes with every
// STYP of ADD, UPD, DEL, DNLD and RESP, and the same handler as the fallback of each TYPE,
// since the legacy treats any other STYP of a reference TYPE as ADD/UPD (docs/sis-format.md §2.1).
func RegisterRef(r *Registry, opt Options) {
	h := Func(func(ctx context.Context, view View, msg *sis.Message) (pipeline.Decision, error) {
		return decideRef(msg, newerOf(view), opt)
	})
	for _, typ := range sis.RefTypes {
		for _, styp := range refSTYPs {
			r.Register(typ+"-"+styp, h)
		}
		r.RegisterType(typ, h)
	}
}

// decideRef turns a reference message into REF_DATA changes. The codec puts the records it
// could not accept into body.Invalid: each is listed in the warnings and what is stored
// under its key is left as it is (an upsert does not write it, a delete does not delete it,
// a replace keeps it). A replace with an invalid record whose key could not be read deletes
// nothing, since that record might be any stored one.
func decideRef(msg *sis.Message, newer *pipeline.Newer, opt Options) (pipeline.Decision, error) {
	var d pipeline.Decision
	body, ok := msg.Body.(*sis.RefBody)
	if !ok {
		return d, fmt.Errorf("%s: body is %T, want *sis.RefBody", msg.Tag(), msg.Body)
	}
	styp := msg.Meta.STYP
	recs := make([]pipeline.RefRecord, 0, len(body.Records))
	for _, r := range body.Records {
		fields, err := json.Marshal(r.Fields)
		if err != nil {
			return d, pipeline.Wrap(pipeline.CodecError, fmt.Errorf("%s %s: %w", body.Type, r.Key, err))
		}
		recs = append(recs, pipeline.RefRecord{Key: r.Key, Fields: fields})
	}
	keep, noKey := refInvalid(body, &d)
	recs = refHeld(body.Type, recs, keep, &d)
	head := fmt.Sprintf("%s %s: %s", body.Type, styp, nof(len(recs), "record"))
	switch styp {
	case "DEL":
		for _, r := range recs {
			d.Ref = append(d.Ref, pipeline.RefChange{Op: pipeline.RefDelete, Type: body.Type, Record: r})
		}
		head += " to delete"
	case "DNLD", "RESP":
		ch, note, err := refReplace(body.Type, styp, recs, keep, noKey, opt, &d)
		if err != nil {
			return pipeline.Decision{}, err
		}
		if ch != nil {
			d.Ref = append(d.Ref, *ch)
		}
		head += note
	default:
		if styp != "ADD" && styp != "UPD" {
			d.Warnings = append(d.Warnings, fmt.Sprintf("STYP %s treated as an update, as the legacy does", styp))
		}
		for _, r := range recs {
			d.Ref = append(d.Ref, pipeline.RefChange{Op: pipeline.RefUpsert, Type: body.Type, Record: r})
		}
		head += " to insert or update"
	}
	if n := len(body.Invalid); n > 0 {
		head += fmt.Sprintf(", %d invalid kept as stored", n)
	}
	kept := guardRefs(newer, &d)
	if len(recs) == 0 && len(d.Ref) == 0 {
		head += "; nothing changed"
	}
	d.Note = withKept(&d, head, kept)
	return d, nil
}

// refReplace builds the RefReplace change of a DNLD/RESP and the part of the note saying what
// it deletes. A replace with no valid record is refused (Skip) when the message has no
// invalid record either, as a wipe guard, unless AllowEmpty; when it has invalid records it
// deletes nothing at all: a message none of whose records could be read is no list of the
// TYPE to replace it with.
func refReplace(typ, styp string, recs []pipeline.RefRecord, keep []string, noKey int, opt Options, d *pipeline.Decision) (*pipeline.RefChange, string, error) {
	invalid := len(keep) + noKey
	switch {
	case len(recs) == 0 && invalid == 0 && !opt.AllowEmptyRefReplace:
		return nil, "", Skip("empty %s %s would delete every %s record; not applied (set ref.allow-empty-replace to allow it)",
			typ, styp, typ)
	case len(recs) == 0 && invalid > 0:
		d.Warnings = append(d.Warnings, fmt.Sprintf("%s %s has no valid record: nothing replaced or deleted", typ, styp))
		return nil, ", nothing deleted (no valid record)", nil
	}
	ch := &pipeline.RefChange{Op: pipeline.RefReplace, Type: typ, Records: recs, AllowEmpty: opt.AllowEmptyRefReplace, Keep: keep}
	if noKey > 0 {
		ch.NoDelete = true
		d.Warnings = append(d.Warnings, fmt.Sprintf("%d invalid %s record(s) without a readable key: the %s replace deleted nothing this time (insert and update only)", noKey, typ, styp))
		return ch, " to insert or update, nothing deleted (an invalid record has no key)", nil
	}
	return ch, " replacing the stored ones", nil
}

// refInvalid lists each invalid record of body in d's warnings and returns the keys of those
// whose key could be read (sorted as they came, without repeats) and the number of the others.
func refInvalid(body *sis.RefBody, d *pipeline.Decision) (keys []string, noKey int) {
	seen := map[string]bool{}
	for _, x := range body.Invalid {
		reason := trimRefReason(x.Reason, body.Type, x.Index)
		if x.Key == "" {
			noKey++
			d.Warnings = append(d.Warnings, fmt.Sprintf("%s record %d (key not readable) left out: %s", body.Type, x.Index, reason))
			continue
		}
		d.Warnings = append(d.Warnings, fmt.Sprintf("%s record %d key %q left out: %s; the stored record is kept as it is", body.Type, x.Index, x.Key, reason))
		if !seen[x.Key] {
			seen[x.Key] = true
			keys = append(keys, x.Key)
		}
	}
	return keys, noKey
}

// refHeld drops from recs the valid records whose key an invalid record also has (which of
// the two is right is not known, so the stored record is kept), with a warning for each.
func refHeld(typ string, recs []pipeline.RefRecord, keep []string, d *pipeline.Decision) []pipeline.RefRecord {
	if len(keep) == 0 {
		return recs
	}
	held := map[string]bool{}
	for _, k := range keep {
		held[k] = true
	}
	out := recs[:0:0]
	for _, r := range recs {
		if held[r.Key] {
			d.Warnings = append(d.Warnings, fmt.Sprintf("%s key %q not applied: an invalid record has the same key; the stored record is kept as it is", typ, r.Key))
			continue
		}
		out = append(out, r)
	}
	return out
}

// trimRefReason drops a "TYPE record n: " prefix the decoder may have put on the reason,
// since the warning names the record itself.
func trimRefReason(reason, typ string, index int) string {
	r, _ := strings.CutPrefix(reason, fmt.Sprintf("%s record %d: ", typ, index))
	return r
}
