package redisflight

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"msgx/internal/flight"
	"msgx/internal/pipeline"
)

// The projection of phase B (docs/redis-flights.md): FLIGHT_STATE is the flight store and
// the delivery target REDIS_FLIGHT (sink redis-flights, package target) keeps Redis in the
// same layout as phase A from the events of the flight changes, each guarded by its event id;
// PROJECTION_REBUILD rewrites the active days from FLIGHT_STATE in chunks.

// TombstoneTTL is how long a projected delete remembers the event that deleted the flight
// ({p}gone:{FLID}), so that an older event re-sent or replayed within that time does not
// bring the flight back. Far past the delivery retries (head-deadline, 10 minutes by
// default); a dead event replayed later than this may.
const TombstoneTTL = 30 * 24 * time.Hour

// DefaultRebuildChunk is how many flights one script of the phase-B rebuild writes: a day is
// rebuilt in chunks of this many flights, so that no script holds Redis for long.
const DefaultRebuildChunk = 250

// Change is one flight change as the projection receives it: the event of target
// REDIS_FLIGHT that carries it (a copy of the ES_FLIGHT event: the whole record after the
// change, or the deleted flight's FLID).
type Change struct {
	EventID int64     // MSG_EVENT.EVENT_ID: the guard, newer events only
	MsgID   int64     // the message that made the change: the hash's msg
	FLID    int64     // the flight
	Delete  bool      // the flight was deleted
	Day     string    // an upsert's local day, YYYY-MM-DD
	Record  []byte    // an upsert's record after the change
	At      time.Time // when the change was committed: the hash's upd
}

//go:embed project.lua
var projectSrc string

var projectScript = redis.NewScript(indexSrc + projectSrc)

// Project applies changes in order in one script, all or none: each upsert writes the record,
// its day and code-share sets and the version the flight had plus one; each delete removes
// the flight and leaves a tombstone. A change whose event id is not above the last one its
// flight took (the hash's eid, the tombstone, or the watermark of a rebuild) changes nothing:
// a late retry or a replay never overwrites newer data. It returns how many changes were
// applied; a bad upsert (day not YYYY-MM-DD, record not JSON) fails the whole call before
// anything is written.
func (s *Store) Project(ctx context.Context, changes []Change) (applied int, err error) {
	if len(changes) == 0 {
		return 0, nil
	}
	args := make([]any, 0, 2+8*len(changes))
	args = append(args, s.p, int64(TombstoneTTL/time.Second))
	for _, c := range changes {
		if c.EventID <= 0 || c.FLID == 0 {
			return 0, fmt.Errorf("project event %d of flight %d: no event id or FLID", c.EventID, c.FLID)
		}
		op, maid, rec := "D", "", ""
		if !c.Delete {
			m, ok, err := flight.CheckWrite(c.write())
			if err != nil {
				return 0, fmt.Errorf("project event %d: %w", c.EventID, err)
			}
			if ok {
				maid = strconv.FormatInt(m, 10)
			}
			op, rec = "U", string(c.Record)
		}
		args = append(args, c.EventID, op, c.FLID, c.Day, maid, rec, c.MsgID, stamp(c.At))
	}
	n, err := projectScript.Run(ctx, s.rdb, nil, args...).Int()
	if err != nil {
		return 0, unavailable(fmt.Sprintf("project events %d…%d", changes[0].EventID, changes[len(changes)-1].EventID), err)
	}
	return n, nil
}

func (c Change) write() pipeline.FlightWrite {
	return pipeline.FlightWrite{Day: c.Day, FLID: c.FLID, Record: c.Record}
}

// stamp is how the hashes hold a time (upd).
func stamp(t time.Time) string { return t.UTC().Truncate(time.Microsecond).Format(time.RFC3339Nano) }

// RebuildSource is what the phase-B rebuild reads of the authoritative store (FLIGHT_STATE,
// the SQL flight store): a day's flights in FLID order a chunk at a time, and one flight
// wherever it is.
type RebuildSource interface {
	HistoryChunk(ctx context.Context, day string, afterFLID int64, limit int) ([]flight.HistoryFlight, error)
	Get(ctx context.Context, flid int64) (*flight.Entry, error)
}

//go:embed rebuild.lua
var rebuildSrc string

var rebuildScript = redis.NewScript(indexSrc + rebuildSrc)

