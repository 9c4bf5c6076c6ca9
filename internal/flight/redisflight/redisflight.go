// Package redisflight is the Redis flight store of phase A: Redis holds the authoritative
// flight picture, written first by the pump with one Lua script per message, before the SQL
// transaction that commits the message's events and SUCCEEDED (docs/redis-flights.md).
//
// Layout, every key under the configured prefix (redis.key-prefix, default "msgx:"):
//
//	{p}flight:{FLID}   hash: rec (the record JSON), ver, day (YYYY-MM-DD), msg (the message
//	                   that last changed it), upd (when, UTC), maid (the code-share master, if any)
//	{p}day:{YYYY-MM-DD} set of the FLIDs of a local day
//	{p}days            set of the local days that hold flights
//	{p}maid:{MAID}     set of the FLIDs that name master MAID
//	{p}codeshares      set of the FLIDs that name any master
//	{p}marker:{MSGID}  string: what message MSGID decided (opaque to the store), written by
//	                   the same script as its changes, expiring after redis.marker-ttl
//
// The store answers the flight-store contract (flight.Contract) exactly as the SQL store
// does; package flighttest runs the same suite on both. Batch (batch.go) is the store as one
// batch of the pump uses it: the flights the batch read and its scripts wrote, remembered.
package redisflight

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"msgx/internal/flight"
	"msgx/internal/pipeline"
)

// Options configure a Store.
type Options struct {
	Addr     string // redis.addr, default 127.0.0.1:6379
	DB       int    // redis.db
	Password string // redis.password
	// Timeout bounds every call (redis.timeout); 0: DefaultTimeout.
	Timeout time.Duration
	// SentinelMaster, when set, finds the master through the sentinels SentinelAddrs (with
	// SentinelPassword) and follows its failovers (redis.sentinel); Addr is then unused.
	SentinelMaster   string
	SentinelAddrs    []string
	SentinelPassword string
	Prefix           string // redis.key-prefix, default "msgx:"
	// MarkerTTL is how long a message's marker is kept (redis.marker-ttl); 0: 7 days.
	MarkerTTL time.Duration
	Clock     pipeline.Clock
	Location  *time.Location
}

// Store is the Redis flight store.
type Store struct {
	rdb       *redis.Client
	where     string // the server: its address, or the Sentinel master and sentinels
	dials     *atomic.Uint64
	p         string
	markerTTL time.Duration
	clock     pipeline.Clock
	loc       *time.Location
	guard     *guard // the marks its scripts keep and check (mark.go); nil: none
	afterRead func() // a test's other writer, run between the versions' read and the script (export_test.go)
}

var _ flight.Contract = (*Store)(nil)

// New returns a store over a new client of opt.Addr; it does not connect until used.
func New(opt Options) *Store {
	if opt.Addr == "" {
		opt.Addr = "127.0.0.1:6379"
	}
	if opt.Prefix == "" {
		opt.Prefix = "msgx:"
	}
	if opt.MarkerTTL <= 0 {
		opt.MarkerTTL = 7 * 24 * time.Hour
	}
	if opt.Clock == nil {
		opt.Clock = pipeline.SystemClock{}
	}
	if opt.Location == nil {
		opt.Location = time.UTC
	}
	rdb, where, dials := newClient(opt)
	return &Store{rdb: rdb, where: where, dials: dials, p: opt.Prefix, markerTTL: opt.MarkerTTL, clock: opt.Clock, loc: opt.Location}
}

// Close closes the client.
func (s *Store) Close() error { return s.rdb.Close() }

// Ping checks that Redis answers.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.rdb.Ping(ctx).Err(); err != nil {
		return unavailable("ping", err)
	}
	return nil
}

// Now returns the clock's current time (pipeline.View).
func (s *Store) Now() time.Time { return s.clock.Now() }

// Location returns the airport's zone (pipeline.View).
func (s *Store) Location() *time.Location { return s.loc }

// Where names the Redis server the store uses: its address, or the Sentinel master and the
// sentinels.
func (s *Store) Where() string { return s.where }

// unavailable classifies a Redis failure: INFRA, so the message is retried and the queue waits.
// A call that timed out says "Redis does not answer (where)" (NoAnswerError).
func unavailable(what string, err error) error {
	return pipeline.Wrap(pipeline.Infra, fmt.Errorf("redis flight store: %s: %w", what, err))
}

