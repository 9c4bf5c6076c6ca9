package handler

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"msgx/internal/event"
	"msgx/internal/pipeline"
	"msgx/internal/sis"
)

// Event targets and payload kinds of flight changes (docs/payloads.md describes each payload).
const (
	TargetFlop   = event.TargetFlop   // changed fields, old and new values
	TargetSchd   = event.TargetSchd   // the whole record after the change (batched by the dispatcher)
	TargetNotify = event.TargetNotify // a short notification for the console and web clients
	TargetES     = event.TargetES     // the Elasticsearch flight document (phase B)

	KindFlop     = event.KindFlop
	KindSchd     = event.KindSchd
	KindNotify   = event.KindNotify
	KindESUpsert = event.KindESUpsert
	KindESDelete = event.KindESDelete
)

// FlightRecord is the stored record of one flight: every field of sis.Flight under its SIS
// element name, plus CSFL, which msgx maintains itself: on a code-share master (a flight other
// flights name by MAID) the sorted flight numbers (FLNO) of its code-share flights; absent
// when it has none. CSFL is recomputed whenever a flight naming the master is inserted,
// changed or deleted, and on the master itself when it is inserted.
type FlightRecord struct {
	sis.Flight
	CSFL []string `json:"CSFL,omitempty"`
}

// decodeRecord reads a stored record.
func decodeRecord(b []byte) (*FlightRecord, error) {
	var r FlightRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// encodeRecord writes a record canonically (struct order; the decoder's times are UTC), so
// that equal records have equal bytes. One Marshal is enough, except for a string that is not
// valid UTF-8 (Marshal writes \ufffd for its bad bytes, which decodes to the character
// itself, written as is the next time): a record decoded from its own encoding then encodes
// to the same bytes (times keep their offset, nil and empty lists and maps keep their form),
// as TestEncodeRecordIsAFixedPoint checks. The decode-and-encode-again is done only when
// the output holds that escape; done always, it doubled the JSON work of every snapshot.
func encodeRecord(r *FlightRecord) ([]byte, error) {
	b, err := json.Marshal(r)
	if err != nil || !bytes.Contains(b, []byte(`\ufffd`)) {
		return b, err
	}
	var c FlightRecord
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, err
	}
	return json.Marshal(&c)
}

// entry is one flight a Decision touches: its stored state and its state after the change.
type entry struct {
	flid     int64
	old      []byte        // canonical stored record; nil when there was none
	oldRec   *FlightRecord // decoded old; nil when there was none
	cur      *FlightRecord // state after the change; nil when deleted (or never existed)
	enc      []byte        // canonical encoding of cur as finish wrote it (nil: not yet)
	schedule bool          // changed by a schedule message (notify type "schedule")
}

// work is the set of flights one message changes, read from the view on first use, so that
// several records of one message see each other's effects and apply all together.
type work struct {
	ctx     context.Context
	view    View
	cache   *recordCache // the Registry's decoded records; nil for none
	entries map[int64]*entry
	order   []int64
	newer   *pipeline.Newer // what later messages set, for a message out of order (newer.go)
	kept    []string        // what finish left as later messages set it, for the note
}

func newWork(ctx context.Context, view View, cache *recordCache) *work {
	return &work{ctx: ctx, view: view, cache: cache, entries: map[int64]*entry{}, newer: newerOf(view)}
}

// setOld sets the entry's stored state from the stored bytes b (entry.setOld), taking the
// decoded record from the cache when it holds one for exactly these bytes, and keeping it
// there when b is canonical.
func (w *work) setOld(e *entry, b []byte) error {
	if r, ok := w.cache.get(e.flid, b); ok {
		if cur, ok := cloneRecord(r); ok {
			e.old, e.oldRec, e.cur = b, r, cur
			return nil
		}
	}
	if err := paths.setOld(e, b); err != nil {
		return err
	}
	if bytes.Equal(b, e.old) {
		w.cache.put(e.flid, e.old, e.oldRec)
	}
	return nil
}

