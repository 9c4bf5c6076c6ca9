package shadow

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	"msgx/internal/legacyflop"
)

// Rule is one legacy behaviour the comparison does not report as a difference, because msgx
// differs from it on purpose (docs/sis-format.md marks each as a bug or a behaviour to fix).
type Rule struct {
	ID      string
	Text    string
	Applied int // how many times it explained a difference in this comparison
}

// rules returns the rules, in the order the report lists them.
func rules() []*Rule {
	return []*Rule{
		{ID: "row-id", Text: "the legacy's flightId is its database row id, not the FLID, for APPT BOTM CNCL EGSR EGST FINT LACL ERUT FDIV FLAB FRET HNAG SRVT TAOP VIPP (docs/sis-format.md §3.8, bug); msgx sends the FLID. Such a row id is mapped by --legacy-ids, or placed by the order of changes: the legacy notifications carrying the same values as msgx notifications pair with them in order, and a row id is one flight (never by a value two flights share)"},
		{ID: "group-keys", Text: "the legacy names every key of a several-key STYP (PORT EXSS FDIV FRET FLAB HNAG TAOP VIPP), msgx the ones whose value changed (for PORT both times); a key only one side names is not a difference when the other side named another key of the same STYP for that flight"},
		{ID: "snapshot-drop", Text: "a SCHD DNLD/RESP deletes the stored flights of its window that it does not carry without any notification in the legacy (§3.5 step 6); msgx publishes a delete. A delete only msgx published, with the createTime of one of its schedule notifications with a window (the same snapshot), is not a difference"},
		{ID: "null-schedule", Text: "for SCHD DEL and ADFT the legacy publishes null instead of a schedule notification (§3.5); msgx publishes a schedule notification without a window. The legacy's null lines are skipped, and msgx's windowless schedules are not reported when the legacy published nulls"},
		{ID: "dely-duration", Text: "the legacy reads a DELY duration HHMM as HH×24+MM minutes (§2.3 F, bug); msgx as HH×60+MM. A delays DURA that differs only so is not a difference"},
		{ID: "null-text", Text: "the legacy stores the text \"null\" where an optional part is missing (FRET REID, FLAB ARES; ABOP CCLS CTYP BCLS BTYP GTYP in groups; §5); \"null\" equals no value"},
		{ID: "group-no-list", Text: "a bad date inside a group makes the legacy publish a notification carrying no list (§2.3 E, bug); msgx refuses the message. A group key only the legacy named, with no list, is not a difference"},
	}
}

// Options tune a comparison.
type Options struct {
	// RowIDs maps legacy row ids to FLIDs (from the legacy database), used before matching.
	RowIDs map[int64]int64
}

// Diff is one difference on one flight.
type Diff struct {
	Kind   string // mismatch | only-legacy | only-msgx
	What   string // a legacy key, "delete" or "schedule"
	Legacy string // the legacy's final value ("" when only msgx)
	Msgx   string
}

// FlightResult is the comparison of one flight.
type FlightResult struct {
	FLID      int64
	Equal     []string // keys both sides changed to the same final value (and delete, schedule)
	Explained []string // the rules that explained a difference on this flight
	Diffs     []Diff
	Undecided []Diff // differences an ambiguous legacy notification could explain
}

// Report is the result of Compare.
type Report struct {
	LegacyNotes, MsgxNotes int
	LegacyNull             int // legacy null payloads (skipped)
	RowIDsMapped           int
	Unresolved             []string    // legacy notifications no msgx flight carries (differences)
	Ambiguous              []Ambiguity // legacy notifications that could belong to several flights
	Flights                []FlightResult
	Rules                  []*Rule
}

// Differences counts the differences found (each flight's diffs and every unresolved note).
func (r Report) Differences() int {
	n := len(r.Unresolved)
	for _, f := range r.Flights {
		n += len(f.Diffs)
	}
	return n
}

// Equal reports whether the two sides gave the same picture.
func (r Report) Equal() bool { return r.Differences() == 0 && len(r.Ambiguous) == 0 }

// Undecided reports whether no difference was found but some legacy notifications could not
// be placed on one flight, so the comparison cannot say the two sides are equal.
func (r Report) Undecided() bool { return r.Differences() == 0 && len(r.Ambiguous) > 0 }

