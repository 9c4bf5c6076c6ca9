package handler

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"msgx/internal/pipeline"
	"msgx/internal/sis"
)

// Nothing goes backwards (invariant I6): a message applied out of its inbox order — a replay
// of a parked message, a late row the adoption takes — sets only the fields of a flight or a
// reference record that no later message set. The pump finds the applied messages after it
// that name the same flights and records, folds what each of them sets (Asserts) into a
// pipeline.Newer, and hands it over with the view (OutOfOrder); the handler decides as in
// order, then leaves every field a later message set as stored (guard), so the flight
// writes and the events carry the values actually set, and the note names each field left.

// OutOfOrder is implemented by the view the pump gives a handler for a message applied after
// later ones: Newer says what those set. A view without it is in order.
type OutOfOrder interface {
	Newer() *pipeline.Newer
}

// newerOf returns what the messages after the one being decided set, nil in order.
func newerOf(view View) *pipeline.Newer {
	if o, ok := view.(OutOfOrder); ok {
		return o.Newer()
	}
	return nil
}

// Asserts folds into n what message id (decoded as msg) sets of the flights in flights and of
// the reference TYPEs in refTypes: each field it sets or clears, the flights and records it
// deletes, the windows it replaces. It is what the message says, whether or not a field's
// value changed: a FLOP sets its STYP's fields, a schedule's FLTR every field it carries
// (not CTOT, CSFL, nor ERUT when it has none, which a schedule keeps), FDEL and SCHD DEL
// delete, a DNLD or RESP replaces its window (a stored flight it does not name is deleted); a
// reference upsert or delete sets its record whole, a DNLD or RESP the whole TYPE. A message
// not after n.Msg sets nothing.
func Asserts(msg *sis.Message, id int64, n *pipeline.Newer, flights map[int64]bool, refTypes map[string]bool) {
	if id <= n.Msg {
		return // not a later message
	}
	switch b := msg.Body.(type) {
	case *sis.FlopBody:
		for _, r := range b.Records {
			if !flights[r.FLID] {
				continue
			}
			switch r.Kind() {
			case sis.FlopDelete:
				n.SetDeleted(r.FLID, id)
			case sis.FlopStand:
				n.SetFields(r.FLID, id, "PSDT")
			default:
				n.SetFields(r.FLID, id, sis.FlopFields(r.STYP)...)
			}
		}
	case *sis.SchdBody:
		flightAsserts(msg.Meta.STYP, b, id, n, flights)
	case *sis.RefBody:
		if !refTypes[b.Type] {
			return
		}
		if replaces(msg.Meta.STYP) {
			n.SetRefType(b.Type, id)
			return
		}
		for _, r := range b.Records {
			n.SetRef(b.Type, r.Key, id)
		}
	}
}

// flightAsserts is Asserts for a schedule.
func flightAsserts(styp string, b *sis.SchdBody, id int64, n *pipeline.Newer, flights map[int64]bool) {
	if len(b.Flights) == 0 {
		return
	}
	if replaces(styp) {
		bad := invalidFltrs(b.Invalid, true)
		if !bad.unknownKey {
			w := pipeline.Window{ID: id, Named: map[int64]bool{}}
			w.From, w.To = span(b.Flights)
			for _, f := range b.Flights {
				if flights[f.FLID] {
					w.Named[f.FLID] = true
				}
			}
			for f := range bad.flids {
				if flights[f] {
					w.Named[f] = true
				}
			}
			n.Windows = append(n.Windows, w)
		}
	}
	for _, f := range b.Flights {
		if !flights[f.FLID] {
			continue
		}
		if styp == "DEL" {
			n.SetDeleted(f.FLID, id)
			continue
		}
		for _, rf := range recFields {
			if rf.key == "CTOT" || rf.key == "CSFL" || (rf.key == "ERUT" && len(f.ERUT) == 0) {
				continue
			}
			n.SetFields(f.FLID, id, rf.key)
		}
	}
}

