package handler

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
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
// SCHD STYP (ADD, UPD, UPDT, …: the legacy's "anything else", FORMAT.md §2.1) reaches the same
// handler through the SCHD type fallback and, like ADFT, upserts without deleting.
var SchdSTYPs = []string{"DNLD", "RESP", "DEL", "ADFT"}

// RegisterSchd registers the SCHD handlers: SchdSTYPs by name and the handler as the SCHD
// fallback for any other STYP.
func RegisterSchd(r *Registry) {
	for _, styp := range SchdSTYPs {
		r.Register("SCHD-"+styp, Func(decideSchd))
	}
	r.RegisterType("SCHD", Func(decideSchd))
}

// decideSchd applies a daily schedule. The codec has validated the whole message (one bad
// FLTR rejects it with CODEC_ERROR), so the Decision is built from a complete message and
// commits in one transaction. FLTRs whose SODT is before today's local midnight are ignored:
// they are not applied, and their flights are never deleted by the window replace either
// (FORMAT.md §3.5 step 6 lists that as a legacy bug).
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
		// Every FLTR of the message counts as present, the ignored past ones too: a stored
		// flight is deleted only when the message does not name it at all.
		inMsg := map[int64]bool{}
		for _, f := range body.Flights {
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
		gens, err := generations(ctx, view, w, loc)
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

// generations returns one SCHD_GEN upsert per local day the snapshot touched (the old and new
// day of each flight it upserted or deleted; not the days of code-share masters loaded only to
// keep their CSFL up to date). Its fields digest ALL of that day's flights after the change:
// the day's stored flights read through the view, overlaid with the work set (changed,
// inserted, deleted), each record hashed in canonical form and sorted by FLID. So the fields
// are a property of the day's resulting board, not of the message: the same snapshot applied
// twice, or two snapshots covering different parts of one day re-sent, yield the same fields,
// which the store treats as unchanged (no version step).
func generations(ctx context.Context, view View, w *work, loc *time.Location) ([]pipeline.RefChange, error) {
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
	keys := make([]string, 0, len(days))
	for k := range days {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]pipeline.RefChange, 0, len(keys))
	for _, k := range keys {
		start := days[k]
		end := time.Date(start.Year(), start.Month(), start.Day()+1, 0, 0, 0, 0, loc).Add(-time.Nanosecond)
		stored, err := view.FlightsBetween(ctx, start, end) // bounds inclusive
		if err != nil {
			return nil, pipeline.Wrap(pipeline.Infra, fmt.Errorf("read the flights of %s: %w", k, err))
		}
		recs := map[int64][]byte{}
		for _, b := range stored {
			r, err := decodeRecord(b)
			if err != nil {
				return nil, pipeline.Wrap(pipeline.Infra, fmt.Errorf("stored flight record of %s: %w", k, err))
			}
			if localDay(r.SODT, loc) != k {
				continue
			}
			if _, touched := w.entries[r.FLID]; touched {
				continue // the work set's state wins (below)
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
			c, err := encodeRecord(e.cur)
			if err != nil {
				return nil, fmt.Errorf("flight %d: %w", id, err)
			}
			recs[id] = c
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