// keep puts the record finish wrote for e into the cache, for the next message on the
// flight: e.cur is what decoding e.enc gives, except for a string that is not valid UTF-8
// (encodeRecord wrote it as \ufffd, which decodes to another string), which is left out.
// Nothing changes e.cur after finish.
func (w *work) keep(e *entry) {
	if w.cache == nil || e.cur == nil || e.enc == nil || bytes.Contains(e.enc, []byte(`\ufffd`)) {
		return
	}
	w.cache.put(e.flid, e.enc, e.cur)
}

// load returns the entry of flid, reading the stored flight the first time.
func (w *work) load(flid int64) (*entry, error) {
	if e, ok := w.entries[flid]; ok {
		return e, nil
	}
	e := &entry{flid: flid}
	b, ok, err := w.view.Flight(w.ctx, flid)
	if err != nil {
		return nil, pipeline.Wrap(pipeline.Infra, fmt.Errorf("read flight %d: %w", flid, err))
	}
	if ok {
		if err := w.setOld(e, b); err != nil {
			return nil, err
		}
	}
	w.entries[flid] = e
	w.order = append(w.order, flid)
	return e, nil
}

// prefetch loads into the set, in the order given, each of flids it does not hold yet, with
// one FlightsOf call, so that a snapshot of thousands of flights does not read them one round
// trip at a time. The entries and their order are those load would give.
func (w *work) prefetch(flids []int64) error {
	var want []int64
	for _, id := range flids {
		if _, held := w.entries[id]; !held {
			want = append(want, id)
		}
	}
	if len(want) == 0 {
		return nil
	}
	recs, err := w.view.FlightsOf(w.ctx, want)
	if err != nil {
		return pipeline.Wrap(pipeline.Infra, fmt.Errorf("read %d flights: %w", len(want), err))
	}
	byID := make(map[int64][]byte, len(recs))
	for _, r := range recs {
		var k struct {
			FLID int64 `json:"FLID"`
		}
		if err := json.Unmarshal(r, &k); err != nil {
			return pipeline.Wrap(pipeline.Infra, fmt.Errorf("stored flight record: %w", err))
		}
		byID[k.FLID] = r
	}
	for _, id := range want {
		if _, held := w.entries[id]; held {
			continue // named twice
		}
		e := &entry{flid: id}
		if r, stored := byID[id]; stored {
			if err := w.setOld(e, r); err != nil {
				return err
			}
		}
		w.entries[id] = e
		w.order = append(w.order, id)
	}
	return nil
}

// preload adds a stored record to the set without another read (snapshots read a window).
func (w *work) preload(b []byte) error {
	var k struct {
		FLID int64 `json:"FLID"`
	}
	if err := json.Unmarshal(b, &k); err != nil {
		return pipeline.Wrap(pipeline.Infra, fmt.Errorf("stored flight record: %w", err))
	}
	if _, ok := w.entries[k.FLID]; ok {
		return nil
	}
	e := &entry{flid: k.FLID}
	if err := w.setOld(e, b); err != nil {
		return err
	}
	w.entries[k.FLID] = e
	w.order = append(w.order, k.FLID)
	return nil
}

// paths are the two steps of the hot path that were made cheaper; the differential test
// (TestFastPathsMatchReference) swaps in the reference implementations they replaced and
// checks that every Decision stays byte-identical.
var paths = struct {
	setOld func(e *entry, b []byte) error
	events func(flid int64, old, cur []byte, schedule bool, win *window) ([]pipeline.Event, error)
	encode func(e *entry) ([]byte, error)
}{(*entry).setOld, flightEvents, (*entry).encode}

// render is how flightEvents and mapFlightEvents render a FlightChange: renderEvents, which
// the package's tests wrap to check that each change the handler builds renders alike after
// event.Encode and Decode (TestMain).
var render = renderEvents

// encode returns the canonical encoding of e.cur (encodeRecord), re-encoding only the fields
// that differ from the stored record's when it can (encodeFrom).
func (e *entry) encode() ([]byte, error) {
	if b, ok := encodeFrom(e.old, e.oldRec, e.cur); ok {
		return b, nil
	}
	return encodeRecord(e.cur)
}

