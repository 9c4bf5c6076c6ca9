package pump

import (
	"context"
	"testing"

	"msgx/internal/pipeline"
	"msgx/internal/store"
)

// key is the identity of sttsText in identity.mode seqn.
var key = pipeline.IdentitySeqn.Key("AODB", "STTS", "ADD", "7", "")

func TestDeduplicatedLetsANewIdentityOn(t *testing.T) {
	g := newStageRig(t)
	g.r.reads.bound[store.IdentityKey(key)] = 0
	next := &nextCall{}
	w := g.work(5, sttsText, true)
	if _, err := deduplicated(g.ids, g.rec)(next.handle)(context.Background(), g.r, w); err != nil {
		t.Fatal(err)
	}
	if !next.ran || w.d.identity != key || len(g.got) != 0 {
		t.Fatalf("next ran %v, identity %q, outcomes %+v", next.ran, w.d.identity, g.got)
	}
}

func TestDeduplicatedSkipsADuplicate(t *testing.T) {
	g := newStageRig(t)
	g.r.reads.bound[store.IdentityKey(key)] = 3
	next := &nextCall{}
	if _, err := deduplicated(g.ids, g.rec)(next.handle)(context.Background(), g.r, g.work(5, sttsText, true)); err != nil || next.ran {
		t.Fatalf("err %v, next ran %v: a duplicate is not decided", err, next.ran)
	}
	if o := g.only(); o.State != pipeline.Skipped || o.LastError != "duplicate-of:3" || o.Identity != key {
		t.Fatalf("recorded %s %q %q", o.State, o.LastError, o.Identity)
	}
}

func TestDeduplicatedFindsAMessageAlreadyApplied(t *testing.T) {
	g := newStageRig(t)
	g.r.reads.bound[store.IdentityKey(key)] = 5
	next := &nextCall{}
	if _, err := deduplicated(g.ids, g.rec)(next.handle)(context.Background(), g.r, g.work(5, sttsText, true)); err != nil || next.ran {
		t.Fatalf("err %v, next ran %v: a message applied is not decided again", err, next.ran)
	}
	if o := g.only(); o.State != pipeline.Succeeded || o.Note != "already applied; its commit's answer was lost" {
		t.Fatalf("recorded %s %q", o.State, o.Note)
	}
}
