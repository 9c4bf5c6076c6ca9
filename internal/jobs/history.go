package jobs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"msgx/internal/esbulk"
	"msgx/internal/flight"
	"msgx/internal/pipeline"
)

// HistorySink is where HISTORY_SWEEP writes old flights, synchronously: Write returns once
// the flights are stored for good, with one error per flight (nil: written), or an error
// for the whole write (nothing written).
type HistorySink interface {
	Write(ctx context.Context, flights []flight.HistoryFlight) ([]error, error)
	Close() error
}

// maxNotes bounds the failure reasons a sweep's result names.
const maxNotes = 3

// historySweep writes the flights of every local day older than KeepDays to the history sink,
// a chunk at a time, and deletes from the flight store only those whose write succeeded
// (I4). A flight whose write failed stays in the store and the result says so (the next
// sweep writes it again); the job itself succeeds, so a history outage never holds up the
// messages behind it. A failing flight store (the database) fails the job.
func (r *Runner) historySweep(ctx context.Context, rep *report) error {
	if r.Flights == nil || r.History == nil {
		return pipeline.Errorf(pipeline.Unsupported, "HISTORY_SWEEP is not configured in this process")
	}
	loc := r.Location
	if loc == nil {
		loc = time.UTC
	}
	chunk := r.Chunk
	if chunk <= 0 {
		chunk = 500
	}
	now := r.Clock.Now().In(loc)
	today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, loc)
	bound := today.AddDate(0, 0, -r.KeepDays).Format(time.DateOnly)
	r.doing("listing the days before %s", bound)
	days, err := r.Flights.HistoryDays(ctx, bound)
	if err != nil {
		return err
	}
	var t sweepTally
	for _, day := range days {
		if err := r.sweepDay(ctx, rep, day, chunk, &t); err != nil {
			return err
		}
		r.log().Info("history sweep: day done", "day", day.Day, "flights", day.Flights)
	}
	if t.written > 0 {
		rep.add("history", t.written)
	}
	if t.deleted > 0 {
		rep.add("FLIGHT_STATE", -t.deleted)
	}
	if t.failed > 0 {
		historyFailed.Add(float64(t.failed))
		r.log().Warn("history sweep: some flights were not written and stay in the flight store", "failed", t.failed, "written", t.written)
	}
	rep.summary = fmt.Sprintf("swept %d flights of %d days before %s to history, %d deleted", t.written, len(days), bound, t.deleted)
	if t.failed > 0 {
		rep.summary += fmt.Sprintf(", %d not written (kept for the next sweep)", t.failed)
	}
	return ctx.Err()
}

// sweepTally counts the flights of a sweep so far.
type sweepTally struct {
	written, deleted, failed int
}

// sweepDay sweeps the flights of day, a chunk at a time, until they are all read or ctx
// ends, counting them in t. When a delete fails, the report gets what was done so far.
func (r *Runner) sweepDay(ctx context.Context, rep *report, day flight.HistoryDay, chunk int, t *sweepTally) error {
	var after int64
	done := 0
	r.doing("sweep day %s: %d/%d flights", day.Day, done, day.Flights)
	for ctx.Err() == nil {
		part, err := r.Flights.HistoryChunk(ctx, day.Day, after, chunk)
		if err != nil {
			return err
		}
		if len(part) == 0 {
			break
		}
		after = part[len(part)-1].FLID
		ok := r.writeHistory(ctx, rep, day, part, t)
		t.written += len(ok)
		n, err := r.Flights.DeleteHistory(ctx, ok)
		t.deleted += n
		if err != nil {
			rep.add("history", t.written)
			rep.add("FLIGHT_STATE", -t.deleted)
			return err
		}
		done += len(part)
		r.doing("sweep day %s: %d/%d flights", day.Day, done, day.Flights)
	}
	return nil
}

// writeHistory writes part, flights of day, to the history sink and returns those written;
// the others count in t.failed, the first few with their reason in the report's notes.
func (r *Runner) writeHistory(ctx context.Context, rep *report, day flight.HistoryDay, part []flight.HistoryFlight, t *sweepTally) []flight.HistoryFlight {
	errs, werr := r.History.Write(ctx, part)
	ok := make([]flight.HistoryFlight, 0, len(part))
	for i, f := range part {
		var e error
		switch {
		case werr != nil:
			e = werr
		case i < len(errs):
			e = errs[i]
		default:
			e = errors.New("no answer for this flight")
		}
		if e == nil {
			ok = append(ok, f)
			continue
		}
		t.failed++
		if len(rep.notes) < maxNotes {
			rep.notes = append(rep.notes, fmt.Sprintf("flight %d of %s not written: %v", f.FLID, f.Day, e))
		}
	}
	if werr != nil {
		r.log().Warn("history write failed; the flights stay for the next sweep", "day", day.Day, "flights", len(part), "err", werr.Error())
	}
	return ok
}

