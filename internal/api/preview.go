package api

import (
	"context"
	"time"

	"msgx/client"
	"msgx/internal/store"
)

// MaxPreviewItems bounds the rows a replay's dry run describes (id, tag or target, class,
// age); the ids and counts still cover everything that would move.
const MaxPreviewItems = 200

// MaxForesee bounds the messages a replay's dry run decides to say what each would set and
// leave (Foresee): each reads the messages applied after it.
const MaxForesee = 50

// Foresight is what a message would do if applied now (Server.Foresee).
type Foresight struct {
	Sets, Leaves []string
	Fails        string
}

// messagePreview describes up to MaxPreviewItems of the messages ids; a message gone between
// the preview and this read (archived) is left out.
func (s *Server) messagePreview(ctx context.Context, ids []int64) ([]client.ReplayItem, error) {
	now := s.Clock.Now()
	out := []client.ReplayItem{}
	for _, id := range ids[:min(len(ids), MaxPreviewItems)] {
		m, err := s.DB.GetMessage(ctx, id)
		if err != nil {
			return nil, err
		}
		if m == nil {
			continue
		}
		it := client.ReplayItem{ID: id, Tag: deref(m.TypeTag), Class: deref(m.ErrorClass), Since: m.ReceivedAt}
		if m.ReceivedAt != nil {
			it.AgeSeconds = now.Sub(*m.ReceivedAt).Seconds()
		}
		if s.Pump != nil && len(out) < MaxForesee {
			f, err := s.Pump.Foresee(ctx, id)
			if err != nil {
				return nil, err
			}
			it.Sets, it.Leaves, it.Fails = f.Sets, f.Leaves, f.Fails
		}
		out = append(out, it)
	}
	return out, nil
}

// eventPreview describes a DEAD event a replay would move.
func eventPreview(e *store.Event, now time.Time) client.ReplayItem {
	at := e.CreatedAt
	return client.ReplayItem{ID: e.EventID, Tag: e.TypeTag, Target: e.Target, Class: deref(e.ErrorClass),
		Since: &at, AgeSeconds: now.Sub(at).Seconds()}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
