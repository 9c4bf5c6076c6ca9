package flight

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"math/big"
	"math/rand/v2"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"msgx/internal/pipeline"
)

// The consistency sentinel: it compares the authoritative flight store with the other one,
// for the active days, and reports every flight they disagree on: in phase A Redis
// (authoritative) with FLIGHT_STATE, its mirror; in phase B with the REDIS_FLIGHT target
// FLIGHT_STATE (authoritative) with Redis, its projection. It repairs nothing: a mismatch is
// logged, counted and listed for an operator, and only PROJECTION_REBUILD repairs it. In phase
// A a flight the mirror holds and Redis lacks is also told to Redis's store (MissingNoter),
// whose guard stops the pump until REDIS_RESTORE brings the flight back.

// Mismatch is one flight the two stores disagree on: the record's top-level fields whose
// values differ, "version", "day", or "missing" (absent from one store: Where says which).
type Mismatch struct {
	FLID   int64
	Day    string
	Where  string // for "missing": "authoritative" or "mirror" (the store it is missing from)
	Fields []string
}

// Report is the result of one comparison.
type Report struct {
	CheckedAt  time.Time
	Days       []string
	Checked    int
	Mismatches []Mismatch
}

// Compare compares the flights of days in auth and mirror.
func Compare(ctx context.Context, auth, mirror Reader, days []string, now time.Time) (Report, error) {
	return compare(ctx, auth, mirror, days, now, nil)
}

// compare compares the flights of days for which keep says true (nil: all).
func compare(ctx context.Context, auth, mirror Reader, days []string, now time.Time, keep func(flid int64) bool) (Report, error) {
	r := Report{CheckedAt: now, Days: days, Mismatches: []Mismatch{}}
	for _, day := range days {
		a, err := auth.Day(ctx, day)
		if err != nil {
			return r, err
		}
		m, err := mirror.Day(ctx, day)
		if err != nil {
			return r, err
		}
		byID := make(map[int64]Entry, len(m))
		for _, e := range m {
			if keep == nil || keep(e.FLID) {
				byID[e.FLID] = e
			}
		}
		for _, e := range a {
			if keep != nil && !keep(e.FLID) {
				continue
			}
			r.Checked++
			o, ok := byID[e.FLID]
			if !ok {
				// Maybe on another day in the mirror: still a mismatch of this day.
				r.Mismatches = append(r.Mismatches, Mismatch{FLID: e.FLID, Day: day, Where: "mirror", Fields: []string{"missing"}})
				continue
			}
			delete(byID, e.FLID)
			if f := differing(e, o); len(f) > 0 {
				r.Mismatches = append(r.Mismatches, Mismatch{FLID: e.FLID, Day: day, Fields: f})
			}
		}
		rest := make([]int64, 0, len(byID))
		for id := range byID {
			rest = append(rest, id)
		}
		sort.Slice(rest, func(i, j int) bool { return rest[i] < rest[j] })
		for _, id := range rest {
			r.Checked++
			r.Mismatches = append(r.Mismatches, Mismatch{FLID: id, Day: day, Where: "authoritative", Fields: []string{"missing"}})
		}
	}
	return r, nil
}

// differing lists what differs between two entries of one flight. Records are compared as
// decoded JSON, field by field: a database that re-spaces or reorders a record (MariaDB's
// JSON_SET writes ", " and ": ") or writes a number another way (1.50, 1.5, 15e-1) changes
// no field.
func differing(a, b Entry) []string {
	var out []string
	if a.Version != b.Version {
		out = append(out, "version")
	}
	if a.Day != b.Day {
		out = append(out, "day")
	}
	if bytes.Equal(a.Record, b.Record) {
		return out
	}
	ma, errA := decodeRecord(a.Record)
	mb, errB := decodeRecord(b.Record)
	if errA != nil || errB != nil {
		return append(out, "record")
	}
	var fields []string
	for k, v := range ma {
		if w, ok := mb[k]; !ok || !sameValue(v, w) {
			fields = append(fields, k)
		}
	}
	for k := range mb {
		if _, ok := ma[k]; !ok {
			fields = append(fields, k)
		}
	}
	sort.Strings(fields)
	return append(out, fields...)
}

// decodeRecord decodes a record's top-level object, keeping numbers as written.
func decodeRecord(rec []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(rec))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("more than one JSON value")
	}
	return m, nil
}

// sameValue reports whether two decoded JSON values are equal: objects key by key (in any
// order), arrays element by element, numbers by value.
func sameValue(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			if w, ok := y[k]; !ok || !sameValue(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !sameValue(x[i], y[i]) {
				return false
			}
		}
		return true
	case json.Number:
		y, ok := b.(json.Number)
		if !ok {
			return false
		}
		if x == y {
			return true
		}
		rx, okx := new(big.Rat).SetString(string(x))
		ry, oky := new(big.Rat).SetString(string(y))
		return okx && oky && rx.Cmp(ry) == 0
	}
	return a == b // string, bool, nil
}