// Verdict is EQUAL, DIFFERENT or UNDECIDED.
func (r Report) Verdict() string {
	switch {
	case r.Differences() > 0:
		return "DIFFERENT"
	case r.Undecided():
		return "UNDECIDED"
	}
	return "EQUAL"
}

// undecided reports whether an ambiguous legacy notification could explain a difference
// on flight id about what.
func (r Report) undecided(id int64, what string) bool {
	for _, a := range r.Ambiguous {
		if slices.Contains(a.FLIDs, id) && slices.Contains(a.Keys, what) {
			return true
		}
	}
	return false
}

// side is what one side said about each flight.
type side struct {
	flights    map[int64]*flight
	schedules  int                // schedule notifications
	snapshotAt map[time.Time]bool // createTime of the schedule notifications with a window
}

type flight struct {
	fields     map[string]any
	deleted    bool
	scheduled  bool
	windowless bool // every schedule naming it had no window
	notes      int
	deletedAt  *time.Time // createTime of its last delete
}

func newSide() *side { return &side{flights: map[int64]*flight{}, snapshotAt: map[time.Time]bool{}} }

func (s *side) get(id int64) *flight {
	f, ok := s.flights[id]
	if !ok {
		f = &flight{fields: map[string]any{}, windowless: true}
		s.flights[id] = f
	}
	return f
}

func (s *side) add(id int64, n Note) {
	f := s.get(id)
	f.notes++
	switch n.Type {
	case "delete":
		f.deleted, f.deletedAt = true, n.CreateTime
	case "update":
		for k, v := range n.Fields {
			f.fields[k] = v
		}
	}
}

func (s *side) schedule(n Note) {
	s.schedules++
	if n.ScheduleStart != nil && n.CreateTime != nil {
		s.snapshotAt[*n.CreateTime] = true
	}
	ids := n.Flights
	if len(ids) == 0 && n.FlightID != nil {
		ids = []int64{*n.FlightID}
	}
	for _, id := range ids {
		f := s.get(id)
		f.notes++
		f.scheduled = true
		if n.ScheduleStart != nil {
			f.windowless = false
		}
	}
}

// rowIDNote reports whether a legacy update carries a row id as flightId, and the STYP.
func rowIDNote(n Note) (string, bool) {
	if n.Type != "update" {
		return "", false
	}
	for k := range n.Fields {
		if st := legacyflop.STYPOf(k); slices.Contains(legacyflop.RowIDSTYPs, st) {
			return st, true
		}
	}
	return "", false
}

// Compare compares the legacy's notifications with msgx's.
func Compare(legacy, msgx []Note, opt Options) Report {
	c := comparison{rep: Report{Rules: rules()}}
	m := newSide()
	for _, n := range msgx {
		c.rep.MsgxNotes++
		switch {
		case n.Null:
		case n.Type == "schedule":
			m.schedule(n)
		case n.FlightID != nil:
			m.add(*n.FlightID, n)
		}
	}
	placed, unresolved, ambiguous := resolveRowIDs(legacy, msgx, opt)
	c.rep.Unresolved, c.rep.Ambiguous = unresolved, ambiguous
	l, rowMapped := c.legacySide(legacy, placed)

	empty := &flight{fields: map[string]any{}, windowless: true}
	for _, id := range flightIDs(l, m) {
		lf, mf := l.flights[id], m.flights[id]
		if lf == nil {
			lf = empty
		}
		if mf == nil {
			mf = empty
		}
		c.rep.Flights = append(c.rep.Flights, c.flight(id, lf, mf, m, rowMapped[id]))
	}
	return c.rep
}

// comparison is a Compare under way: the report, and the flight being compared, if any.
type comparison struct {
	rep Report
	cur *FlightResult
}

// rule counts one more application of the rule id, and notes it on the flight being
// compared.
func (c *comparison) rule(id string) {
	for _, r := range c.rep.Rules {
		if r.ID == id {
			r.Applied++
		}
	}
	if c.cur != nil && !slices.Contains(c.cur.Explained, id) {
		c.cur.Explained = append(c.cur.Explained, id)
	}
}

