package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"msgx/client"
	"msgx/internal/flight"
	"msgx/internal/pipeline"
	"msgx/internal/store"
)

// Finder finds flights and messages for an operator who knows a flight number, a FLID, a
// registration, a stand or gate, or some text of a message. Flights are searched in the
// local days around today (the flight stores have no index on those fields; a day's flights
// are one read); message bodies in the newest BodyScan messages.
type Finder struct {
	Flights FlightReader
	Ref     store.Reference  // AIRL: the IATA ↔ ICAO carrier designators; nil: none
	Bodies  store.BodySearch // nil: no body search
	// ByFlight finds the messages that named the flights a flight number matched (MSG_FLIGHT):
	// the FLOPs, which carry only the FLID. Nil: none are listed.
	ByFlight store.FlightMessages
	Clock    pipeline.Clock
	Loc      *time.Location // the airport's zone (the days of the flight store)
	// Back and Ahead are how many days before and after today the flight searches read
	// (defaults DefaultFindBack, DefaultFindAhead).
	Back, Ahead int
	// BodyScan is how many of the newest messages a body search reads (store.DefaultBodyScan).
	BodyScan int
}

// The days a flight search reads by default: today, the 3 before and the 2 after.
const (
	DefaultFindBack  = 3
	DefaultFindAhead = 2
)

// today returns today's date in the airport's zone, and the zone (UTC when f is nil or
// knows no zone).
func (f *Finder) today() (string, *time.Location) {
	loc := time.UTC
	if f != nil && f.Loc != nil {
		loc = f.Loc
	}
	return f.now().In(loc).Format(time.DateOnly), loc
}

// now is the time by the finder's clock (the system's when it has none).
func (f *Finder) now() time.Time {
	if f != nil && f.Clock != nil {
		return f.Clock.Now()
	}
	return pipeline.SystemClock{}.Now()
}

// days returns the local days the flight searches read, oldest first.
func (f *Finder) days() []string {
	back, ahead := f.Back, f.Ahead
	if back <= 0 && ahead <= 0 {
		back, ahead = DefaultFindBack, DefaultFindAhead
	}
	loc := f.Loc
	if loc == nil {
		loc = time.UTC
	}
	var now time.Time
	if f.Clock != nil {
		now = f.Clock.Now()
	} else {
		now = pipeline.SystemClock{}.Now()
	}
	y, m, d := now.In(loc).Date()
	out := make([]string, 0, back+ahead+1)
	for i := -back; i <= ahead; i++ {
		out = append(out, time.Date(y, m, d+i, 12, 0, 0, 0, loc).Format(time.DateOnly))
	}
	return out
}

// flightFacts are the fields of a flight record a search looks at.
type flightFacts struct {
	FLID       int64
	ALCD, FLNO string
	MVIN       string
	SODT       time.Time
	RENO, STND string
	PSDT       []struct{ PSST string }
	GTDT       []struct{ GATE string }
}

// ByNumber returns the flights numbered flno in days (the search window when empty), in day
// then SODT order.
func (f *Finder) ByNumber(ctx context.Context, flno string, days []string) ([]flight.Entry, error) {
	want, ok := parseFlightNo(flno)
	if !ok {
		return nil, fmt.Errorf("%q is not a flight number (carrier and number, e.g. CA8241)", flno)
	}
	cs, err := loadCarriers(ctx, f.Ref)
	if err != nil {
		return nil, err
	}
	out := []flight.Entry{}
	err = f.eachFlight(ctx, days, func(e flight.Entry, ff flightFacts) {
		if got, ok := recordFlightNo(ff.ALCD, ff.FLNO); ok && cs.matches(want, got) {
			out = append(out, e)
		}
	})
	return out, err
}

// eachFlight calls fn with every flight of days (the search window when empty).
func (f *Finder) eachFlight(ctx context.Context, days []string, fn func(flight.Entry, flightFacts)) error {
	if len(days) == 0 {
		days = f.days()
	}
	for _, day := range days {
		es, err := f.Flights.Day(ctx, day)
		if err != nil {
			return fmt.Errorf("read the flights of %s: %w", day, err)
		}
		for _, e := range es {
			var ff flightFacts
			if json.Unmarshal(e.Record, &ff) == nil {
				fn(e, ff)
			}
		}
	}
	return nil
}

// flightMatch says what of ff matches q ("" when nothing does): its flight number, its
// registration, its stand or one of its gates (letter case, spaces and dashes ignored).
func flightMatch(q string, want flightNo, isNo bool, cs carriers, ff flightFacts) string {
	if isNo {
		if got, ok := recordFlightNo(ff.ALCD, ff.FLNO); ok && cs.matches(want, got) {
			return "flno"
		}
	}
	norm := func(s string) string {
		return strings.ToUpper(strings.NewReplacer(" ", "", "-", "").Replace(strings.TrimSpace(s)))
	}
	nq := norm(q)
	switch {
	case ff.RENO != "" && norm(ff.RENO) == nq:
		return "registration"
	case ff.STND != "" && norm(ff.STND) == nq:
		return "stand"
	}
	for _, p := range ff.PSDT {
		if p.PSST != "" && norm(p.PSST) == nq {
			return "stand"
		}
	}
	for _, g := range ff.GTDT {
		if g.GATE != "" && norm(g.GATE) == nq {
			return "gate"
		}
	}
	return ""
}

