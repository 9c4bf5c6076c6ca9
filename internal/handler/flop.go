package handler

import (
	"cmp"
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"msgx/internal/pipeline"
	"msgx/internal/sis"
)

// RegisterFlop registers one handler per FLOP operation STYP the codec decodes
// (sis.FlopSTYPs: FLOP-APPT … FLOP-FDEL, 48 tags).
func RegisterFlop(r *Registry) {
	for _, styp := range sis.FlopSTYPs() {
		r.Register("FLOP-"+styp, withRecords(r.records, decideFlop))
	}
}

// decideFlop applies every FLOP record of the message, in order, to the flights they name
// (found by FLID); the records apply together or not at all. A record for a flight the store
// does not have (or that an earlier record of the message deleted) is left out and named in
// the Decision's warnings; only a message whose every record is such an orphan fails, with
// class ORPHAN (the legacy applied the records before an unknown flight and dropped the rest).
// A record that changes nothing emits nothing.
func decideFlop(ctx context.Context, view View, msg *sis.Message, cache *recordCache) (pipeline.Decision, error) {
	var d pipeline.Decision
	body, ok := msg.Body.(*sis.FlopBody)
	if !ok {
		return d, fmt.Errorf("%s: body is %T, want *sis.FlopBody", msg.Tag(), msg.Body)
	}
	if err := needView(view); err != nil {
		return d, err
	}
	w := newWork(ctx, view, cache)
	var orphans []string
	for i, f := range body.Records {
		if f.STYP != msg.Meta.STYP {
			return d, pipeline.Errorf(pipeline.CodecError, "FLOP[%d] FLID %d: STYP %s in a %s message", i+1, f.FLID, f.STYP, msg.Meta.STYP)
		}
		e, err := w.load(f.FLID)
		if err != nil {
			return d, err
		}
		if e.cur == nil {
			why := "is not in the store"
			if e.old != nil {
				why = "was deleted by an earlier record of the message"
			} else if by := w.newer.Deleter(f.FLID, time.Time{}); by > 0 {
				// Out of order: the flight was there, and a later message deleted it.
				w.kept = append(w.kept, fmt.Sprintf("FLOP[%d] %s: flight %d %s", i+1, f.STYP, f.FLID, pipeline.Kept("deleted", by)))
				continue
			}
			orphans = append(orphans, fmt.Sprintf("FLOP[%d] %s: flight FLID %d %s (FFID %s)", i+1, f.STYP, f.FLID, why, f.FFID))
			continue
		}
		if f.Kind() == sis.FlopDelete {
			e.cur = nil
			continue
		}
		if err := applyFlop(e.cur, f); err != nil {
			return d, pipeline.Wrap(pipeline.CodecError, fmt.Errorf("FLOP[%d] FLID %d: %w", i+1, f.FLID, err))
		}
	}
	if len(orphans) == len(body.Records) {
		return d, pipeline.Errorf(pipeline.Orphan, "%s", strings.Join(orphans, "; "))
	}
	deletedLater := w.kept
	if _, err := w.finish(&d, nil); err != nil {
		return pipeline.Decision{}, err
	}
	w.kept = append(deletedLater, w.kept...)
	for _, o := range orphans {
		d.Warnings = append(d.Warnings, o+"; record not applied")
	}
	d.Note = withKept(&d, flopNote(msg.Meta.STYP, len(body.Records), len(orphans), d.Flights), w.kept)
	return d, nil
}

// flopNote says what a FLOP message did: how many flights it wrote (code-share masters whose
// list changed included) and deleted, or that it changed nothing, and how many of its records
// named a flight the store does not have.
func flopNote(styp string, records, orphans int, writes []pipeline.FlightWrite) string {
	written, deleted := 0, 0
	for _, w := range writes {
		if w.Delete {
			deleted++
		} else {
			written++
		}
	}
	head := fmt.Sprintf("FLOP %s: %s; ", styp, nof(records, "record"))
	tail := ""
	if orphans > 0 {
		tail = fmt.Sprintf("; %s for a flight not stored, not applied", nof(orphans, "record"))
	}
	switch {
	case written == 0 && deleted == 0:
		return head + "nothing changed" + tail
	case deleted == 0:
		return head + nof(written, "flight") + " written" + tail
	default:
		return head + fmt.Sprintf("%s written, %d deleted", nof(written, "flight"), deleted) + tail
	}
}

// applyFlop changes r as FLOP record f says (docs/sis-format.md §2.3, with msgx's fixes): A–D set
// each of the STYP's fields, no value clearing it; E replaces the whole numbered list (the
// codec guarantees distinct numbers; the empty list clears it), kept sorted by number, PSDT
// keeping the push and tractor data (PSTM, PSID, TRTM) of a row that names the same PSNO and
// stand as before; PORT sets or clears the open and close times it names; F merges by key;
// G updates stand rows.
func applyFlop(r *FlightRecord, f sis.Flop) error {
	switch f.Kind() {
	case sis.FlopTime, sis.FlopCode, sis.FlopAttr, sis.FlopValues, sis.FlopReplace:
		if f.STYP == "PORT" {
			applyPort(r, f.PORT)
			return nil
		}
		old := r.PSDT
		copyFields(r, f, sis.FlopFields(f.STYP))
		if f.STYP == "PSDT" {
			// PSDT carries no push or tractor data: keep PSTM, PSID (PSHT) and TRTM
			// (TIPT) of the stored row with the same number and stand.
			r.PSDT = slices.Clone(r.PSDT)
			carryStandData(r.PSDT, old, true)
		}
		sortGroups(&r.Flight)
	case sis.FlopMerge:
		mergeFlop(r, f)
	case sis.FlopStand:
		standFlop(r, f)
	default:
		return fmt.Errorf("STYP %s has no rule", f.STYP)
	}
	return nil
}

