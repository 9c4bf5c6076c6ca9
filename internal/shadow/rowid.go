package shadow

import (
	"fmt"
	"slices"
	"strings"
)

// Ambiguity is a legacy notification carrying a row id as flightId that could belong to more
// than one msgx flight: the comparison cannot tell which, so the differences it could explain
// on those flights are left undecided rather than reported.
type Ambiguity struct {
	Line  int      // the notification's line in the legacy capture
	STYP  string   // the STYP its keys belong to
	Row   int64    // the legacy row id it carries as flightId
	Keys  []string // its updatedFields keys
	FLIDs []int64  // the msgx flights it could belong to
	Why   string
}

// rowNote is a legacy update that carries a row id as flightId, and where it was placed.
type rowNote struct {
	idx    int   // index in the legacy notes
	row    int64 // its flightId
	styp   string
	cands  []int // indices of the msgx updates that carry its values, in msgx's order
	flid   int64
	fixed  bool // mapped by --legacy-ids
	done   bool
	strong bool // placed by pairing in order (or fixed), not only by a value one flight has
}

// candidateFlights returns the distinct flights of the msgx notes at idx, in order.
func candidateFlights(idx []int, msgx []Note) []int64 {
	var out []int64
	for _, i := range idx {
		if id := *msgx[i].FlightID; !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

// resolveRowIDs finds, for every legacy update that carries a row id as flightId (docs/sis-format.md
// §3.8), the msgx flight it belongs to. A value alone does not tell: two flights can be
// given the same time. So a row id is placed by --legacy-ids first, and otherwise by flight
// and the order of changes:
//
//   - the msgx updates carrying the same values are its candidates; the legacy notes with
//     exactly the same candidates are one class, and when a class has as many notes as
//     candidates they pair in order (both sides publish in message order); a class whose
//     candidates are all on one flight goes there, but only where no pairing says otherwise;
//   - a row id is one flight: the notes of a row that were placed must agree, and then every
//     note of the row goes there, even one whose values msgx did not publish (a difference);
//   - two row ids are two flights: of two rows placed on one flight, one placed by pairing
//     keeps it and one placed only by a value gives way; otherwise neither is placed.
//
// It returns the flight of each placed note (by index in legacy), the notes no msgx flight
// carries (differences), and the notes it cannot place (Ambiguity).
func resolveRowIDs(legacy, msgx []Note, opt Options) (map[int]int64, []string, []Ambiguity) {
	notes := rowNotes(legacy, msgx, opt)
	pairInOrder(notes, msgx)
	byRow, conflict, strongRow := placeRows(notes)
	separateRows(notes, byRow, conflict, strongRow)
	return placements(legacy, msgx, notes, conflict)
}

// rowNotes returns the legacy updates that carry a row id as flightId: placed when
// --legacy-ids maps the row, else with their candidates.
func rowNotes(legacy, msgx []Note, opt Options) []*rowNote {
	var notes []*rowNote
	for i, n := range legacy {
		if n.Null || n.FlightID == nil {
			continue
		}
		styp, ok := rowIDNote(n)
		if !ok {
			continue
		}
		rn := &rowNote{idx: i, row: *n.FlightID, styp: styp}
		if flid, ok := opt.RowIDs[rn.row]; ok {
			rn.flid, rn.fixed, rn.done, rn.strong = flid, true, true, true
		} else {
			rn.cands = candidates(n, msgx)
		}
		notes = append(notes, rn)
	}
	return notes
}

// pairInOrder places the notes of a class (the same candidates) in order when the class has
// as many notes as candidates, and on the one flight when all its candidates are on one.
func pairInOrder(notes []*rowNote, msgx []Note) {
	classes := map[string][]*rowNote{}
	var order []string
	for _, rn := range notes {
		if rn.fixed || len(rn.cands) == 0 {
			continue
		}
		k := fmt.Sprint(rn.cands)
		if _, ok := classes[k]; !ok {
			order = append(order, k)
		}
		classes[k] = append(classes[k], rn)
	}
	for _, k := range order {
		class := classes[k]
		cands := class[0].cands
		flights := candidateFlights(cands, msgx)
		for i, rn := range class {
			switch {
			case len(class) == len(cands):
				rn.flid, rn.done, rn.strong = *msgx[cands[i]].FlightID, true, true
			case len(flights) == 1:
				rn.flid, rn.done = flights[0], true
			}
		}
	}
}

// placeRows makes a row id one flight: the notes paired in order place the row, or without
// any, the notes whose values only one flight carries; then every note of the row goes
// there. It returns the notes of each row not fixed by --legacy-ids, the rows whose notes
// match different flights (with why), and whether a row was placed by pairing.
func placeRows(notes []*rowNote) (byRow map[int64][]*rowNote, conflict map[int64]string, strongRow map[int64]bool) {
	byRow = map[int64][]*rowNote{}
	var rows []int64
	for _, rn := range notes {
		if rn.fixed {
			continue
		}
		if _, ok := byRow[rn.row]; !ok {
			rows = append(rows, rn.row)
		}
		byRow[rn.row] = append(byRow[rn.row], rn)
	}
	conflict = map[int64]string{} // row → why it cannot be placed
	strongRow = map[int64]bool{}
	for _, row := range rows {
		var strong, weak []int64
		for _, rn := range byRow[row] {
			switch {
			case rn.strong && !slices.Contains(strong, rn.flid):
				strong = append(strong, rn.flid)
			case rn.done && !rn.strong && !slices.Contains(weak, rn.flid):
				weak = append(weak, rn.flid)
			}
		}
		flights := strong
		if len(flights) == 0 {
			flights = weak
		}
		switch len(flights) {
		case 0:
			continue
		case 1:
			strongRow[row] = len(strong) == 1
			for _, rn := range byRow[row] {
				rn.flid, rn.done = flights[0], true
			}
		default:
			conflict[row] = fmt.Sprintf("its notifications match different msgx flights %v", flights)
		}
	}
	return byRow, conflict, strongRow
}

// separateRows keeps two row ids two flights: of the rows placed on one flight, a row placed
// only by values gives way to one paired in order (or fixed); otherwise neither is placed.
// The rows that give way join conflict.
func separateRows(notes []*rowNote, byRow map[int64][]*rowNote, conflict map[int64]string, strongRow map[int64]bool) {
	rowsOf := map[int64][]int64{}
	for _, rn := range notes {
		if rn.done && conflict[rn.row] == "" && !slices.Contains(rowsOf[rn.flid], rn.row) {
			rowsOf[rn.flid] = append(rowsOf[rn.flid], rn.row)
			if rn.fixed {
				strongRow[rn.row] = true
			}
		}
	}
	for flid, rows := range rowsOf {
		if len(rows) < 2 {
			continue
		}
		var strong []int64
		for _, row := range rows {
			if strongRow[row] {
				strong = append(strong, row)
			}
		}
		for _, row := range rows {
			if len(byRow[row]) > 0 && (len(strong) != 1 || !strongRow[row]) {
				conflict[row] = fmt.Sprintf("row ids %v all match msgx flight %d", rows, flid)
			}
		}
	}
}

// placements is resolveRowIDs' answer for the notes as placed: the flight of each placed
// note, the notes no msgx flight carries, and the notes it cannot place.
func placements(legacy, msgx []Note, notes []*rowNote, conflict map[int64]string) (map[int]int64, []string, []Ambiguity) {
	placed := map[int]int64{}
	var unresolved []string
	var ambiguous []Ambiguity
	for _, rn := range notes {
		n := legacy[rn.idx]
		why, bad := conflict[rn.row]
		switch {
		case rn.done && !bad:
			placed[rn.idx] = rn.flid
		case len(rn.cands) == 0 && !bad:
			unresolved = append(unresolved, fmt.Sprintf("legacy line %d: %s %s with row id %d as flightId: no msgx flight carries the same values",
				n.Line, rn.styp, keysOf(n.Fields), rn.row))
		default:
			flights := candidateFlights(rn.cands, msgx)
			if rn.done && !slices.Contains(flights, rn.flid) {
				flights = append(flights, rn.flid)
			}
			if !bad {
				why = fmt.Sprintf("%d msgx notifications on flights %v carry the same values and %d legacy ones do, so the order of changes does not pair them",
					len(rn.cands), flights, len(legacyClass(rn, notes)))
			}
			slices.Sort(flights)
			ambiguous = append(ambiguous, Ambiguity{Line: n.Line, STYP: rn.styp, Row: rn.row,
				Keys: strings.Split(keysOf(n.Fields), ","), FLIDs: flights, Why: why})
		}
	}
	return placed, unresolved, ambiguous
}

// legacyClass returns the notes with the same candidates as rn.
func legacyClass(rn *rowNote, notes []*rowNote) []*rowNote {
	var out []*rowNote
	for _, o := range notes {
		if !o.fixed && slices.Equal(o.cands, rn.cands) {
			out = append(out, o)
		}
	}
	return out
}