// flightLabel is one line about a flight: number, movement, scheduled local time, stand,
// registration, FLID.
func flightLabel(ff flightFacts, loc *time.Location) string {
	parts := []string{ff.FLNO}
	if _, ok := parseFlightNo(ff.FLNO); !ok {
		parts[0] = ff.ALCD + ff.FLNO // a number without its airline prefix
	}
	switch ff.MVIN {
	case "A":
		parts = append(parts, "arrival")
	case "D":
		parts = append(parts, "departure")
	}
	if !ff.SODT.IsZero() {
		parts = append(parts, "scheduled "+ff.SODT.In(loc).Format("2006-01-02 15:04"))
	}
	if ff.STND != "" {
		parts = append(parts, "stand "+ff.STND)
	}
	if ff.RENO != "" {
		parts = append(parts, "reg "+ff.RENO)
	}
	return strings.Join(parts, ", ") + " (FLID " + strconv.FormatInt(ff.FLID, 10) + ")"
}

// Find searches everything for q and returns at most limit hits of each kind, its labels in
// airport time.
func (f *Finder) Find(ctx context.Context, q string, limit int) (client.FindAnswer, error) {
	return f.FindIn(ctx, q, limit, nil)
}

// FindIn is Find with the labels' times in zone (nil: the airport's): the flights q names,
// then the messages, newest first — those that named the flights of the flight number q is
// (MSG_FLIGHT: the FLOPs, which carry only the FLID) and those whose body holds q, each once.
func (f *Finder) FindIn(ctx context.Context, q string, limit int, zone *time.Location) (client.FindAnswer, error) {
	q = strings.TrimSpace(q)
	days := f.days()
	ans := client.FindAnswer{Query: q, Hits: []client.Hit{}, Days: [2]string{days[0], days[len(days)-1]}}
	loc := f.Loc
	if loc == nil {
		loc = time.UTC
	}
	if zone != nil {
		loc = zone
	}
	ans.Timezone = loc.String()
	if err := f.findFlights(ctx, q, days, limit, loc, &ans); err != nil {
		return ans, err
	}
	what := fmt.Sprintf("flights of %s to %s by flight number, registration, stand and gate", ans.Days[0], ans.Days[1])
	var messages []client.Hit
	if err := f.flightMessages(ctx, limit, loc, &ans, &messages); err != nil {
		return ans, err
	}
	if len(messages) > 0 || ans.More {
		what += "; the messages that named the flights of that number"
	}
	if f.Bodies != nil {
		scan := f.BodyScan
		if scan <= 0 {
			scan = store.DefaultBodyScan
		}
		bh, err := f.Bodies.SearchBodies(ctx, q, scan, limit)
		if err != nil {
			return ans, err
		}
		ans.MessagesScanned, ans.More = bh.Scanned, ans.More || bh.More
		for _, m := range bh.Messages {
			messages = append(messages, messageHit(m, loc))
		}
		what += fmt.Sprintf("; the bodies of the newest %d messages", scan)
	}
	ans.Hits = append(ans.Hits, newestOnce(messages, limit, &ans.More)...)
	ans.Searched = what
	return ans, nil
}

// flightMessages adds to messages the messages that named the flights ans found by their
// number (MSG_FLIGHT), at most limit.
func (f *Finder) flightMessages(ctx context.Context, limit int, loc *time.Location, ans *client.FindAnswer, messages *[]client.Hit) error {
	if f.ByFlight == nil {
		return nil
	}
	var flids []int64
	labels := map[int64]string{}
	for _, h := range ans.Hits {
		if h.Kind == "flight" && h.Match == "flno" {
			flids = append(flids, h.ID)
			labels[h.ID] = strings.SplitN(h.Label, ",", 2)[0]
		}
	}
	if len(flids) == 0 {
		return nil
	}
	fh, err := f.ByFlight.MessagesOfFlights(ctx, flids, limit)
	if err != nil {
		return err
	}
	ans.More = ans.More || fh.More
	for _, m := range fh.Messages {
		h := messageHit(m, loc)
		h.Match = "flight"
		var named []string
		for _, flid := range fh.Named[m.ID] {
			named = append(named, fmt.Sprintf("%s (FLID %d)", labels[flid], flid))
		}
		if len(named) > 0 {
			h.Label += ", flight " + strings.Join(named, ", ")
		}
		*messages = append(*messages, h)
	}
	return nil
}