// setOld sets the entry's stored state from the stored bytes b: old is b's canonical
// encoding, oldRec its decoding and cur an independent copy to change. cur is what decoding
// old gives; when b is already canonical (as the records msgx writes are) that is oldRec
// itself, so cur is a deep copy of it rather than a second JSON decode (the FLOP hot path
// spent a third of its time decoding each stored record twice).
func (e *entry) setOld(b []byte) error {
	r, err := decodeRecord(b)
	if err != nil {
		return pipeline.Wrap(pipeline.Infra, fmt.Errorf("stored flight %d: %w", e.flid, err))
	}
	c, err := encodeRecord(r)
	if err != nil {
		return pipeline.Wrap(pipeline.Infra, fmt.Errorf("stored flight %d: %w", e.flid, err))
	}
	e.old, e.oldRec = c, r
	if bytes.Equal(b, c) {
		if cur, ok := cloneRecord(r); ok {
			e.cur = cur
			return nil
		}
	}
	cur, _ := decodeRecord(c)
	e.cur = cur
	return nil
}

// maid returns the master FLID of r, or 0.
func maid(r *FlightRecord) int64 {
	if r == nil || r.MAID == nil {
		return 0
	}
	return *r.MAID
}

// maintainCodeShares recomputes CSFL on every master whose code-share set may have changed:
// the old and new MAID of each touched flight, and each flight inserted by this message.
func (w *work) maintainCodeShares() error {
	masters := map[int64]bool{}
	for _, id := range w.order {
		e := w.entries[id]
		oldM, newM := maid(e.oldRec), maid(e.cur)
		oldNo, newNo := "", ""
		if e.oldRec != nil {
			oldNo = e.oldRec.FLNO
		}
		if e.cur != nil {
			newNo = e.cur.FLNO
		}
		if oldM != newM || oldNo != newNo {
			if oldM != 0 {
				masters[oldM] = true
			}
			if newM != 0 {
				masters[newM] = true
			}
		}
		if e.oldRec == nil && e.cur != nil {
			masters[id] = true
		}
	}
	if len(masters) == 0 {
		return nil
	}
	stored, err := codeSharesOf(w.ctx, w.view, masters)
	if err != nil {
		return pipeline.Wrap(pipeline.Infra, fmt.Errorf("read code-share flights: %w", err))
	}
	byMaster := map[int64][]string{}
	add := func(r *FlightRecord) {
		if m := maid(r); m != 0 && masters[m] && r.FLNO != "" {
			byMaster[m] = append(byMaster[m], r.FLNO)
		}
	}
	for _, b := range stored {
		r, err := decodeRecord(b)
		if err != nil {
			return pipeline.Wrap(pipeline.Infra, fmt.Errorf("stored flight record: %w", err))
		}
		if _, touched := w.entries[r.FLID]; touched {
			continue
		}
		add(r)
	}
	for _, id := range w.order {
		add(w.entries[id].cur)
	}
	ids := make([]int64, 0, len(masters))
	for m := range masters {
		ids = append(ids, m)
	}
	slices.Sort(ids)
	for _, m := range ids {
		e, err := w.load(m)
		if err != nil {
			return err
		}
		if e.cur == nil {
			continue
		}
		list := byMaster[m]
		sort.Strings(list)
		list = slices.Compact(list)
		if len(list) == 0 {
			list = nil
		}
		e.cur.CSFL = list
	}
	return nil
}

// codeSharesOf returns the stored flights naming one of masters (View.CodeSharesOf).
func codeSharesOf(ctx context.Context, view View, masters map[int64]bool) ([][]byte, error) {
	ids := make([]int64, 0, len(masters))
	for m := range masters {
		ids = append(ids, m)
	}
	slices.Sort(ids)
	return view.CodeSharesOf(ctx, ids)
}

// window is the schedule window a snapshot notification names.
type window = event.Window

