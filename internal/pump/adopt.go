package pump

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"msgx/internal/metrics"
	"msgx/internal/store"
)

// adopter gives gateway rows (inserted straight into CMINMSGS) their place in the order before
// the pump takes its head (adopt).
type adopter struct {
	db      store.Adoption
	log     *slog.Logger
	metrics *metrics.Metrics

	// Whether the start-up adoption ran, the highest CMINMSGS id looked at, and the ids below
	// it still missing, with when they were first missed; the servers' id step
	// (store.Adoption.IDStep) and, when it is over 1, the classes of ids modulo it that
	// present ids were in, with when one last was; when the last sweep ran.
	started   bool
	hw        int64
	gaps      map[int64]time.Time
	step      int64
	classes   map[int64]time.Time
	lastSweep time.Time
}

// sweepEvery is how often the adoption also looks below the newest PROC_STATE row, for a
// gateway row that the gap tracking missed (one another transaction held locked, or one that
// committed after its gap expired): it joins late, never not at all.
const sweepEvery = time.Minute

// sweepDepth bounds how many ids below the newest the sweep looks.
const sweepDepth = 100000

// gapWindow bounds how far below the newest CMINMSGS id the pump tracks missing ids; gapTTL
// is how long it re-checks one (a rolled-back insert leaves an id that never appears), and
// maxGaps how many it tracks at most.
const (
	gapWindow = 10000
	gapTTL    = 10 * time.Minute
	maxGaps   = 10000
)

// adopt gives gateway rows (inserted straight into CMINMSGS) their PENDING state before the
// head is taken, so a later message cannot overtake them, and marks them taken
// (CMINMSGS_DATE_PROCESSED). Only VALID rows the legacy has not taken, within
// inbox.adopt-from-id and inbox.adopt-since, are adopted (store.LegacyOptions).
//
// At start it logs the backlog and adopts it. Then each step: two index lookups tell whether
// CMINMSGS grew, and a count of the new ids' PROC_STATE rows, in the same statement, whether
// any lacks one (the inbox's own rows all have one); those are adopted when they are visible,
// and the ids that are not visible yet (a gateway transaction still open, with a lower id
// than rows already committed) are remembered and looked up again each step, so such a row
// joins within a poll interval. A sweep each minute catches anything else.
func (a *adopter) adopt(ctx context.Context, now time.Time) error {
	msgs, states, stated, err := a.db.Heads(ctx, a.hw)
	if err != nil {
		return err
	}
	if !a.started {
		if err := a.adoptAtStart(ctx, msgs, now); err != nil {
			return err
		}
	}
	if msgs > a.hw {
		lo := a.hw
		if msgs-lo > gapWindow {
			if err := a.adoptLegacy(ctx, lo, msgs-gapWindow, now); err != nil {
				return err
			}
			lo = msgs - gapWindow
		}
		if lo != a.hw || stated != msgs-lo { // else every new id has its state: none to look for
			missing, present, err := a.db.Unstated(ctx, lo, msgs)
			if err != nil {
				return err
			}
			for _, id := range a.givenOut(missing, present, now) {
				if len(a.gaps) < maxGaps {
					a.gaps[id] = now
				}
			}
		}
		a.hw = msgs
	}
	if len(a.gaps) > 0 {
		if err := a.adoptGaps(ctx, now); err != nil {
			return err
		}
	}
	if now.Sub(a.lastSweep) >= sweepEvery || now.Before(a.lastSweep) {
		a.lastSweep = now
		if err := a.readStep(ctx); err != nil {
			return err
		}
		if err := a.adoptLegacy(ctx, max(states-sweepDepth, 0), msgs, now, "by", "sweep"); err != nil {
			return err
		}
	}
	return nil
}

// adoptAtStart logs the backlog and adopts it, once, when the pump starts.
func (a *adopter) adoptAtStart(ctx context.Context, msgs int64, now time.Time) error {
	n, oldest, err := a.db.Backlog(ctx)
	if err != nil {
		return err
	}
	args := []any{"count", n}
	if oldest != nil {
		args = append(args, "oldest_received_at", oldest.Format(time.RFC3339))
	}
	a.log.Info("CMINMSGS rows to adopt at start (VALID, not taken by the legacy, within inbox.adopt-from-id/-since)", args...)
	if err := a.adoptLegacy(ctx, 0, msgs, now); err != nil {
		return err
	}
	a.started, a.lastSweep, a.hw = true, now, max(msgs-gapWindow, 0)
	a.gaps = map[int64]time.Time{}
	return a.readStep(ctx)
}

// readStep reads the servers' id step; a new one forgets the classes seen under the old.
func (a *adopter) readStep(ctx context.Context) error {
	step, err := a.db.IDStep(ctx)
	if err != nil {
		return err
	}
	if step != a.step {
		a.step, a.classes = step, map[int64]time.Time{}
	}
	return nil
}

// givenOut returns the ids of missing that a server may have given out, to be looked for
// again (the gaps): all of them when ids step by 1; on a Galera cluster, where each node's ids
// step by the cluster's size (1, 4, 7… on one node), only those in a class modulo the step
// that a present id was in within gapTTL. The others are ids of nodes nothing was written
// through, two in three of all ids when one node takes every write: looked for each step,
// they filled the gaps and cost a read of thousands of ids per step. A row of a node first
// written through in an open transaction is not tracked; the sweep adopts it.
func (a *adopter) givenOut(missing, present []int64, now time.Time) []int64 {
	if a.step <= 1 {
		return missing
	}
	for _, id := range present {
		a.classes[id%a.step] = now
	}
	out := missing[:0]
	for _, id := range missing {
		if seen, ok := a.classes[id%a.step]; ok && now.Sub(seen) <= gapTTL {
			out = append(out, id)
		}
	}
	return out
}

// adoptLegacy adopts the adoptable rows with ids in (from, to] (store.Adoption.AdoptLegacy) and
// logs how many, with args.
func (a *adopter) adoptLegacy(ctx context.Context, from, to int64, now time.Time, args ...any) error {
	n, err := a.db.AdoptLegacy(ctx, from, to, now)
	if err != nil || n == 0 {
		return err
	}
	a.metrics.Received("gateway", n)
	a.log.Info("adopted rows inserted directly into CMINMSGS", append([]any{"count", n}, args...)...)
	return nil
}

// adoptGaps looks up the ids the pump waits for: those now visible are adopted if adoptable
// and forgotten either way; those still missing after gapTTL are left to the sweep.
func (a *adopter) adoptGaps(ctx context.Context, now time.Time) error {
	ids := make([]int64, 0, len(a.gaps))
	for id, since := range a.gaps {
		if now.Sub(since) > gapTTL {
			delete(a.gaps, id)
			continue
		}
		ids = append(ids, id)
	}
	slices.Sort(ids)
	visible, adoptable, err := a.db.Visible(ctx, ids)
	if err != nil {
		return err
	}
	if len(adoptable) > 0 {
		stated, err := a.db.AdoptIDs(ctx, adoptable, now)
		if err != nil {
			return err
		}
		a.metrics.Received("gateway", len(stated))
		a.log.Info("adopted CMINMSGS rows committed after higher ids", "ids", fmt.Sprint(stated))
	}
	for _, id := range visible {
		delete(a.gaps, id)
	}
	return nil
}
