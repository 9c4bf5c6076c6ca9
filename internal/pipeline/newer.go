package pipeline

import (
	"fmt"
	"time"
)

// Newer is what the messages after one in inbox order set of the flights and reference records
// it names (invariant I6, nothing goes backwards): a message applied out of its order — a
// replay of a parked message, a late row the adoption takes — sets only the fields whose last
// setter is older than itself. The pump gathers it from the applied messages after Msg
// (their assertions, Asserts) and hands it to the handler with the view; in order (no
// applied message after Msg) there is none.
type Newer struct {
	Msg     int64                    // the message being applied
	Flights map[int64]*FlightSetters // by FLID: what later messages set of the flight
	// Windows are the later schedule snapshots that replace a window: a stored flight in
	// one they do not name was deleted by them.
	Windows []Window
	Refs    map[string]int64 // RefKey(type, key) → the last later message upserting or deleting it
	// RefTypes are the last later message replacing each whole reference TYPE (DNLD, RESP).
	RefTypes map[string]int64
}

// FlightSetters are the later messages that set fields of one flight: each field's last
// setter (a schedule's FLTR sets every field it carries), the last whose text is gone (All:
// it may have set any field), the last that deleted it.
type FlightSetters struct {
	Fields  map[string]int64
	All     int64
	Deleted int64
}

// Window is a later snapshot's window replace: message ID, the SODTs it covers and the
// flights it names.
type Window struct {
	ID       int64
	From, To time.Time
	Named    map[int64]bool
}

// SetFields notes that later message id set fields of flight flid.
func (n *Newer) SetFields(flid, id int64, fields ...string) {
	s := n.setters(flid)
	for _, f := range fields {
		s.Fields[f] = max(s.Fields[f], id)
	}
}

// SetAll notes that later message id may have set every field of flight flid (its text is
// gone).
func (n *Newer) SetAll(flid, id int64) {
	s := n.setters(flid)
	s.All = max(s.All, id)
}

// SetDeleted notes that later message id deleted flight flid.
func (n *Newer) SetDeleted(flid, id int64) {
	s := n.setters(flid)
	s.Deleted = max(s.Deleted, id)
}

// SetRef notes that later message id upserted or deleted the reference record typ/key.
func (n *Newer) SetRef(typ, key string, id int64) { n.Refs = setMax(n.Refs, RefKey(typ, key), id) }

// SetRefType notes that later message id replaced (or may have set) the whole TYPE typ.
func (n *Newer) SetRefType(typ string, id int64) { n.RefTypes = setMax(n.RefTypes, typ, id) }

func (n *Newer) setters(flid int64) *FlightSetters {
	if n.Flights == nil {
		n.Flights = map[int64]*FlightSetters{}
	}
	s := n.Flights[flid]
	if s == nil {
		s = &FlightSetters{Fields: map[string]int64{}}
		n.Flights[flid] = s
	}
	return s
}

func setMax(m map[string]int64, k string, id int64) map[string]int64 {
	if m == nil {
		m = map[string]int64{}
	}
	m[k] = max(m[k], id)
	return m
}

// RefKey is the key of one reference record in Newer.Refs.
func RefKey(typ, key string) string { return typ + "|" + key }

// Setter returns the last message after n.Msg that set field of flight flid, whose stored
// departure is sodt (zero when not stored), or 0 when none did. A deletion sets every field.
func (n *Newer) Setter(flid int64, sodt time.Time, field string) int64 {
	if n == nil {
		return 0
	}
	var last int64
	if s := n.Flights[flid]; s != nil {
		last = max(s.Fields[field], s.All, s.Deleted)
	}
	return max(last, n.windowDelete(flid, sodt))
}

// LastSetter returns the last message after n.Msg that set any field of flight flid (or
// deleted it), 0 when none did.
func (n *Newer) LastSetter(flid int64, sodt time.Time) int64 {
	if n == nil {
		return 0
	}
	var last int64
	if s := n.Flights[flid]; s != nil {
		last = max(s.All, s.Deleted)
		for _, id := range s.Fields {
			last = max(last, id)
		}
	}
	return max(last, n.windowDelete(flid, sodt))
}

// Deleter returns the last message after n.Msg that deleted flight flid (whose last known
// departure is sodt, zero when unknown) and was not followed by one that set it again, 0 when
// none.
func (n *Newer) Deleter(flid int64, sodt time.Time) int64 {
	if n == nil {
		return 0
	}
	var del, set int64
	if s := n.Flights[flid]; s != nil {
		del, set = s.Deleted, s.All
		for _, id := range s.Fields {
			set = max(set, id)
		}
	}
	del = max(del, n.windowDelete(flid, sodt))
	if del > set {
		return del
	}
	return 0
}

// windowDelete returns the last later window replace that covers sodt without naming flid.
func (n *Newer) windowDelete(flid int64, sodt time.Time) int64 {
	var last int64
	if sodt.IsZero() {
		return 0
	}
	for _, w := range n.Windows {
		if !w.Named[flid] && !sodt.Before(w.From) && !sodt.After(w.To) {
			last = max(last, w.ID)
		}
	}
	return last
}

// RefSetter returns the last message after n.Msg that set (upserted, deleted or replaced) the
// reference record typ/key, 0 when none did.
func (n *Newer) RefSetter(typ, key string) int64 {
	if n == nil {
		return 0
	}
	return max(n.Refs[RefKey(typ, key)], n.RefTypes[typ])
}

// Kept is the note of a field a message out of order left as a newer message set it.
func Kept(field string, by int64) string {
	return fmt.Sprintf("%s kept: set by message %d, newer", field, by)
}
