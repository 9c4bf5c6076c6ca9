package pump

// Nothing goes backwards (invariant I6): a message below the highest applied one — a replay of
// a parked message, a late row the adoption takes — is decided with what the applied messages
// after it set of the flights and reference records it names (pipeline.Newer), and its
// handler leaves those fields as stored (handler/newer.go). In order, nothing is read for it.

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"msgx/internal/handler"
	"msgx/internal/pipeline"
	"msgx/internal/sis"
)

// maxLater bounds the pump's memory of the later messages it decoded for Newer (a replay of a
// class decides many parked messages against the same later ones).
const maxLater = 32

// order knows the highest applied message, and decides a message below it with what the
// applied messages after it set.
type order struct {
	db interface {
		LastApplied(ctx context.Context) (int64, error)
		AppliedAfter(ctx context.Context, id int64, flids []int64, types []string) ([]int64, error)
		Raw(ctx context.Context, id int64) (string, bool, error)
	}
	dec decoder
	log *slog.Logger

	// The highest applied message this pump knows: a message below it is decided out of its
	// order. Read from the database at the first need after each start of Run (known false).
	applied int64
	known   bool
	later   map[int64]*sis.Message // later messages decoded for a message out of order
}

// outOfOrderView is the view of a message decided out of its order: the batch's view and what
// the later messages set.
type outOfOrderView struct {
	handler.View
	newer *pipeline.Newer
}

// Newer implements handler.OutOfOrder.
func (v outOfOrderView) Newer() *pipeline.Newer { return v.newer }

// view returns the view the handler of message id (decoded as msg) decides with: view when it
// is after every applied one, else view with what the applied messages after it set.
func (o *order) view(ctx context.Context, id int64, msg *sis.Message, view handler.View) (handler.View, error) {
	if !o.known {
		last, err := o.db.LastApplied(ctx)
		if err != nil {
			return nil, err
		}
		o.applied, o.known = max(o.applied, last), true
	}
	if id > o.applied {
		return view, nil
	}
	n, err := o.newerThan(ctx, id, msg, view, &o.later)
	if err != nil || n == nil {
		return view, err
	}
	o.log.Info("message out of order: deciding it with what later messages set", "msg_id", id)
	return outOfOrderView{View: view, newer: n}, nil
}

// appliedUpTo notes that message id is applied (its success durable).
func (o *order) appliedUpTo(id int64) { o.applied = max(o.applied, id) }

// newerThan gathers what the applied messages after message id (decoded as msg) set of the
// flights and reference TYPE it names (and, for a window replace, of the stored flights in
// its window, read through view), remembering the later messages it decodes in later.
func (o *order) newerThan(ctx context.Context, id int64, msg *sis.Message, view handler.View, later *map[int64]*sis.Message) (*pipeline.Newer, error) {
	flids := flightsOf(msg)
	inWindow, err := windowFlights(ctx, view, msg)
	if err != nil {
		return nil, err
	}
	flids = append(flids, inWindow...)
	var types []string
	if b, ok := msg.Body.(*sis.RefBody); ok {
		types = []string{b.Type}
	}
	if len(flids) == 0 && len(types) == 0 {
		return nil, nil
	}
	ids, err := o.db.AppliedAfter(ctx, id, flids, types)
	if err != nil || len(ids) == 0 {
		return nil, err
	}
	n := &pipeline.Newer{Msg: id}
	want, typeSet := map[int64]bool{}, map[string]bool{}
	for _, f := range flids {
		want[f] = true
	}
	for _, t := range types {
		typeSet[t] = true
	}
	for _, lid := range ids {
		lmsg, ok, err := o.laterMessage(ctx, lid, later)
		if err != nil {
			return nil, err
		}
		if !ok {
			// Its text is gone or unreadable: it may have set anything the message names.
			o.log.Warn("a later message's text cannot be read; the message out of order leaves everything it may have set",
				"msg_id", id, "later_msg_id", lid)
			for f := range want {
				n.SetAll(f, lid)
			}
			for t := range typeSet {
				n.SetRefType(t, lid)
			}
			continue
		}
		handler.Asserts(lmsg, lid, n, want, typeSet)
	}
	return n, nil
}

// laterMessage returns applied message id decoded, remembered in later; ok is false when its
// text is gone or no longer decodes.
func (o *order) laterMessage(ctx context.Context, id int64, later *map[int64]*sis.Message) (*sis.Message, bool, error) {
	if m, ok := (*later)[id]; ok {
		return m, m != nil, nil
	}
	raw, ok, err := o.db.Raw(ctx, id)
	if err != nil {
		return nil, false, fmt.Errorf("later message %d: %w", id, err)
	}
	var msg *sis.Message
	if ok {
		msg, _ = o.dec.decode(id, raw)
	}
	if *later == nil || len(*later) >= maxLater {
		*later = map[int64]*sis.Message{}
	}
	(*later)[id] = msg
	return msg, msg != nil, nil
}

// windowFlights returns the stored flights in the window a DNLD or RESP replaces (the SODTs
// of its FLTRs), which it deletes when it does not name them.
func windowFlights(ctx context.Context, view handler.View, msg *sis.Message) ([]int64, error) {
	from, to, ok := handler.WindowOf(msg)
	if !ok {
		return nil, nil
	}
	recs, err := view.FlightsBetween(ctx, from, to)
	if err != nil {
		return nil, pipeline.Wrap(pipeline.Infra, fmt.Errorf("read flights in the window: %w", err))
	}
	out := make([]int64, 0, len(recs))
	for _, r := range recs {
		var f struct{ FLID int64 }
		if json.Unmarshal(r, &f) == nil && f.FLID != 0 {
			out = append(out, f.FLID)
		}
	}
	return out, nil
}
