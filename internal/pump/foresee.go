package pump

import (
	"context"
	"fmt"

	"msgx/internal/handler"
	"msgx/internal/pipeline"
	"msgx/internal/sis"
)

// Foresight is what a message would do if it were applied now, against the stored flights
// and reference data and what the applied messages after it set (nothing goes backwards):
// what a replay's dry run shows for each message it would move.
type Foresight struct {
	// Sets are the fields and records it would set ("flight 5001 CTOT", "flight 5002
	// created", "AIRL 3U").
	Sets []string
	// Leaves are what it would leave as a later message set it ("flight 5001 STND kept: set
	// by message 3, newer").
	Leaves []string
	// Fails is the class and error it would fail with now ("" when it would apply).
	Fails string
}

// Foresee says what message id would do if it were applied now (Foresight). It reads and
// decides without writing anything and leaves the pump's own state alone, so the API may call
// it beside a running pump. Each message is foreseen on its own, against what is stored now:
// a replay of several applies them in order, each after the ones before.
func (p *Pump) Foresee(ctx context.Context, id int64) (Foresight, error) {
	raw, ok, err := p.db.Raw(ctx, id)
	if err != nil || !ok {
		return Foresight{}, err
	}
	msg, err := p.dec.decode(id, raw)
	if err != nil {
		return Foresight{Fails: fmt.Sprintf("%s: %v", pipeline.ClassOf(err), err)}, nil
	}
	h, ok := p.reg.Lookup(msg.Tag())
	if !ok {
		return Foresight{Fails: fmt.Sprintf("%s: no handler for %s", pipeline.Unsupported, msg.Tag())}, nil
	}
	view := p.opt.View
	if view == nil {
		return Foresight{}, fmt.Errorf("foresee message %d: the pump has no view", id)
	}
	var later map[int64]*sis.Message
	n, err := p.order.newerThan(ctx, id, msg, view, &later)
	if err != nil {
		return Foresight{}, err
	}
	if n != nil {
		view = outOfOrderView{View: view, newer: n}
	}
	d, err := decideSafely(ctx, h, view, msg)
	if err != nil {
		if _, skip := handler.AsSkip(err); skip {
			return Foresight{Fails: "SKIPPED: " + err.Error()}, nil
		}
		return Foresight{Fails: fmt.Sprintf("%s: %v", pipeline.ClassOf(err), err)}, nil
	}
	sets, err := setsOf(ctx, p.opt.View, d)
	return Foresight{Sets: sets, Leaves: d.Kept, Fails: ""}, err
}

// decideSafely is h.Decide, a panic its CODEC_ERROR.
func decideSafely(ctx context.Context, h handler.Handler, view handler.View, msg *sis.Message) (d pipeline.Decision, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = pipeline.Errorf(pipeline.CodecError, "panic while deciding: %v", r)
		}
	}()
	return h.Decide(ctx, view, msg)
}

// setsOf names what d writes: each top-level field of a flight whose value it changes, a flight
// it creates or deletes, each reference record it upserts or deletes, a TYPE it replaces.
func setsOf(ctx context.Context, view handler.View, d pipeline.Decision) ([]string, error) {
	var out []string
	for _, w := range d.Flights {
		old, ok, err := view.Flight(ctx, w.FLID)
		if err != nil {
			return nil, err
		}
		switch {
		case w.Delete:
			out = append(out, fmt.Sprintf("flight %d deleted", w.FLID))
		case !ok:
			out = append(out, fmt.Sprintf("flight %d created", w.FLID))
		default:
			fields, err := handler.ChangedFields(old, w.Record)
			if err != nil {
				out = append(out, fmt.Sprintf("flight %d", w.FLID))
				continue
			}
			for _, f := range fields {
				out = append(out, fmt.Sprintf("flight %d %s", w.FLID, f))
			}
		}
	}
	for _, ch := range d.Ref {
		if ch.Type == handler.SchdGenType {
			continue // the days' snapshot generations: derived, not the message's
		}
		switch ch.Op {
		case pipeline.RefReplace:
			out = append(out, fmt.Sprintf("%s replaced (%d records)", ch.Type, len(ch.Records)))
		case pipeline.RefDelete:
			out = append(out, fmt.Sprintf("%s %s deleted", ch.Type, ch.Record.Key))
		default:
			out = append(out, fmt.Sprintf("%s %s", ch.Type, ch.Record.Key))
		}
	}
	return out, nil
}
