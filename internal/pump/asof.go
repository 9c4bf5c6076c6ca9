package pump

// The board as of a past time: a local day's flights as they stood at a minute, folded again
// in memory from the messages the pump applied up to then, with the same handlers, decode
// and view contract as the pump (and Foresee) use. Nothing is written.
//
// Which time counts: the time the pump applied a message (PROC_STATE.PROCESSED_AT), not its
// META DTTM nor when it was received: "as it stood then" is what the flight store, and so
// the board and every delivery, held at that time. A message applied at or before `at` is
// folded; one applied after it is not, even when it was received before (a parked message
// replayed later counts from its replay).
//
// Which messages: every SUCCEEDED schedule (SCHD-…) applied by then with a FLTR on the day
// or a replaced window that covers it, and every SUCCEEDED message naming (MSG_FLIGHT) a
// flight one of those schedules put on the day: the FLOPs, FDELs and schedules of those
// flights, wherever they moved. They are folded in inbox (id) order, each decided with the
// view at its own processing time (a schedule ignores FLTRs before its own day), which is
// what the pump's ordering guarantees (invariant I1; I6 makes a message applied out of its
// order leave what later ones set, so id order gives what was stored).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"
	"time"

	"msgx/internal/handler"
	"msgx/internal/pipeline"
	"msgx/internal/sis"
	"msgx/internal/store"
)

// History is what a board as of a past time reads (*store.Flights implements it).
type History interface {
	SchedulesUpTo(ctx context.Context, at time.Time) ([]store.Applied, error)
	AppliedNamingUpTo(ctx context.Context, flids []int64, at time.Time) ([]store.Applied, error)
	Raws(ctx context.Context, ids []int64) (map[int64]string, error)
	HistoryFrom(ctx context.Context) (time.Time, bool, error)
}

// BeforeHistoryError says a time is older than the retained history: retention purged the
// messages before From, so a board of that time cannot be rebuilt.
type BeforeHistoryError struct {
	At, From time.Time
}

func (e *BeforeHistoryError) Error() string {
	return fmt.Sprintf("%s is before the retained history, which starts at %s (older messages were purged by retention)",
		e.At.UTC().Format(time.RFC3339), e.From.UTC().Format(time.RFC3339))
}

// DayBoard is a local day's flights as they stood at a time.
type DayBoard struct {
	Day string
	At  time.Time
	// Flights are the day's flights then, by SODT then FLID.
	Flights []BoardFlight
	// Messages is how many applied messages were folded.
	Messages int
	// HistoryFrom is when the oldest message kept was processed (see History.HistoryFrom).
	HistoryFrom time.Time
	// Warnings say where the fold could not follow what the pump did (a message whose text is
	// gone, one that no longer decides as it did).
	Warnings []string
}

// BoardFlight is one flight of a DayBoard: its record then, and the message that last changed
// it by then with when the pump applied it.
type BoardFlight struct {
	FLID      int64
	SODT      time.Time
	Record    json.RawMessage
	MsgID     int64
	ChangedAt time.Time
}

// schedSummary is what a schedule says about days: the FLIDs of its FLTRs by local day and
// the window it replaces (a DNLD or RESP), remembered by message id (a text never changes).
type schedSummary struct {
	days     map[string][]int64
	window   bool
	from, to time.Time
}

// asofCache keeps the summaries of the schedules (small) and the last few decoded messages
// (large), so that a board asked again minute by minute decodes only what it did not see.
type asofCache struct {
	mu      sync.Mutex
	sums    map[int64]*schedSummary
	decoded map[int64]*sis.Message
	size    int // bytes of raw text behind decoded
}

// maxAsofDecoded bounds the raw bytes whose decoded messages the board cache keeps.
const maxAsofDecoded = 64 << 20

func (c *asofCache) summary(id int64) (*schedSummary, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.sums[id]
	return s, ok
}

func (c *asofCache) putSummary(id int64, s *schedSummary) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sums == nil || len(c.sums) > 100_000 {
		c.sums = map[int64]*schedSummary{}
	}
	c.sums[id] = s
}

func (c *asofCache) message(id int64) (*sis.Message, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m, ok := c.decoded[id]
	return m, ok
}

func (c *asofCache) putMessage(id int64, m *sis.Message, size int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.decoded == nil || c.size+size > maxAsofDecoded {
		c.decoded, c.size = map[int64]*sis.Message{}, 0
	}
	c.decoded[id] = m
	c.size += size
}