// legacySide reads the legacy's notes, those carrying a row id on the flight resolveRowIDs
// placed them on (the unplaced ones are left out). It returns the side and the flights a
// legacy row id was mapped to.
func (c *comparison) legacySide(legacy []Note, placed map[int]int64) (*side, map[int64]bool) {
	l := newSide()
	rowMapped := map[int64]bool{}
	for i, n := range legacy {
		c.rep.LegacyNotes++
		if n.Null {
			c.rep.LegacyNull++
			continue
		}
		if n.Type == "schedule" {
			l.schedule(n)
			continue
		}
		if n.FlightID == nil {
			c.rep.Unresolved = append(c.rep.Unresolved, fmt.Sprintf("legacy line %d: %s without flightId", n.Line, n.Type))
			continue
		}
		id := *n.FlightID
		if _, ok := rowIDNote(n); ok {
			flid, found := placed[i]
			if !found {
				continue // unresolved or ambiguous
			}
			if flid != id { // a capture that already carries the FLID needs no mapping
				c.rep.RowIDsMapped++
				c.rule("row-id")
				rowMapped[flid] = true
			}
			id = flid
		}
		l.add(id, n)
	}
	return l, rowMapped
}

// flightIDs returns the flights either side named, in order.
func flightIDs(l, m *side) []int64 {
	ids := map[int64]bool{}
	for id := range l.flights {
		ids[id] = true
	}
	for id := range m.flights {
		ids[id] = true
	}
	sorted := make([]int64, 0, len(ids))
	for id := range ids {
		sorted = append(sorted, id)
	}
	slices.Sort(sorted)
	return sorted
}

// flight compares what the legacy (lf) and msgx (mf, of side m) said of flight id; rowMapped
// is whether a legacy row id was mapped to it. The differences an ambiguous legacy
// notification could explain are undecided.
func (c *comparison) flight(id int64, lf, mf *flight, m *side, rowMapped bool) FlightResult {
	res := FlightResult{FLID: id}
	c.cur = &res
	if rowMapped {
		res.Explained = append(res.Explained, "row-id")
	}
	c.fields(&res, lf, mf)
	c.deleteAndSchedule(&res, lf, mf, m)
	diffs := res.Diffs[:0:0]
	for _, d := range res.Diffs {
		if c.rep.undecided(id, d.What) {
			res.Undecided = append(res.Undecided, d)
		} else {
			diffs = append(diffs, d)
		}
	}
	res.Diffs = diffs
	c.cur = nil
	return res
}

// fields compares the final value of each key either side changed.
func (c *comparison) fields(res *FlightResult, lf, mf *flight) {
	keys := map[string]bool{}
	for k := range lf.fields {
		keys[k] = true
	}
	for k := range mf.fields {
		keys[k] = true
	}
	for _, k := range sortedKeys(keys) {
		lv, inL := lf.fields[k]
		mv, inM := mf.fields[k]
		switch {
		case inL && inM:
			eq, applied := equal(k, lv, mv)
			if eq {
				res.Equal = append(res.Equal, k)
				for _, r := range applied {
					c.rule(r)
				}
			} else {
				res.Diffs = append(res.Diffs, Diff{Kind: "mismatch", What: k, Legacy: show(lv), Msgx: show(mv)})
			}
		case inL:
			switch {
			case isGroupKey(k) && noList(lv):
				c.rule("group-no-list")
			case sameSTYPKey(k, mf.fields):
				c.rule("group-keys")
			default:
				res.Diffs = append(res.Diffs, Diff{Kind: "only-legacy", What: k, Legacy: show(lv)})
			}
		default:
			if sameSTYPKey(k, lf.fields) {
				c.rule("group-keys")
			} else {
				res.Diffs = append(res.Diffs, Diff{Kind: "only-msgx", What: k, Msgx: show(mv)})
			}
		}
	}
}