// finish maintains code-share lists and appends to d the flight writes and events of every
// touched flight whose record changed, in the order the flights were first touched. An
// unchanged flight gets neither.
func (w *work) finish(d *pipeline.Decision, win *window) (changed int, err error) {
	if w.kept, err = w.guard(); err != nil {
		return 0, err
	}
	if err := w.maintainCodeShares(); err != nil {
		return 0, err
	}
	loc := w.view.Location()
	for _, id := range w.order {
		e := w.entries[id]
		var cur []byte
		if e.cur != nil {
			if cur, err = paths.encode(e); err != nil {
				return 0, fmt.Errorf("flight %d: %w", id, err)
			}
		}
		e.enc = cur
		if bytes.Equal(cur, e.old) {
			continue
		}
		changed++
		if e.cur == nil {
			d.Flights = append(d.Flights, pipeline.FlightWrite{Day: localDay(e.oldRec.SODT, loc), FLID: id, Delete: true})
		} else {
			d.Flights = append(d.Flights, pipeline.FlightWrite{Day: localDay(e.cur.SODT, loc), FLID: id, Record: cur})
		}
		evs, err := paths.events(id, e.old, cur, e.schedule, win)
		if err != nil {
			return 0, err
		}
		d.Events = append(d.Events, evs...)
		w.keep(e)
	}
	return changed, nil
}

func localDay(t time.Time, loc *time.Location) string { return t.In(loc).Format(time.DateOnly) }

// fieldChange is one changed field of a KAFKA_FLOP payload.
type fieldChange struct {
	Old json.RawMessage `json:"old"`
	New json.RawMessage `json:"new"`
}

var jsonNull = json.RawMessage("null")

// diff returns the top-level fields whose values differ between two records (nil = none).
func diff(old, cur []byte) (map[string]fieldChange, error) {
	var a, b map[string]json.RawMessage
	if old != nil {
		if err := json.Unmarshal(old, &a); err != nil {
			return nil, err
		}
	}
	if cur != nil {
		if err := json.Unmarshal(cur, &b); err != nil {
			return nil, err
		}
	}
	return fieldChanges(a, b), nil
}

// ChangedFields returns the top-level fields whose values differ between two records (nil:
// absent), sorted: what a write of cur over old sets.
func ChangedFields(old, cur []byte) ([]string, error) {
	changes, err := diff(old, cur)
	if err != nil {
		return nil, err
	}
	return slices.Sorted(maps.Keys(changes)), nil
}

// fieldChanges compares two records split into their top-level fields (by json.Unmarshal in
// diff, or by topFields): every field whose value differs, null where one side lacks it.
func fieldChanges[V ~[]byte](a, b map[string]V) map[string]fieldChange {
	out := make(map[string]fieldChange, len(b))
	for k, v := range a {
		if w, ok := b[k]; !ok || !bytes.Equal(v, w) {
			c := fieldChange{Old: json.RawMessage(v), New: jsonNull}
			if ok {
				c.New = json.RawMessage(w)
			}
			out[k] = c
		}
	}
	for k, v := range b {
		if _, ok := a[k]; !ok {
			out[k] = fieldChange{Old: jsonNull, New: json.RawMessage(v)}
		}
	}
	return out
}

// topFields splits a JSON object written by json.Marshal into its fields (nil input: no
// fields). ok is false when b is not such an object or a key needs escaping or is not one
// the payload may copy as is (then the caller marshals).
func topFields(b []byte) (map[string][]byte, bool) {
	fs, ok := splitFields(b, nil)
	if !ok {
		return nil, false
	}
	out := make(map[string][]byte, len(fs))
	for _, f := range fs {
		out[string(f.key)] = f.val
	}
	return out, true
}

// field is one top-level field of a JSON object: its key (without quotes) and value bytes.
type field struct{ key, val []byte }