func (s *Store) flightKey(flid int64) string { return s.p + "flight:" + strconv.FormatInt(flid, 10) }
func (s *Store) markerKey(msgID int64) string {
	return s.p + "marker:" + strconv.FormatInt(msgID, 10)
}

// indexSrc is index.lua, the layout's index functions, put in front of every script.
//
//go:embed index.lua
var indexSrc string

//go:embed apply.lua
var applySrc string

var applyScript = redis.NewScript(indexSrc + applySrc)

// ErrChangedUnderUs is wrapped by an Apply whose compare-and-set found a flight at another
// version than the one read (another writer): INFRA, the message is retried.
var ErrChangedUnderUs = errors.New("flight changed under us")

// Apply writes the changes of message msgID, all or none, without a marker (flight.Contract).
func (s *Store) Apply(ctx context.Context, msgID int64, writes []pipeline.FlightWrite, now time.Time) error {
	_, _, err := s.ApplyMessage(ctx, msgID, writes, nil, now)
	return err
}

// ApplyMessage writes the changes of message msgID and records marker under the message id,
// in one Lua script: atomically, unless the message's marker is there already, in which case
// nothing is written and the stored marker is returned with found=true (the message was
// applied by an earlier attempt whose SQL commit did not happen). Each flight's version is
// compared to the one read before the script (a mismatch: INFRA, nothing written). A nil
// marker writes without checking or recording one.
func (s *Store) ApplyMessage(ctx context.Context, msgID int64, writes []pipeline.FlightWrite, marker []byte, now time.Time) (stored []byte, found bool, err error) {
	maids, err := maidsOf(writes)
	if err != nil {
		return nil, false, err
	}
	if marker != nil {
		// The marker is looked for first, so a retry reads no versions (they moved).
		prev, ok, err := s.Marker(ctx, msgID)
		if err != nil || ok {
			return prev, ok, err
		}
	}
	return s.apply(ctx, msgID, writes, maids, marker, now)
}

// ApplyUnmarked is ApplyMessage for a message whose marker the caller has just read as absent
// (Markers, at the start of the pump's batch): the same script, which still checks the marker
// atomically with the writes, without ApplyMessage's read of the marker before it (one round
// trip fewer per message).
func (s *Store) ApplyUnmarked(ctx context.Context, msgID int64, writes []pipeline.FlightWrite, marker []byte, now time.Time) (stored []byte, found bool, err error) {
	maids, err := maidsOf(writes)
	if err != nil {
		return nil, false, err
	}
	return s.apply(ctx, msgID, writes, maids, marker, now)
}

// maidsOf checks the upserts of writes and returns the code-share master each names ("" when
// none).
func maidsOf(writes []pipeline.FlightWrite) ([]string, error) {
	maids := make([]string, len(writes))
	for i, w := range writes {
		if w.Delete {
			continue
		}
		m, ok, err := flight.CheckWrite(w)
		if err != nil {
			return nil, err
		}
		if ok {
			maids[i] = strconv.FormatInt(m, 10)
		}
	}
	return maids, nil
}

// apply reads the versions of the flights writes name and runs the script.
func (s *Store) apply(ctx context.Context, msgID int64, writes []pipeline.FlightWrite, maids []string, marker []byte, now time.Time) (stored []byte, found bool, err error) {
	ids := distinct(writes)
	vers, err := s.versions(ctx, ids)
	if err != nil {
		return nil, false, err
	}
	if s.afterRead != nil {
		s.afterRead()
	}
	return s.script(ctx, msgID, writes, maids, ids, vers, marker, now)
}

