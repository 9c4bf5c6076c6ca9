package redisflight

// A single flight Redis lost while the marks agree: a stray DEL of its hash, an eviction. The
// marks cannot see it (no script was lost), so the Guard learns of it from the two places that
// find a flight absent in Redis: the pump, when a message's decision finds it absent (an
// ORPHAN, LostFlights), and the consistency sentinel, when the mirror holds a flight Redis
// lacks (NoteMissing). A flight Redis lacks and FLIGHT_STATE, the mirror, holds is lost: Check
// stops the pump for it ("Redis lost flight F: in the mirror at version V, absent in Redis")
// until Redis holds it again (REDIS_RESTORE of the flight, its day or everything) or the mirror
// no longer does.

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
)

// NoteMissing is told by the consistency sentinel (flight.MissingNoter) of flights the mirror
// holds and Redis lacks. With the guard on, the Guard's next check judges them, once Redis's
// mark is SQL's (no message's script is ahead of its SQL commit, so a flight a message has just
// deleted in Redis, its mirror row still there, is not taken for lost), and stops the pump for
// each Redis lost. Without the guard (phase B's projection) it does nothing.
func (s *Store) NoteMissing(flids []int64) {
	if s.guard == nil || len(flids) == 0 {
		return
	}
	g := s.guard
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.suspects == nil {
		g.suspects = make(map[int64]bool, len(flids))
	}
	for _, id := range flids {
		g.suspects[id] = true
	}
}

// takeSuspects returns the flights NoteMissing was told of, and forgets them.
func (s *Store) takeSuspects() []int64 {
	if s.guard == nil {
		return nil
	}
	g := s.guard
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]int64, 0, len(g.suspects))
	for id := range g.suspects {
		out = append(out, id)
	}
	g.suspects = nil
	return out
}

// LostFlights is the pump's question on the ORPHAN path (pump.FlightLoss): of flids, the
// flights of a message whose decision found one absent, which does Redis lack (one round trip)
// and, of those, which does the mirror hold, read through tx (the batch transaction, so a
// flight a message before in the batch deleted is absent from both)? Each is lost from now on:
// halt names it, and Check reports it until Redis holds it again. "" when none is (a FLOP for a
// flight neither store has is an ORPHAN).
func (g *Guard) LostFlights(ctx context.Context, tx *sql.Tx, flids []int64) (halt string, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.judge(ctx, tx, flids); err != nil {
		return "", err
	}
	return g.lostReason(), nil
}

// lostFlights is Check's part once the marks agree (g.mu held, rm Redis's marks as just read):
// the flights known lost are read again (REDIS_RESTORE may have brought them back), and those
// the sentinel noted are judged when Redis's mark is SQL's (else at a later check). With
// neither, the usual case, it reads nothing.
func (g *Guard) lostFlights(ctx context.Context, rm RedisMarks) (halt string, err error) {
	ids := make([]int64, 0, len(g.lost))
	for id := range g.lost {
		ids = append(ids, id)
	}
	sus := g.s.takeSuspects()
	if len(sus) > 0 && rm.Mark != g.mark.MsgID {
		g.s.NoteMissing(sus) // a script is ahead of its SQL commit: judged later
		sus = nil
	}
	ids = append(ids, sus...)
	if len(ids) == 0 {
		return "", nil
	}
	slices.Sort(ids)
	if err := g.judge(ctx, nil, slices.Compact(ids)); err != nil {
		g.s.NoteMissing(sus)
		return "", err
	}
	return g.lostReason(), nil
}

// judge reads which of flids Redis lacks and, of those, the mirror's versions (through tx when
// not nil): a flight Redis lacks and the mirror holds is recorded lost, any other is not (g.mu
// held).
func (g *Guard) judge(ctx context.Context, tx *sql.Tx, flids []int64) error {
	if len(flids) == 0 {
		return nil
	}
	vers, err := g.s.versions(ctx, flids)
	if err != nil {
		return err
	}
	var absent []int64
	for i, v := range vers {
		if v == "0" {
			absent = append(absent, flids[i])
		} else {
			delete(g.lost, flids[i])
		}
	}
	if len(absent) == 0 {
		return nil
	}
	if g.sql == nil {
		return fmt.Errorf("redis flight store: no mirror to look flights up in")
	}
	mv, err := g.sql.MirrorVersions(ctx, tx, absent)
	if err != nil {
		return err
	}
	for _, id := range absent {
		v, ok := mv[id]
		if !ok {
			delete(g.lost, id)
			continue
		}
		if g.lost == nil {
			g.lost = map[int64]int64{}
		}
		if _, known := g.lost[id]; !known {
			g.log.Error("phase A: Redis lost a flight the mirror holds", "flid", id, "mirror_version", v)
		}
		g.lost[id] = v
	}
	return nil
}

// lostReason names the lowest lost flight, and how many more there are ("" for none).
func (g *Guard) lostReason() string {
	if len(g.lost) == 0 {
		return ""
	}
	ids := make([]int64, 0, len(g.lost))
	for id := range g.lost {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	r := fmt.Sprintf("Redis lost flight %d: in the mirror at version %d, absent in Redis", ids[0], g.lost[ids[0]])
	if n := len(ids) - 1; n > 0 {
		r += fmt.Sprintf(" (and %d more flights the mirror holds and Redis lacks)", n)
	}
	return r
}