// guard leaves as stored what a later message set of each flight w touches (see above): a
// field a later message set keeps its stored value, a flight a later message set is not
// deleted, a flight a later message deleted is not created again. It returns what it left,
// for the note.
func (w *work) guard() ([]string, error) {
	n := w.newer
	if n == nil {
		return nil, nil
	}
	var kept []string
	for _, id := range w.order {
		e := w.entries[id]
		switch {
		case e.old == nil && e.cur != nil:
			if by := n.Deleter(id, e.cur.SODT); by > 0 {
				e.cur = nil
				kept = append(kept, fmt.Sprintf("flight %d not created again: deleted by message %d, newer", id, by))
			}
		case e.old != nil && e.cur == nil:
			if by := n.LastSetter(id, e.oldRec.SODT); by > 0 {
				cur, err := decodeRecord(e.old)
				if err != nil {
					return nil, fmt.Errorf("flight %d: %w", id, err)
				}
				e.cur = cur
				kept = append(kept, fmt.Sprintf("flight %d not deleted: set by message %d, newer", id, by))
			}
		case e.old != nil && e.cur != nil:
			fields, err := w.keepNewer(e, n)
			if err != nil {
				return nil, err
			}
			kept = append(kept, fields...)
		}
	}
	return kept, nil
}

// keepNewer puts back into e.cur the stored value of each field the message changed that a
// later message set, and returns a note for each.
func (w *work) keepNewer(e *entry, n *pipeline.Newer) ([]string, error) {
	var kept []string
	var stored reflect.Value // a copy of the stored record, decoded on first need
	cur := reflect.ValueOf(e.cur).Elem()
	old := reflect.ValueOf(e.oldRec).Elem()
	for _, f := range recFields {
		if equalValue(fieldByIndex(old, f.index), fieldByIndex(cur, f.index)) {
			continue
		}
		by := n.Setter(e.flid, e.oldRec.SODT, f.key)
		if by == 0 {
			continue
		}
		if !stored.IsValid() {
			r, err := decodeRecord(e.old)
			if err != nil {
				return nil, fmt.Errorf("flight %d: %w", e.flid, err)
			}
			stored = reflect.ValueOf(r).Elem()
		}
		fieldByIndex(cur, f.index).Set(fieldByIndex(stored, f.index))
		kept = append(kept, fmt.Sprintf("flight %d %s", e.flid, pipeline.Kept(f.key, by)))
	}
	return kept, nil
}

// guardRefs drops from d the reference changes a later message overrides: an upsert or a
// delete of a record a later message set, a replace of a TYPE a later message replaced; a
// replace leaves as stored (Keep) the records later messages set. It returns what it left.
func guardRefs(n *pipeline.Newer, d *pipeline.Decision) []string {
	if n == nil {
		return nil
	}
	var kept []string
	out := d.Ref[:0]
	for _, ch := range d.Ref {
		switch ch.Op {
		case pipeline.RefUpsert, pipeline.RefDelete:
			if by := n.RefSetter(ch.Type, ch.Record.Key); by > 0 {
				kept = append(kept, fmt.Sprintf("%s %s %s", ch.Type, ch.Record.Key, pipeline.Kept("record", by)))
				continue
			}
		case pipeline.RefReplace:
			if by := n.RefTypes[ch.Type]; by > 0 {
				kept = append(kept, fmt.Sprintf("%s replace not applied: %s replaced by message %d, newer", ch.Type, ch.Type, by))
				continue
			}
			prefix := ch.Type + "|"
			var keys []string
			for k, by := range n.Refs {
				if key, ok := strings.CutPrefix(k, prefix); ok && by > 0 {
					keys = append(keys, key)
				}
			}
			slices.Sort(keys)
			for _, key := range keys {
				ch.Keep = append(ch.Keep, key)
				kept = append(kept, fmt.Sprintf("%s %s %s", ch.Type, key, pipeline.Kept("record", n.Refs[prefix+key])))
			}
			ch.Records = slices.DeleteFunc(slices.Clone(ch.Records), func(r pipeline.RefRecord) bool {
				return n.Refs[prefix+r.Key] > 0
			})
		}
		out = append(out, ch)
	}
	d.Ref = out
	return kept
}

// withKept returns note with what a message out of order left as later messages set it, and
// sets d.Kept to that list.
func withKept(d *pipeline.Decision, note string, kept []string) string {
	d.Kept = kept
	if len(kept) == 0 {
		return note
	}
	return note + "; out of order, " + strings.Join(kept, "; ")
}