// script runs apply.lua: the writes, each flight of ids compared to its version in vers.
func (s *Store) script(ctx context.Context, msgID int64, writes []pipeline.FlightWrite, maids []string, ids []int64, vers []string, marker []byte, now time.Time) (stored []byte, found bool, err error) {
	epoch, want, err := s.guardArgs(msgID)
	if err != nil {
		return nil, false, err
	}
	args := make([]any, 0, 8+2*len(ids)+5*len(writes))
	args = append(args, s.p, msgID, string(marker), int64(s.markerTTL/time.Second), now.UTC().Truncate(time.Microsecond).Format(time.RFC3339Nano),
		epoch, want, len(ids))
	for i, id := range ids {
		args = append(args, id, vers[i])
	}
	for i, w := range writes {
		op := "U"
		if w.Delete {
			op = "D"
		}
		args = append(args, op, w.FLID, w.Day, maids[i], string(w.Record))
	}
	res, err := applyScript.Run(ctx, s.rdb, nil, args...).Slice()
	if err != nil {
		s.markUnknown() // the script may have run: its answer is lost
		return nil, false, unavailable(fmt.Sprintf("apply message %d (%d flights)", msgID, len(writes)), err)
	}
	if len(res) == 0 {
		return nil, false, unavailable(fmt.Sprintf("apply message %d", msgID), errors.New("empty script answer"))
	}
	switch code, _ := res[0].(int64); code {
	case 0:
		s.applied(msgID)
		return nil, false, nil
	case 1:
		str, _ := res[1].(string)
		return []byte(str), true, nil
	case 3:
		return nil, false, s.lost(msgID, res)
	default:
		return nil, false, pipeline.Wrap(pipeline.Infra, fmt.Errorf("message %d: flight %v at version %v, not the one read: %w", msgID, res[1], res[2], ErrChangedUnderUs))
	}
}

// Marker returns the marker recorded for message msgID, if it is there.
func (s *Store) Marker(ctx context.Context, msgID int64) ([]byte, bool, error) {
	b, err := s.rdb.Get(ctx, s.markerKey(msgID)).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, unavailable(fmt.Sprintf("marker of message %d", msgID), err)
	}
	return b, true, nil
}

// Markers returns the markers recorded for the messages of ids that have one, in one round
// trip (MGET): the pump reads those of a whole batch before deciding its first message. The
// map is never nil.
func (s *Store) Markers(ctx context.Context, ids []int64) (map[int64][]byte, error) {
	out := make(map[int64][]byte)
	if len(ids) == 0 {
		return out, nil
	}
	keys := make([]string, len(ids))
	for i, id := range ids {
		keys[i] = s.markerKey(id)
	}
	vals, err := s.rdb.MGet(ctx, keys...).Result()
	if err != nil {
		return nil, unavailable(fmt.Sprintf("markers of %d messages", len(ids)), err)
	}
	for i, v := range vals {
		if str, ok := v.(string); ok {
			out[ids[i]] = []byte(str)
		}
	}
	return out, nil
}

// distinct returns the FLIDs writes name, each once, in first-seen order.
func distinct(writes []pipeline.FlightWrite) []int64 {
	seen := make(map[int64]bool, len(writes))
	out := make([]int64, 0, len(writes))
	for _, w := range writes {
		if !seen[w.FLID] {
			seen[w.FLID] = true
			out = append(out, w.FLID)
		}
	}
	return out
}

// versions reads the stored version of each of ids ("0" for an absent flight) in one round
// trip.
func (s *Store) versions(ctx context.Context, ids []int64) ([]string, error) {
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.StringCmd, len(ids))
	for i, id := range ids {
		cmds[i] = pipe.HGet(ctx, s.flightKey(id), "ver")
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, unavailable("read versions", err)
	}
	out := make([]string, len(ids))
	for i, c := range cmds {
		v, err := c.Result()
		switch {
		case errors.Is(err, redis.Nil):
			out[i] = "0"
		case err != nil:
			return nil, unavailable("read versions", err)
		default:
			out[i] = v
		}
	}
	return out, nil
}

// Flight returns the stored record of flight flid, or ok=false when there is none.
func (s *Store) Flight(ctx context.Context, flid int64) ([]byte, bool, error) {
	b, err := s.rdb.HGet(ctx, s.flightKey(flid), "rec").Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, unavailable(fmt.Sprintf("read flight %d", flid), err)
	}
	return b, true, nil
}

// stored is one flight as read from its hash.
type stored struct {
	flight.HistoryFlight
	ok bool
}