// applyPort sets the time of each POID the message names, or clears it when POTM is nil.
func applyPort(r *FlightRecord, ports []sis.Port) {
	for _, p := range ports {
		i := slices.IndexFunc(r.PORT, func(q sis.Port) bool { return q.POID == p.POID })
		switch {
		case p.POTM == nil && i >= 0:
			r.PORT = slices.Delete(r.PORT, i, i+1)
		case p.POTM == nil:
		case i >= 0:
			r.PORT[i].POTM = p.POTM
		default:
			r.PORT = append(r.PORT, p)
		}
	}
	slices.SortFunc(r.PORT, func(a, b sis.Port) int { return cmp.Compare(a.POID, b.POID) })
	if len(r.PORT) == 0 {
		r.PORT = nil
	}
}

// copyFields copies the named fields of f onto the same-named fields of the record: the
// codec gives them the name and type of the Flight field they set.
func copyFields(r *FlightRecord, f sis.Flop, names []string) {
	dst := reflect.ValueOf(&r.Flight).Elem()
	src := reflect.ValueOf(f)
	for _, n := range names {
		s, d := src.FieldByName(n), dst.FieldByName(n)
		if !s.IsValid() || !d.IsValid() || s.Type() != d.Type() || !d.CanSet() {
			continue
		}
		if s.Kind() == reflect.Slice && s.Len() == 0 {
			d.Set(reflect.Zero(d.Type()))
			continue
		}
		d.Set(s)
	}
}

// sortGroups orders the numbered lists by number (a list's order carries no meaning).
func sortGroups(f *sis.Flight) {
	slices.SortStableFunc(f.PSDT, func(a, b sis.StandAlloc) int { return cmp.Compare(a.PSNO, b.PSNO) })
	slices.SortStableFunc(f.GTDT, func(a, b sis.GateAlloc) int { return cmp.Compare(a.GTNO, b.GTNO) })
	slices.SortStableFunc(f.CHDT, func(a, b sis.ChuteAlloc) int { return cmp.Compare(a.CHNO, b.CHNO) })
	slices.SortStableFunc(f.CKDT, func(a, b sis.CounterAlloc) int { return cmp.Compare(a.CKNO, b.CKNO) })
	slices.SortStableFunc(f.CLDT, func(a, b sis.BeltAlloc) int { return cmp.Compare(a.CLNO, b.CLNO) })
	slices.SortStableFunc(f.CHOT, func(a, b sis.Chocks) int { return cmp.Compare(a.CSNO, b.CSNO) })
	slices.SortStableFunc(f.ABTM, func(a, b sis.AirbridgeOp) int { return cmp.Compare(a.ASNO, b.ASNO) })
	slices.SortStableFunc(f.ERUT, func(a, b sis.RouteStop) int { return cmp.Compare(a.RTNO, b.RTNO) })
}

// mergeFlop applies an F group: the empty list clears the group; otherwise each entry
// replaces the flight's entry with the same key (DELY CODE, ERUT RTNO, SRVT SRTC, VIPF VPCD)
// or is added, and entries the message does not name are kept.
func mergeFlop(r *FlightRecord, f sis.Flop) {
	switch f.STYP {
	case "DELY":
		r.DELY = merge(r.DELY, f.DELY, func(x sis.Delay) string { return x.CODE })
	case "ERUT":
		r.ERUT = merge(r.ERUT, f.ERUT, func(x sis.RouteStop) int8 { return x.RTNO })
		sortGroups(&r.Flight)
	case "SRVT":
		r.SRVT = merge(r.SRVT, f.SRVT, func(x sis.Service) string { return x.SRTC })
	case "VIPF":
		r.VIPF = merge(r.VIPF, f.VIPF, func(x sis.VIP) string { return x.VPCD })
	}
}

func merge[T any, K comparable](have, in []T, key func(T) K) []T {
	if len(in) == 0 {
		return nil
	}
	out := slices.Clone(have)
	for _, x := range in {
		k := key(x)
		if i := slices.IndexFunc(out, func(y T) bool { return key(y) == k }); i >= 0 {
			out[i] = x
		} else {
			out = append(out, x)
		}
	}
	return out
}

// carryStandData copies onto each row of rows the push data (PSTM, PSID) and, when trtm is
// set, the tractor-in-place time (TRTM) of the row of old with the same PSNO and stand
// (PSST): data the allocation message itself does not carry.
func carryStandData(rows, old []sis.StandAlloc, trtm bool) {
	for i := range rows {
		for _, o := range old {
			if o.PSNO == rows[i].PSNO && o.PSST == rows[i].PSST {
				rows[i].PSTM, rows[i].PSID = o.PSTM, o.PSID
				if trtm {
					rows[i].TRTM = o.TRTM
				}
			}
		}
	}
}

// standFlop applies a G group to the stand-allocation rows of the stand each row names;
// a stand the flight has no PSDT row for is ignored.
func standFlop(r *FlightRecord, f sis.Flop) {
	for _, p := range f.PSHT {
		for i := range r.PSDT {
			if r.PSDT[i].PSST != p.PUST {
				continue
			}
			r.PSDT[i].PSTM = p.PSTM
			r.PSDT[i].PSID = p.PSID
			if p.PSTM == nil {
				r.PSDT[i].PSID = ""
			}
		}
	}
	for _, t := range f.TIPT {
		for i := range r.PSDT {
			if r.PSDT[i].PSST == t.TRST {
				r.PSDT[i].TRTM = t.TRTM
			}
		}
	}
}
