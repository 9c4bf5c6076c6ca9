package api

import (
	"context"
	"time"

	"msgx/internal/store"
)

// MaxPreviewItems bounds the rows a replay's dry run describes (id, tag or target, class,
// age); the ids and counts still cover everything that would move.
const MaxPreviewItems = 200

// MaxForesee bounds the messages a replay's dry run decides to say what each would set and
// leave (Foresee): each reads the messages applied after it.
const MaxForesee = 50

// PreviewItem is one message or event a replay would move, as a dry run describes it.
type PreviewItem struct {
	ID int64 `json:"id"`
	// Tag is the message's type tag (FLOP-STND…), or the event's.
	Tag string `json:"tag"`
	// Target is the event's delivery target ("" for a message).
	Target string `json:"target,omitempty"`
	Class  string `json:"error_class"`
	// Since is when the message was received or the event created; AgeSeconds is how long
	// ago that was by the server's clock.
	Since      *time.Time `json:"since"`
	AgeSeconds float64    `json:"age_seconds"`
	// Sets, Leaves and Fails (messages, when the server can foresee them) say what the message
	// would do if applied now: the fields and records it would set, what it would leave as a
	// later message set it (nothing goes backwards), or the error it would fail with.
	Sets   []string `json:"sets,omitempty"`
	Leaves []string `json:"leaves,omitempty"`
	Fails  string   `json:"fails,omitempty"`
}

// Foresight is what a message would do if applied now (Server.Foresee).
type Foresight struct {
	Sets, Leaves []string
	Fails        string
}

// messagePreview describes up to MaxPreviewItems of the messages ids; a message gone between
// the preview and this read (archived) is left out.
func (s *Server) messagePreview(ctx context.Context, ids []int64) ([]PreviewItem, error) {
	now := s.Clock.Now()
	out := []PreviewItem{}
	for _, id := range ids[:min(len(ids), MaxPreviewItems)] {
		m, err := s.DB.GetMessage(ctx, id)
		if err != nil {
			return nil, err
		}
		if m == nil {
			continue
		}
		it := PreviewItem{ID: id, Tag: deref(m.TypeTag), Class: deref(m.ErrorClass), Since: m.ReceivedAt}
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
func eventPreview(e *store.Event, now time.Time) PreviewItem {
	at := e.CreatedAt
	return PreviewItem{ID: e.EventID, Tag: e.TypeTag, Target: e.Target, Class: deref(e.ErrorClass),
		Since: &at, AgeSeconds: now.Sub(at).Seconds()}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
