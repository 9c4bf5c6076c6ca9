package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"msgx/client"
	"msgx/internal/flight"
	"msgx/internal/store"
)

// FlightReader is what the flights API reads; *flight.Store implements it.
type FlightReader interface {
	Day(ctx context.Context, day string) ([]flight.Entry, error)
	Get(ctx context.Context, flid int64) (*flight.Entry, error)
}

// SeasonType is the REF_DATA type of stored seasonal schedules (handler.SeasonType).
const seasonType = "SCHS"

// FlightRoutes adds the flight and season reads:
//
//	GET /api/v1/flights?day=YYYY-MM-DD  the flights of a local day, by SODT then FLID
//	                                    (no day: today in the airport's zone), and when
//	                                    each last changed (changed, by FLID)
//	GET /api/v1/flights?day=…&as_of=T   the same board as it stood at T, rebuilt from the
//	                                    messages applied by then (asOf; see AsOfBoard)
//	GET /api/v1/flights?flno=CA8241     the flights of that number in the search window of
//	                                    find (or of day, when given), by day then SODT
//	GET /api/v1/flights/{flid}          one flight's record (404 when absent)
//	GET /api/v1/seasons                 the stored seasonal schedules
//
// find, when set, answers flno (nil: flno is refused as an unknown parameter); asOf, when
// given (at most one), answers as_of (none: as_of is refused as an unknown parameter).
func FlightRoutes(flights FlightReader, db store.Reference, find *Finder, asOf ...BoardAsOf) func(*http.ServeMux) {
	return func(mux *http.ServeMux) {
		mux.HandleFunc("GET /api/v1/flights", func(w http.ResponseWriter, r *http.Request) {
			if find != nil && r.URL.Query().Has("flno") {
				flightsByNumber(w, r, find)
				return
			}
			if len(asOf) > 0 && asOf[0] != nil && r.URL.Query().Has("as_of") {
				flightsAsOf(w, r, asOf[0], find)
				return
			}
			flightsOfDay(w, r, flights, find)
		})
		mux.HandleFunc("GET /api/v1/flights/{flid}", func(w http.ResponseWriter, r *http.Request) {
			flid, err := strconv.ParseInt(r.PathValue("flid"), 10, 64)
			if err != nil {
				writeError(w, http.StatusBadRequest, "bad_id", "flid must be an integer, got "+strconv.Quote(r.PathValue("flid")))
				return
			}
			e, err := flights.Get(r.Context(), flid)
			if err != nil {
				writeStoreError(w, err)
				return
			}
			if e == nil {
				writeError(w, http.StatusNotFound, "not_found", "no flight with FLID "+strconv.FormatInt(flid, 10))
				return
			}
			writeJSON(w, http.StatusOK, client.FlightEntry{Day: e.Day, FLID: e.FLID, Version: e.Version, MsgID: e.MsgID, Record: e.Record, UpdatedAt: e.UpdatedAt})
		})
		mux.HandleFunc("GET /api/v1/seasons", func(w http.ResponseWriter, r *http.Request) {
			es, err := db.RefList(r.Context(), seasonType)
			if err != nil {
				writeStoreError(w, err)
				return
			}
			out := client.SeasonList{Seasons: make([]client.StoredSeason, 0, len(es))}
			for _, e := range es {
				out.Seasons = append(out.Seasons, client.StoredSeason{Key: e.Key, Version: e.Version, MsgID: e.MsgID, UpdatedAt: e.UpdatedAt, Season: e.Fields})
			}
			writeJSON(w, http.StatusOK, out)
		})
	}
}

