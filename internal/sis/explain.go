package sis

import (
	"fmt"

	"msgx/internal/pipeline"
)

// Explain decodes raw as the pump does and describes it, for `msgx decode`: its type tag,
// its identity under mode, its content digest (what tells it from another message with its
// SEQN under identity.mode content), META and warnings, and either its body or, when it does
// not decode, its error class and error (err is then that error, with its class).
func Explain(raw []byte, opt Options, mode pipeline.IdentityMode) (out map[string]any, err error) {
	msg, err := Decode(raw, opt)
	out = map[string]any{}
	if msg != nil {
		out["type_tag"] = msg.Tag()
		out["identity"] = mode.Key(msg.Meta.SNDR, msg.Meta.TYPE, msg.Meta.STYP, msg.Meta.SEQN, msg.Meta.Day)
		if d, derr := ContentDigest(raw); derr == nil {
			out["content_digest"] = d
		}
		out["meta"] = msg.Meta
		if len(msg.Warnings) > 0 {
			out["warnings"] = msg.Warnings
		}
	}
	if err != nil {
		class := pipeline.ClassOf(err)
		out["error_class"] = class
		out["error"] = err.Error()
		return out, fmt.Errorf("%s: %s", class, err)
	}
	out["body"] = msg.Body
	return out, nil
}