// splitFields is topFields keeping the fields in their order, in a slice (appended to buf),
// with no allocation per field.
func splitFields(b []byte, buf []field) ([]field, bool) {
	out := buf[:0]
	if b == nil {
		return out, true
	}
	if len(b) < 2 || b[0] != '{' || b[len(b)-1] != '}' {
		return nil, false
	}
	i := 1
	for i < len(b)-1 {
		if b[i] != '"' {
			return nil, false
		}
		j := i + 1
		for j < len(b) && b[j] != '"' {
			if c := b[j]; c == '\\' || c < 0x20 || c >= 0x80 || c == '<' || c == '>' || c == '&' {
				return nil, false
			}
			j++
		}
		if j+1 >= len(b) || b[j+1] != ':' {
			return nil, false
		}
		end, ok := skipValue(b, j+2)
		if !ok {
			return nil, false
		}
		out = append(out, field{b[i+1 : j], b[j+2 : end]})
		i = end
		if b[i] == ',' {
			i++
			if i == len(b)-1 {
				return nil, false // a trailing comma
			}
		}
	}
	return out, i == len(b)-1
}

// orderedChanges is fieldChanges for two records split by splitFields, sorted by key. It
// walks both in step, which needs the fields they share in the same order, as encodeRecord
// writes them (struct order, a field left out only when empty); ok is false when they are
// not (then the caller compares them as maps).
func orderedChanges(a, b []field) ([]event.Change, bool) {
	var out []event.Change
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && bytes.Equal(a[i].key, b[j].key):
			if !bytes.Equal(a[i].val, b[j].val) {
				out = append(out, event.Change{Key: keyName(a[i].key), Old: a[i].val, New: b[j].val})
			}
			i++
			j++
		case j < len(b) && indexField(a, b[j].key) < 0:
			out = append(out, event.Change{Key: keyName(b[j].key), Old: jsonNull, New: b[j].val}) // only in b
			j++
		case i < len(a) && indexField(b, a[i].key) < 0:
			out = append(out, event.Change{Key: keyName(a[i].key), Old: a[i].val, New: jsonNull}) // only in a
			i++
		default:
			return nil, false // in both, out of step
		}
	}
	slices.SortFunc(out, func(x, y event.Change) int { return strings.Compare(x.Key, y.Key) })
	return out, true
}

// recKeys holds the keys of FlightRecord's JSON, so that a change's key is the one string
// of its name rather than a copy of the record's bytes for each change (keyName).
var recKeys = func() map[string]string {
	m := make(map[string]string, len(recFields))
	for _, f := range recFields {
		m[f.key] = f.key
	}
	return m
}()

// keyName returns key as a string, without a copy when it is one of FlightRecord's keys.
func keyName(key []byte) string {
	if s, ok := recKeys[string(key)]; ok {
		return s
	}
	return string(key)
}

// indexField returns the index of the field named key in fs, or -1.
func indexField(fs []field, key []byte) int {
	for i, f := range fs {
		if bytes.Equal(f.key, key) {
			return i
		}
	}
	return -1
}

// skipValue returns the end of the compact JSON value starting at b[i], which must be
// followed by ',' or by the closing '}' of the object.
func skipValue(b []byte, i int) (int, bool) {
	depth := 0
	for j := i; j < len(b); j++ {
		switch c := b[j]; c {
		case '"':
			for j++; j < len(b) && b[j] != '"'; j++ {
				if b[j] == '\\' {
					j++
				}
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return j, j > i && j == len(b)-1
			}
			depth--
		case ',':
			if depth == 0 {
				return j, j > i
			}
		case ' ', '\t', '\n', '\r':
			return 0, false // not compact: left to json.Marshal
		}
	}
	return 0, false
}

// flightEvents builds the event of one changed flight (renderEvents of fastChange), which
// KAFKA_FLOP, KAFKA_SCHD, REDIS_NOTIFY, ES_FLIGHT and their copies each render.
func flightEvents(flid int64, old, cur []byte, schedule bool, win *window) ([]pipeline.Event, error) {
	c, err := fastChange(flid, old, cur, schedule, win)
	if err != nil {
		return nil, err
	}
	return render(c)
}

