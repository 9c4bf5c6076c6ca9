package pump

// The identity rule, in one place for the pump's one path (message.go, phase A and B, and a
// write refused by the identity's unique index).
//
// A duplicate is the same message sent again, never a different message that reuses a number:
// real AODBs reuse SEQN (docs/sis-format.md §5.1). In identity.mode content (the default) a
// message binds SNDR|TYPE|STYP|SEQN while no other message holds it; when another does, the
// holder's stored raw text is compared with this message's by their canonical digests
// (sis.ContentDigest, META DTTM included: a re-send keeps the sender's bytes, a new operation
// that repeats an old one has a new DTTM): the same content is SKIPPED duplicate-of the holder,
// other content binds SNDR|TYPE|STYP|SEQN|#<digest>, whose holder in turn is a duplicate's.
// Identities bound before keep working: under the plain key (before content mode existed) a
// re-send still finds its holder by the plain key and the same content; under the legacy
// digest (before DTTM counted, sis.ContentDigests) a re-send finds its holder by that digest,
// and is its duplicate when the holder's text has its digest, DTTM included. In modes seqn and
// seqn-day the key alone decides.

import (
	"context"
	"fmt"
	"log/slog"

	"msgx/internal/pipeline"
	"msgx/internal/sis"
)

// holderOf answers which message holds an identity: read from the database, or through a
// batch (which sees what the batch bound).
type holderOf func(ctx context.Context, identity string) (holder int64, bound bool, err error)

// verdict is what identify found for a message.
type verdict struct {
	identity string // the identity the message binds (or is recorded with)
	holder   int64  // the message it duplicates; 0 when it is not a duplicate
	applied  bool   // the message holds its identity itself: applied, its commit's answer lost
}

// maxDigests bounds the pump's memory of messages' content digests.
const maxDigests = 4096

// identities applies the identity rule, remembering the content digests of the messages it
// met.
type identities struct {
	mode    pipeline.IdentityMode // identity.mode
	raw     rawReader             // the holders' texts
	log     *slog.Logger
	digests map[int64]digests
}

// identify applies the identity rule (see above) to message id, whose raw text is raw and
// which decoded to msg, looking holders up with bound.
func (ids *identities) identify(ctx context.Context, bound holderOf, id int64, raw string, msg *sis.Message) (verdict, error) {
	key := ids.mode.Key(msg.Meta.SNDR, msg.Meta.TYPE, msg.Meta.STYP, msg.Meta.SEQN, msg.Meta.Day)
	v, err := held(ctx, bound, id, key)
	if err != nil || v.holder == 0 || !ids.mode.ByContent() {
		return v, err
	}
	mine, err := ids.digest(id, raw)
	if err != nil {
		return v, fmt.Errorf("content of message %d: %w", id, err)
	}
	if same, err := ids.sameAs(ctx, v.holder, mine); err != nil || same {
		return v, err // the same message sent again
	}
	v, err = held(ctx, bound, id, pipeline.ContentIdentity(key, mine.digest))
	if err != nil || v.holder != 0 || v.applied {
		return v, err
	}
	// A message bound under its legacy digest before DTTM counted holds this one's re-sends.
	old, err := held(ctx, bound, id, pipeline.ContentIdentity(key, mine.legacy))
	if err != nil || old.applied {
		return old, err
	}
	if old.holder != 0 {
		if same, err := ids.sameAs(ctx, old.holder, mine); err != nil || same {
			return old, err
		}
	}
	return v, nil
}

// sameAs reports whether the message holder has the content digest of d.
func (ids *identities) sameAs(ctx context.Context, holder int64, d digests) (bool, error) {
	theirs, ok, err := ids.holderDigest(ctx, holder)
	return ok && theirs == d.digest, err
}

// held is the verdict of one identity from its holder.
func held(ctx context.Context, bound holderOf, id int64, identity string) (verdict, error) {
	holder, ok, err := bound(ctx, identity)
	switch {
	case err != nil:
		return verdict{identity: identity}, err
	case !ok:
		return verdict{identity: identity}, nil
	case holder == id:
		return verdict{identity: identity, applied: true}, nil
	}
	return verdict{identity: identity, holder: holder}, nil
}

// digests are a message's content digest and its legacy digest (sis.ContentDigests).
type digests struct{ digest, legacy string }

// digest returns the canonical content digests of message id from its raw text, remembered.
func (ids *identities) digest(id int64, raw string) (digests, error) {
	if d, ok := ids.digests[id]; ok {
		return d, nil
	}
	d, l, err := sis.ContentDigests([]byte(raw))
	if err != nil {
		return digests{}, err
	}
	ids.remember(id, digests{d, l})
	return digests{d, l}, nil
}

// holderDigest returns the content digest of the message holding an identity, from its stored
// raw text (CMINMSGS, or CMINMSGS_HST once archived). ok is false when that text is gone or
// is not XML any more: the holder then counts as another message (a message is never skipped
// as the duplicate of one whose content cannot be compared).
func (ids *identities) holderDigest(ctx context.Context, holder int64) (string, bool, error) {
	if d, ok := ids.digests[holder]; ok {
		return d.digest, true, nil
	}
	raw, ok, err := ids.raw.Raw(ctx, holder)
	if err != nil {
		return "", false, err
	}
	if !ok {
		ids.log.Warn("the raw text of an identity's holder is missing; the message with its SEQN counts as another message", "holder_msg_id", holder)
		return "", false, nil
	}
	d, l, err := sis.ContentDigests([]byte(raw))
	if err != nil {
		ids.log.Warn("the raw text of an identity's holder has no content digest; the message with its SEQN counts as another message",
			"holder_msg_id", holder, "err", err.Error())
		return "", false, nil
	}
	ids.remember(holder, digests{d, l})
	return d, true, nil
}

func (ids *identities) remember(id int64, digest digests) {
	if ids.digests == nil || len(ids.digests) >= maxDigests {
		ids.digests = make(map[int64]digests)
	}
	ids.digests[id] = digest
}

// duplicateOf is the reason a duplicate is SKIPPED with.
func duplicateOf(holder int64) string { return fmt.Sprintf("duplicate-of:%d", holder) }