// read reads the hashes of ids in one round trip; absent flights come back with ok=false.
func (s *Store) read(ctx context.Context, ids []int64) ([]stored, error) {
	const chunk = 1000
	out := make([]stored, 0, len(ids))
	for start := 0; start < len(ids); start += chunk {
		part := ids[start:min(start+chunk, len(ids))]
		pipe := s.rdb.Pipeline()
		cmds := make([]*redis.SliceCmd, len(part))
		for i, id := range part {
			cmds[i] = pipe.HMGet(ctx, s.flightKey(id), "rec", "ver", "day", "msg", "upd")
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return nil, unavailable("read flights", err)
		}
		for i, c := range cmds {
			v := c.Val()
			rec, ok := v[0].(string)
			if !ok {
				out = append(out, stored{})
				continue
			}
			f := stored{ok: true}
			f.FLID, f.Record = part[i], []byte(rec)
			f.Version, _ = strconv.ParseInt(str(v[1]), 10, 64)
			f.Day = str(v[2])
			f.MsgID, _ = strconv.ParseInt(str(v[3]), 10, 64)
			f.UpdatedAt, _ = time.Parse(time.RFC3339Nano, str(v[4]))
			out = append(out, f)
		}
	}
	return out, nil
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func entryOf(f stored) flight.Entry {
	e := flight.Entry{Day: f.Day, FLID: f.FLID, Version: f.Version, Record: f.Record, SODT: flight.SODTOf(f.Record), UpdatedAt: f.UpdatedAt}
	if f.MsgID != 0 {
		id := f.MsgID
		e.MsgID = &id
	}
	return e
}

// FlightsOf returns the stored records of those of flids that are stored, in no order.
func (s *Store) FlightsOf(ctx context.Context, flids []int64) ([][]byte, error) {
	fs, err := s.read(ctx, flids)
	if err != nil {
		return nil, err
	}
	out := make([][]byte, 0, len(fs))
	for _, f := range fs {
		if f.ok {
			out = append(out, f.Record)
		}
	}
	return out, nil
}

// members reads a set of FLIDs.
func (s *Store) members(ctx context.Context, key string) ([]int64, error) {
	ms, err := s.rdb.SMembers(ctx, key).Result()
	if err != nil {
		return nil, unavailable("read "+key, err)
	}
	ids := make([]int64, 0, len(ms))
	for _, m := range ms {
		if id, err := strconv.ParseInt(m, 10, 64); err == nil {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// entries reads the flights of ids as entries in SODT then FLID order.
func (s *Store) entries(ctx context.Context, ids []int64) ([]flight.Entry, error) {
	fs, err := s.read(ctx, ids)
	if err != nil {
		return nil, err
	}
	out := []flight.Entry{}
	for _, f := range fs {
		if f.ok {
			out = append(out, entryOf(f))
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].SODT.Equal(out[j].SODT) {
			return out[i].SODT.Before(out[j].SODT)
		}
		return out[i].FLID < out[j].FLID
	})
	return out, nil
}

// Day returns the flights of a local day (YYYY-MM-DD) in SODT then FLID order.
func (s *Store) Day(ctx context.Context, day string) ([]flight.Entry, error) {
	if !flight.ValidDay(day) {
		return nil, fmt.Errorf("day %q is not YYYY-MM-DD", day)
	}
	ids, err := s.members(ctx, s.p+"day:"+day)
	if err != nil {
		return nil, err
	}
	return s.entries(ctx, ids)
}

// Get returns the stored entry of flight flid, or nil.
func (s *Store) Get(ctx context.Context, flid int64) (*flight.Entry, error) {
	fs, err := s.read(ctx, []int64{flid})
	if err != nil || !fs[0].ok {
		return nil, err
	}
	e := entryOf(fs[0])
	return &e, nil
}

// days returns the stored local days, sorted.
func (s *Store) days(ctx context.Context) ([]string, error) {
	ds, err := s.rdb.SMembers(ctx, s.p+"days").Result()
	if err != nil {
		return nil, unavailable("read days", err)
	}
	sort.Strings(ds)
	return ds, nil
}

// FlightsBetween returns the records of the flights whose SODT is in [from, to], in SODT then
// FLID order: the flights of the local days from..to, filtered by SODT.
func (s *Store) FlightsBetween(ctx context.Context, from, to time.Time) ([][]byte, error) {
	if to.Before(from) {
		return nil, nil
	}
	lo, hi := from.In(s.loc).Format(time.DateOnly), to.In(s.loc).Format(time.DateOnly)
	ds, err := s.days(ctx)
	if err != nil {
		return nil, err
	}
	var ids []int64
	for _, d := range ds {
		if d < lo || d > hi {
			continue
		}
		m, err := s.members(ctx, s.p+"day:"+d)
		if err != nil {
			return nil, err
		}
		ids = append(ids, m...)
	}
	es, err := s.entries(ctx, ids)
	if err != nil {
		return nil, err
	}
	return flight.RecordsBetween(es, from, to), nil
}

// CodeShareFlights returns the records of every flight that names a code-share master.
func (s *Store) CodeShareFlights(ctx context.Context) ([][]byte, error) {
	ids, err := s.members(ctx, s.p+"codeshares")
	if err != nil {
		return nil, err
	}
	return s.FlightsOf(ctx, ids)
}

// CodeSharesOf returns the records of the flights whose MAID is one of masters.
func (s *Store) CodeSharesOf(ctx context.Context, masters []int64) ([][]byte, error) {
	var ids []int64
	for _, m := range masters {
		part, err := s.members(ctx, s.p+"maid:"+strconv.FormatInt(m, 10))
		if err != nil {
			return nil, err
		}
		ids = append(ids, part...)
	}
	return s.FlightsOf(ctx, ids)
}

// HistoryDays returns the local days before `before` that hold flights, oldest first, with
// their counts.
func (s *Store) HistoryDays(ctx context.Context, before string) ([]flight.HistoryDay, error) {
	ds, err := s.days(ctx)
	if err != nil {
		return nil, err
	}
	var out []flight.HistoryDay
	for _, d := range ds {
		if d >= before {
			break
		}
		n, err := s.rdb.SCard(ctx, s.p+"day:"+d).Result()
		if err != nil {
			return nil, unavailable("count day "+d, err)
		}
		if n > 0 {
			out = append(out, flight.HistoryDay{Day: d, Flights: int(n)})
		}
	}
	return out, nil
}

// HistoryChunk returns up to limit flights of day with FLID above afterFLID, in FLID order.
func (s *Store) HistoryChunk(ctx context.Context, day string, afterFLID int64, limit int) ([]flight.HistoryFlight, error) {
	if limit <= 0 {
		limit = 500
	}
	ids, err := s.members(ctx, s.p+"day:"+day)
	if err != nil {
		return nil, err
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	i := sort.Search(len(ids), func(i int) bool { return ids[i] > afterFLID })
	ids = ids[i:min(i+limit, len(ids))]
	fs, err := s.read(ctx, ids)
	if err != nil {
		return nil, err
	}
	var out []flight.HistoryFlight
	for _, f := range fs {
		if f.ok && f.Day == day {
			out = append(out, f.HistoryFlight)
		}
	}
	return out, nil
}

//go:embed delete.lua
var deleteSrc string

var deleteScript = redis.NewScript(indexSrc + deleteSrc)

// DeleteHistory deletes the given flights, each only if it is still on the day and at the
// version the sweep read, and returns how many it deleted.
func (s *Store) DeleteHistory(ctx context.Context, flights []flight.HistoryFlight) (int, error) {
	const chunk = 250
	deleted := 0
	for start := 0; start < len(flights); start += chunk {
		part := flights[start:min(start+chunk, len(flights))]
		args := make([]any, 0, 1+3*len(part))
		args = append(args, s.p)
		for _, f := range part {
			args = append(args, f.FLID, f.Day, f.Version)
		}
		n, err := deleteScript.Run(ctx, s.rdb, nil, args...).Int()
		if err != nil {
			return deleted, unavailable(fmt.Sprintf("delete %d swept flights", len(part)), err)
		}
		deleted += n
	}
	return deleted, nil
}

// Wipe deletes every key under the store's prefix (tests, and a rebuild from scratch).
func (s *Store) Wipe(ctx context.Context) error {
	iter := s.rdb.Scan(ctx, 0, s.p+"*", 1000).Iterator()
	var keys []string
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
		if len(keys) == 500 {
			if err := s.rdb.Del(ctx, keys...).Err(); err != nil {
				return unavailable("wipe", err)
			}
			keys = keys[:0]
		}
	}
	if err := iter.Err(); err != nil {
		return unavailable("wipe", err)
	}
	if len(keys) > 0 {
		if err := s.rdb.Del(ctx, keys...).Err(); err != nil {
			return unavailable("wipe", err)
		}
	}
	return nil
}

// KeyPrefix returns the prefix of the store's keys.
func (s *Store) KeyPrefix() string { return s.p }
