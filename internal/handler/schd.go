package handler

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"msgx/internal/pipeline"
	"msgx/internal/sis"
)

// SchdGenType is the REF_DATA type holding the snapshot generation of each local day
// (key YYYY-MM-DD): its fields are a digest of all of the day's stored flights after the last
// snapshot that touched the day, so applying the same snapshot again (or re-sending any
// snapshot that leaves the day as it is) changes nothing and does not advance the version.
const SchdGenType = "SCHD_GEN"

// SchdSTYPs are the SCHD STYPs registered by name: DNLD and RESP replace the message's window,
// DEL deletes the listed flights and ADFT inserts or updates without deleting. Every other
// SCHD STYP (ADD, UPD, UPDT, …: the legacy's "anything else", docs/sis-format.md §2.1) reaches the same
// handler through the SCHD type fallback and, like ADFT, upserts without deleting.
var SchdSTYPs = []string{"DNLD", "RESP", "DEL", "ADFT"}

// RegisterSchd registers the SCHD handlers: SchdSTYPs by name and the handler as the SCHD
// fallback for any other STYP.
func RegisterSchd(r *Registry) {
	for _, styp := range SchdSTYPs {
		r.Register("SCHD-"+styp, withRecords(r.records, decideSchd))
	}
	r.RegisterType("SCHD", withRecords(r.records, decideSchd))
}

// decideSchd applies a daily schedule. The codec puts the FLTRs it could not accept into
// body.Invalid and the valid ones into body.Flights; the valid ones apply together in one
// transaction, each invalid one is listed in the Decision's warnings and its stored flight is
// left as it is: never written from the message, never deleted by a window replace. FLTRs
// whose SODT is before today's local midnight are ignored: they are not applied, and their
// flights are never deleted by the window replace either (docs/sis-format.md §3.5 step 6 lists that as
// a legacy bug).
func decideSchd(ctx context.Context, view View, msg *sis.Message, cache *recordCache) (pipeline.Decision, error) {
	var d pipeline.Decision
	body, ok := msg.Body.(*sis.SchdBody)
	if !ok {
		return d, fmt.Errorf("%s: body is %T, want *sis.SchdBody", msg.Tag(), msg.Body)
	}
	if err := needView(view); err != nil {
		return d, err
	}
	styp := msg.Meta.STYP
	replace := replaces(styp)
	bad := invalidFltrs(body.Invalid, replace)
	d.Warnings = append(d.Warnings, bad.warnings...)
	valid := bad.filter(body.Flights, &d)
	loc := view.Location()
	today := midnight(view.Now(), loc)
	c := schdCounts{styp: styp, fltr: len(body.Flights) + len(body.Invalid), invalid: len(body.Invalid),
		held: len(body.Flights) - len(valid), unknownKey: bad.unknownKey && replace}
	var live []sis.Flight
	for _, f := range valid {
		if !f.SODT.Before(today) {
			live = append(live, f)
		}
	}
	c.past, c.applied = len(valid)-len(live), len(live)
	if len(live) == 0 {
		d.Note = c.nothingApplied()
		return d, nil
	}
	w := newWork(ctx, view, cache)
	var win *window
	switch {
	case replace:
		var err error
		if win, err = replaceWindow(ctx, view, w, body, bad, today); err != nil {
			return d, err
		}
		if err := upsertAll(w, live); err != nil {
			return d, err
		}
	case styp == "DEL":
		ids := make([]int64, len(live))
		for i, f := range live {
			ids[i] = f.FLID
		}
		if err := w.prefetch(ids); err != nil {
			return d, err
		}
		for _, f := range live {
			e, err := w.load(f.FLID)
			if err != nil {
				return d, err
			}
			if e.cur != nil {
				e.cur, e.schedule = nil, true
			}
		}
	default:
		if err := upsertAll(w, live); err != nil {
			return d, err
		}
	}
	if _, err := w.finish(&d, win); err != nil {
		return pipeline.Decision{}, err
	}
	if win != nil {
		gens, err := generations(ctx, view, w, loc)
		if err != nil {
			return pipeline.Decision{}, err
		}
		d.Ref = append(d.Ref, gens...)
	}
	c.count(d.Flights, live)
	d.Note = withKept(&d, c.note(), w.kept)
	return d, nil
}

// replaces reports whether a message of STYP styp replaces what it covers: a SCHD DNLD or RESP
// its window, a reference DNLD or RESP its whole TYPE.
func replaces(styp string) bool { return styp == "DNLD" || styp == "RESP" }

// span returns the earliest and the latest SODT of flights, which is not empty.
func span(flights []sis.Flight) (from, to time.Time) {
	from, to = flights[0].SODT, flights[0].SODT
	for _, f := range flights {
		from, to = minTime(from, f.SODT), maxTime(to, f.SODT)
	}
	return from, to
}