// Boards rebuilds boards as of past times with a pump's handlers, decoder and view,
// remembering what it decoded (texts never change) so that a board asked again minute by
// minute decodes only what it did not see. It is safe for concurrent use.
type Boards struct {
	p    *Pump
	h    History
	asof asofCache

	mu   sync.Mutex
	days map[string]*dayFold // by local day; at most maxDayFolds
}

// maxDayFolds bounds the days whose folds Boards keeps.
const maxDayFolds = 6

// checkpointEvery is how many folded messages apart a day's fold keeps a copy of its flights.
const checkpointEvery = 200

// dayFold is a day's fold kept for the next board of that day: the messages folded, in order,
// and every checkpointEvery of them a copy of the flights (the copies share the records: a
// fold replaces a flight's record, never changes it). The decoded messages are not kept: a
// board from the fold decodes the at most checkpointEvery after its copy, through the bounded
// cache, so what the kept days hold does not grow with the messages' texts. It is kept only when the
// messages were applied in id order (each PROCESSED_AT at or after the one before), so that a
// time cuts the order in two: any board of the day at a time up to upTo is the copy before
// that time, then the messages after the copy up to the time. A purge (historyFrom moves)
// drops it; a message applied later than upTo cannot change a time before it.
type dayFold struct {
	historyFrom time.Time
	upTo        time.Time
	order       []store.Applied
	checkpoints []checkpoint
	// final is the flights after the whole order, and finalMessages how many it folded: a
	// later board of the day whose messages are these and more folds only the more.
	final         map[int64]*memFlight
	finalMessages int
}

// checkpoint is the flights after folding order[:next].
type checkpoint struct {
	next     int
	messages int
	flights  map[int64]*memFlight
}

// NewBoards returns the board rebuilder of p reading h.
func NewBoards(p *Pump, h History) *Boards { return &Boards{p: p, h: h} }

// At returns the flights of local day (YYYY-MM-DD in the airport's zone) as they stood at
// `at`, folded from the messages applied by then (see the top of this file). A time before
// the retained history is a *BeforeHistoryError. It reads and decides without writing, and
// leaves the pump's own state alone, so the API may call it beside a running pump.
func (bs *Boards) At(ctx context.Context, day string, at time.Time) (*DayBoard, error) {
	p, h := bs.p, bs.h
	view := p.opt.View
	if view == nil {
		return nil, errors.New("board as of a time: the pump has no view")
	}
	loc := view.Location()
	start, err := time.ParseInLocation(time.DateOnly, day, loc)
	if err != nil {
		return nil, fmt.Errorf("board as of a time: day %q is not YYYY-MM-DD", day)
	}
	end := start.AddDate(0, 0, 1)
	b := &DayBoard{Day: day, At: at, Flights: []BoardFlight{}}
	from, ok, err := h.HistoryFrom(ctx)
	if err != nil {
		return nil, err
	}
	if !ok {
		return b, nil // nothing processed yet: an empty board
	}
	b.HistoryFrom = from
	if at.Before(from) {
		return nil, &BeforeHistoryError{At: at, From: from}
	}
	if kept, ok := bs.fromFold(ctx, day, at, from, b); ok {
		return kept, nil
	}
	scheds, err := h.SchedulesUpTo(ctx, at)
	if err != nil {
		return nil, err
	}
	sums, err := bs.summaries(ctx, scheds, b)
	if err != nil {
		return nil, err
	}
	// The schedules of the day, and the flights they put on it.
	flids := map[int64]bool{}
	fold := map[int64]store.Applied{}
	for _, a := range scheds {
		s := sums[a.ID]
		if s == nil {
			continue
		}
		named := s.days[day]
		covers := s.window && !s.to.Before(start) && s.from.Before(end)
		if len(named) == 0 && !covers {
			continue
		}
		fold[a.ID] = a
		for _, f := range named {
			flids[f] = true
		}
	}
	ids := make([]int64, 0, len(flids))
	for f := range flids {
		ids = append(ids, f)
	}
	slices.Sort(ids)
	naming, err := h.AppliedNamingUpTo(ctx, ids, at)
	if err != nil {
		return nil, err
	}
	for _, a := range naming {
		fold[a.ID] = a
	}
	order := make([]store.Applied, 0, len(fold))
	for _, a := range fold {
		order = append(order, a)
	}
	slices.SortFunc(order, func(x, y store.Applied) int { return cmpID(x.ID, y.ID) })
	inOrder := true
	for i := 1; i < len(order); i++ {
		if order[i].At.Before(order[i-1].At) {
			inOrder = false
		}
	}
	// A kept fold of the day whose messages are the first of these: fold only the rest.
	bs.mu.Lock()
	f := bs.days[day]
	bs.mu.Unlock()
	base := 0
	if inOrder && f != nil && f.historyFrom.Equal(from) && at.After(f.upTo) && len(order) >= len(f.order) &&
		slices.EqualFunc(order[:len(f.order)], f.order, func(x, y store.Applied) bool { return x.ID == y.ID && x.At.Equal(y.At) }) {
		base = len(f.order)
	}
	msgs, err := bs.decodedAll(ctx, order[base:], b)
	if err != nil {
		return nil, err
	}
	mem := newMemView(loc)
	var cps []checkpoint
	if base > 0 {
		maps.Copy(mem.flights, f.final)
		b.Messages = f.finalMessages
		cps = slices.Clone(f.checkpoints)
	}
	bs.fold(ctx, mem, order, msgs, base, at, b, inOrder, &cps)
	if inOrder && len(b.Warnings) == 0 {
		// A message applied just before `at` may not be committed yet: the fold answers later
		// boards only up to a minute before now.
		upTo := at
		if limit := p.opt.Clock.Now().Add(-keepMargin); upTo.After(limit) {
			upTo = limit
		}
		bs.keep(day, &dayFold{historyFrom: from, upTo: upTo, order: order, checkpoints: cps,
			final: maps.Clone(mem.flights), finalMessages: b.Messages})
	}
	return bs.result(mem, b), nil
}

