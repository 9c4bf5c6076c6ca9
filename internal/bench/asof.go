package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"time"
)

// The board as of a past time (GET /api/v1/flights?as_of=), measured on the day workload:
// day A's board as it stood when its FLOP backlog was processed against one live board
// refresh of the same day (the console's board polls GET /api/v1/flights?day= every 5 s);
// then the board at other past times within the backlog (as an operator steps through the
// day). All are asked over HTTP of the running server once the end of the backlog is
// Options.AsOfWait past (msgx bench --as-of-wait; 125 s lets msgx serve's background round,
// Boards.Keep, every minute up to a minute before now, fold day A as a server would have by
// then; 0 asks at once, folding from what the server has); the first board must equal the live one. The cost of folding a day
// from nothing is BenchmarkFoldDay's (internal/pump) and the first figures of
// docs/benchmarks.md.

// asOfRepeats is how many times each board is asked after the first; the figures are medians.
const asOfRepeats = 5

// markBacklog notes the time day A's backlog was done: the past time its board is rebuilt at.
func (d *dayBench) markBacklog(context.Context, *Result) error {
	d.backlogDone = d.o.Clock.Now()
	return nil
}

// markBacklogStart notes the time day A's backlog began processing.
func (d *dayBench) markBacklogStart(context.Context, *Result) error {
	d.backlogStart = d.o.Clock.Now()
	return nil
}

// asOf measures the rebuilt board against the live one (see above).
func (d *dayBench) asOf(ctx context.Context, r *Result) error {
	day := d.sched.Day.Format(time.DateOnly)
	c := &http.Client{Timeout: 2 * time.Minute}
	type board struct {
		Count    int               `json:"count"`
		Flights  []json.RawMessage `json:"flights"`
		Messages int               `json:"messages"`
		Warnings []string          `json:"warnings"`
	}
	get := func(q url.Values) (board, time.Duration, error) {
		var b board
		start := time.Now()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.sys.url+"/api/v1/flights?"+q.Encode(), nil)
		if err != nil {
			return b, 0, err
		}
		resp, err := c.Do(req)
		if err != nil {
			return b, 0, err
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		took := time.Since(start)
		if err != nil {
			return b, 0, err
		}
		if resp.StatusCode != http.StatusOK {
			return b, 0, fmt.Errorf("GET /api/v1/flights?%s: %d %s", q.Encode(), resp.StatusCode, body)
		}
		return b, took, json.Unmarshal(body, &b)
	}
	median := func(ds []time.Duration) float64 {
		slices.Sort(ds)
		return Millis(ds[len(ds)/2])
	}
	if wait := time.Until(d.backlogDone.Add(d.o.AsOfWait)); d.o.AsOfWait > 0 && wait > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
	liveQ := url.Values{"day": {day}}
	asOfQ := url.Values{"day": {day}, "as_of": {d.backlogDone.UTC().Format(time.RFC3339Nano)}}
	var lives, asofs []time.Duration
	live, _, err := get(liveQ) // warms the connection and the statements
	if err != nil {
		return err
	}
	past, first, err := get(asOfQ)
	if err != nil {
		return err
	}
	span := d.backlogDone.Sub(d.backlogStart)
	for i := range asOfRepeats {
		_, took, err := get(liveQ)
		if err != nil {
			return err
		}
		lives = append(lives, took)
		// Another past time each: from a quarter into the backlog to its end.
		when := d.backlogStart.Add(span/4 + span*3/4*time.Duration(i)/time.Duration(asOfRepeats))
		_, took, err = get(url.Values{"day": {day}, "as_of": {when.UTC().Format(time.RFC3339Nano)}})
		if err != nil {
			return err
		}
		asofs = append(asofs, took)
	}
	r.AsOfFlights, r.AsOfMessages = past.Count, past.Messages
	r.AsOfMatchesLive = past.Count == live.Count && len(past.Warnings) == 0 && equalRecords(past.Flights, live.Flights)
	r.BoardMs, r.AsOfFirstMs, r.AsOfMs = median(lives), Millis(first), median(asofs)
	r.AsOfFirstVsBoard, r.AsOfVsBoard = Ratio(r.AsOfFirstMs, r.BoardMs), Ratio(r.AsOfMs, r.BoardMs)
	return nil
}

// equalRecords reports whether a and b hold the same records in the same order.
func equalRecords(a, b []json.RawMessage) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		var x, y any
		if json.Unmarshal(a[i], &x) != nil || json.Unmarshal(b[i], &y) != nil {
			return false
		}
		xs, _ := json.Marshal(x)
		ys, _ := json.Marshal(y)
		if string(xs) != string(ys) {
			return false
		}
	}
	return true
}