// RebuildFrom makes Redis's flights of days exactly those of src (FLIGHT_STATE, authoritative
// in phase B), chunk flights per script (0: DefaultRebuildChunk): per day, src's flights in
// FLID order, each hash replaced whole with src's record, version and message; then the
// flights Redis held on the day that src does not: written as src holds them when src has
// them on another day, else deleted. Every flight it writes or deletes is marked with
// watermark, the newest event id when the rebuild ran (no message writes while the pump runs
// it): a REDIS_FLIGHT event produced before the rebuild and delivered after it is older than
// the mark and changes nothing, a later one applies. progress is told after every chunk.
func (s *Store) RebuildFrom(ctx context.Context, src RebuildSource, days []string, watermark int64, chunk int,
	progress func(day string, dayDone int)) (written, deleted int, err error) {
	if chunk <= 0 {
		chunk = DefaultRebuildChunk
	}
	for _, day := range days {
		if !flight.ValidDay(day) {
			return written, deleted, fmt.Errorf("rebuild: day %q is not YYYY-MM-DD", day)
		}
		held, err := s.members(ctx, s.p+"day:"+day)
		if err != nil {
			return written, deleted, err
		}
		extra := make(map[int64]bool, len(held))
		for _, id := range held {
			extra[id] = true
		}
		done := 0
		for after := int64(0); ; {
			fs, err := src.HistoryChunk(ctx, day, after, chunk)
			if err != nil {
				return written, deleted, fmt.Errorf("rebuild %s: read FLIGHT_STATE: %w", day, err)
			}
			if len(fs) == 0 {
				break
			}
			rows := make([]rebuildRow, len(fs))
			for i, f := range fs {
				rows[i] = rebuildRow{flid: f.FLID, day: f.Day, rec: f.Record, ver: f.Version, msg: f.MsgID, upd: f.UpdatedAt}
				delete(extra, f.FLID)
			}
			w, d, err := s.rebuildChunk(ctx, watermark, rows)
			written, deleted = written+w, deleted+d
			if err != nil {
				return written, deleted, fmt.Errorf("rebuild %s: %w", day, err)
			}
			done += len(fs)
			after = fs[len(fs)-1].FLID
			if progress != nil {
				progress(day, done)
			}
			if len(fs) < chunk {
				break
			}
		}
		rest := make([]int64, 0, len(extra))
		for id := range extra {
			rest = append(rest, id)
		}
		sort.Slice(rest, func(i, j int) bool { return rest[i] < rest[j] })
		for start := 0; start < len(rest); start += chunk {
			part := rest[start:min(start+chunk, len(rest))]
			rows := make([]rebuildRow, len(part))
			for i, id := range part {
				e, err := src.Get(ctx, id)
				if err != nil {
					return written, deleted, fmt.Errorf("rebuild %s: read flight %d: %w", day, id, err)
				}
				rows[i] = rowOf(id, e)
			}
			w, d, err := s.rebuildChunk(ctx, watermark, rows)
			written, deleted = written+w, deleted+d
			if err != nil {
				return written, deleted, fmt.Errorf("rebuild %s: %w", day, err)
			}
			done += len(part)
			if progress != nil {
				progress(day, done)
			}
		}
	}
	return written, deleted, nil
}

// rebuildRow is one flight of a rebuild chunk: FLIGHT_STATE's row, or gone.
type rebuildRow struct {
	flid     int64
	gone     bool
	day      string
	rec      []byte
	ver, msg int64
	upd      time.Time
}

// rowOf is the row that makes flight id in Redis what e (FLIGHT_STATE's entry) holds: its
// record, version, message and update time; nil (no such flight) deletes it.
func rowOf(id int64, e *flight.Entry) rebuildRow {
	if e == nil {
		return rebuildRow{flid: id, gone: true}
	}
	r := rebuildRow{flid: id, day: e.Day, rec: e.Record, ver: e.Version, upd: e.UpdatedAt}
	if e.MsgID != nil {
		r.msg = *e.MsgID
	}
	return r
}

// rebuildChunk writes rows in one script.
func (s *Store) rebuildChunk(ctx context.Context, watermark int64, rows []rebuildRow) (written, deleted int, err error) {
	args := make([]any, 0, 3+8*len(rows))
	args = append(args, s.p, watermark, int64(TombstoneTTL/time.Second))
	for _, r := range rows {
		if r.gone {
			args = append(args, "D", r.flid, "", "", "", 0, 0, "")
			continue
		}
		m, ok, err := flight.CheckWrite(pipeline.FlightWrite{Day: r.day, FLID: r.flid, Record: r.rec})
		if err != nil {
			return 0, 0, fmt.Errorf("flight %d: %w", r.flid, err)
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
	res, err := rebuildScript.Run(ctx, s.rdb, nil, args...).Int64Slice()
	if err != nil {
		return 0, 0, unavailable(fmt.Sprintf("rebuild %d flights", len(rows)), err)
	}
	if len(res) != 2 {
		return 0, 0, unavailable("rebuild", errors.New("unexpected script answer"))
	}
	return int(res[0]), int(res[1]), nil
}