// deleteAndSchedule compares whether each side deleted the flight, and whether each named it
// in a schedule notification.
func (c *comparison) deleteAndSchedule(res *FlightResult, lf, mf *flight, m *side) {
	switch {
	case lf.deleted && mf.deleted:
		res.Equal = append(res.Equal, "delete")
	case mf.deleted && mf.deletedAt != nil && m.snapshotAt[*mf.deletedAt]:
		c.rule("snapshot-drop")
	case lf.deleted:
		res.Diffs = append(res.Diffs, Diff{Kind: "only-legacy", What: "delete"})
	case mf.deleted:
		res.Diffs = append(res.Diffs, Diff{Kind: "only-msgx", What: "delete"})
	}
	switch {
	case lf.scheduled && mf.scheduled:
		res.Equal = append(res.Equal, "schedule")
	case mf.scheduled && mf.windowless && c.rep.LegacyNull > 0:
		c.rule("null-schedule")
	case lf.scheduled:
		res.Diffs = append(res.Diffs, Diff{Kind: "only-legacy", What: "schedule"})
	case mf.scheduled:
		res.Diffs = append(res.Diffs, Diff{Kind: "only-msgx", What: "schedule"})
	}
}

// candidates returns the indices of the msgx updates that carry at least one key of the
// legacy update n, each with the same value.
func candidates(n Note, msgx []Note) []int {
	var out []int
	for i, m := range msgx {
		if m.Null || m.Type != "update" || m.FlightID == nil {
			continue
		}
		shared, same := 0, true
		for k, v := range n.Fields {
			if mv, ok := m.Fields[k]; ok {
				shared++
				if eq, _ := equal(k, v, mv); !eq {
					same = false
				}
			}
		}
		if shared > 0 && same {
			out = append(out, i)
		}
	}
	return out
}

func keysOf(m map[string]any) string {
	k := make(map[string]bool, len(m))
	for key := range m {
		k[key] = true
	}
	return strings.Join(sortedKeys(k), ",")
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// isGroupKey reports whether key is one of the replaced groups (§2.3 E).
func isGroupKey(key string) bool {
	switch key {
	case "airbridges", "chutes", "chocks", "checkinDesks", "carousels", "gates", "stands":
		return true
	}
	return false
}

func noList(v any) bool {
	l, ok := v.([]any)
	return v == nil || ok && len(l) == 0
}

// sameSTYPKey reports whether other holds another key of key's several-key STYP.
func sameSTYPKey(key string, other map[string]any) bool {
	st := legacyflop.STYPOf(key)
	if st == "" || len(legacyflop.Keys[st]) < 2 {
		return false
	}
	for _, k := range legacyflop.Keys[st] {
		if _, ok := other[k]; ok && k != key {
			return true
		}
	}
	return false
}

// normalise turns a value into its comparable form: times (by key or group part name) as
// time.Time in UTC, integers as int64, other numbers as float64.
func normalise(key string, v any, loc *time.Location) any {
	switch x := v.(type) {
	case json.Number:
		if legacyflop.IsTimeKey(key) {
			if t := toTime(x, loc); t != nil {
				return *t
			}
		}
		if n, err := x.Int64(); err == nil {
			return n
		}
		f, _ := x.Float64()
		return f
	case string:
		if legacyflop.IsTimeKey(key) {
			if t := toTime(x, loc); t != nil {
				return *t
			}
		}
		return x
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalise(key, e, loc)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = normalise(k, e, loc)
		}
		return out
	}
	return v
}

// equal compares two normalised values of key; applied names the rules that made them equal.
func equal(key string, a, b any) (bool, []string) {
	var applied []string
	var eq func(k string, a, b any) bool
	eq = func(k string, a, b any) bool {
		if s, ok := a.(string); ok && s == "null" && b == nil || a == nil && b == "null" {
			applied = append(applied, "null-text")
			return true
		}
		switch x := a.(type) {
		case map[string]any:
			y, ok := b.(map[string]any)
			if !ok {
				return false
			}
			for kk := range x {
				if !eq(kk, x[kk], y[kk]) {
					return false
				}
			}
			for kk := range y {
				if _, in := x[kk]; !in && !eq(kk, nil, y[kk]) {
					return false
				}
			}
			return true
		case []any:
			y, ok := b.([]any)
			if !ok || len(x) != len(y) {
				return false
			}
			for i := range x {
				if !eq(k, x[i], y[i]) {
					return false
				}
			}
			return true
		case time.Time:
			y, ok := b.(time.Time)
			return ok && x.Equal(y)
		case int64:
			if (k == "DURA" || k == "duration") && key == "delays" {
				if y, ok := b.(int64); ok && x != y && x == y/60*24+y%60 {
					applied = append(applied, "dely-duration")
					return true
				}
			}
		}
		return fmt.Sprint(a) == fmt.Sprint(b) && sameKind(a, b)
	}
	ok := eq(key, a, b)
	if !ok {
		applied = nil
	}
	return ok, applied
}

