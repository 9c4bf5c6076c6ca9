package redisflight

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"

	"github.com/redis/go-redis/v9"

	"msgx/internal/flight"
	"msgx/internal/pipeline"
)

// RestoreSource is what REDIS_RESTORE reads of FLIGHT_STATE (flight.Store): its days, a
// day's flights in FLID order a chunk at a time, and one flight wherever it is.
type RestoreSource interface {
	RebuildSource
	HistoryDays(ctx context.Context, before string) ([]flight.HistoryDay, error)
}

// RestoreParams say what RestoreFrom writes back into Redis.
type RestoreParams struct {
	Source RestoreSource
	// FLID, when not 0, restores that one flight; else Day, when set, that local day; else
	// every day FLIGHT_STATE or Redis holds, and the markers go (All).
	FLID int64
	Day  string
	// Chunk is how many flights one script writes (0: DefaultRebuildChunk).
	Chunk int
	// Progress is told after every chunk: the day and how many of its flights are done.
	Progress func(day string, done int)
}

// All says the restore is of everything.
func (p RestoreParams) All() bool { return p.FLID == 0 && p.Day == "" }

// RestoreResult is what a restore did to Redis.
type RestoreResult struct {
	Days     []string // the days restored (none for one flight)
	Written  int      // flights Redis did not hold
	Replaced int      // flights Redis held, rewritten as FLIGHT_STATE holds them
	Deleted  int      // flights Redis held that FLIGHT_STATE does not
	Markers  int      // message markers deleted (All)
}

//go:embed restore.lua
var restoreSrc string

var restoreScript = redis.NewScript(indexSrc + restoreSrc)

// RestoreFrom writes FLIGHT_STATE back into Redis (phase A's REDIS_RESTORE; the reverse of
// PROJECTION_REBUILD): each flight restored is replaced whole by FLIGHT_STATE's row (record,
// version, day, last message), and a flight Redis holds on a restored day that FLIGHT_STATE
// does not is deleted; chunks of p.Chunk flights, one script each. Restoring everything also
// deletes every message's marker: a marker records flights applied to the Redis that was lost
// (or whose SQL side never committed), so the messages it names are decided again on the
// restored picture. The marks are the caller's (Guard.Restore).
func (s *Store) RestoreFrom(ctx context.Context, p RestoreParams) (RestoreResult, error) {
	var res RestoreResult
	if p.Chunk <= 0 {
		p.Chunk = DefaultRebuildChunk
	}
	if p.FLID != 0 {
		e, err := p.Source.Get(ctx, p.FLID)
		if err != nil {
			return res, fmt.Errorf("restore flight %d: read FLIGHT_STATE: %w", p.FLID, err)
		}
		err = s.restoreChunk(ctx, []rebuildRow{rowOf(p.FLID, e)}, &res)
		return res, err
	}
	days := []string{p.Day}
	if p.Day == "" {
		var err error
		if days, err = s.allDays(ctx, p.Source); err != nil {
			return res, err
		}
	} else if !flight.ValidDay(p.Day) {
		return res, pipeline.Errorf(pipeline.Malformed, "restore: day %q is not YYYY-MM-DD", p.Day)
	}
	res.Days = days
	for _, day := range days {
		if err := s.restoreDay(ctx, p, day, &res); err != nil {
			return res, err
		}
	}
	if p.All() {
		n, err := s.deleteMarkers(ctx)
		res.Markers = n
		if err != nil {
			return res, err
		}
	}
	return res, nil
}

// allDays returns every day FLIGHT_STATE or Redis holds, sorted.
func (s *Store) allDays(ctx context.Context, src RestoreSource) ([]string, error) {
	hd, err := src.HistoryDays(ctx, "9999-12-31")
	if err != nil {
		return nil, fmt.Errorf("restore: read FLIGHT_STATE's days: %w", err)
	}
	days, err := s.days(ctx)
	if err != nil {
		return nil, err
	}
	for _, d := range hd {
		if !slices.Contains(days, d.Day) {
			days = append(days, d.Day)
		}
	}
	sort.Strings(days)
	return days, nil
}