// WindowOf returns the SODTs a SCHD DNLD or RESP spans: the window whose stored flights (from
// today's local midnight on) it replaces, deleting those it does not name. ok is false for any
// other message.
func WindowOf(msg *sis.Message) (from, to time.Time, ok bool) {
	b, isSchd := msg.Body.(*sis.SchdBody)
	if !isSchd || len(b.Flights) == 0 || !replaces(msg.Meta.STYP) {
		return from, to, false
	}
	from, to = span(b.Flights)
	return from, to, true
}

// replaceWindow loads the stored flights of the snapshot's window into w and marks for
// deletion those the message does not name. Every FLTR of the message counts as naming its
// flight, the ignored past ones and the invalid ones with a readable FLID too: a stored flight
// is deleted only when the message does not name it at all. When an invalid FLTR has no
// readable FLID it might name any stored flight, so nothing is deleted.
func replaceWindow(ctx context.Context, view View, w *work, body *sis.SchdBody, bad *badFltrs, today time.Time) (*window, error) {
	from, to := span(body.Flights)
	from = maxTime(from, today)
	win := &window{From: from, To: to}
	stored, err := view.FlightsBetween(ctx, from, to)
	if err != nil {
		return nil, pipeline.Wrap(pipeline.Infra, fmt.Errorf("read flights in the window: %w", err))
	}
	for _, b := range stored {
		if err := w.preload(b); err != nil {
			return nil, err
		}
	}
	if bad.unknownKey {
		return win, nil
	}
	inMsg := map[int64]bool{}
	for _, f := range body.Flights {
		inMsg[f.FLID] = true
	}
	for id := range bad.flids {
		inMsg[id] = true
	}
	for _, id := range slices.Clone(w.order) {
		if e := w.entries[id]; !inMsg[id] && e.cur != nil {
			e.cur, e.schedule = nil, true
		}
	}
	return win, nil
}

// badFltrs is what the invalid FLTRs of a message mean for the rest of it.
type badFltrs struct {
	flids      map[int64]int // FLID → index of the invalid FLTR naming it
	unknownKey bool          // an invalid FLTR has no readable FLID
	warnings   []string
}

// invalidFltrs lists each invalid FLTR as a warning and collects the FLIDs whose stored
// flights the message must leave as they are. replace says the message is a window replace,
// for which an invalid FLTR without a FLID turns the replace into an upsert (warned once).
func invalidFltrs(inv []sis.Invalid, replace bool) *badFltrs {
	b := &badFltrs{flids: map[int64]int{}}
	noKey := 0
	for _, x := range inv {
		flid, err := strconv.ParseInt(strings.TrimSpace(x.Key), 10, 64)
		if x.Key == "" || err != nil {
			noKey++
			b.unknownKey = true
			b.warnings = append(b.warnings, fmt.Sprintf("FLTR[%d] (FLID not readable) left out: %s",
				x.Index, trimReason(x.Reason, x.Index, x.Key)))
			continue
		}
		if _, dup := b.flids[flid]; !dup {
			b.flids[flid] = x.Index
		}
		b.warnings = append(b.warnings, fmt.Sprintf("FLTR[%d] FLID %d left out: %s; the stored flight is kept as it is",
			x.Index, flid, trimReason(x.Reason, x.Index, x.Key)))
	}
	if replace && noKey > 0 {
		b.warnings = append(b.warnings, fmt.Sprintf("%d invalid FLTR without a readable FLID: the window replacement deleted nothing this time (insert and update only)", noKey))
	}
	return b
}

// filter returns the valid FLTRs the message may apply: not those whose FLID an invalid FLTR
// also names (a duplicate FLID: which of the two is right is not known, so the stored flight
// is kept), each of which gets a warning in d.
func (b *badFltrs) filter(flights []sis.Flight, d *pipeline.Decision) []sis.Flight {
	if len(b.flids) == 0 {
		return flights
	}
	out := make([]sis.Flight, 0, len(flights))
	for _, f := range flights {
		if idx, held := b.flids[f.FLID]; held {
			d.Warnings = append(d.Warnings, fmt.Sprintf("FLTR FLID %d not applied: the invalid FLTR[%d] names the same flight; the stored flight is kept as it is", f.FLID, idx))
			continue
		}
		out = append(out, f)
	}
	return out
}

// trimReason drops from an invalid record's reason the "FLTR[n] FLID k: " or "TYPE record n: "
// prefix the decoder may have put there, since the warning names the record itself.
func trimReason(reason string, index int, key string) string {
	for _, p := range []string{
		fmt.Sprintf("FLTR[%d] FLID %s: ", index, key),
		fmt.Sprintf("FLTR[%d]: ", index),
	} {
		if r, ok := strings.CutPrefix(reason, p); ok {
			return r
		}
	}
	return reason
}

