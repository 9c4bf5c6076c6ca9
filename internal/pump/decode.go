package pump

import (
	"fmt"
	"log/slog"
	"runtime/debug"

	"msgx/internal/pipeline"
	"msgx/internal/sis"
)

// decoded is a message decoded: ahead of the decisions (phase B, to learn which flights the
// batch reads) or at its turn (the decoding stage).
type decoded struct {
	raw           string // the text decoded (the identity's content digest reads it)
	msg           *sis.Message
	tag, identity string
	warnings      []string
	err           error
}

// decoder is the pump's call of the codec.
type decoder struct {
	sis      sis.Options
	identity pipeline.IdentityMode // the identity key a decoded message binds first
	log      *slog.Logger
}

// text decodes raw, the text of message id, with, when the envelope was usable, its type tag,
// identity and the decoder's warnings, which a failure is recorded with too.
func (dc decoder) text(id int64, raw string) *decoded {
	d := &decoded{raw: raw}
	d.msg, d.err = dc.decode(id, raw)
	if msg := d.msg; msg != nil {
		d.tag, d.warnings = msg.Tag(), msg.Warnings
		d.identity = dc.identity.Key(msg.Meta.SNDR, msg.Meta.TYPE, msg.Meta.STYP, msg.Meta.SEQN, msg.Meta.Day)
	}
	return d
}

// decode decodes raw; a panic in the decoder is the message's CODEC_ERROR, not the process's
// end (the stack goes to the log), so it follows the retry and poison path and can be
// replayed once the decoder is fixed.
func (dc decoder) decode(id int64, raw string) (msg *sis.Message, err error) {
	defer func() {
		if r := recover(); r != nil {
			msg, err = nil, panicked(dc.log, id, "decoding", r)
		}
	}()
	return sis.Decode([]byte(raw), dc.sis)
}

// panicked logs a panic while working on message id (what) with its stack and returns it as
// the message's CODEC_ERROR.
func panicked(log *slog.Logger, id int64, what string, r any) error {
	log.Error("panic while "+what+"; the message fails with CODEC_ERROR", "msg_id", id, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
	return pipeline.Errorf(pipeline.CodecError, "panic while %s: %v", what, r)
}