// flightsByNumber answers GET /api/v1/flights?flno=…[&day=…]: the flights of that number, in
// the given day or the days of the search window.
func flightsByNumber(w http.ResponseWriter, r *http.Request, find *Finder) {
	if !allowParams(w, r, "flno", "day") {
		return
	}
	flno, day := r.URL.Query().Get("flno"), r.URL.Query().Get("day")
	var days []string
	if day != "" {
		if _, err := time.Parse(time.DateOnly, day); err != nil || len(day) != 10 {
			writeError(w, http.StatusBadRequest, "bad_day", "day must be a local date YYYY-MM-DD, got "+strconv.Quote(day))
			return
		}
		days = []string{day}
	}
	if _, ok := parseFlightNo(flno); !ok {
		writeError(w, http.StatusBadRequest, "bad_flno", "flno must be a carrier and a number with an optional suffix (CA8241, CA8241A, CCA8241), got "+strconv.Quote(flno))
		return
	}
	if days == nil {
		days = find.days()
	}
	es, err := find.ByNumber(r.Context(), flno, days)
	if err != nil {
		writeStoreError(w, err)
		return
	}
	recs := recordsOf(es)
	writeJSON(w, http.StatusOK, client.NumberedFlights{FLNO: flno, Days: [2]string{days[0], days[len(days)-1]}, Count: len(recs), Flights: recs})
}

// flightsOfDay answers GET /api/v1/flights?day=…: the flights of that local day (today in
// the airport's zone when day is absent), with the zone, so that a board shows airport time
// whatever the zone of the browser.
func flightsOfDay(w http.ResponseWriter, r *http.Request, flights FlightReader, find *Finder) {
	if !allowParams(w, r, "day") {
		return
	}
	today, loc := find.today()
	day := r.URL.Query().Get("day")
	if !r.URL.Query().Has("day") {
		day = today
	}
	if _, err := time.Parse(time.DateOnly, day); err != nil || len(day) != 10 {
		writeError(w, http.StatusBadRequest, "bad_day", "day must be a local date YYYY-MM-DD, got "+strconv.Quote(day))
		return
	}
	es, err := flights.Day(r.Context(), day)
	if err != nil {
		writeStoreError(w, err)
		return
	}
	recs := recordsOf(es)
	writeJSON(w, http.StatusOK, client.Board{Day: day, Today: today, Timezone: loc.String(), Count: len(recs), Flights: recs, Changed: changesOf(es, find.now())})
}

// changesOf returns the last change of each flight of es that knows it, by FLID, and how long
// before now: the age by the server's clock, so that a board highlights recent changes
// whatever its own clock says.
func changesOf(es []flight.Entry, now time.Time) map[int64]client.BoardChange {
	out := make(map[int64]client.BoardChange, len(es))
	for _, e := range es {
		if e.UpdatedAt.IsZero() {
			continue
		}
		out[e.FLID] = client.BoardChange{At: e.UpdatedAt.UTC(), AgeS: max(0, int64(now.Sub(e.UpdatedAt)/time.Second))}
	}
	return out
}

// recordsOf returns the flight records of es, in order.
func recordsOf(es []flight.Entry) []json.RawMessage {
	recs := make([]json.RawMessage, 0, len(es))
	for _, e := range es {
		recs = append(recs, e.Record)
	}
	return recs
}

// BoardAsOf returns the flights of a local day as they stood at a time (pump.Boards.At,
// adapted by the wiring). A time older than the retained history is an error for which
// BeforeHistory answers true and the history's start.
type BoardAsOf func(ctx context.Context, day string, at time.Time) (*AsOfBoard, error)

// AsOfBoard is a local day's board as it stood at a time.
type AsOfBoard struct {
	// Flights are the records then, by SODT then FLID, and Changed when each last changed by
	// then (the processing time of the message that changed it) with that message.
	Flights []json.RawMessage
	Changed map[int64]AsOfChange
	// Messages is how many applied messages the board was folded from.
	Messages    int
	HistoryFrom time.Time
	Warnings    []string
}

// AsOfChange is when a flight last changed by the board's time, and by which message.
type AsOfChange struct {
	At    time.Time
	MsgID int64
}

// BeforeHistoryError says a time is older than the retained history, which starts at From.
type BeforeHistoryError struct{ At, From time.Time }

func (e *BeforeHistoryError) Error() string {
	return fmt.Sprintf("as_of %s is before the retained history, which starts at %s: older messages were purged by retention, so the board of that time cannot be rebuilt",
		e.At.UTC().Format(time.RFC3339), e.From.UTC().Format(time.RFC3339))
}