// schdCounts gathers what a SCHD message did, for its note.
type schdCounts struct {
	styp                                   string
	fltr, invalid, held, past, applied     int
	written, deleted, unchanged, notStored int
	unknownKey                             bool
}

// count fills the outcome counts from the flight writes: a write of a flight the message
// names or of a code-share master whose list it changed is "written"; an applied FLTR without
// a write is "unchanged" (DEL: "not stored").
func (c *schdCounts) count(writes []pipeline.FlightWrite, applied []sis.Flight) {
	hit := map[int64]bool{}
	for _, w := range writes {
		hit[w.FLID] = true
		if w.Delete {
			c.deleted++
		} else {
			c.written++
		}
	}
	for _, f := range applied {
		if !hit[f.FLID] {
			if c.styp == "DEL" {
				c.notStored++
			} else {
				c.unchanged++
			}
		}
	}
}

// nothingApplied is the note of a message none of whose FLTRs could apply.
func (c *schdCounts) nothingApplied() string {
	var head string
	switch {
	case c.fltr == 0:
		head = "no FLTR; nothing applied"
	case c.past > 0:
		head = fmt.Sprintf("%d FLTR before today ignored; nothing applied", c.past)
	default:
		head = "no valid FLTR; nothing applied"
	}
	return c.tail(head)
}

// note is the note of a message that applied its FLTRs.
func (c *schdCounts) note() string {
	var head string
	switch {
	case c.written == 0 && c.deleted == 0 && c.styp == "DEL":
		head = fmt.Sprintf("nothing changed: none of the %d listed flights is stored", c.notStored)
	case c.written == 0 && c.deleted == 0:
		head = "nothing changed: " + nof(c.unchanged, "flight") + " unchanged"
	case c.styp == "DEL":
		head = fmt.Sprintf("%s deleted, %d not stored", nof(c.deleted, "flight"), c.notStored)
		if c.written > 0 {
			head += ", " + nof(c.written, "code-share master") + " written"
		}
	default:
		head = fmt.Sprintf("%s written, %d deleted, %d unchanged", nof(c.written, "flight"), c.deleted, c.unchanged)
	}
	if c.past > 0 {
		head += fmt.Sprintf("; %d FLTR before today ignored", c.past)
	}
	return c.tail(head)
}

// tail appends what happened to the invalid FLTRs.
func (c *schdCounts) tail(s string) string {
	s = fmt.Sprintf("SCHD %s: %d FLTR; %s", c.styp, c.fltr, s)
	if c.invalid > 0 {
		s += fmt.Sprintf("; %d invalid FLTR left out, stored flights kept", c.invalid)
	}
	if c.held > 0 {
		s += fmt.Sprintf("; %d FLTR not applied (same FLID as an invalid one)", c.held)
	}
	if c.unknownKey && c.applied > 0 {
		s += "; nothing deleted (an invalid FLTR has no FLID)"
	}
	return s
}

// upsertAll makes each FLTR the flight's record. Fields a FLTR does not carry are kept from
// the stored record: CTOT, the push data of stand rows (PSTM, PSID from FLOP PSHT, on the
// row of the same number and stand) and the code-share list CSFL. The route (ERUT) is kept
// when the FLTR has none, as the legacy does (see keepAsLegacy).
func upsertAll(w *work, flights []sis.Flight) error {
	ids := make([]int64, len(flights))
	for i, f := range flights {
		ids[i] = f.FLID
	}
	if err := w.prefetch(ids); err != nil {
		return err
	}
	for _, f := range flights {
		e, err := w.load(f.FLID)
		if err != nil {
			return err
		}
		rec := &FlightRecord{Flight: f}
		if old := e.cur; old != nil {
			rec.CTOT = old.CTOT
			rec.CSFL = old.CSFL
			keepAsLegacy(rec, old)
			// A FLTR carries TIPT (folded into TRTM), so its TRTM wins; not PSHT.
			carryStandData(rec.PSDT, old.PSDT, false)
		} else if e.oldRec != nil {
			rec.CSFL = e.oldRec.CSFL
		}
		sortGroups(&rec.Flight)
		e.cur, e.schedule = rec, true
	}
	return nil
}

// keepAsLegacy keeps on an existing flight what the legacy keeps when a schedule overwrites
// it. docs/sis-format.md §3.5 step 4: every column and group is replaced by the FLTR's (absent → none)
// "except ERUT (kept when absent)", so a FLTR without ERUT (or with an empty one) leaves the
// stored route. The other exception §3.5 step 4 names, CHOT and CKDT never being updated on
// an existing flight, is marked there as a legacy bug and is not copied: a FLTR's CHOT and
// CKDT replace the stored ones.
func keepAsLegacy(rec, old *FlightRecord) {
	if len(rec.ERUT) == 0 {
		rec.ERUT = slices.Clone(old.ERUT)
	}
}

