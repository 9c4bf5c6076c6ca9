package api

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

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
//	GET /api/v1/flights?flno=CA8241     the flights of that number in the search window of
//	                                    find (or of day, when given), by day then SODT
//	GET /api/v1/flights/{flid}          one flight's record (404 when absent)
//	GET /api/v1/seasons                 the stored seasonal schedules
//
// find, when set, answers flno (nil: flno is refused as an unknown parameter).
func FlightRoutes(flights FlightReader, db store.Reference, find *Finder) func(*http.ServeMux) {
	return func(mux *http.ServeMux) {
		mux.HandleFunc("GET /api/v1/flights", func(w http.ResponseWriter, r *http.Request) {
			if find != nil && r.URL.Query().Has("flno") {
				flightsByNumber(w, r, find)
				return
			}
			flightsOfDay(w, r, flights, find)
		})
		mux.HandleFunc("GET /api/v1/flights/{flid}", func(w http.ResponseWriter, r *http.Request) {
			flid, err := strconv.ParseInt(r.PathValue("flid"), 10, 64)
			if err != nil {
				WriteError(w, http.StatusBadRequest, "bad_id", "flid must be an integer, got "+strconv.Quote(r.PathValue("flid")))
				return
			}
			e, err := flights.Get(r.Context(), flid)
			if err != nil {
				writeStoreError(w, err)
				return
			}
			if e == nil {
				WriteError(w, http.StatusNotFound, "not_found", "no flight with FLID "+strconv.FormatInt(flid, 10))
				return
			}
			WriteJSON(w, http.StatusOK, e)
		})
		mux.HandleFunc("GET /api/v1/seasons", func(w http.ResponseWriter, r *http.Request) {
			es, err := db.RefList(r.Context(), seasonType)
			if err != nil {
				writeStoreError(w, err)
				return
			}
			type season struct {
				Key       string          `json:"key"`
				Version   int64           `json:"version"`
				MsgID     *int64          `json:"msg_id"`
				UpdatedAt time.Time       `json:"updated_at"`
				Season    json.RawMessage `json:"season"`
			}
			out := make([]season, 0, len(es))
			for _, e := range es {
				out = append(out, season{e.Key, e.Version, e.MsgID, e.UpdatedAt, e.Fields})
			}
			WriteJSON(w, http.StatusOK, struct {
				Seasons []season `json:"seasons"`
			}{out})
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
			WriteError(w, http.StatusBadRequest, "bad_day", "day must be a local date YYYY-MM-DD, got "+strconv.Quote(day))
			return
		}
		days = []string{day}
	}
	if _, ok := parseFlightNo(flno); !ok {
		WriteError(w, http.StatusBadRequest, "bad_flno", "flno must be a carrier and a number with an optional suffix (CA8241, CA8241A, CCA8241), got "+strconv.Quote(flno))
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
	WriteJSON(w, http.StatusOK, struct {
		FLNO    string            `json:"flno"`
		Days    [2]string         `json:"days"`
		Count   int               `json:"count"`
		Flights []json.RawMessage `json:"flights"`
	}{flno, [2]string{days[0], days[len(days)-1]}, len(recs), recs})
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
		WriteError(w, http.StatusBadRequest, "bad_day", "day must be a local date YYYY-MM-DD, got "+strconv.Quote(day))
		return
	}
	es, err := flights.Day(r.Context(), day)
	if err != nil {
		writeStoreError(w, err)
		return
	}
	recs := recordsOf(es)
	WriteJSON(w, http.StatusOK, struct {
		Day      string            `json:"day"`
		Today    string            `json:"today"`
		Timezone string            `json:"timezone"`
		Count    int               `json:"count"`
		Flights  []json.RawMessage `json:"flights"`
		Changed  map[int64]changed `json:"changed"`
	}{day, today, loc.String(), len(recs), recs, changesOf(es, find.now())})
}

// changed is when a flight's record last changed, and how long before the answer: the age by
// the server's clock, so that a board highlights recent changes whatever its own clock says.
type changed struct {
	At   time.Time `json:"changed_at"`
	AgeS int64     `json:"changed_age_s"`
}

// changesOf returns the last change of each flight of es that knows it, by FLID.
func changesOf(es []flight.Entry, now time.Time) map[int64]changed {
	out := make(map[int64]changed, len(es))
	for _, e := range es {
		if e.UpdatedAt.IsZero() {
			continue
		}
		out[e.FLID] = changed{At: e.UpdatedAt.UTC(), AgeS: max(0, int64(now.Sub(e.UpdatedAt)/time.Second))}
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