// ParseAsOf reads an as_of value: an RFC 3339 time with its offset (2026-12-06T08:15:00+08:00,
// …Z), a date and time without one (2026-12-06T08:15, seconds optional) or a time of day
// (08:15, seconds optional) on day, both in loc (the airport's zone, or tz's).
func ParseAsOf(v, day string, loc *time.Location) (time.Time, error) {
	v = strings.TrimSpace(v)
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t, nil
	}
	for _, layout := range []string{"2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02 15:04:05", "2006-01-02 15:04"} {
		if t, err := time.ParseInLocation(layout, v, loc); err == nil {
			return t, nil
		}
	}
	for _, layout := range []string{"15:04:05", "15:04"} {
		if _, err := time.Parse(layout, v); err == nil {
			return time.ParseInLocation("2006-01-02 "+layout, day+" "+v, loc)
		}
	}
	return time.Time{}, fmt.Errorf("as_of must be an RFC 3339 time (2026-12-06T08:15:00+08:00), a local date and time (2026-12-06T08:15) or a time of day on the board's day (08:15), got %q", v)
}

// flightsAsOf answers GET /api/v1/flights?day=…&as_of=…[&tz=…]: the board of the day as it
// stood at as_of, with the day's zone, the time (as_of, UTC), when the retained history starts
// (history_from) and what the rebuild could not follow (warnings); changed ages are counted
// from as_of. A time in the future is 400 bad_as_of; one before the retained history 409
// before_history with history_from.
func flightsAsOf(w http.ResponseWriter, r *http.Request, asOf BoardAsOf, find *Finder) {
	if !allowParams(w, r, "day", "as_of", "tz") {
		return
	}
	zone, ok := zoneParam(w, r)
	if !ok {
		return
	}
	today, loc := find.today()
	if zone == nil {
		zone = loc
	}
	q := r.URL.Query()
	day := q.Get("day")
	if !q.Has("day") {
		day = today
	}
	if _, err := time.Parse(time.DateOnly, day); err != nil || len(day) != 10 {
		writeError(w, http.StatusBadRequest, "bad_day", "day must be a local date YYYY-MM-DD, got "+strconv.Quote(day))
		return
	}
	at, err := ParseAsOf(q.Get("as_of"), day, zone)
	if err != nil {
		writeError(w, http.StatusBadRequest, "bad_as_of", err.Error())
		return
	}
	now := find.now()
	if at.After(now) {
		writeError(w, http.StatusBadRequest, "bad_as_of", fmt.Sprintf("as_of %s is in the future (now is %s)", at.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339)))
		return
	}
	b, err := asOf(r.Context(), day, at)
	var before *BeforeHistoryError
	if errors.As(err, &before) {
		writeJSON(w, http.StatusConflict, client.BeforeHistory{ErrorBody: client.ErrorBody{Error: before.Error(), Code: "before_history"}, AsOf: at.UTC(), HistoryFrom: before.From.UTC()})
		return
	}
	if err != nil {
		writeStoreError(w, err)
		return
	}
	lastChanged := make(map[int64]client.BoardChange, len(b.Changed))
	for id, c := range b.Changed {
		lastChanged[id] = client.BoardChange{At: c.At.UTC(), AgeS: max(0, int64(at.Sub(c.At)/time.Second)), MsgID: c.MsgID}
	}
	warnings := b.Warnings
	if warnings == nil {
		warnings = []string{}
	}
	var from *time.Time
	if !b.HistoryFrom.IsZero() {
		f := b.HistoryFrom.UTC()
		from = &f
	}
	writeJSON(w, http.StatusOK, client.AsOfBoard{Day: day, Today: today, Timezone: loc.String(), AsOf: at.UTC(), HistoryFrom: from,
		Messages: b.Messages, Count: len(b.Flights), Flights: b.Flights, Changed: lastChanged, Warnings: warnings})
}