// DayRange is a span of local days relative to today: From and To are offsets in days
// (-1 and 7: yesterday through a week ahead), both included. Config jobs.rebuild-days.
type DayRange struct{ From, To int }

// DefaultDays is the active days' default span: today -1 … today +7.
var DefaultDays = DayRange{From: -1, To: 7}

// Days returns the local days (YYYY-MM-DD) of r around now's day in loc, in order.
func (r DayRange) Days(now time.Time, loc *time.Location) []string {
	today := now.In(loc)
	out := make([]string, 0, max(r.To-r.From+1, 0))
	for d := r.From; d <= r.To; d++ {
		out = append(out, today.AddDate(0, 0, d).Format(time.DateOnly))
	}
	return out
}

// ActiveDays returns the local days of DefaultDays (today-1 … today+7) in loc.
func ActiveDays(now time.Time, loc *time.Location) []string { return DefaultDays.Days(now, loc) }

// days returns the local days the sentinel compares.
func (s *Sentinel) days(now time.Time) []string {
	if s.Days != nil {
		return s.Days.Days(now, s.Location)
	}
	return ActiveDays(now, s.Location)
}

// MissingNoter is an authoritative store that is told, after each check, of the flights the
// mirror holds and it lacks ("where": "authoritative"): phase A's Redis (redisflight.Store),
// whose guard then stops the pump for each flight Redis lost, as the pump does when a message
// finds one.
type MissingNoter interface {
	NoteMissing(flids []int64)
}

// Sentinel runs comparisons and keeps the last report. Auth is the authoritative store
// (Redis in phase A, FLIGHT_STATE in phase B), Mirror the other.
type Sentinel struct {
	Auth, Mirror Reader
	Clock        pipeline.Clock
	Location     *time.Location
	Logger       *slog.Logger
	// Days is the span compared (jobs.rebuild-days); nil: DefaultDays.
	Days *DayRange

	mu   sync.Mutex
	last *Report
}

// mismatches is msgx_consistency_mismatches_total.
var mismatches = prometheus.NewCounter(prometheus.CounterOpts{
	Name: "msgx_consistency_mismatches_total",
	Help: "Flights the consistency sentinel found different in Redis and FLIGHT_STATE (phase A, or phase B with REDIS_FLIGHT), counted at every check that finds them.",
})

// MismatchMetric is the counter msgx_consistency_mismatches_total.
func MismatchMetric() prometheus.Collector { return mismatches }

// Check compares the active days now, logs every mismatch and counts them, and keeps the
// report as the last one.
func (s *Sentinel) Check(ctx context.Context) (Report, error) { return s.check(ctx, nil) }

// CheckSample is Check on a share ratio (0…1) of the flights, drawn at random: the daily
// sample (consistency-check.daily-sample-ratio).
func (s *Sentinel) CheckSample(ctx context.Context, ratio float64) (Report, error) {
	if ratio >= 1 {
		return s.check(ctx, nil)
	}
	seen := map[int64]bool{}
	return s.check(ctx, func(flid int64) bool {
		in, ok := seen[flid]
		if !ok {
			in = rand.Float64() < ratio
			seen[flid] = in
		}
		return in
	})
}

func (s *Sentinel) check(ctx context.Context, keep func(int64) bool) (Report, error) {
	now := s.Clock.Now()
	r, err := compare(ctx, s.Auth, s.Mirror, s.days(now), now, keep)
	if err != nil {
		return r, err
	}
	log := s.Logger
	if log == nil {
		log = slog.Default()
	}
	for _, m := range r.Mismatches {
		log.Warn("consistency: Redis and FLIGHT_STATE differ", "flid", m.FLID, "day", m.Day, "fields", m.Fields, "missing_in", m.Where)
	}
	mismatches.Add(float64(len(r.Mismatches)))
	if n, ok := s.Auth.(MissingNoter); ok {
		var lost []int64
		for _, m := range r.Mismatches {
			if m.Where == "authoritative" {
				lost = append(lost, m.FLID)
			}
		}
		if len(lost) > 0 {
			n.NoteMissing(lost)
		}
	}
	log.Info("consistency check done", "checked", r.Checked, "mismatches", len(r.Mismatches))
	s.mu.Lock()
	s.last = &r
	s.mu.Unlock()
	return r, nil
}

// Last returns the last report, or nil when none ran.
func (s *Sentinel) Last() *Report {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}
