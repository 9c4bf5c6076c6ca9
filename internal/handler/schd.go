package handler

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"msgx/internal/pipeline"
	"msgx/internal/sis"
)

// SchdGenType is the REF_DATA type holding the snapshot generation of each local day
// (key YYYY-MM-DD): its fields are a digest of the day's flights after the last snapshot, so
// applying the same snapshot again changes nothing and does not advance the version.
const SchdGenType = "SCHD_GEN"

// SchdSTYPs are the SCHD STYPs msgx handles: DNLD and RESP replace the message's window,
// DEL deletes the listed flights, and ADFT (as ADD and UPD, which the legacy also treated
// as "any other STYP") inserts or updates without deleting. Any other SCHD STYP has no
// handler and ends UNSUPPORTED.
var SchdSTYPs = []string{"DNLD", "RESP", "DEL", "ADFT", "ADD", "UPD"}

// RegisterSchd registers the SCHD handlers (SchdSTYPs).
func RegisterSchd(r *Registry) {
	for _, styp := range SchdSTYPs {
		r.Register("SCHD-"+styp, Func(decideSchd))
	}
}

// decideSchd applies a daily schedule. The codec has validated the whole message (one bad
// FLTR rejects it with CODEC_ERROR), so the Decision is built from a complete message and
// commits in one transaction. FLTRs whose SODT is before today's local midnight are ignored
// and never deleted.
func decideSchd(ctx context.Context, view View, msg *sis.Message) (pipeline.Decision, error) {
	var d pipeline.Decision
	body, ok := msg.Body.(*sis.SchdBody)
	if !ok {
		return d, fmt.Errorf("%s: body is %T, want *sis.SchdBody", msg.Tag(), msg.Body)
	}
	if err := needView(view); err != nil {
		return d, err
	}
	loc := view.Location()
	today := midnight(view.Now(), loc)
	var live []sis.Flight
	for _, f := range body.Flights {
		if !f.SODT.Before(today) {
			live = append(live, f)
		}
	}
	past := len(body.Flights) - len(live)
	w := newWork(ctx, view)
	var win *window
	deleted := 0
	switch msg.Meta.STYP {
	case "DNLD", "RESP":
		if len(live) == 0 {
			d.Note = fmt.Sprintf("%d FLTR, %d before today ignored; nothing applied", len(body.Flights), past)
			return d, nil
		}
		from, to := body.Flights[0].SODT, body.Flights[0].SODT
		for _, f := range body.Flights {
			from, to = minTime(from, f.SODT), maxTime(to, f.SODT)
		}
		from = maxTime(from, today)
		win = &window{from: from, to: to}
		stored, err := view.FlightsBetween(ctx, from, to)
		if err != nil {
			return d, pipeline.Wrap(pipeline.Infra, fmt.Errorf("read flights in the window: %w", err))
		}
		for _, b := range stored {
			if err := w.preload(b); err != nil {
				return d, err
			}
		}
		inMsg := map[int64]bool{}
		for _, f := range live {
			inMsg[f.FLID] = true
		}
		for _, id := range slices.Clone(w.order) {
			if e := w.entries[id]; !inMsg[id] && e.cur != nil {
				e.cur, e.schedule = nil, true
				deleted++
			}
		}
		if err := upsertAll(w, live); err != nil {
			return d, err
		}
	case "DEL":
		for _, f := range live {
			e, err := w.load(f.FLID)
			if err != nil {
				return d, err
			}
			if e.cur != nil {
				e.cur, e.schedule = nil, true
				deleted++
			}
		}
	default:
		if err := upsertAll(w, live); err != nil {
			return d, err
		}
	}
	n, err := w.finish(&d, win)
	if err != nil {
		return pipeline.Decision{}, err
	}
	if win != nil {
		gens, err := generations(w, loc)
		if err != nil {
			return pipeline.Decision{}, err
		}
		d.Ref = append(d.Ref, gens...)
	}
	d.Note = fmt.Sprintf("%d FLTR (%d before today ignored), %d flights changed, %d deleted", len(body.Flights), past, n, deleted)
	return d, nil
}

// upsertAll makes each FLTR the flight's record. Fields a FLTR does not carry are kept from
// the stored record: CTOT, the push data of stand rows (PSTM, PSID from FLOP PSHT, on the
// row of the same number and stand) and the code-share list CSFL.
func upsertAll(w *work, flights []sis.Flight) error {
	for _, f := range flights {
		e, err := w.load(f.FLID)
		if err != nil {
			return err
		}
		rec := &FlightRecord{Flight: f}
		if old := e.cur; old != nil {
			rec.CTOT = old.CTOT
			rec.CSFL = old.CSFL
			for i := range rec.PSDT {
				for _, o := range old.PSDT {
					if o.PSNO == rec.PSDT[i].PSNO && o.PSST == rec.PSDT[i].PSST {
						rec.PSDT[i].PSTM, rec.PSDT[i].PSID = o.PSTM, o.PSID
					}
				}
			}
		} else if e.oldRec != nil {
			rec.CSFL = e.oldRec.CSFL
		}
		sortGroups(&rec.Flight)
		e.cur, e.schedule = rec, true
	}
	return nil
}

// generations returns one SCHD_GEN upsert per local day the snapshot touched (a day of a
// flight it upserted or deleted), whose fields digest that day's flights in the window after
// the change: the same snapshot applied twice yields the same fields, which the store treats
// as unchanged (no version step).
func generations(w *work, loc *time.Location) ([]pipeline.RefChange, error) {
	type day struct {
		n int
		h []string
	}
	days := map[string]*day{}
	touch := func(k string) *day {
		if days[k] == nil {
			days[k] = &day{}
		}
		return days[k]
	}
	for _, id := range w.order {
		e := w.entries[id]
		if e.oldRec != nil && e.schedule {
			touch(localDay(e.oldRec.SODT, loc))
		}
		if e.cur != nil {
			touch(localDay(e.cur.SODT, loc))
		}
	}
	for _, id := range w.order {
		e := w.entries[id]
		if e.cur == nil {
			continue
		}
		k := localDay(e.cur.SODT, loc)
		if dd := days[k]; dd != nil {
			b, err := encodeRecord(e.cur)
			if err != nil {
				return nil, err
			}
			sum := sha256.Sum256(b)
			dd.n++
			dd.h = append(dd.h, fmt.Sprintf("%d:%s", id, hex.EncodeToString(sum[:])))
		}
	}
	keys := make([]string, 0, len(days))
	for k := range days {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]pipeline.RefChange, 0, len(keys))
	for _, k := range keys {
		dd := days[k]
		slices.Sort(dd.h)
		sum := sha256.Sum256([]byte(strings.Join(dd.h, "\n")))
		fields, err := json.Marshal(map[string]any{"day": k, "flights": dd.n, "digest": hex.EncodeToString(sum[:])})
		if err != nil {
			return nil, err
		}
		out = append(out, pipeline.RefChange{Op: pipeline.RefUpsert, Type: SchdGenType, Record: pipeline.RefRecord{Key: k, Fields: fields}})
	}
	return out, nil
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