// mapFlightEvents is flightEvents with the changes found by mapChange: the implementation
// flightEvents replaced on the hot path, and the reference the differential test compares
// it with.
func mapFlightEvents(flid int64, old, cur []byte, schedule bool, win *window) ([]pipeline.Event, error) {
	c, err := mapChange(flid, old, cur, schedule, win)
	if err != nil {
		return nil, err
	}
	return render(c)
}

// renderEvents returns the event of a changed flight: one shared event (event.Shared) of kind
// event.KindChange, keyed by its FLID, holding c's canonical encoding (event.Encode), which
// the outbox writes once and every target renders for its family at delivery (event.Render:
// the four payloads docs/payloads.md describes). c is taken by value so that calling it
// through render does not move c to the heap.
func renderEvents(c event.FlightChange) ([]pipeline.Event, error) {
	b, err := event.Encode(&c)
	if err != nil {
		return nil, err
	}
	return []pipeline.Event{{Target: event.Shared, Kind: event.KindChange, Key: strconv.FormatInt(c.FLID, 10), Payload: b}}, nil
}

// fastChange finds the changes from the stored record old to cur (nil: absent) by walking
// the two records' fields in step (orderedChanges), and leaves to mapChange the records
// splitFields refuses and a schedule's insert or update. Its FlightChange renders to the
// bytes mapChange's does (TestFastPathsMatchReference compares them).
func fastChange(flid int64, old, cur []byte, schedule bool, win *window) (event.FlightChange, error) {
	var buf [2][96]field
	a, okA := splitFields(old, buf[0][:0])
	b, okB := splitFields(cur, buf[1][:0])
	if !okA || !okB || (schedule && cur != nil) {
		return mapChange(flid, old, cur, schedule, win)
	}
	changes, ok := orderedChanges(a, b)
	if !ok {
		return mapChange(flid, old, cur, schedule, win)
	}
	return flightChange(flid, old, cur, changes, schedule, win), nil
}

// mapChange is fastChange for any records: the fields compared as maps (split by
// topFields, or by json.Unmarshal when it refuses). Values a json.Unmarshal split are
// written again as json.Marshal writes them (compact, HTML characters escaped), the bytes
// the payloads had when json.Marshal wrote them.
func mapChange(flid int64, old, cur []byte, schedule bool, win *window) (event.FlightChange, error) {
	a, okA := topFields(old)
	b, okB := topFields(cur)
	fast := okA && okB
	var changes map[string]fieldChange
	var err error
	if fast {
		changes = fieldChanges(a, b)
	} else if changes, err = diff(old, cur); err != nil {
		return event.FlightChange{}, fmt.Errorf("flight %d: %w", flid, err)
	}
	list := make([]event.Change, 0, len(changes))
	for k, c := range changes {
		if !fast {
			if c.Old, err = json.Marshal(c.Old); err == nil {
				c.New, err = json.Marshal(c.New)
			}
			if err != nil {
				return event.FlightChange{}, fmt.Errorf("flight %d field %s: %w", flid, k, err)
			}
		}
		list = append(list, event.Change{Key: k, Old: c.Old, New: c.New})
	}
	slices.SortFunc(list, func(x, y event.Change) int { return strings.Compare(x.Key, y.Key) })
	return flightChange(flid, old, cur, list, schedule, win), nil
}

// flightChange is the FlightChange from the stored record old to cur (nil: absent) with the
// changes found: the record is cur, or old for a delete.
func flightChange(flid int64, old, cur []byte, changes []event.Change, schedule bool, win *window) event.FlightChange {
	c := event.FlightChange{FLID: flid, Op: flightOp(old, cur), Changes: changes, Record: cur, Schedule: schedule, Window: win}
	if cur == nil {
		c.Record = old
	}
	return c
}

// flightOp names the change from the stored record old to cur (nil: absent): insert, delete
// or update.
func flightOp(old, cur []byte) event.Op {
	switch {
	case old == nil:
		return event.Insert
	case cur == nil:
		return event.Delete
	}
	return event.Update
}

// needView fails when the pump has no flight view (no flight store configured).
func needView(view View) error {
	if view == nil {
		return pipeline.Errorf(pipeline.Infra, "no flight store configured")
	}
	return nil
}