// FileHistory is the history sink of the embedded default: JSON lines, one file per local day
// under Dir (flights-YYYY-MM-DD.jsonl), appended and synced to disk before Write returns.
// A flight swept again (its delete was lost to a crash) appears twice; readers keep the
// line with the highest version.
type FileHistory struct {
	Dir string
}

// Write appends the flights to their days' files and syncs them.
func (h *FileHistory) Write(ctx context.Context, flights []flight.HistoryFlight) ([]error, error) {
	if err := os.MkdirAll(h.Dir, 0o755); err != nil {
		return nil, pipeline.Wrap(pipeline.Infra, fmt.Errorf("history directory %s: %w", h.Dir, err))
	}
	byDay := map[string][]byte{}
	var order []string
	for _, f := range flights {
		line, err := json.Marshal(f)
		if err != nil {
			return nil, fmt.Errorf("history line of flight %d: %w", f.FLID, err)
		}
		if _, ok := byDay[f.Day]; !ok {
			order = append(order, f.Day)
		}
		byDay[f.Day] = append(append(byDay[f.Day], line...), '\n')
	}
	for _, day := range order {
		if err := h.appendSync(filepath.Join(h.Dir, "flights-"+day+".jsonl"), byDay[day]); err != nil {
			return nil, pipeline.Wrap(pipeline.Infra, err)
		}
	}
	return make([]error, len(flights)), nil
}

func (h *FileHistory) appendSync(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("history file: %w", err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("history file %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("history file %s: sync: %w", path, err)
	}
	return f.Close()
}

// Close does nothing: every Write closes its files.
func (h *FileHistory) Close() error { return nil }

// ESHistory is the Elasticsearch history sink: one _bulk request per Write into Index
// (internal/esbulk), each flight a document with id "<day>-<FLID>" and its VERSION as
// external version, so a flight written again (its delete was lost) is a harmless 409.
type ESHistory struct {
	Index   string
	Timeout time.Duration
	es      *esbulk.Client
}

// ESHistoryConfig is history.elasticsearch.*.
type ESHistoryConfig struct {
	URL      string // one or more node URLs, comma-separated
	Index    string
	Username string
	Password string
	Timeout  time.Duration // per write; default 30s
}

// NewESHistory returns the Elasticsearch history sink of c.
func NewESHistory(c ESHistoryConfig) (*ESHistory, error) {
	var addrs []string
	for _, a := range strings.Split(c.URL, ",") {
		if a = strings.TrimSpace(a); a != "" {
			addrs = append(addrs, a)
		}
	}
	es, err := esbulk.New(esbulk.Config{Addresses: addrs, Username: c.Username, Password: c.Password})
	if err != nil {
		return nil, fmt.Errorf("history.elasticsearch: %w", err)
	}
	if c.Timeout <= 0 {
		c.Timeout = 30 * time.Second
	}
	return &ESHistory{Index: c.Index, Timeout: c.Timeout, es: es}, nil
}

// Write indexes the flights in one _bulk request and judges each item: 2xx and 409 (this or
// a newer version is stored already) are written, anything else is that flight's error. A
// request that fails as a whole (network, non-2xx) is an error for all.
func (h *ESHistory) Write(ctx context.Context, flights []flight.HistoryFlight) ([]error, error) {
	if len(flights) == 0 {
		return nil, nil
	}
	var body bytes.Buffer
	for _, f := range flights {
		doc, err := json.Marshal(f)
		if err == nil {
			err = esbulk.Append(&body, esbulk.Action{Index: h.Index, ID: f.Day + "-" + strconv.FormatInt(f.FLID, 10), Version: f.Version, Doc: doc})
		}
		if err != nil {
			return nil, fmt.Errorf("history document of flight %d: %w", f.FLID, err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, h.Timeout)
	defer cancel()
	items, err := h.es.Bulk(ctx, body.Bytes(), len(flights))
	if err != nil {
		return nil, pipeline.Wrap(pipeline.Infra, fmt.Errorf("history bulk to %s: %w", h.Index, err))
	}
	errs := make([]error, len(flights))
	for i, item := range items {
		it, ok := item["index"]
		switch {
		case !ok:
			errs[i] = errors.New("no index result in the answer")
		case it.Status >= 200 && it.Status <= 299, it.Status == http.StatusConflict:
		case it.Error != nil:
			errs[i] = fmt.Errorf("HTTP %d %s: %s", it.Status, it.Error.Type, it.Error.Reason)
		default:
			errs[i] = fmt.Errorf("HTTP %d", it.Status)
		}
	}
	return errs, nil
}

// Close stops the client and closes its idle connections.
func (h *ESHistory) Close() error { return h.es.Close() }