// keepMargin is how long before now a kept fold answers boards: a message the pump applied
// (its PROCESSED_AT) is committed by then.
const keepMargin = time.Minute

// Keep keeps the folds of the airport's yesterday, today and tomorrow up to date (the boards
// an ops room looks back on), every `every` until ctx ends, so that a board of those days as
// of a past time is answered from a kept fold and folds only the messages since the last
// round. It returns a function that stops it and waits for it to end.
func (bs *Boards) Keep(every time.Duration) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			at := bs.p.opt.Clock.Now().Add(-keepMargin)
			today := at.In(bs.p.opt.View.Location())
			for _, d := range []int{0, 1, -1} {
				day := today.AddDate(0, 0, d).Format(time.DateOnly)
				if _, err := bs.At(ctx, day, at); err != nil && ctx.Err() == nil {
					var before *BeforeHistoryError
					if !errors.As(err, &before) {
						bs.p.log.Warn("keeping the board of a day for looks back failed; the next board asked folds it", "day", day, "err", err.Error())
					}
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return func() { cancel(); <-done }
}

// fromFold answers a board of day at `at` from the day's kept fold, when it covers that time.
func (bs *Boards) fromFold(ctx context.Context, day string, at, from time.Time, b *DayBoard) (*DayBoard, bool) {
	bs.mu.Lock()
	f := bs.days[day]
	bs.mu.Unlock()
	if f == nil || !f.historyFrom.Equal(from) || at.After(f.upTo) {
		return nil, false
	}
	var cp *checkpoint
	for i := range f.checkpoints {
		c := &f.checkpoints[i]
		if c.next == 0 || !f.order[c.next-1].At.After(at) {
			cp = c
		}
	}
	if cp == nil {
		return nil, false
	}
	mem := newMemView(bs.p.opt.View.Location())
	for id, fl := range cp.flights {
		mem.flights[id] = fl
	}
	end := cp.next
	for end < len(f.order) && !f.order[end].At.After(at) {
		end++
	}
	warned := len(b.Warnings)
	msgs, err := bs.decodedAll(ctx, f.order[cp.next:end], b)
	if err != nil {
		b.Warnings = b.Warnings[:warned]
		return nil, false // the fold from nothing reads them again, and says what failed
	}
	b.Messages = cp.messages
	bs.fold(ctx, mem, f.order, msgs, cp.next, at, b, false, nil)
	return bs.result(mem, b), true
}

// keep remembers f as day's fold, forgetting another day's when too many are kept.
func (bs *Boards) keep(day string, f *dayFold) {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	if bs.days == nil {
		bs.days = map[string]*dayFold{}
	}
	if _, held := bs.days[day]; !held && len(bs.days) >= maxDayFolds {
		for k := range bs.days {
			delete(bs.days, k)
			break
		}
	}
	bs.days[day] = f
}

// fold decides order[from:] in turn on mem, each at its own processing time, up to the first
// applied after at; with keep it appends a checkpoint to cps every checkpointEvery messages
// (and one before the first).
func (bs *Boards) fold(ctx context.Context, mem *memView, order []store.Applied, msgs map[int64]*sis.Message, from int, at time.Time, b *DayBoard, keep bool, cps *[]checkpoint) {
	p := bs.p
	for i := from; i < len(order); i++ {
		if keep && i%checkpointEvery == 0 {
			*cps = append(*cps, checkpoint{next: i, messages: b.Messages, flights: maps.Clone(mem.flights)})
		}
		a := order[i]
		if a.At.After(at) {
			if keep {
				continue // cannot happen: order holds only messages applied by at
			}
			break
		}
		msg := msgs[a.ID]
		if msg == nil {
			continue
		}
		hd, ok := p.reg.Lookup(msg.Tag())
		if !ok {
			b.Warnings = append(b.Warnings, fmt.Sprintf("message %d (%s) has no handler now; left out", a.ID, msg.Tag()))
			continue
		}
		mem.now = a.At
		d, err := decideSafely(ctx, hd, mem, msg)
		if err != nil {
			if _, skip := handler.AsSkip(err); !skip {
				b.Warnings = append(b.Warnings, fmt.Sprintf("message %d (%s) applied at %s does not apply again (%v): the messages before it that it needs may be purged",
					a.ID, msg.Tag(), a.At.UTC().Format(time.RFC3339), err))
			}
			continue
		}
		mem.apply(d, a)
		b.Messages++
	}
}

// result puts the flights of b's day in mem into b, by SODT then FLID.
func (bs *Boards) result(mem *memView, b *DayBoard) *DayBoard {
	for id, e := range mem.flights {
		if e.day != b.Day {
			continue
		}
		b.Flights = append(b.Flights, BoardFlight{FLID: id, SODT: e.sodt, Record: e.rec, MsgID: e.msg, ChangedAt: e.at})
	}
	sort.Slice(b.Flights, func(i, j int) bool {
		x, y := b.Flights[i], b.Flights[j]
		if !x.SODT.Equal(y.SODT) {
			return x.SODT.Before(y.SODT)
		}
		return x.FLID < y.FLID
	})
	return b
}

func cmpID(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// summaries returns the summary of each schedule of scheds, decoding (and remembering) those
// it has not seen; a schedule whose text is gone or no longer decodes is named in b's warnings.
func (bs *Boards) summaries(ctx context.Context, scheds []store.Applied, b *DayBoard) (map[int64]*schedSummary, error) {
	p := bs.p
	out := make(map[int64]*schedSummary, len(scheds))
	var missing []int64
	for _, a := range scheds {
		if s, ok := bs.asof.summary(a.ID); ok {
			out[a.ID] = s
		} else {
			missing = append(missing, a.ID)
		}
	}
	err := bs.decodeTexts(ctx, missing, 64, "schedule", "left out", b, func(id int64, msg *sis.Message) {
		s := summarize(msg, p.opt.View.Location())
		bs.asof.putSummary(id, s)
		out[id] = s
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// summarize returns what schedule msg says about days.
func summarize(msg *sis.Message, loc *time.Location) *schedSummary {
	s := &schedSummary{days: map[string][]int64{}}
	body, ok := msg.Body.(*sis.SchdBody)
	if !ok {
		return s
	}
	for _, f := range body.Flights {
		d := f.SODT.In(loc).Format(time.DateOnly)
		s.days[d] = append(s.days[d], f.FLID)
	}
	s.from, s.to, s.window = handler.WindowOf(msg)
	return s
}

// decodedAll returns the messages of order decoded, by id, reading the texts it has not
// decoded recently; a message whose text is gone is named in b's warnings and left out.
func (bs *Boards) decodedAll(ctx context.Context, order []store.Applied, b *DayBoard) (map[int64]*sis.Message, error) {
	out := make(map[int64]*sis.Message, len(order))
	var missing []int64
	for _, a := range order {
		if m, ok := bs.asof.message(a.ID); ok {
			out[a.ID] = m
		} else {
			missing = append(missing, a.ID)
		}
	}
	err := bs.decodeTexts(ctx, missing, 500, "message", "what it changed is missing from the board", b, func(id int64, msg *sis.Message) {
		out[id] = msg
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// decodeTexts reads the texts of ids, chunk at a time, decodes each (remembering it in the
// cache) and gives it to got; a text that is gone or no longer decodes is named in b's
// warnings as kind with what the board loses (lost), and left out.
func (bs *Boards) decodeTexts(ctx context.Context, ids []int64, chunk int, kind, lost string, b *DayBoard, got func(id int64, msg *sis.Message)) error {
	for part := range slices.Chunk(ids, chunk) {
		raws, err := bs.h.Raws(ctx, part)
		if err != nil {
			return err
		}
		for _, id := range part {
			raw, ok := raws[id]
			if !ok {
				b.Warnings = append(b.Warnings, fmt.Sprintf("%s %d: its text is gone; %s", kind, id, lost))
				continue
			}
			msg, err := bs.p.dec.decode(id, raw)
			if err != nil {
				b.Warnings = append(b.Warnings, fmt.Sprintf("%s %d no longer decodes (%v); %s", kind, id, err, lost))
				continue
			}
			bs.asof.putMessage(id, msg, len(raw))
			got(id, msg)
		}
	}
	return nil
}

// memView is the flights folded so far, as a handler.View: the handlers read it as they read
// the flight store, at the processing time of the message being folded.
type memView struct {
	loc     *time.Location
	now     time.Time
	flights map[int64]*memFlight
}

type memFlight struct {
	rec  json.RawMessage
	day  string
	sodt time.Time
	maid int64
	msg  int64
	at   time.Time
}

func newMemView(loc *time.Location) *memView {
	return &memView{loc: loc, flights: map[int64]*memFlight{}}
}

// apply writes d's flight changes, each changed flight remembering message a as its last.
func (v *memView) apply(d pipeline.Decision, a store.Applied) {
	for _, w := range d.Flights {
		if w.Delete {
			delete(v.flights, w.FLID)
			continue
		}
		if old, ok := v.flights[w.FLID]; ok && string(old.rec) == string(w.Record) {
			continue
		}
		var m struct {
			SODT time.Time `json:"SODT"`
			MAID int64     `json:"MAID"`
		}
		_ = json.Unmarshal(w.Record, &m)
		day := w.Day
		if day == "" {
			day = m.SODT.In(v.loc).Format(time.DateOnly)
		}
		v.flights[w.FLID] = &memFlight{rec: w.Record, day: day, sodt: m.SODT, maid: m.MAID, msg: a.ID, at: a.At}
	}
}

func (v *memView) Flight(_ context.Context, flid int64) ([]byte, bool, error) {
	if f, ok := v.flights[flid]; ok {
		return f.rec, true, nil
	}
	return nil, false, nil
}

func (v *memView) FlightsOf(_ context.Context, flids []int64) ([][]byte, error) {
	var out [][]byte
	for _, id := range flids {
		if f, ok := v.flights[id]; ok {
			out = append(out, f.rec)
		}
	}
	return out, nil
}

func (v *memView) FlightsBetween(_ context.Context, from, to time.Time) ([][]byte, error) {
	var out [][]byte
	for _, f := range v.flights {
		if !f.sodt.Before(from) && !f.sodt.After(to) {
			out = append(out, f.rec)
		}
	}
	return out, nil
}

func (v *memView) CodeShareFlights(context.Context) ([][]byte, error) {
	var out [][]byte
	for _, f := range v.flights {
		if f.maid != 0 {
			out = append(out, f.rec)
		}
	}
	return out, nil
}

func (v *memView) CodeSharesOf(_ context.Context, masters []int64) ([][]byte, error) {
	want := map[int64]bool{}
	for _, m := range masters {
		want[m] = true
	}
	var out [][]byte
	for _, f := range v.flights {
		if f.maid != 0 && want[f.maid] {
			out = append(out, f.rec)
		}
	}
	return out, nil
}

// RefKeys answers no records: no flight handler reads reference data (only seasons do).
func (v *memView) RefKeys(context.Context, string) ([]string, error) { return nil, nil }

func (v *memView) Now() time.Time { return v.now }

func (v *memView) Location() *time.Location { return v.loc }