// generations returns one SCHD_GEN upsert per local day the snapshot touched (the old and new
// day of each flight it upserted or deleted; not the days of code-share masters loaded only to
// keep their CSFL up to date). Its fields digest ALL of that day's flights after the change:
// the day's stored flights read through the view, overlaid with the work set (changed,
// inserted, deleted), each record hashed in canonical form and sorted by FLID. So the fields
// are a property of the day's resulting board, not of the message: the same snapshot applied
// twice, or two snapshots covering different parts of one day re-sent, yield the same fields,
// which the store treats as unchanged (no version step).
func generations(ctx context.Context, view View, w *work, loc *time.Location) ([]pipeline.RefChange, error) {
	days := scheduledDays(w, loc)
	keys := make([]string, 0, len(days))
	for k := range days {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]pipeline.RefChange, 0, len(keys))
	for _, k := range keys {
		recs, err := dayBoard(ctx, view, w, loc, k, days[k])
		if err != nil {
			return nil, err
		}
		ids := make([]int64, 0, len(recs))
		for id := range recs {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		h := sha256.New()
		for _, id := range ids {
			sum := sha256.Sum256(recs[id])
			fmt.Fprintf(h, "%d:%s\n", id, hex.EncodeToString(sum[:]))
		}
		fields, err := json.Marshal(map[string]any{"day": k, "flights": len(ids), "digest": hex.EncodeToString(h.Sum(nil))})
		if err != nil {
			return nil, err
		}
		out = append(out, pipeline.RefChange{Op: pipeline.RefUpsert, Type: SchdGenType, Record: pipeline.RefRecord{Key: k, Fields: fields}})
	}
	return out, nil
}

// scheduledDays returns the local days (key → local midnight) of the flights the snapshot
// upserted or deleted, old and new.
func scheduledDays(w *work, loc *time.Location) map[string]time.Time {
	days := map[string]time.Time{} // key → local midnight
	touch := func(t time.Time) { days[localDay(t, loc)] = midnight(t, loc) }
	for _, id := range w.order {
		e := w.entries[id]
		if !e.schedule {
			continue
		}
		if e.oldRec != nil {
			touch(e.oldRec.SODT)
		}
		if e.cur != nil {
			touch(e.cur.SODT)
		}
	}
	return days
}

// dayBoard returns the canonical encoding of each flight of local day k (starting at start)
// after the change: the day's stored flights read through the view, overlaid with the work
// set.
func dayBoard(ctx context.Context, view View, w *work, loc *time.Location, k string, start time.Time) (map[int64][]byte, error) {
	end := time.Date(start.Year(), start.Month(), start.Day()+1, 0, 0, 0, 0, loc).Add(-time.Nanosecond)
	stored, err := view.FlightsBetween(ctx, start, end) // bounds inclusive
	if err != nil {
		return nil, pipeline.Wrap(pipeline.Infra, fmt.Errorf("read the flights of %s: %w", k, err))
	}
	recs := map[int64][]byte{}
	for _, b := range stored {
		var key struct {
			FLID int64 `json:"FLID"`
		}
		if err := json.Unmarshal(b, &key); err != nil {
			return nil, pipeline.Wrap(pipeline.Infra, fmt.Errorf("stored flight record of %s: %w", k, err))
		}
		if _, touched := w.entries[key.FLID]; touched {
			continue // the work set's state wins (below); a snapshot touches most of the day
		}
		r, err := decodeRecord(b)
		if err != nil {
			return nil, pipeline.Wrap(pipeline.Infra, fmt.Errorf("stored flight record of %s: %w", k, err))
		}
		if localDay(r.SODT, loc) != k {
			continue
		}
		c, err := encodeRecord(r)
		if err != nil {
			return nil, pipeline.Wrap(pipeline.Infra, fmt.Errorf("stored flight %d: %w", r.FLID, err))
		}
		recs[r.FLID] = c
	}
	for _, id := range w.order {
		e := w.entries[id]
		if e.cur == nil || localDay(e.cur.SODT, loc) != k {
			continue
		}
		c := e.enc // finish encoded it already
		if c == nil {
			var err error
			if c, err = encodeRecord(e.cur); err != nil {
				return nil, fmt.Errorf("flight %d: %w", id, err)
			}
		}
		recs[id] = c
	}
	return recs, nil
}

// midnight returns the start of t's local day in loc.
func midnight(t time.Time, loc *time.Location) time.Time {
	l := t.In(loc)
	return time.Date(l.Year(), l.Month(), l.Day(), 0, 0, 0, 0, loc)
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