// newestOnce returns the message hits newest first, each message once (a message that named
// the flight keeps that match over its body's), at most limit; more is set when some were
// left out.
func newestOnce(hits []client.Hit, limit int, more *bool) []client.Hit {
	seen := map[int64]int{}
	out := []client.Hit{}
	for _, h := range hits {
		if i, ok := seen[h.ID]; ok {
			if out[i].Match == "body" && h.Match == "flight" {
				out[i] = h
			}
			continue
		}
		seen[h.ID] = len(out)
		out = append(out, h)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].ID > out[j].ID })
	if len(out) > limit {
		out, *more = out[:limit], true
	}
	return out
}

// findFlights adds to ans the flight with FLID q (when q is a number) and the flights of days
// that q names.
func (f *Finder) findFlights(ctx context.Context, q string, days []string, limit int, loc *time.Location, ans *client.FindAnswer) error {
	var byID int64
	if id, err := strconv.ParseInt(q, 10, 64); err == nil && id > 0 {
		e, err := f.Flights.Get(ctx, id)
		if err != nil {
			return err
		}
		if e != nil {
			var ff flightFacts
			_ = json.Unmarshal(e.Record, &ff)
			ans.Hits = append(ans.Hits, client.Hit{Kind: "flight", ID: e.FLID, Match: "flid", Label: flightLabel(ff, loc), Day: e.Day})
			byID = e.FLID
		}
	}
	cs, err := loadCarriers(ctx, f.Ref)
	if err != nil {
		return err
	}
	want, isNo := parseFlightNo(q)
	n := 0
	return f.eachFlight(ctx, days, func(e flight.Entry, ff flightFacts) {
		if e.FLID == byID {
			return
		}
		if m := flightMatch(q, want, isNo, cs, ff); m != "" {
			if n == limit {
				ans.More = true
				return
			}
			n++
			ans.Hits = append(ans.Hits, client.Hit{Kind: "flight", ID: e.FLID, Match: m, Label: flightLabel(ff, loc), Day: e.Day})
		}
	})
}

// messageHit is the hit of a message whose body matched.
func messageHit(m *store.Message, loc *time.Location) client.Hit {
	label := "message " + strconv.FormatInt(m.ID, 10)
	if m.TypeTag != nil {
		label += " " + *m.TypeTag
	}
	label += " " + string(m.State)
	day := ""
	if m.ReceivedAt != nil {
		label += ", received " + m.ReceivedAt.In(loc).Format("2006-01-02 15:04:05")
		day = m.ReceivedAt.In(loc).Format(time.DateOnly)
	}
	return client.Hit{Kind: "message", ID: m.ID, Match: "body", Label: label, Day: day}
}

// FindRoutes adds GET /api/v1/find?q=TEXT[&limit=N]: the flights and messages q names
// (client.FindAnswer), at most limit (default 50, at most store.MaxPageLimit) of each kind.
func FindRoutes(f *Finder) func(*http.ServeMux) {
	return func(mux *http.ServeMux) {
		mux.HandleFunc("GET /api/v1/find", func(w http.ResponseWriter, r *http.Request) {
			if !allowParams(w, r, "q", "limit", "tz") {
				return
			}
			zone, ok := zoneParam(w, r)
			if !ok {
				return
			}
			q := strings.TrimSpace(r.URL.Query().Get("q"))
			if q == "" {
				writeError(w, http.StatusBadRequest, "bad_query", "q is empty: give a flight number, FLID, registration, stand, gate or text")
				return
			}
			limit, err := intParam(r.URL.Query().Get("limit"), 50)
			if err != nil || limit == 0 || limit > store.MaxPageLimit {
				writeError(w, http.StatusBadRequest, "bad_limit", fmt.Sprintf("limit must be 1..%d, got %q", store.MaxPageLimit, r.URL.Query().Get("limit")))
				return
			}
			ans, err := f.FindIn(r.Context(), q, limit, zone)
			if err != nil {
				writeStoreError(w, err)
				return
			}
			writeJSON(w, http.StatusOK, ans)
		})
	}
}

// zoneParam reads tz, the zone an answer's labels show times in, for scripts: UTC (or any
// IANA zone name); nil when absent (the airport's). An unknown zone is 400 bad_tz.
func zoneParam(w http.ResponseWriter, r *http.Request) (*time.Location, bool) {
	tz := r.URL.Query().Get("tz")
	if tz == "" {
		return nil, true
	}
	if strings.EqualFold(tz, "UTC") || tz == "Z" {
		return time.UTC, true
	}
	loc, err := time.LoadLocation(tz)
	if err != nil || strings.EqualFold(tz, "Local") {
		writeError(w, http.StatusBadRequest, "bad_tz", fmt.Sprintf("tz %q is not a zone: give UTC or an IANA name (Asia/Shanghai)", tz))
		return nil, false
	}
	return loc, true
}
