package handler

import (
	"context"
	"encoding/json"
	"fmt"

	"msgx/internal/pipeline"
	"msgx/internal/sis"
)

// Reference-data STYPs. ADD and UPD are the same upsert; DNLD and RESP replace the TYPE.
var refSTYPs = []string{"ADD", "UPD", "DEL", "DNLD", "RESP"}

// RegisterRef registers the reference-data handlers: every TYPE of sis.RefTypes with every
// STYP of ADD, UPD, DEL, DNLD and RESP. Any other STYP has no handler (UNSUPPORTED).
func RegisterRef(r *Registry, opt Options) {
	for _, typ := range sis.RefTypes {
		for _, styp := range refSTYPs {
			r.Register(typ+"-"+styp, Func(func(ctx context.Context, _ View, msg *sis.Message) (pipeline.Decision, error) {
				return decideRef(msg, opt)
			}))
		}
	}
}

func decideRef(msg *sis.Message, opt Options) (pipeline.Decision, error) {
	body, ok := msg.Body.(*sis.RefBody)
	if !ok {
		return pipeline.Decision{}, fmt.Errorf("%s: body is %T, want *sis.RefBody", msg.Tag(), msg.Body)
	}
	recs := make([]pipeline.RefRecord, 0, len(body.Records))
	for _, r := range body.Records {
		fields, err := json.Marshal(r.Fields)
		if err != nil {
			return pipeline.Decision{}, pipeline.Wrap(pipeline.CodecError, fmt.Errorf("%s %s: %w", body.Type, r.Key, err))
		}
		recs = append(recs, pipeline.RefRecord{Key: r.Key, Fields: fields})
	}
	var d pipeline.Decision
	switch msg.Meta.STYP {
	case "ADD", "UPD":
		for _, r := range recs {
			d.Ref = append(d.Ref, pipeline.RefChange{Op: pipeline.RefUpsert, Type: body.Type, Record: r})
		}
	case "DEL":
		for _, r := range recs {
			d.Ref = append(d.Ref, pipeline.RefChange{Op: pipeline.RefDelete, Type: body.Type, Record: r})
		}
	case "DNLD", "RESP":
		if len(recs) == 0 && !opt.AllowEmptyRefReplace {
			return d, Skip("empty %s %s would delete every %s record; not applied (set ref.allow-empty-replace to allow it)",
				body.Type, msg.Meta.STYP, body.Type)
		}
		d.Ref = append(d.Ref, pipeline.RefChange{Op: pipeline.RefReplace, Type: body.Type, Records: recs, AllowEmpty: opt.AllowEmptyRefReplace})
	default:
		return d, pipeline.Errorf(pipeline.Unsupported, "no reference handler for STYP %s", msg.Meta.STYP)
	}
	d.Note = fmt.Sprintf("%d %s records", len(recs), body.Type)
	return d, nil
}