func sameKind(a, b any) bool { return fmt.Sprintf("%T", a) == fmt.Sprintf("%T", b) }

// show writes a normalised value for the report (times in RFC 3339 UTC).
func show(v any) string {
	var conv func(v any) any
	conv = func(v any) any {
		switch x := v.(type) {
		case time.Time:
			return x.UTC().Format(time.RFC3339)
		case []any:
			out := make([]any, len(x))
			for i, e := range x {
				out[i] = conv(e)
			}
			return out
		case map[string]any:
			out := make(map[string]any, len(x))
			for k, e := range x {
				out[k] = conv(e)
			}
			return out
		}
		return v
	}
	b, err := json.Marshal(conv(v))
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// Write prints the report: the counts, the rules and how often each applied, one line per
// flight, and the verdict.
func (r Report) Write(w io.Writer) {
	fmt.Fprintf(w, "shadow diff: legacy %d notifications (%d null, %d row ids mapped to a FLID), msgx %d notifications; %d flights\n",
		r.LegacyNotes, r.LegacyNull, r.RowIDsMapped, r.MsgxNotes, len(r.Flights))
	fmt.Fprintln(w, "rules (legacy behaviour msgx changes on purpose; not reported as differences):")
	for _, ru := range r.Rules {
		fmt.Fprintf(w, "  [%s] applied %d×: %s\n", ru.ID, ru.Applied, ru.Text)
	}
	equalFlights, undecidedFlights := 0, 0
	line := func(prefix string, d Diff) {
		switch d.Kind {
		case "mismatch":
			fmt.Fprintf(w, "  %sMISMATCH %s: legacy %s, msgx %s\n", prefix, d.What, d.Legacy, d.Msgx)
		case "only-legacy":
			fmt.Fprintf(w, "  %sONLY LEGACY %s %s\n", prefix, d.What, d.Legacy)
		default:
			fmt.Fprintf(w, "  %sONLY MSGX %s %s\n", prefix, d.What, d.Msgx)
		}
	}
	for _, f := range r.Flights {
		explained := ""
		if len(f.Explained) > 0 {
			explained = "; explained by " + strings.Join(f.Explained, ", ")
		}
		switch {
		case len(f.Diffs) == 0 && len(f.Undecided) == 0:
			equalFlights++
			fmt.Fprintf(w, "flight %d: match (%s)%s\n", f.FLID, strings.Join(f.Equal, ", "), explained)
			continue
		case len(f.Diffs) == 0:
			undecidedFlights++
			fmt.Fprintf(w, "flight %d: undecided; match (%s)%s\n", f.FLID, strings.Join(f.Equal, ", "), explained)
		default:
			fmt.Fprintf(w, "flight %d: %d difference(s); match (%s)%s\n", f.FLID, len(f.Diffs), strings.Join(f.Equal, ", "), explained)
		}
		for _, d := range f.Diffs {
			line("", d)
		}
		for _, d := range f.Undecided {
			line("UNDECIDED ", d) // an ambiguous legacy notification below could explain it
		}
	}
	for _, u := range r.Unresolved {
		fmt.Fprintf(w, "UNRESOLVED %s\n", u)
	}
	for _, a := range r.Ambiguous {
		fmt.Fprintf(w, "AMBIGUOUS legacy line %d: %s %s with row id %d as flightId could be msgx flight %v: %s; give --legacy-ids to tell\n",
			a.Line, a.STYP, strings.Join(a.Keys, ","), a.Row, a.FLIDs, a.Why)
	}
	fmt.Fprintf(w, "result: %s: %d flights match, %d differ, %d undecided, %d differences, %d unresolved, %d ambiguous\n",
		r.Verdict(), equalFlights, len(r.Flights)-equalFlights-undecidedFlights, undecidedFlights, r.Differences(), len(r.Unresolved), len(r.Ambiguous))
}
