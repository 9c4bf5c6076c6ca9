package redisflight

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"msgx/internal/pipeline"
)

// Batch is the store as one batch of the phase A pump uses it: it remembers each flight it
// read or wrote (record and version), so a flight read again by a later message of the batch
// costs no round trip, and the version compare-and-set of a message's script is against the
// version the handler read (not one read again just before the script). A message's step is
// then one round trip per flight it reads first in the batch, and its script.
//
// What it remembers stays true while the pump is Redis's only writer (it holds the lease; its
// jobs run in the message order): a script updates it with exactly what the script wrote. Any
// other writer is caught by the compare-and-set (the message fails INFRA and the next batch
// reads afresh). A Batch lives for one batch and is not safe for concurrent use.
type Batch struct {
	s    *Store
	seen map[int64]seenFlight
}

// seenFlight is a flight as the batch knows it: absent (ok=false, version 0), or its record
// and version.
type seenFlight struct {
	rec []byte
	ver int64
	ok  bool
}

// Batch returns a new batch over s.
func (s *Store) Batch() *Batch { return &Batch{s: s, seen: map[int64]seenFlight{}} }

// record returns rec so that a caller's append cannot reach what the batch keeps.
func (f seenFlight) record() []byte { return f.rec[:len(f.rec):len(f.rec)] }

// Flight returns flight flid's record (pipeline.View), from what the batch knows or read now.
func (b *Batch) Flight(ctx context.Context, flid int64) ([]byte, bool, error) {
	if f, ok := b.seen[flid]; ok {
		return f.record(), f.ok, nil
	}
	v, err := b.s.rdb.HMGet(ctx, b.s.flightKey(flid), "rec", "ver").Result()
	if err != nil {
		return nil, false, unavailable(fmt.Sprintf("read flight %d", flid), err)
	}
	rec, ok := v[0].(string)
	if !ok {
		b.seen[flid] = seenFlight{}
		return nil, false, nil
	}
	ver, _ := strconv.ParseInt(str(v[1]), 10, 64)
	f := seenFlight{rec: []byte(rec), ver: ver, ok: true}
	b.seen[flid] = f
	return f.record(), true, nil
}

// FlightsOf returns the records of those of flids that are stored, in no order
// (pipeline.View; see batch_handler_test.go): the ones the batch does not know are read in one round trip.
func (b *Batch) FlightsOf(ctx context.Context, flids []int64) ([][]byte, error) {
	var missing []int64
	for _, id := range flids {
		if _, ok := b.seen[id]; !ok {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		fs, err := b.s.read(ctx, missing)
		if err != nil {
			return nil, err
		}
		for i, f := range fs {
			if f.ok {
				b.seen[missing[i]] = seenFlight{rec: f.Record, ver: f.Version, ok: true}
			} else {
				b.seen[missing[i]] = seenFlight{}
			}
		}
	}
	out := make([][]byte, 0, len(flids))
	done := make(map[int64]bool, len(flids))
	for _, id := range flids {
		if f := b.seen[id]; f.ok && !done[id] {
			done[id] = true
			out = append(out, f.record())
		}
	}
	return out, nil
}

// ApplyUnmarked is Store.ApplyUnmarked within the batch: each flight the batch knows is
// compared to the version it knows (the others' versions are read first), and what the script
// wrote is remembered. A script that failed or whose answer was lost leaves its flights
// unknown to the batch (read again when next asked for).
func (b *Batch) ApplyUnmarked(ctx context.Context, msgID int64, writes []pipeline.FlightWrite, marker []byte, now time.Time) (stored []byte, found bool, err error) {
	maids, err := maidsOf(writes)
	if err != nil {
		return nil, false, err
	}
	ids := distinct(writes)
	vers := make([]string, len(ids))
	var missing []int64
	var at []int
	for i, id := range ids {
		if f, ok := b.seen[id]; ok {
			vers[i] = strconv.FormatInt(f.ver, 10)
		} else {
			missing, at = append(missing, id), append(at, i)
		}
	}
	if len(missing) > 0 {
		read, err := b.s.versions(ctx, missing)
		if err != nil {
			return nil, false, err
		}
		for j, i := range at {
			vers[i] = read[j]
		}
	}
	stored, found, err = b.s.script(ctx, msgID, writes, maids, ids, vers, marker, now)
	if err != nil {
		for _, id := range ids {
			delete(b.seen, id)
		}
		return nil, false, err
	}
	if found {
		return stored, true, nil // nothing written
	}
	cur := make(map[int64]int64, len(ids))
	for i, id := range ids {
		cur[id], _ = strconv.ParseInt(vers[i], 10, 64)
	}
	for _, w := range writes {
		if w.Delete {
			cur[w.FLID] = 0
			b.seen[w.FLID] = seenFlight{}
			continue
		}
		cur[w.FLID]++
		b.seen[w.FLID] = seenFlight{rec: w.Record, ver: cur[w.FLID], ok: true}
	}
	return nil, false, nil
}

// View returns the handlers' view of a message in the batch: its flights by FLID from the
// batch (Flight, FlightsOf), its other flight reads from Redis (all of the batch's scripts
// are applied there), and reference data, now and the zone from base (the pump's view
// through the batch transaction).
func (b *Batch) View(base pipeline.View) pipeline.View { return batchView{b: b, base: base} }

type batchView struct {
	b    *Batch
	base pipeline.View
}

func (v batchView) Flight(ctx context.Context, flid int64) ([]byte, bool, error) {
	return v.b.Flight(ctx, flid)
}

func (v batchView) FlightsOf(ctx context.Context, flids []int64) ([][]byte, error) {
	return v.b.FlightsOf(ctx, flids)
}

func (v batchView) FlightsBetween(ctx context.Context, from, to time.Time) ([][]byte, error) {
	return v.b.s.FlightsBetween(ctx, from, to)
}

func (v batchView) CodeShareFlights(ctx context.Context) ([][]byte, error) {
	return v.b.s.CodeShareFlights(ctx)
}

func (v batchView) CodeSharesOf(ctx context.Context, masters []int64) ([][]byte, error) {
	return v.b.s.CodeSharesOf(ctx, masters)
}

func (v batchView) RefKeys(ctx context.Context, typ string) ([]string, error) {
	return v.base.RefKeys(ctx, typ)
}

func (v batchView) Now() time.Time { return v.base.Now() }

func (v batchView) Location() *time.Location { return v.base.Location() }