// restoreDay makes Redis's flights of day those FLIGHT_STATE holds.
func (s *Store) restoreDay(ctx context.Context, p RestoreParams, day string, res *RestoreResult) error {
	held, err := s.members(ctx, s.p+"day:"+day)
	if err != nil {
		return err
	}
	extra := make(map[int64]bool, len(held))
	for _, id := range held {
		extra[id] = true
	}
	done := 0
	for after := int64(0); ; {
		fs, err := p.Source.HistoryChunk(ctx, day, after, p.Chunk)
		if err != nil {
			return fmt.Errorf("restore %s: read FLIGHT_STATE: %w", day, err)
		}
		if len(fs) == 0 {
			break
		}
		rows := make([]rebuildRow, len(fs))
		for i, f := range fs {
			rows[i] = rebuildRow{flid: f.FLID, day: f.Day, rec: f.Record, ver: f.Version, msg: f.MsgID, upd: f.UpdatedAt}
			delete(extra, f.FLID)
		}
		if err := s.restoreChunk(ctx, rows, res); err != nil {
			return fmt.Errorf("restore %s: %w", day, err)
		}
		done += len(fs)
		after = fs[len(fs)-1].FLID
		if p.Progress != nil {
			p.Progress(day, done)
		}
		if len(fs) < p.Chunk {
			break
		}
	}
	// Flights Redis holds on the day that FLIGHT_STATE does not hold there: as FLIGHT_STATE
	// holds them on another day, or deleted.
	rest := make([]int64, 0, len(extra))
	for id := range extra {
		rest = append(rest, id)
	}
	slices.Sort(rest)
	for start := 0; start < len(rest); start += p.Chunk {
		part := rest[start:min(start+p.Chunk, len(rest))]
		rows := make([]rebuildRow, len(part))
		for i, id := range part {
			e, err := p.Source.Get(ctx, id)
			if err != nil {
				return fmt.Errorf("restore %s: read flight %d: %w", day, id, err)
			}
			rows[i] = rowOf(id, e)
		}
		if err := s.restoreChunk(ctx, rows, res); err != nil {
			return fmt.Errorf("restore %s: %w", day, err)
		}
		done += len(part)
		if p.Progress != nil {
			p.Progress(day, done)
		}
	}
	if done == 0 && p.Progress != nil {
		p.Progress(day, 0)
	}
	return nil
}

// restoreChunk writes rows in one script, adding what it did to res.
func (s *Store) restoreChunk(ctx context.Context, rows []rebuildRow, res *RestoreResult) error {
	args := make([]any, 0, 1+8*len(rows))
	args = append(args, s.p)
	for _, r := range rows {
		if r.gone {
			args = append(args, "D", r.flid, "", "", "", 0, 0, "")
			continue
		}
		m, ok, err := flight.CheckWrite(pipeline.FlightWrite{Day: r.day, FLID: r.flid, Record: r.rec})
		if err != nil {
			return fmt.Errorf("flight %d: %w", r.flid, err)
		}
		maid := ""
		if ok {
			maid = strconv.FormatInt(m, 10)
		}
		upd := ""
		if !r.upd.IsZero() {
			upd = stamp(r.upd)
		}
		args = append(args, "U", r.flid, r.day, maid, string(r.rec), r.ver, r.msg, upd)
	}
	out, err := restoreScript.Run(ctx, s.rdb, nil, args...).Int64Slice()
	if err != nil {
		return unavailable(fmt.Sprintf("restore %d flights", len(rows)), err)
	}
	if len(out) != 3 {
		return unavailable("restore", errors.New("unexpected script answer"))
	}
	res.Written += int(out[0])
	res.Replaced += int(out[1])
	res.Deleted += int(out[2])
	return nil
}

// deleteMarkers deletes every message marker and returns how many.
func (s *Store) deleteMarkers(ctx context.Context) (int, error) {
	iter := s.rdb.Scan(ctx, 0, s.p+"marker:*", 1000).Iterator()
	var keys []string
	n := 0
	flush := func() error {
		if len(keys) == 0 {
			return nil
		}
		if err := s.rdb.Del(ctx, keys...).Err(); err != nil {
			return unavailable("delete markers", err)
		}
		n += len(keys)
		keys = keys[:0]
		return nil
	}
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
		if len(keys) == 500 {
			if err := flush(); err != nil {
				return n, err
			}
		}
	}
	if err := iter.Err(); err != nil {
		return n, unavailable("delete markers", err)
	}
	return n, flush()
}
